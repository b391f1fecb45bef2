//! The AOF and a replica bring back the module's keyspace byte for byte.
//!
//! AOF: a native workload runs on a server with `appendonly yes` and
//! `appendfsync always` (a write is on disk before its reply is sent), the
//! server is killed (`SIGKILL`: no shutdown, no final flush), and a new
//! server started on the same directory holds every key with the same
//! `DUMP` payload and expiry. The AOF holds one `EMQ.REPLAY` per call that
//! wrote (module.rs counts them), so a server without the module refuses
//! to load it; with the module it replays, runs more of the workload on the
//! replayed keyspace, and is killed and replayed again.
//!
//! Replica: a replica (with the module, and an AOF of its own) of a server
//! running the workload holds the same bytes once it has caught up, and so
//! does a server started on the replica's AOF.
//!
//! The workload is the random walk of tests/module/common/walk.rs on wire 6: every
//! verb, refusals, keys of the wrong type, retention trimming, and an event
//! stream trimmed by `MAXLEN ~` (events_max 50 on one queue).
//! `EMQ_AOF_SEED` replays a run.

use crate::common::resp::{RawConn, Reply};
use crate::common::walk::{Step, Walker};
use crate::common::{self, Clock, aof_text, binary, dump};
use echomq_server::{ServerConfig, ServerProcess};
use echomq_testkit::module_path;
use redis::aio::MultiplexedConnection;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Steps of the walk before the first kill, and after the second start.
const FIRST: usize = 1500;
const SECOND: usize = 500;
/// A walk that leaves `THIN` keys or fewer, or no event stream (its last
/// steps obliterated a queue), goes on `SECOND` steps at a time, at most
/// `MORE` times: the replays compare a whole keyspace, whatever the seed.
const THIN: usize = 50;
const MORE: usize = 3;

fn start(dir: &Path, module: bool) -> ServerProcess {
    spawn(dir, module, &[]).unwrap_or_else(|e| panic!("starting the server: {e}"))
}

/// Starts a server on `dir` with `appendonly yes`, `appendfsync always`
/// and `extra` arguments, with or without the module.
fn spawn(
    dir: &Path,
    module: bool,
    extra: &[String],
) -> Result<ServerProcess, echomq_server::ServerError> {
    let mut extra_args = vec!["--appendfsync".into(), "always".into()];
    extra_args.extend_from_slice(extra);
    let config = ServerConfig {
        dir: dir.to_path_buf(),
        port: 0,
        appendonly: true,
        modules: if module {
            vec![module_path()]
        } else {
            Vec::new()
        },
        preload: None,
        extra_args,
    };
    ServerProcess::spawn(&binary(), &config)
}

