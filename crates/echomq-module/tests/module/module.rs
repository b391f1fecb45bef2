//! The module loads into real servers (Valkey 9 and Redis 7.0), lists what
//! it serves, and replicates each call that wrote as one `EMQ.REPLAY`
//! carrying the clock it read: a replica and the AOF hold the same keyspace
//! without reading a clock of their own, and no client sends `EMQ.REPLAY`.
//!
//! Left out of scripts/test's Redis 7.0 step (which points
//! `$EMQ_VALKEY_SERVER` at `redis-server` and runs the other modules of this
//! program): these tests name their servers themselves, `valkey()` and
//! `redis_7()`, so the Valkey run already loads the module into Redis 7.0,
//! and under that step `loads_in_valkey_9` would load it into Redis 7.0.

use crate::common::{aof_text, assert_same_keyspace, keyspace, primary_and_replica};
use echomq_protocol::{Command, Transition};
use echomq_server::ServerBinary;
use echomq_testkit::{TestServer, module_path, wait_for};
use redis::Value;
use std::time::Duration;

/// What `EMQ.VERSION` must list: `EMQ.VERSION`, then every command of the
/// registry of controls, in its order (each single form, then its bulk form).
fn served() -> Vec<&'static str> {
    std::iter::once("EMQ.VERSION")
        .chain(registry().map(|command| command.native))
        .collect()
}

/// Every command of the registry.
fn registry() -> impl Iterator<Item = &'static Command> {
    Transition::ALL
        .iter()
        .flat_map(|t| t.control().commands().map(|(_, command)| command))
}

fn valkey() -> ServerBinary {
    ServerBinary::locate().unwrap_or_else(|e| panic!("no valkey-server: {e}"))
}

fn redis_7() -> ServerBinary {
    ServerBinary::redis().unwrap_or_else(|e| panic!("no redis-server: {e}"))
}

/// The server's clock in ms (`TIME`).
async fn server_ms(c: &mut redis::aio::MultiplexedConnection) -> u64 {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(c).await.unwrap();
    secs * 1000 + micros / 1000
}

