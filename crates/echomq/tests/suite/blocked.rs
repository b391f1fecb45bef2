//! The state `blocked` (issue 43, docs/protocol.md "The state `blocked`"),
//! before the flow commands that move jobs in and out: a blocked job,
//! written raw as `FLOW.ADD` will write one (its hash's `state` and a
//! member of `blocked`), is counted, listed, refused by the verbs that
//! would run it before its dependencies, cancelled, removed, drained and
//! deleted with its queue. Every case runs on both wires.

use crate::common::{Harness, marked_waited, refusal};
use echomq::{CancelOutcome, DrainScope, IfActive, JobId, JobState, Outcome, Queue, Refusal};
use echomq_testkit::invariant::check_invariant;
use serde_json::{Value, json};
use std::time::{Duration, SystemTime};

/// Writes job `id` blocked, as `FLOW.ADD` of a job with dependencies will.
async fn blocked_job(h: &Harness, q: &Queue<Value>, id: &str) -> JobId {
    let id = JobId::new(id).unwrap();
    let mut conn = h.raw(q).await;
    let _: () = redis::pipe()
        .cmd("HSET")
        .arg(q.keys().job(&id))
        .arg(&["state", "blocked", "payload", "{}", "created_at", "1"])
        .ignore()
        .cmd("ZADD")
        .arg(q.keys().state_set(JobState::Blocked))
        .arg(1)
        .arg(id.as_str())
        .ignore()
        .query_async(&mut conn)
        .await
        .unwrap();
    id
}

#[echomq_testkit::case]
pub(super) async fn counts_and_lists_name_the_blocked_jobs(h: &Harness) {
    let q = h.queue::<Value>("blocked_counts");
    q.enqueue(json!(1)).await.unwrap();
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.blocked, counts.pending), (0, 1), "none yet");
    let a = blocked_job(h, &q, "a").await;
    blocked_job(h, &q, "b").await;
    let counts = q.admin().counts().await.unwrap();
    assert_eq!(counts.blocked, 2);
    assert_eq!(counts.get(JobState::Blocked), 2);
    assert_eq!(counts.total(), 3);
    let (page, total) = q.jobs().list(JobState::Blocked, 0, 10).await.unwrap();
    assert_eq!(total, 2);
    assert_eq!(page[0].id, a);
    assert_eq!(page[0].state, JobState::Blocked);
    let record = q.jobs().get(&a).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Blocked);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn requeue_refuses_a_blocked_job(h: &Harness) {
    let q = h.queue::<Value>("blocked_requeue");
    let a = blocked_job(h, &q, "a").await;
    let err = q.jobs().requeue(&a).await.unwrap_err();
    assert_eq!(refusal(err), Refusal::BadState(JobState::Blocked));
    assert_eq!(q.admin().counts().await.unwrap().blocked, 1);
}

#[echomq_testkit::case]
pub(super) async fn reschedule_refuses_a_blocked_job(h: &Harness) {
    let q = h.queue::<Value>("blocked_reschedule");
    let a = blocked_job(h, &q, "a").await;
    let at = SystemTime::now() + Duration::from_secs(60);
    let err = q.jobs().reschedule(&a, at).await.unwrap_err();
    assert_eq!(refusal(err), Refusal::BadState(JobState::Blocked));
    assert_eq!(q.admin().counts().await.unwrap().blocked, 1);
}

#[echomq_testkit::case]
pub(super) async fn obliterate_deletes_the_blocked_jobs(h: &Harness) {
    let q = h.queue::<Value>("blocked_obliterate");
    q.enqueue(json!(1)).await.unwrap();
    let a = blocked_job(h, &q, "a").await;
    // A blocked job is unfinished: its waiter hears it was removed.
    let wait = tokio::spawn({
        let (q, a) = (q.clone(), a.clone());
        async move { q.outcome::<Value>(&a, Duration::from_secs(20)).await }
    });
    marked_waited(h.raw(&q).await, &q, std::slice::from_ref(&a)).await;
    q.admin().pause().await.unwrap();
    q.admin().obliterate(IfActive::Refuse).await.unwrap();
    assert_eq!(q.jobs().get(&a).await.unwrap(), None);
    assert_eq!(q.admin().counts().await.unwrap().total(), 0);
    assert_eq!(wait.await.unwrap().unwrap(), Outcome::Removed);
}

#[echomq_testkit::case]
pub(super) async fn the_invariant_sees_a_blocked_member_in_another_state(h: &Harness) {
    let q = h.queue::<Value>("blocked_invariant");
    let a = blocked_job(h, &q, "a").await;
    let _: () = redis::cmd("HSET")
        .arg(q.keys().job(&a))
        .arg(&["state", "pending"])
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let problems = check_invariant(h.urls(), q.keys()).await.unwrap_err();
    assert!(problems.contains("blocked"), "{problems}");
}

/// Starts a wait on `id` and returns it once the server knows of it.
async fn waiting_on(
    h: &Harness,
    q: &Queue<Value>,
    id: &JobId,
) -> tokio::task::JoinHandle<echomq::Result<Outcome<Value>>> {
    let wait = tokio::spawn({
        let (q, id) = (q.clone(), id.clone());
        async move { q.outcome::<Value>(&id, Duration::from_secs(20)).await }
    });
    marked_waited(h.raw(q).await, q, std::slice::from_ref(id)).await;
    wait
}

#[echomq_testkit::case]
pub(super) async fn cancel_cancels_a_blocked_job(h: &Harness) {
    let q = h.queue::<Value>("blocked_cancel");
    let a = blocked_job(h, &q, "a").await;
    let wait = waiting_on(h, &q, &a).await;
    assert_eq!(q.jobs().cancel(&a).await.unwrap(), CancelOutcome::Cancelled);
    let record = q.jobs().get(&a).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Cancelled);
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.blocked, counts.cancelled), (0, 1));
    assert_eq!(wait.await.unwrap().unwrap(), Outcome::Cancelled);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn remove_deletes_a_blocked_job_without_force(h: &Harness) {
    let q = h.queue::<Value>("blocked_remove");
    let a = blocked_job(h, &q, "a").await;
    let wait = waiting_on(h, &q, &a).await;
    assert!(q.jobs().remove(&a, IfActive::Refuse).await.unwrap());
    assert_eq!(q.jobs().get(&a).await.unwrap(), None);
    assert_eq!(q.admin().counts().await.unwrap().total(), 0);
    assert_eq!(wait.await.unwrap().unwrap(), Outcome::Removed);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn drain_deletes_blocked_jobs_only_when_asked(h: &Harness) {
    let q = h.queue::<Value>("blocked_drain");
    q.enqueue(json!(1)).await.unwrap();
    let a = blocked_job(h, &q, "a").await;
    blocked_job(h, &q, "b").await;
    let wait = waiting_on(h, &q, &a).await;
    assert_eq!(
        q.admin()
            .drain(DrainScope::PENDING_AND_SCHEDULED)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        q.admin().counts().await.unwrap().blocked,
        2,
        "not asked for"
    );
    assert_eq!(q.admin().drain(DrainScope::WAITING).await.unwrap(), 2);
    assert_eq!(q.admin().counts().await.unwrap().total(), 0);
    assert_eq!(q.jobs().get(&a).await.unwrap(), None);
    assert_eq!(wait.await.unwrap().unwrap(), Outcome::Removed);
    h.check(&q).await;
}
