//! A replica takes a fan-out's own-queue edges in its primary's order
//! (docs/protocol.md, "How wire 6 replicates": the order of a dependents
//! hash). A dependents hash past `hash-max-listpack-entries` is a
//! hashtable, which each server process lists in the order of its own hash
//! seed; `COMPLETE` and `FLOW.SETTLE` replicate as `EMQ.REPLAY.ORDER`,
//! carrying the order they took its fields in, so the replica unblocks the
//! same jobs in the same order and claims the same ones next. An AOF
//! loaded by a new process does too (persistence.rs).

use crate::common::{self, primary_and_replica};
use echomq_server::ServerBinary;
use echomq_testkit::{TestServer, module_path};
use redis::Value;
use redis::aio::MultiplexedConnection;

/// The queue of these cases, its base key.
const BASE: &str = "emq:{fan}";

fn valkey() -> ServerBinary {
    ServerBinary::locate().unwrap_or_else(|e| panic!("no valkey-server: {e}"))
}

fn redis_7() -> ServerBinary {
    ServerBinary::redis().unwrap_or_else(|e| panic!("no redis-server: {e}"))
}

async fn conn(server: &TestServer) -> MultiplexedConnection {
    server
        .client()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// `EMQ.FLOW.ADD.BULK` of a job `root` and `n` jobs `d0`… that run after
/// it, all in [`BASE`]'s queue (the dependents first, as a submit writes
/// them); its dependents hash is checked to be a hashtable.
pub(crate) async fn fan_out(c: &mut MultiplexedConnection, n: usize) {
    let mut cmd = redis::cmd("EMQ.FLOW.ADD.BULK");
    cmd.arg(BASE).arg("f");
    let job = |cmd: &mut redis::Cmd, id: &str, after: &str, before: &str| {
        cmd.arg(id)
            .arg(id)
            .arg("{}")
            .arg(after)
            .arg(before)
            .arg(0)
            .arg(1)
            .arg("fail");
    };
    for i in 0..n {
        job(&mut cmd, &format!("d{i}"), "fan root", "");
    }
    let before: Vec<String> = (0..n).map(|i| format!("fan d{i}")).collect();
    job(&mut cmd, "root", "", &before.join(" "));
    let _: Value = cmd.query_async(c).await.unwrap();
    let encoding: String = redis::cmd("OBJECT")
        .arg("ENCODING")
        .arg(format!("{BASE}:dependents:root"))
        .query_async(c)
        .await
        .unwrap();
    assert_eq!(encoding, "hashtable", "{n} dependents");
}

/// Claims `count` jobs of [`BASE`]: their (id, token).
pub(crate) async fn claim(c: &mut MultiplexedConnection, count: usize) -> Vec<(String, i64)> {
    let jobs: Vec<(String, i64, String, i64, i64)> = redis::cmd("EMQ.CLAIM")
        .arg(BASE)
        .arg("w")
        .arg(60_000)
        .arg("COUNT")
        .arg(count)
        .query_async(c)
        .await
        .unwrap();
    jobs.into_iter()
        .map(|(id, token, ..)| (id, token))
        .collect()
}

/// The root claimed and completed natively.
pub(crate) async fn complete_root(c: &mut MultiplexedConnection) -> Value {
    let claimed = claim(c, 1).await;
    assert_eq!(claimed[0].0, "root");
    redis::cmd("EMQ.COMPLETE")
        .arg(BASE)
        .arg("root")
        .arg(claimed[0].1)
        .query_async(c)
        .await
        .unwrap()
}

/// Every key of [`BASE`] with its content ([`common::keyspace`]).
pub(crate) async fn snapshot(c: &mut MultiplexedConnection) -> Vec<String> {
    common::keyspace(c, &format!("{BASE}*")).await
}

/// Waits for the replica to have every write of the primary, then asserts
/// both hold the same keyspace.
async fn assert_replica_matches(p: &mut MultiplexedConnection, r: &mut MultiplexedConnection) {
    let acked: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(10_000)
        .query_async(p)
        .await
        .unwrap();
    assert_eq!(acked, 1, "the replica acknowledged");
    let want = snapshot(p).await;
    common::assert_same_keyspace(&want, &snapshot(r).await, "the replica");
}

#[tokio::test]
async fn a_replica_unblocks_a_fan_out_in_its_primarys_order() {
    for binary in [valkey, redis_7] {
        let (primary, replica) = primary_and_replica(binary).await;
        let (mut p, mut r) = (conn(&primary).await, conn(&replica).await);
        fan_out(&mut p, 600).await;
        // Every edge taken in the completion: 600 jobs to the fifo, in the
        // order the primary listed the hash.
        assert_eq!(complete_root(&mut p).await, Value::Okay);
        // The next claims take the fifo's head.
        claim(&mut p, 5).await;
        assert_replica_matches(&mut p, &mut r).await;
    }
}

#[tokio::test]
async fn a_replica_takes_its_primarys_edges_past_the_budget() {
    for binary in [valkey, redis_7] {
        let (primary, replica) = primary_and_replica(binary).await;
        let (mut p, mut r) = (conn(&primary).await, conn(&replica).await);
        // 1,000 edges in the completion; which two it leaves follows the
        // order it listed the hash in.
        fan_out(&mut p, 1_002).await;
        let relay = Value::BulkString(b"relay_completed".to_vec());
        assert_eq!(complete_root(&mut p).await, relay);
        // FLOW.SETTLE one at a time: which one is the first of the two.
        let settled: Vec<i64> = redis::cmd("EMQ.FLOW.SETTLE")
            .arg(BASE)
            .arg("root")
            .arg("COUNT")
            .arg(1)
            .query_async(&mut p)
            .await
            .unwrap();
        assert_eq!(settled, [1, 1, 1]);
        claim(&mut p, 5).await;
        assert_replica_matches(&mut p, &mut r).await;
    }
}

#[tokio::test]
async fn a_client_cannot_send_emq_replay_order() {
    let server = TestServer::with_config(valkey(), false, vec![module_path()]);
    let mut c = conn(&server).await;
    // What a primary would write for a completion taking d0 then d1.
    let err = redis::cmd("EMQ.REPLAY.ORDER")
        .arg(BASE)
        .arg("EMQ.COMPLETE")
        .arg(1)
        .arg("-")
        .arg("-")
        .arg(1)
        .arg("root")
        .arg(2)
        .arg("fan d0")
        .arg("fan d1")
        .arg("root")
        .arg(1)
        .query_async::<Value>(&mut c)
        .await
        .expect_err("a client's EMQ.REPLAY.ORDER");
    assert!(
        err.to_string()
            .contains("EMQ.REPLAY.ORDER is how a primary replicates"),
        "{err}"
    );
    let keys: i64 = redis::cmd("DBSIZE").query_async(&mut c).await.unwrap();
    assert_eq!(keys, 0, "a refused EMQ.REPLAY.ORDER wrote");
}