async fn conn(server: &TestServer) -> redis::aio::MultiplexedConnection {
    server
        .client()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

async fn version_lists_the_served_commands(server: &TestServer) {
    let mut c = conn(server).await;
    let (version, names): (String, Vec<String>) =
        redis::cmd("EMQ.VERSION").query_async(&mut c).await.unwrap();
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    assert_eq!(names, served(), "EMQ.VERSION against the registry");
    // Every command of the registry is registered with the base key as its
    // first key, and with the registry's flags.
    for command in registry() {
        let name = command.native;
        let info: Value = redis::cmd("COMMAND")
            .arg("INFO")
            .arg(name)
            .query_async(&mut c)
            .await
            .unwrap();
        let Value::Array(mut infos) = info else {
            panic!("{name}: {info:?}")
        };
        let Some(Value::Array(fields)) = infos.pop() else {
            panic!("{name} is not registered")
        };
        let keys: Vec<i64> = fields[3..6]
            .iter()
            .map(|v| redis::from_redis_value(v.clone()).unwrap())
            .collect();
        assert_eq!(keys, [1, 1, 1], "{name}: first key, last key, step");
        let flags: Vec<String> = redis::from_redis_value(fields[2].clone()).unwrap();
        for flag in command.flags.split(' ') {
            let flag = match flag {
                "deny-oom" => "denyoom",
                other => other,
            };
            assert!(
                flags.iter().any(|f| f == flag),
                "{name}: {flags:?} lacks {flag}"
            );
        }
        for flag in ["write", "readonly", "fast", "denyoom"] {
            let declared = command.flags.replace("deny-oom", "denyoom");
            assert_eq!(
                flags.iter().any(|f| f == flag),
                declared.split(' ').any(|f| f == flag),
                "{name}: {flag} in {flags:?} against the registry's {declared}"
            );
        }
    }
}

#[tokio::test]
async fn loads_in_valkey_9() {
    let server = TestServer::with_config(valkey(), false, vec![module_path()]);
    version_lists_the_served_commands(&server).await;
}

#[tokio::test]
async fn loads_in_redis_7_0() {
    let server = TestServer::with_config(redis_7(), false, vec![module_path()]);
    version_lists_the_served_commands(&server).await;
    // The spine runs end to end there too.
    let mut c = conn(&server).await;
    let base = "emq:{r7}";
    let (id, created): (String, i64) = redis::cmd("EMQ.ENQUEUE")
        .arg(base)
        .arg("*")
        .arg("p")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!((id.as_str(), created), ("1", 1));
    let claimed: Vec<(String, i64, String, i64, i64)> = redis::cmd("EMQ.CLAIM")
        .arg(base)
        .arg("w")
        .arg(1000)
        .query_async(&mut c)
        .await
        .unwrap();
    let token = claimed[0].1;
    assert_eq!(claimed, [("1".into(), token, "p".into(), 0, 3)]);
    let ok: String = redis::cmd("EMQ.COMPLETE")
        .arg(base)
        .arg("1")
        .arg(token)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(ok, "OK");
}

/// A few transitions of every spine kind on `base`.
async fn spine_traffic(c: &mut redis::aio::MultiplexedConnection, base: &str) {
    for n in 0..5 {
        let _: Value = redis::cmd("EMQ.ENQUEUE")
            .arg(base)
            .arg("*")
            .arg(format!("job {n}"))
            .arg("PRIORITY")
            .arg(n % 2)
            .query_async(c)
            .await
            .unwrap();
    }
    let claimed: Vec<(String, i64, String, i64, i64)> = redis::cmd("EMQ.CLAIM")
        .arg(base)
        .arg("w")
        .arg(60_000)
        .arg("COUNT")
        .arg(4)
        .query_async(c)
        .await
        .unwrap();
    let verbs: [&[&str]; 4] = [
        &["EMQ.COMPLETE", "RESULT", "done"],
        &["EMQ.FAIL", "boom", "RETRY_IN", "5000"],
        &["EMQ.FAIL", "boom"],
        &["EMQ.FAIL", "boom", "DEAD"],
    ];
    for ((id, token, ..), verb) in claimed.iter().zip(verbs) {
        let mut cmd = redis::cmd(verb[0]);
        cmd.arg(base).arg(id).arg(*token);
        for arg in &verb[1..] {
            cmd.arg(*arg);
        }
        let _: Value = cmd.query_async(c).await.unwrap();
    }
}

#[tokio::test]
async fn a_replica_holds_the_same_keyspace_timestamps_included() {
    let (primary, replica) = primary_and_replica(valkey).await;
    let mut p = conn(&primary).await;
    let mut r = conn(&replica).await;
    spine_traffic(&mut p, "emq:{repl}").await;
    // Let the clock move on so a replica that re-read it would differ.
    let sent = server_ms(&mut p).await;
    wait_for(
        "the primary's clock to move on",
        Duration::from_secs(5),
        || async { server_ms(&mut p.clone()).await >= sent + 20 },
    )
    .await;
    let _: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(5000)
        .query_async(&mut p)
        .await
        .unwrap();
    let want = keyspace(&mut p, "emq:{repl}*").await;
    assert!(want.iter().any(|line| line.contains(":completed zset")));
    assert_same_keyspace(&want, &keyspace(&mut r, "emq:{repl}*").await, "the replica");
}

#[tokio::test]
async fn the_aof_holds_one_emq_replay_per_call_that_wrote() {
    let server = TestServer::with_config(valkey(), true, vec![module_path()]);
    let mut c = conn(&server).await;
    // Ten calls that write (five enqueues, a claim, four finishes).
    spine_traffic(&mut c, "emq:{aof}").await;
    // Calls that write nothing replicate nothing: a read, a refusal, an
    // empty claim.
    for cmd in [
        redis::cmd("EMQ.COUNTS").arg("emq:{aof}").clone(),
        redis::cmd("EMQ.COMPLETE")
            .arg("emq:{aof}")
            .arg("404")
            .arg(1)
            .clone(),
        redis::cmd("EMQ.CLAIM")
            .arg("emq:{empty}")
            .arg("w")
            .arg(1000)
            .clone(),
    ] {
        let _: Value = cmd.query_async(&mut c).await.unwrap_or(Value::Nil);
    }
    // The AOF is written in order: once the marker is in a file, so is
    // everything the traffic wrote before it.
    let _: () = redis::cmd("SET")
        .arg(AOF_MARKER)
        .arg(1)
        .query_async(&mut c)
        .await
        .unwrap();
    let text = wait_for(
        "the AOF to hold the marker",
        Duration::from_secs(10),
        || {
            let text = aof_text(server.dir());
            std::future::ready(text.contains(AOF_MARKER).then_some(text))
        },
    )
    .await;
    // Each call is one command: its name, then the queue, the command and
    // the clock it read (RESP: `$10\r\nEMQ.REPLAY\r\n$8\r\nemq:{aof}…`).
    let calls = text.matches("\r\nEMQ.REPLAY\r\n").count();
    assert_eq!(calls, 10, "one EMQ.REPLAY per call that wrote: {text}");
    for verb in ["EMQ.ENQUEUE", "EMQ.CLAIM", "EMQ.COMPLETE", "EMQ.FAIL"] {
        assert!(text.contains(&format!("\r\n{verb}\r\n")), "{verb}: {text}");
    }
    // No effect is written as itself, and no call needs MULTI.
    for effect in ["HSET", "ZADD", "ZREM", "XADD", "SET", "PEXPIREAT", "MULTI"] {
        let upper = format!("\r\n{effect}\r\n");
        let lower = upper.to_ascii_lowercase();
        let found = text.matches(&upper).count() + text.matches(&lower).count();
        // The marker is the one SET.
        let allowed = usize::from(effect == "SET");
        assert_eq!(found, allowed, "{effect} written to the AOF: {text}");
    }
}

#[tokio::test]
async fn a_client_cannot_send_emq_replay() {
    for binary in [valkey(), redis_7()] {
        let server = TestServer::with_config(binary, false, vec![module_path()]);
        let mut c = conn(&server).await;
        // What a primary would write for an ENQUEUE at a forged instant.
        let forged = || {
            redis::cmd("EMQ.REPLAY")
                .arg("emq:{forge}")
                .arg("EMQ.ENQUEUE")
                .arg(1)
                .arg("-")
                .arg("-")
                .arg("*")
                .arg("payload")
                .clone()
        };
        let err = forged()
            .query_async::<Value>(&mut c)
            .await
            .expect_err("a client's EMQ.REPLAY");
        assert!(
            err.to_string().contains("only its replicas and an AOF"),
            "{err}"
        );
        // Nor from a script, nor inside MULTI.
        let err = redis::cmd("EVAL")
            .arg("return redis.call('EMQ.REPLAY', KEYS[1], 'EMQ.ENQUEUE', 1, '-', '-', '*', 'p')")
            .arg(1)
            .arg("emq:{forge}")
            .query_async::<Value>(&mut c)
            .await
            .expect_err("a script's EMQ.REPLAY");
        assert!(err.to_string().contains("EMQ.REPLAY"), "{err}");
        let replies: Value = redis::pipe()
            .atomic()
            .add_command(forged())
            .query_async(&mut c)
            .await
            .unwrap_or(Value::Nil);
        assert!(!format!("{replies:?}").contains("\"1\""), "{replies:?}");
        let keys: i64 = redis::cmd("DBSIZE").query_async(&mut c).await.unwrap();
        assert_eq!(keys, 0, "a refused EMQ.REPLAY wrote");
    }
}

/// A key written after the traffic whose effects the AOF test reads.
const AOF_MARKER: &str = "aof-test-marker";

/// Starts `binary` with the module loaded with `args` (`--loadmodule path
/// args…`), in a fresh directory under the system's temp dir.
fn with_load_args(
    binary: ServerBinary,
    name: &str,
    args: &[&str],
) -> Result<echomq_server::ServerProcess, echomq_server::ServerError> {
    let dir = std::env::temp_dir().join(format!("emq-module-{name}-{}", std::process::id()));
    let mut config = echomq_server::ServerConfig::new(&dir);
    config.extra_args = [
        "--loadmodule".to_string(),
        module_path().display().to_string(),
    ]
    .into_iter()
    .chain(args.iter().map(|arg| (*arg).to_string()))
    .collect();
    let started = echomq_server::ServerProcess::spawn(&binary, &config);
    if started.is_err() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    started
}

#[tokio::test]
async fn exclude_leaves_a_command_unregistered_and_unlisted() {
    let mut server = with_load_args(valkey(), "exclude", &["exclude", "emq.obliterate"]).unwrap();
    let client = redis::Client::open(server.url()).unwrap();
    let mut c = client.get_multiplexed_async_connection().await.unwrap();
    let (_, names): (String, Vec<String>) =
        redis::cmd("EMQ.VERSION").query_async(&mut c).await.unwrap();
    let expected: Vec<&str> = served()
        .into_iter()
        .filter(|name| *name != "EMQ.OBLITERATE")
        .collect();
    assert_eq!(names, expected);
    let info: Vec<Value> = redis::cmd("COMMAND")
        .arg("INFO")
        .arg("EMQ.OBLITERATE")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(info, [Value::Nil], "EMQ.OBLITERATE is not registered");
    let dir = server.dir().to_path_buf();
    server.shutdown(false).unwrap();
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_load_argument_it_does_not_understand_fails_the_load() {
    for (name, args, logged) in [
        (
            "unknown",
            &["EXPORT", "EMQ.PAUSE"][..],
            "unknown load argument EXPORT",
        ),
        ("empty", &["EXCLUDE"][..], "EXCLUDE names no command"),
        (
            "version",
            &["EXCLUDE", "EMQ.VERSION"][..],
            "EXCLUDE EMQ.VERSION",
        ),
        ("typo", &["EXCLUDE", "EMQ.PAWS"][..], "EXCLUDE EMQ.PAWS"),
    ] {
        let err = with_load_args(valkey(), name, args)
            .err()
            .unwrap_or_else(|| panic!("loaded with {args:?}"));
        assert!(
            err.to_string().contains(&format!("<echomq> {logged}")),
            "{args:?}: {err}"
        );
    }
}
