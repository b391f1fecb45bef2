//! Claims that wait for work (`ClaimWaits`, the HTTP API's long-polled
//! claim): woken by an enqueue and by a scheduled job falling due, never
//! by polling; a lease that runs out is swept by the claims themselves.

use crate::common::Harness;
use echomq::{ClaimWaits, NewJob};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(10);
const LEASE: Duration = Duration::from_secs(30);
/// Longer than any test here runs: a claim answered before it was woken,
/// not by the safety net.
const NEVER: Duration = Duration::from_secs(600);

#[echomq_testkit::case]
async fn a_waiting_claim_is_woken_by_an_enqueue(h: &Harness) {
    let q = h.queue::<Value>("cw-enqueue");
    let waits = ClaimWaits::with(NEVER, NEVER);
    let claiming = {
        let (waits, q) = (waits.clone(), q.clone());
        tokio::spawn(async move { waits.claim(&q, "w", LEASE, 1, NEVER).await })
    };
    wait_for("the claim to wait", BOUND, || {
        std::future::ready(waits.waiting(&q) == 1)
    })
    .await;
    let id = q.enqueue(json!({"n": 1})).await.unwrap().id;
    let claimed = claiming.await.unwrap().unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].id, id);
    assert_eq!(waits.waiting(&q), 0);
}

#[echomq_testkit::case]
async fn a_scheduled_job_falling_due_wakes_a_waiting_claim(h: &Harness) {
    let q = h.queue::<Value>("cw-due");
    let waits = ClaimWaits::with(NEVER, NEVER);
    let id = q
        .enqueue(NewJob::new(json!({})).after(Duration::from_millis(300)))
        .await
        .unwrap()
        .id;
    let claimed = waits
        .claim(&q, "w", LEASE, 1, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(claimed.first().map(|job| &job.id), Some(&id));
}

#[echomq_testkit::case]
async fn a_claim_that_waits_out_its_time_answers_nothing(h: &Harness) {
    let q = h.queue::<Value>("cw-empty");
    let waits = ClaimWaits::with(NEVER, NEVER);
    let claimed = waits
        .claim(&q, "w", LEASE, 5, Duration::from_millis(50))
        .await
        .unwrap();
    assert!(claimed.is_empty());
    assert_eq!(waits.waiting(&q), 0);
}

#[echomq_testkit::case]
async fn a_lease_that_runs_out_is_swept_by_later_claims(h: &Harness) {
    let q = h.queue::<Value>("cw-sweep");
    let waits = ClaimWaits::with(NEVER, Duration::from_millis(1));
    let id = q.enqueue(json!({})).await.unwrap().id;
    let first = waits
        .claim(&q, "w", Duration::from_millis(1), 1, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(first[0].id, id);
    let again = wait_for("the stalled job to be claimed again", BOUND, || async {
        let claimed = waits.claim(&q, "w", LEASE, 1, Duration::ZERO).await;
        claimed.unwrap().pop()
    })
    .await;
    assert_eq!(again.id, id);
    assert!(again.token > first[0].token);
}

#[echomq_testkit::case]
async fn a_waiting_claim_under_a_full_cap_is_woken_when_a_job_leaves_active(h: &Harness) {
    let q = h.queue::<Value>("cw-cap");
    q.admin().set_concurrency_cap(1).await.unwrap();
    for n in 0..2 {
        q.enqueue(json!({"n": n})).await.unwrap();
    }
    let waits = ClaimWaits::with(NEVER, NEVER);
    let held = waits
        .claim(&q, "w", LEASE, 1, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(held.len(), 1);
    let claiming = {
        let (waits, q) = (waits.clone(), q.clone());
        tokio::spawn(async move { waits.claim(&q, "w", LEASE, 1, NEVER).await })
    };
    wait_for("the claim to wait", BOUND, || {
        std::future::ready(waits.waiting(&q) == 1)
    })
    .await;
    q.complete(&held[0].id, held[0].token, &()).await.unwrap();
    let claimed = claiming.await.unwrap().unwrap();
    assert_eq!(claimed.len(), 1);
    assert_ne!(claimed[0].id, held[0].id);
}

#[echomq_testkit::case]
async fn a_waiting_claim_under_a_rate_limit_claims_when_the_window_reopens(h: &Harness) {
    let q = h.queue::<Value>("cw-rate");
    q.admin()
        .set_rate_limit(1, Duration::from_millis(300))
        .await
        .unwrap();
    for n in 0..2 {
        q.enqueue(json!({"n": n})).await.unwrap();
    }
    let waits = ClaimWaits::with(NEVER, NEVER);
    let first = waits
        .claim(&q, "w", LEASE, 1, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(first.len(), 1);
    let second = waits
        .claim(&q, "w", LEASE, 1, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(second.len(), 1);
    assert_ne!(second[0].id, first[0].id);
}
