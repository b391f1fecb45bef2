//! The check-up (docs/protocol.md, "The check-up"): `FLOW.LINK` on a
//! dependency's queue and `FLOW.CHECKUP` on a dependent's, sent raw, and
//! each of their refusals, which write nothing; then the library's use of
//! them: the sweep's check-up pass, and a flow that depends on a job
//! outside it. Each case runs on a server (wire 4) and again on wire 6
//! (the native module); those marked so also on a 3-master cluster.

#[path = "flow_checkup/checkup.rs"]
mod checkup;
#[path = "flow_checkup/library.rs"]
mod library;
#[path = "flow_checkup/link.rs"]
mod link;
#[path = "flow_checkup/outside.rs"]
mod outside;
#[path = "flow_checkup/refusals.rs"]
mod refusals;
use crate::common;

/// Every case marked `cluster`, on one 3-master cluster.
#[tokio::test]
async fn flow_checkup_suite_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}

use common::Harness;
use echomq::Queue;
use redis::Value;

/// A reply's bulk string.
fn text(value: &Value) -> String {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).unwrap(),
        other => panic!("{other:?}"),
    }
}

/// A reply of bulk strings, as words.
fn words(reply: Value) -> Vec<String> {
    let Value::Array(items) = reply else {
        panic!("{reply:?}")
    };
    items.iter().map(text).collect()
}

/// `<base>:<what>:<id>` of queue `q`.
fn flow_key<T>(q: &Queue<T>, what: &str, id: &str) -> String {
    format!("{}:{what}:{id}", q.keys().base())
}

/// A hash of the queue's, read raw.
async fn hash<T>(
    h: &Harness,
    q: &Queue<T>,
    key: &str,
) -> std::collections::BTreeMap<String, String> {
    redis::cmd("HGETALL")
        .arg(key)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// A zset of the queue's (`blocked`, `resolutions`), with its scores,
/// lowest first.
async fn scored<T>(h: &Harness, q: &Queue<T>, what: &str) -> Vec<(String, u64)> {
    redis::cmd("ZRANGE")
        .arg(format!("{}:{what}", q.keys().base()))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// Scores blocked job `id` of `q` at `score`: its check-up made due (a
/// score long past) without waiting five minutes.
async fn make_due<T>(h: &Harness, q: &Queue<T>, id: &str, score: u64) {
    let _: () = redis::cmd("ZADD")
        .arg(format!("{}:blocked", q.keys().base()))
        .arg("XX")
        .arg(score)
        .arg(id)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
}

/// The server's clock in ms.
async fn server_ms<T>(h: &Harness, q: &Queue<T>) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME")
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
    s * 1000 + us / 1000
}