/// Kills the server with SIGKILL and waits for it to exit.
fn kill(server: &mut ServerProcess) {
    let status = std::process::Command::new("kill")
        .arg("-9")
        .arg(server.pid().to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill -9 {}", server.pid());
    server.wait().unwrap();
}

async fn connect(server: &ServerProcess) -> MultiplexedConnection {
    redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// Every key with its type, expiry (`PEXPIRETIME`: the instant, which a
/// restart keeps, where a TTL shrinks) and `DUMP` payload.
async fn snapshot(conn: &mut MultiplexedConnection) -> BTreeMap<Vec<u8>, (String, i64, Vec<u8>)> {
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query_async(conn).await.unwrap();
    let mut out = BTreeMap::new();
    for key in keys {
        let (kind, ttl, payload): (String, i64, Vec<u8>) = redis::pipe()
            .cmd("TYPE")
            .arg(&key)
            .cmd("PEXPIRETIME")
            .arg(&key)
            .cmd("DUMP")
            .arg(&key)
            .query_async(conn)
            .await
            .unwrap();
        out.insert(key, (kind, ttl, payload));
    }
    out
}

/// Runs `steps` steps of the walk on `server` through wire 6.
async fn walk(server: &ServerProcess, walker: &mut Walker, steps: usize) -> usize {
    let mut view = connect(server).await;
    let mut raw = RawConn::open(server.port());
    for step in Walker::setup() {
        raw.call(&step.raw().unwrap());
    }
    // One queue trims its events with MAXLEN ~ as it goes.
    raw.call(
        redis::cmd("HSET")
            .arg("emq:{plain}:meta")
            .arg("events_max")
            .arg(50),
    );
    let mut refused = 0;
    let mut left = steps;
    for more in 0..=MORE {
        for _ in 0..left {
            let planned = walker.plan(&mut view).await;
            let cmd = match &planned.step {
                Step::Call { call, .. } => call.native(),
                Step::Raw { .. } => planned.step.raw().unwrap(),
            };
            if let Reply::Error(_) = raw.call(&cmd) {
                refused += 1;
            }
            common::wait_for_clock(common::host_ms() + planned.settle_ms);
        }
        // Keys set to the wrong type for a while get their place back.
        for step in walker.restore_all(&mut view).await {
            raw.call(&step.raw().unwrap());
        }
        let keys = snapshot(&mut view).await;
        if more == MORE || (keys.len() > THIN && keys.values().any(|(kind, ..)| kind == "stream")) {
            break;
        }
        left = SECOND;
    }
    refused
}

/// Asserts `after` holds what `before` held, key by key, byte for byte
/// (the order of a hashtable's fields aside, see below).
/// Returns how many hashtable-encoded keys came back in another order.
fn assert_restored(
    before: &BTreeMap<Vec<u8>, (String, i64, Vec<u8>)>,
    after: &BTreeMap<Vec<u8>, (String, i64, Vec<u8>)>,
    what: &str,
) -> usize {
    let show = |key: &[u8]| common::grammar::quote(key);
    let lost: Vec<String> = before
        .keys()
        .filter(|k| !after.contains_key(*k))
        .map(|k| show(k))
        .collect();
    let gained: Vec<String> = after
        .keys()
        .filter(|k| !before.contains_key(*k))
        .map(|k| show(k))
        .collect();
    assert!(
        lost.is_empty() && gained.is_empty(),
        "{what}: keys lost {lost:?}, keys gained {gained:?}"
    );
    // A hash or set in its hashtable encoding (RDB types 4 and 2) dumps its
    // fields in the table's iteration order, which follows the process's
    // random hash seed: the same content dumps in another order after a
    // restart (a listpack, stream, list, string or sorted set dumps in its
    // own order and must match byte for byte). Such a key must hold the same
    // fields and values (compared through `dump` by the caller) in a
    // payload of the same length.
    let unordered = |before: &[u8], after: &[u8]| {
        matches!(before.first(), Some(2 | 4))
            && before.first() == after.first()
            && before.len() == after.len()
    };
    let mut reordered = 0;
    let differing: Vec<String> = before
        .iter()
        .filter(|(key, value)| after[*key] != **value)
        .filter(|(key, (kind, ttl, payload))| {
            let (kind_after, ttl_after, payload_after) = &after[*key];
            let same = kind == kind_after && ttl == ttl_after && unordered(payload, payload_after);
            reordered += usize::from(same);
            !same
        })
        .map(|(key, (kind, ttl, payload))| {
            let (kind_after, ttl_after, payload_after) = &after[key];
            format!(
                "{} ({kind}, ttl {ttl}, DUMP {} → {kind_after}, ttl {ttl_after}, DUMP {})",
                show(key),
                common::grammar::escape(payload),
                common::grammar::escape(payload_after)
            )
        })
        .collect();
    assert!(
        differing.is_empty(),
        "{what}: {} of {} keys restored with another DUMP payload or TTL: {differing:?}",
        differing.len(),
        before.len()
    );
    reordered
}

#[tokio::test]
async fn a_killed_server_replays_its_aof_to_the_same_bytes() {
    let seed = common::seed("EMQ_AOF_SEED");
    let started = Instant::now();
    let dir = tempfile::Builder::new()
        .prefix("emq-aof-")
        .tempdir()
        .unwrap();

    // A workload on wire 6, then SIGKILL.
    let mut server = start(dir.path(), true);
    let mut walker = Walker::new(seed, module_commands(&server).await).without_raw_scores();
    let refused = walk(&server, &mut walker, FIRST).await;
    let mut conn = connect(&server).await;
    let before = snapshot(&mut conn).await;
    let content = dump(&mut conn, &Clock::exact()).await;
    assert!(
        before.len() > THIN && refused > 0,
        "the workload left {} keys, {refused} refusals",
        before.len()
    );
    assert!(
        before.values().any(|(kind, ..)| kind == "stream"),
        "no event stream to replay"
    );
    kill(&mut server);

    // The AOF holds the calls, not their effects: no event is written as
    // an XADD, no score as a ZADD, no expiry as a PEXPIREAT (the walk's own
    // plain commands are HSET, SET and DEL).
    let aof = aof_text(dir.path());
    assert!(
        aof.contains("\r\nEMQ.REPLAY\r\n"),
        "no EMQ.REPLAY in the AOF"
    );
    for effect in ["XADD", "ZADD", "ZREM", "PEXPIREAT", "INCRBY"] {
        let written = format!("\r\n{effect}\r\n");
        assert!(
            !aof.contains(&written) && !aof.contains(&written.to_ascii_lowercase()),
            "{effect} written to the AOF"
        );
    }

    // Without the module the AOF does not load: the server says which
    // command it does not know, and exits.
    let refused =
        spawn(dir.path(), false, &[]).expect_err("an AOF of EMQ.REPLAY without the module");
    assert!(
        refused.to_string().contains("EMQ.REPLAY"),
        "a server without the module: {refused}"
    );

    // With the module: every byte comes back, the replayed keyspace takes
    // more of the workload, and replays again after another SIGKILL.
    let mut server = start(dir.path(), true);
    let mut conn = connect(&server).await;
    let what = "restart with the module";
    let reordered = assert_restored(&before, &snapshot(&mut conn).await, what);
    assert_same_content(&content, &dump(&mut conn, &Clock::exact()).await, what);
    walk(&server, &mut walker, SECOND).await;
    let before = snapshot(&mut conn).await;
    let content = dump(&mut conn, &Clock::exact()).await;
    kill(&mut server);
    let again = start(dir.path(), true);
    let mut conn = connect(&again).await;
    let what = "second restart";
    assert_restored(&before, &snapshot(&mut conn).await, what);
    assert_same_content(&content, &dump(&mut conn, &Clock::exact()).await, what);
    for base in common::walk::QUEUES {
        common::check_invariant(&mut conn, base)
            .await
            .unwrap_or_else(|problems| panic!("after the replay, {base}:\n{problems}"));
    }
    eprintln!(
        "{} keys restored after {FIRST} + {SECOND} steps ({reordered} hashtable-encoded ones in another field order at the first restart), in {:.1}s",
        before.len(),
        started.elapsed().as_secs_f64()
    );
}

#[tokio::test]
async fn a_replica_and_its_aof_hold_the_same_bytes() {
    let seed = common::seed("EMQ_REPLICA_SEED");
    let dir = tempfile::Builder::new()
        .prefix("emq-replica-")
        .tempdir()
        .unwrap();
    let primary = start(&dir.path().join("primary"), true);
    let replica_of = [
        "--replicaof".to_string(),
        "127.0.0.1".into(),
        primary.port().to_string(),
    ];
    let mut replica = spawn(&dir.path().join("replica"), true, &replica_of)
        .unwrap_or_else(|e| panic!("starting the replica: {e}"));
    let mut r = connect(&replica).await;
    // In sync, and the AOF the replica rewrites after its first sync done
    // (a SIGKILL during the rewrite would leave the old, empty one).
    echomq_testkit::wait_for("the replica to sync", Duration::from_secs(20), || {
        let mut r = r.clone();
        async move {
            let info: String = redis::cmd("INFO").query_async(&mut r).await.unwrap();
            let synced = info.contains("master_link_status:up")
                && info.contains("aof_rewrite_in_progress:0")
                && info.contains("aof_rewrite_scheduled:0");
            if synced { Ok(()) } else { Err(info) }
        }
    })
    .await;

    let mut walker = Walker::new(seed, module_commands(&primary).await);
    walk(&primary, &mut walker, FIRST).await;
    let mut p = connect(&primary).await;
    let offset = |info: &str, field: &str| -> Option<u64> {
        info.lines()
            .find_map(|line| line.strip_prefix(field))
            .and_then(|value| value.trim().parse().ok())
    };
    let sent = offset(
        &redis::cmd("INFO")
            .arg("replication")
            .query_async::<String>(&mut p)
            .await
            .unwrap(),
        "master_repl_offset:",
    )
    .unwrap();
    echomq_testkit::wait_for("the replica to catch up", Duration::from_secs(20), || {
        let mut r = r.clone();
        async move {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut r)
                .await
                .unwrap();
            match offset(&info, "slave_repl_offset:") {
                Some(at) if at >= sent => Ok(()),
                _ => Err(info),
            }
        }
    })
    .await;
    let before = snapshot(&mut p).await;
    let content = dump(&mut p, &Clock::exact()).await;
    assert!(
        before.len() > THIN && before.values().any(|(kind, ..)| kind == "stream"),
        "the workload left {} keys",
        before.len()
    );
    let what = "the replica";
    assert_restored(&before, &snapshot(&mut r).await, what);
    assert_same_content(&content, &dump(&mut r, &Clock::exact()).await, what);

    // The replica wrote what it replayed to an AOF of its own.
    kill(&mut replica);
    let restarted = start(&dir.path().join("replica"), true);
    let mut conn = connect(&restarted).await;
    let what = "the replica's AOF";
    assert_restored(&before, &snapshot(&mut conn).await, what);
    assert_same_content(&content, &dump(&mut conn, &Clock::exact()).await, what);
}

/// Asserts two whole-content dumps (fields sorted) are the same.
fn assert_same_content(before: &[String], after: &[String], what: &str) {
    common::assert_same_dump(
        before,
        after,
        &format!("{what} (\"wire 4\" is before the kill, \"wire 6\" after the replay)"),
    );
}

/// The commands the module serves (the walk draws among them).
async fn module_commands(server: &ServerProcess) -> Vec<&'static str> {
    let (_, served): (String, Vec<String>) = redis::cmd("EMQ.VERSION")
        .query_async(&mut connect(server).await)
        .await
        .unwrap();
    common::grammar::GRAMMARS
        .iter()
        .filter(|g| g.keyed() && served.iter().any(|s| s == g.command))
        .map(|g| g.command)
        .collect()
}

