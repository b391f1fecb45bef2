//! What the module publishes on a queue's sharded channels (`<base>:cancel`,
//! `<base>:outcome`) reaches the primary's subscribers and a replica's,
//! each message once, on Valkey 9 and Redis 7.0. The module publishes
//! through the module API (`RedisModule_PublishMessageShard`), which
//! writes nothing to the replication stream: the replica publishes as it
//! replays the command (`EMQ.REPLAY`), and a message the stream carried as
//! well would reach the replica's subscriber twice.
//!
//! Like module.rs, it names its servers itself, so scripts/test's Redis
//! 7.0 step leaves it out.

use crate::common::primary_and_replica;
use crate::common::resp::{RawConn, Reply};
use echomq_server::ServerBinary;
use echomq_testkit::TestServer;

const BASE: &str = "emq:{pub}";
/// What a plain client publishes last: in standalone, `SPUBLISH` is
/// replicated as itself, so the replica's subscriber reads it after
/// everything the commands before it published there.
const LAST: &str = "the end";

/// A plain connection subscribed to `BASE`'s cancel and outcome channels.
fn subscriber(server: &TestServer) -> RawConn {
    let mut conn = RawConn::open(server.port());
    for channel in ["cancel", "outcome"] {
        let reply = conn.call(redis::cmd("SSUBSCRIBE").arg(format!("{BASE}:{channel}")));
        assert!(
            matches!(&reply, Reply::Array(Some(items)) if items.len() == 3),
            "SSUBSCRIBE: {reply:?}"
        );
    }
    conn
}

/// Every `channel message` `conn` reads, in order, until [`LAST`].
fn messages(conn: &mut RawConn) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let Reply::Array(Some(items)) = conn.read() else {
            continue;
        };
        if let [
            Reply::Bulk(Some(kind)),
            Reply::Bulk(Some(channel)),
            Reply::Bulk(Some(message)),
        ] = items.as_slice()
            && kind == b"smessage"
        {
            let message = String::from_utf8_lossy(message).into_owned();
            if message == LAST {
                return seen;
            }
            let channel = String::from_utf8_lossy(channel);
            seen.push(format!("{} {message}", &channel[BASE.len() + 1..]));
        }
    }
}

/// Two jobs waited for: `a` completes; `b`'s cancellation is requested
/// while it runs, and its worker's FAIL cancels it.
async fn waited_traffic(c: &mut redis::aio::MultiplexedConnection) {
    for id in ["a", "b"] {
        let _: redis::Value = redis::cmd("EMQ.ENQUEUE")
            .arg(BASE)
            .arg(id)
            .arg("p")
            .query_async(c)
            .await
            .unwrap();
        let state: Vec<String> = redis::cmd("EMQ.OUTCOME")
            .arg(BASE)
            .arg(id)
            .query_async(c)
            .await
            .unwrap();
        assert_eq!(state, ["pending"]);
    }
    let claimed: Vec<(String, i64, String, i64, i64)> = redis::cmd("EMQ.CLAIM")
        .arg(BASE)
        .arg("w")
        .arg(60_000)
        .arg("COUNT")
        .arg(2)
        .query_async(c)
        .await
        .unwrap();
    let token = |id: &str| {
        claimed
            .iter()
            .find(|job| job.0 == id)
            .map(|job| job.1)
            .unwrap()
    };
    let cmds = [
        redis::cmd("EMQ.COMPLETE")
            .arg(BASE)
            .arg("a")
            .arg(token("a"))
            .arg("RESULT")
            .arg("42")
            .clone(),
        redis::cmd("EMQ.CANCEL").arg(BASE).arg("b").clone(),
        redis::cmd("EMQ.FAIL")
            .arg(BASE)
            .arg("b")
            .arg(token("b"))
            .arg("stopped")
            .clone(),
        redis::cmd("SPUBLISH")
            .arg(format!("{BASE}:outcome"))
            .arg(LAST)
            .clone(),
    ];
    for cmd in cmds {
        let _: redis::Value = cmd.query_async(c).await.unwrap();
    }
}

async fn each_message_once_on_the_primary_and_the_replica(binary: fn() -> ServerBinary) {
    let (primary, replica) = primary_and_replica(binary).await;
    let mut on_primary = subscriber(&primary);
    let mut on_replica = subscriber(&replica);
    waited_traffic(&mut primary.connection().await).await;
    let want = ["outcome a completed 42", "cancel b", "outcome b cancelled"];
    assert_eq!(messages(&mut on_primary), want, "the primary's subscriber");
    assert_eq!(messages(&mut on_replica), want, "the replica's subscriber");
}

#[tokio::test]
async fn a_replica_publishes_each_message_once_as_it_replays_on_valkey_9() {
    each_message_once_on_the_primary_and_the_replica(|| {
        ServerBinary::locate().unwrap_or_else(|e| panic!("no valkey-server: {e}"))
    })
    .await;
}

#[tokio::test]
async fn a_replica_publishes_each_message_once_as_it_replays_on_redis_7_0() {
    each_message_once_on_the_primary_and_the_replica(|| {
        ServerBinary::redis().unwrap_or_else(|e| panic!("no redis-server: {e}"))
    })
    .await;
}
