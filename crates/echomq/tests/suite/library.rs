//! Wire 4's function library: loaded by the first call that needs it, one
//! function per script with its command's flags, loaded again after a
//! flush; a user the ACL keeps from loading it (or from `FCALL`) runs the
//! same Lua as scripts. A pipeline never runs ahead of a load: a bulk
//! enqueue on a server without the library keeps its jobs in order. Real
//! servers, real ACL users; Valkey 9 and Redis 7.0.

use crate::common;

use common::{Harness, command_stats};
use echomq::acl::{Reach, Role, rules};
use echomq::{Queue, Wire};
use echomq_protocol::Transition;
use redis::Value as RedisValue;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);

/// Each function of the server's libraries, by name, with its flags.
async fn functions(conn: &mut redis::aio::MultiplexedConnection) -> BTreeMap<String, Vec<String>> {
    let libraries: RedisValue = redis::cmd("FUNCTION")
        .arg("LIST")
        .query_async(conn)
        .await
        .unwrap();
    let mut out = BTreeMap::new();
    for library in as_items(libraries) {
        let fields = as_map(library);
        for function in as_items(fields["functions"].clone()) {
            let function = as_map(function);
            let name = as_text(&function["name"]);
            let flags = as_items(function["flags"].clone())
                .iter()
                .map(as_text)
                .collect();
            out.insert(name, flags);
        }
    }
    out
}

fn as_items(value: RedisValue) -> Vec<RedisValue> {
    match value {
        RedisValue::Array(items) | RedisValue::Set(items) => items,
        other => panic!("not a list: {other:?}"),
    }
}

fn as_map(value: RedisValue) -> BTreeMap<String, RedisValue> {
    match value {
        RedisValue::Map(pairs) => pairs.iter().map(|(k, v)| (as_text(k), v.clone())).collect(),
        RedisValue::Array(items) => items
            .chunks_exact(2)
            .map(|pair| (as_text(&pair[0]), pair[1].clone()))
            .collect(),
        other => panic!("not a map: {other:?}"),
    }
}

fn as_text(value: &RedisValue) -> String {
    match value {
        RedisValue::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        RedisValue::SimpleString(text) => text.clone(),
        other => panic!("not a string: {other:?}"),
    }
}

/// Calls of `FCALL` and of `EVALSHA`/`EVAL` so far.
async fn calls(conn: &mut redis::aio::MultiplexedConnection) -> (u64, u64) {
    (
        command_stats(conn, &["fcall"], &["calls"]).await,
        command_stats(conn, &["evalsha", "eval"], &["calls"]).await,
    )
}

/// A job enqueued, claimed and completed through `queue`.
async fn one_job_through(queue: &Queue<Value>) {
    let id = queue.enqueue(json!("one")).await.unwrap().id;
    let claimed = queue.claim("w", LEASE, 1).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, id);
    queue
        .complete(&claimed[0].id, claimed[0].token, &())
        .await
        .unwrap();
}

/// A user with the rules `emq acl` gives `role` on queue `queue`, wire 4,
/// less the commands of `without`.
async fn restricted(h: &Harness, name: &str, queue: &str, without: &[&str]) -> Queue<Value> {
    let reach = Reach::Queue(queue.to_string());
    let mut granted = rules("emq", &reach, Role::Operator, Wire::Script).unwrap();
    for command in without {
        granted = granted.replace(&format!(" +{command}"), "");
    }
    let connector = h.as_user(name, &granted, "emq").await;
    connector.queue(queue).unwrap()
}

#[tokio::test]
async fn the_first_call_loads_the_library_and_the_calls_run_its_functions() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("library_first");
    let mut raw = h.raw(&q).await;
    assert!(functions(&mut raw).await.is_empty(), "a fresh server");
    one_job_through(&q).await;
    let loaded = functions(&mut raw).await;
    assert!(
        loaded.keys().any(|name| name.starts_with("emq_complete_")),
        "{loaded:?}"
    );
    let loads = command_stats(&mut raw, &["function|load"], &["calls"]).await;
    assert_eq!(loads, 1);
    let (fcalls, scripts) = calls(&mut raw).await;
    assert!(fcalls >= 3, "{fcalls} FCALLs");
    assert_eq!(scripts, 0, "no script was sent");
    h.check(&q).await;
}

