//! The fence across a failover: a claim the promoted server never saw
//! (replication is asynchronous) must not share its token with a claim
//! the promoted server hands out, or the worker that held the lost claim
//! could complete a job another worker now holds.

use super::common::{default_binary, refusal};
use echomq::{Connector, NewJob, Refusal, Wire};
use echomq_testkit::{TestServer, module_path, wait_for};
use serde_json::{Value, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(60);

/// The replica follows the primary until it holds the job, then is
/// promoted (`REPLICAOF NO ONE`, as Sentinel does) before the primary's
/// claim reaches it. The promoted server's claim gets another token, and
/// the lost claim's token completes nothing there.
#[echomq_testkit::case(wire)]
async fn a_claim_lost_in_a_failover_shares_no_token_with_a_new_one(wire: Wire) {
    let start = || TestServer::with_config(default_binary(), false, vec![module_path()]);
    let (primary, replica) = (start(), start());
    let mut replica_link = replica.connection().await;
    let _: () = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(primary.port())
        .query_async(&mut replica_link)
        .await
        .unwrap();
    let connect = async |server: &TestServer| {
        let connector = Connector::builder(server.url()).wire(wire).connect().await;
        connector
            .expect("connect")
            .queue::<Value>("fenced")
            .unwrap()
    };
    let old = connect(&primary).await;
    old.enqueue(NewJob::new(json!({"n": 1})).id("j").unwrap())
        .await
        .unwrap();
    // Asked of the replica itself: a WAIT on a connection of its own would
    // confirm nothing (a new connection has written nothing), and the
    // replica would be promoted before the job reached it. An enqueue
    // replicates as one unit, so its job hash stands for all of it.
    // On the link already open: a connection made for each look could
    // time out connecting on a loaded machine (a CI run did).
    wait_for(
        "the replica to hold the job",
        Duration::from_secs(20),
        || {
            let mut link = replica_link.clone();
            async move {
                let held: bool = redis::cmd("EXISTS")
                    .arg("emq:{fenced}:job:j")
                    .query_async(&mut link)
                    .await
                    .unwrap();
                held
            }
        },
    )
    .await;
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query_async(&mut replica_link)
        .await
        .unwrap();

    let lost = old.claim_one("lost", LEASE).await.unwrap().expect("a job");
    let new = connect(&replica).await;
    let held = new.claim_one("new", LEASE).await.unwrap().expect("a job");
    assert_eq!(held.id, lost.id);
    assert_ne!(held.token, lost.token, "two claims of one job, one token");
    let stale = new
        .complete(&lost.id, lost.token, "from the lost claim")
        .await;
    let err = stale.expect_err("the lost claim's token completed the job");
    assert_eq!(refusal(err), Refusal::NotActive);
    new.complete(&held.id, held.token, "done").await.unwrap();
}