#[tokio::test]
async fn an_aof_replays_a_fan_outs_edges_in_the_order_they_were_taken() {
    use crate::replica_order::{claim, complete_root, fan_out, snapshot};
    let dir = tempfile::Builder::new()
        .prefix("emq-aof-order-")
        .tempdir()
        .unwrap();
    // A completion taking 600 edges of a hashtable-encoded dependents
    // hash, the next claims, then SIGKILL: the new process lists the hash
    // in another order (its own hash seed), and replays the primary's.
    let mut server = start(dir.path(), true);
    let mut conn = connect(&server).await;
    fan_out(&mut conn, 600).await;
    complete_root(&mut conn).await;
    claim(&mut conn, 5).await;
    let before = snapshot(&mut conn).await;
    kill(&mut server);
    assert!(aof_text(dir.path()).contains("\r\nEMQ.REPLAY.ORDER\r\n"));
    let server = start(dir.path(), true);
    let after = snapshot(&mut connect(&server).await).await;
    common::assert_same_keyspace(&before, &after, "the AOF's new process");
}

#[tokio::test]
async fn an_emq_replay_order_with_a_bad_order_is_refused_and_writes_nothing() {
    let dir = tempfile::Builder::new()
        .prefix("emq-aof-bad-order-")
        .tempdir()
        .unwrap();
    let mut server = start(dir.path(), true);
    let _: () = redis::cmd("SET")
        .arg("marker")
        .arg(1)
        .query_async(&mut connect(&server).await)
        .await
        .unwrap();
    kill(&mut server);
    // Appended to the AOF's last part, as a primary would have written
    // them: three enqueues whose orders are malformed (a count that is not
    // a number; a field that is not `<queue> <id>`; a cursor neither `-`
    // nor digits), one whose is well formed.
    let head = [
        "EMQ.REPLAY.ORDER",
        "emq:{bad}",
        "EMQ.ENQUEUE",
        "1",
        "-",
        "-",
    ];
    let bad_count = [&head[..], &["x", "*", "payload"]].concat();
    let bad_field = [&head[..], &["1", "a", "-", "1", "nospace", "*", "payload"]].concat();
    let bad_cursor = [&head[..], &["1", "a", "x9", "1", "q a", "*", "payload"]].concat();
    let good = [
        &[
            "EMQ.REPLAY.ORDER",
            "emq:{good}",
            "EMQ.ENQUEUE",
            "1",
            "-",
            "-",
        ][..],
        &["1", "a", "17", "1", "q a", "*", "payload"],
    ]
    .concat();
    let incr = std::fs::read_dir(dir.path().join("appendonlydir"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.to_string_lossy().ends_with(".incr.aof"))
        .expect("the AOF's incremental part");
    let mut aof = std::fs::read(&incr).unwrap();
    for args in [&bad_count, &bad_field, &bad_cursor, &good] {
        // The command in RESP, as an AOF holds it.
        aof.extend(redis::cmd(args[0]).arg(&args[1..]).get_packed_command());
    }
    std::fs::write(&incr, aof).unwrap();
    let server = start(dir.path(), true);
    let mut conn = connect(&server).await;
    let keys = |pattern: &str| redis::cmd("KEYS").arg(pattern).clone();
    let bad: Vec<String> = keys("emq:{bad}*").query_async(&mut conn).await.unwrap();
    assert!(bad.is_empty(), "a refused EMQ.REPLAY.ORDER wrote {bad:?}");
    let good: Vec<String> = keys("emq:{good}*").query_async(&mut conn).await.unwrap();
    assert!(
        good.iter().any(|key| key.contains(":job:")),
        "the well-formed one: {good:?}"
    );
}