#[tokio::test]
async fn each_script_is_a_function_flagged_as_its_command_reads_or_writes() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("library_flags");
    one_job_through(&q).await;
    let loaded = functions(&mut h.raw(&q).await).await;
    let mut checked = 0;
    for transition in Transition::ALL {
        for (_, command) in transition.control().commands() {
            let prefix = format!("emq_{}_", command.script);
            let (name, flags) = loaded
                .iter()
                .find(|(name, _)| {
                    name.strip_prefix(&prefix)
                        .is_some_and(|tag| tag.chars().all(|c| c.is_ascii_hexdigit()))
                })
                .unwrap_or_else(|| panic!("no function for {}: {loaded:?}", command.script));
            let readonly = command.flags.split(' ').any(|flag| flag == "readonly");
            assert_eq!(
                flags.iter().any(|flag| flag == "no-writes"),
                readonly,
                "{name}: {flags:?} for a command flagged {:?}",
                command.flags
            );
            checked += 1;
        }
    }
    assert!(checked > 30, "{checked} commands");
}

#[tokio::test]
async fn the_library_is_loaded_again_after_a_function_flush() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("library_flushed");
    one_job_through(&q).await;
    let mut raw = h.raw(&q).await;
    let _: () = redis::cmd("FUNCTION")
        .arg("FLUSH")
        .query_async(&mut raw)
        .await
        .unwrap();
    assert!(functions(&mut raw).await.is_empty());
    one_job_through(&q).await;
    assert!(!functions(&mut raw).await.is_empty(), "loaded again");
    let (_, scripts) = calls(&mut raw).await;
    assert_eq!(scripts, 0, "still by FCALL");
    h.check(&q).await;
}

/// Enqueues `n` jobs in one bulk call (several pipelines, two in flight)
/// and checks their ids rise in the order given, and the queue holds them
/// in that order.
async fn bulk_keeps_its_order(h: &Harness, queue: &Queue<Value>, n: u64) {
    let jobs: Vec<Value> = (0..n).map(|i| json!(i)).collect();
    let ids: Vec<u64> = queue
        .enqueue_bulk(jobs)
        .await
        .unwrap()
        .iter()
        .map(|e| e.id.as_str().parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids out of order");
    let fifo: Vec<String> = redis::cmd("LRANGE")
        .arg(queue.keys().fifo())
        .arg(0)
        .arg(-1)
        .query_async(&mut h.raw(queue).await)
        .await
        .unwrap();
    let queued: Vec<u64> = fifo.iter().map(|id| id.parse().unwrap()).collect();
    assert_eq!(queued, ids);
}

#[tokio::test]
async fn a_bulk_enqueue_on_a_server_without_the_library_keeps_its_order() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("library_order");
    assert!(functions(&mut h.raw(&q).await).await.is_empty());
    bulk_keeps_its_order(&h, &q, 8_000).await;
    h.check(&q).await;
}

#[tokio::test]
async fn a_user_who_may_not_load_the_library_runs_the_scripts_in_order() {
    let h = Harness::server().await;
    let q = restricted(&h, "no_load", "library_user", &[]).await;
    let mut raw = h.raw(&q).await;
    one_job_through(&q).await;
    assert!(functions(&mut raw).await.is_empty(), "the user loaded none");
    let (_, scripts) = calls(&mut raw).await;
    assert!(scripts >= 3, "{scripts} scripts");
    bulk_keeps_its_order(&h, &q, 8_000).await;
    h.check(&q).await;
}

#[tokio::test]
async fn a_user_runs_the_functions_of_a_library_another_loaded() {
    let h = Harness::server().await;
    one_job_through(&h.queue::<Value>("library_admin")).await;
    let q = restricted(&h, "caller", "library_caller", &[]).await;
    let mut raw = h.raw(&q).await;
    let (fcalls, scripts) = calls(&mut raw).await;
    one_job_through(&q).await;
    let (fcalls_after, scripts_after) = calls(&mut raw).await;
    assert!(fcalls_after >= fcalls + 3);
    assert_eq!(scripts_after, scripts, "no script was sent");
    h.check(&q).await;
}

#[tokio::test]
async fn a_user_refused_fcall_runs_the_scripts() {
    let h = Harness::server().await;
    one_job_through(&h.queue::<Value>("library_loaded")).await;
    // Rules made before wire 4 called functions: no FCALL.
    let q = restricted(&h, "old_rules", "library_old", &["fcall"]).await;
    let mut raw = h.raw(&q).await;
    let (_, scripts) = calls(&mut raw).await;
    one_job_through(&q).await;
    let (_, scripts_after) = calls(&mut raw).await;
    assert!(scripts_after >= scripts + 3);
    h.check(&q).await;
}
