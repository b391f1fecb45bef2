//! An outcome wait whose `OUTCOME` call the connection drops under (a
//! server restart, a network cut) sends it again once the connection is
//! back, rather than failing with the connection's error: the wait stands
//! until its job is decided or its time runs out (`docs/outcomes.md`, "It
//! misses no outcome"). Both wires.

use crate::common::Harness;
use echomq::{Outcome, Queue};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

/// Whether a client of the server that holds `q` is held by `CLIENT
/// PAUSE` with an `OUTCOME` (`FCALL` or `EVALSHA` on wire 4,
/// `EMQ.OUTCOME` on wire 6).
async fn outcome_held(h: &Harness, q: &Queue<Value>) -> bool {
    let clients: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
    clients.to_lowercase().lines().any(|client| {
        let held = client
            .split(' ')
            .any(|field| field.starts_with("flags=") && field.contains('b'));
        held && ["cmd=fcall", "cmd=evalsha", "cmd=emq.outcome"]
            .iter()
            .any(|cmd| client.contains(cmd))
    })
}

#[echomq_testkit::case]
pub(super) async fn a_wait_whose_outcome_call_is_cut_off_sends_it_again(h: &Harness) {
    let q = h.queue::<Value>("cut");
    let id = q.enqueue(json!("x")).await.unwrap().id;
    let mut admin = h.raw(&q).await;
    // OUTCOME marks the job: a write, held by the pause; the wait's
    // subscription is not.
    let _: () = redis::cmd("CLIENT")
        .arg(&["PAUSE", "60000", "WRITE"])
        .query_async(&mut admin)
        .await
        .unwrap();
    let wait = tokio::spawn({
        let (q, id) = (q.clone(), id.clone());
        async move { q.outcome::<Value>(&id, WAIT).await }
    });
    wait_for("the OUTCOME held by the pause", WAIT, || {
        outcome_held(h, &q)
    })
    .await;
    let cut: u64 = redis::cmd("CLIENT")
        .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"])
        .query_async(&mut admin)
        .await
        .unwrap();
    assert!(cut > 0);
    let _: () = redis::cmd("CLIENT")
        .arg("UNPAUSE")
        .query_async(&mut admin)
        .await
        .unwrap();
    let job = wait_for("the connector to claim again", WAIT, || async {
        q.claim_one("w", WAIT).await.ok().flatten()
    })
    .await;
    assert_eq!(job.id, id);
    q.complete(&id, job.token, &json!("after the cut"))
        .await
        .unwrap();
    let outcome = tokio::time::timeout(WAIT, wait).await.unwrap().unwrap();
    assert_eq!(
        outcome.unwrap(),
        Outcome::Completed {
            result: Some(json!("after the cut"))
        }
    );
}
