//! Start-by deadlines checked by the claim itself, on both wires: a job
//! past its `start_by` is never handed out but expired (→ `cancelled`,
//! `reason` expired, event `expired`, `<id> cancelled` to a waiter), and
//! the claim fills its count from the jobs behind it, on a queue with and
//! without groups, in a LIFO head, for a due job it promotes, and through
//! the claim riding on a worker's completions.

use super::common::{Harness, events, job_field as field};
use super::expiry::{
    BOUND, SHORT, age_deadline, deadline_members, deadline_passes, expired_event,
    scheduled_an_hour_on, start_by, state_of, waiting,
};
use echomq::{JobContext, JobError, JobId, JobState, NewJob, Outcome, Queue, Worker};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Enqueues `n` jobs whose deadline passes within the test (the queue is
/// paused first, so none is claimed) and waits until it has passed.
async fn expired_jobs(
    h: &Harness,
    q: &Queue<Value>,
    n: usize,
    job: impl Fn() -> NewJob<Value>,
) -> Vec<JobId> {
    q.admin().pause().await.unwrap();
    let mut ids = Vec::new();
    for _ in 0..n {
        ids.push(q.enqueue(job().start_within(SHORT)).await.unwrap().id);
    }
    deadline_passes(h, q, ids.last().expect("a job")).await;
    ids
}

/// Asserts each of `ids` was expired: cancelled, reason expired, out of
/// `deadlines`, an `expired` event naming it.
async fn all_expired(h: &Harness, q: &Queue<Value>, ids: &[JobId]) {
    let members = deadline_members(h, q).await;
    for id in ids {
        assert_eq!(state_of(q, id).await, JobState::Cancelled, "{id}");
        assert_eq!(field(h, q, id, "reason").await.as_deref(), Some("expired"));
        assert!(!members.contains(&id.to_string()), "{id} out of deadlines");
        let by = start_by(h, q, id).await;
        assert!(
            expired_event(h, q, id, by).await,
            "an expired event for {id}"
        );
    }
}

/// The ids of `claimed`.
fn ids_of<T>(claimed: &[echomq::Claimed<T>]) -> Vec<JobId> {
    claimed.iter().map(|job| job.id.clone()).collect()
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_job_past_its_deadline_in_a_paused_queue_expires_when_resumed_after_it(
    h: &Harness,
) {
    let q = h.queue::<Value>("claim_expiry_paused");
    let late = expired_jobs(h, &q, 1, || NewJob::new(json!(1))).await;
    let wait = waiting(h, &q, &late[0]).await;
    let next = q.enqueue(json!(2)).await.unwrap();
    q.admin().resume().await.unwrap();

    let claimed = q.claim_one("w", BOUND).await.unwrap().expect("a job");
    assert_eq!(claimed.id, next.id, "the job behind the expired one");
    all_expired(h, &q, &late).await;
    assert_eq!(wait.await.unwrap().unwrap(), Outcome::Cancelled);
    let counts = q.admin().counts().await.unwrap();
    assert_eq!(
        (
            counts.get(JobState::Pending),
            counts.get(JobState::Cancelled)
        ),
        (0, 1)
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_claim_fills_its_count_past_expired_heads_and_drops_claimed_members(
    h: &Harness,
) {
    let q = h.queue::<Value>("claim_expiry_fill");
    let late = expired_jobs(h, &q, 5, || NewJob::new(json!(1))).await;
    let far = Duration::from_secs(3600);
    let mut live = Vec::new();
    for i in 0..3 {
        live.push(
            q.enqueue(NewJob::new(json!(i)).start_within(far))
                .await
                .unwrap()
                .id,
        );
    }
    q.admin().resume().await.unwrap();

    let claimed = q.claim("w", BOUND, 3).await.unwrap();
    assert_eq!(ids_of(&claimed), live, "the three live jobs, in order");
    all_expired(h, &q, &late).await;
    assert!(
        deadline_members(h, &q).await.is_empty(),
        "claimed jobs leave deadlines too"
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn expired_lifo_heads_are_passed_over_newest_first(h: &Harness) {
    let q = h.queue::<Value>("claim_expiry_lifo");
    let older = q.enqueue(json!("fifo")).await.unwrap();
    let late = expired_jobs(h, &q, 2, || NewJob::new(json!("lifo")).lifo()).await;
    let fresh = q.enqueue(NewJob::new(json!("new")).lifo()).await.unwrap();
    q.admin().resume().await.unwrap();

    let claimed = q.claim("w", BOUND, 2).await.unwrap();
    assert_eq!(ids_of(&claimed), vec![fresh.id, older.id]);
    all_expired(h, &q, &late).await;
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_due_job_past_its_deadline_is_promoted_then_expired_not_claimed(h: &Harness) {
    let q = h.queue::<Value>("claim_expiry_due");
    let id = scheduled_an_hour_on(&q).await;
    // Due now, and its deadline one second ago.
    let past = age_deadline(h, &q, &id).await;
    let _: () = redis::cmd("ZADD")
        .arg(q.keys().schedule())
        .arg(past - 1)
        .arg(id.as_str())
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();

    assert!(
        q.claim("w", BOUND, 1).await.unwrap().is_empty(),
        "nothing handed out"
    );
    all_expired(h, &q, &[id]).await;
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn an_expired_head_of_a_group_lane_counts_no_start(h: &Harness) {
    let q = h.queue::<Value>("claim_expiry_group");
    let group = q.admin().group("g").unwrap();
    group.set_concurrency_cap(1).await.unwrap();
    group
        .set_rate_limit(5, Duration::from_secs(3600))
        .await
        .unwrap();
    let late = expired_jobs(h, &q, 2, || NewJob::new(json!(1)).group("g")).await;
    let next = q.enqueue(NewJob::new(json!(2)).group("g")).await.unwrap();
    let other = q.enqueue(NewJob::new(json!(3)).group("h")).await.unwrap();
    q.admin().resume().await.unwrap();

    let claimed = q.claim("w", BOUND, 2).await.unwrap();
    assert_eq!(
        ids_of(&claimed),
        vec![next.id, other.id],
        "g's next head, then h"
    );
    all_expired(h, &q, &late).await;
    let counts = group.counts().await.unwrap();
    assert_eq!((counts.pending, counts.active), (0, 1), "one start counted");
    let used: Option<String> = redis::cmd("HGET")
        .arg(q.keys().group("g"))
        .arg("limit_used")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    assert_eq!(used.as_deref(), Some("1"), "one start in the window");
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_claim_expires_at_most_a_thousand_jobs_and_the_next_goes_on(h: &Harness) {
    let q = h.queue::<Value>("claim_expiry_cap");
    q.admin().pause().await.unwrap();
    let jobs: Vec<NewJob<Value>> = (0..1005)
        .map(|i| NewJob::new(json!(i)).start_within(SHORT))
        .collect();
    let late = q.enqueue_bulk(jobs).await.unwrap();
    deadline_passes(h, &q, &late.last().expect("a job").id).await;
    let live = q.enqueue(json!("live")).await.unwrap();
    q.admin().resume().await.unwrap();

    assert!(
        q.claim("w", BOUND, 1).await.unwrap().is_empty(),
        "the cap met first"
    );
    let cancelled = q.admin().counts().await.unwrap().get(JobState::Cancelled);
    assert_eq!(cancelled, 1000, "a thousand expired by one claim");
    let claimed = q
        .claim_one("w", BOUND)
        .await
        .unwrap()
        .expect("the live job");
    assert_eq!(claimed.id, live.id);
    let counts = q.admin().counts().await.unwrap();
    assert_eq!(counts.get(JobState::Cancelled), 1005);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_wrong_type_key_behind_an_expired_head_refuses_the_claim_whole(h: &Harness) {
    let q = h.queue::<Value>("claim_expiry_wrongtype");
    let late = expired_jobs(h, &q, 1, || NewJob::new(json!(1))).await;
    let broken = q.enqueue(json!(2)).await.unwrap();
    let mut raw = h.raw(&q).await;
    let key = q.keys().job(&broken.id);
    let _: () = redis::cmd("DEL")
        .arg(&key)
        .query_async(&mut raw)
        .await
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg(&key)
        .arg("x")
        .query_async(&mut raw)
        .await
        .unwrap();
    q.admin().resume().await.unwrap();
    let before = events(h, &q).await.len();

    let refused = q.claim("w", BOUND, 1).await.unwrap_err();
    assert!(refused.to_string().contains("WRONGTYPE"), "{refused}");
    assert_eq!(
        state_of(&q, &late[0]).await,
        JobState::Pending,
        "nothing written"
    );
    assert_eq!(field(h, &q, &late[0], "reason").await, None);
    assert_eq!(events(h, &q).await.len(), before, "no event");
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_worker_never_runs_an_expired_job(h: &Harness) {
    let q = h.queue::<Value>("claim_expiry_worker");
    let late = expired_jobs(h, &q, 20, || NewJob::new(json!("late"))).await;
    for i in 0..20 {
        q.enqueue(json!(i)).await.unwrap();
    }
    let ran = Arc::new(Mutex::new(Vec::new()));
    let worker = Worker::new(q.clone(), {
        let ran = ran.clone();
        move |job: JobContext<Value>| {
            let ran = ran.clone();
            async move {
                ran.lock().unwrap().push(job.payload.clone());
                Ok::<_, JobError>(json!(null))
            }
        }
    })
    .concurrency(4)
    .start();
    q.admin().resume().await.unwrap();
    wait_for("the live jobs to complete", BOUND, || async {
        q.admin().counts().await.unwrap().completed == 20
    })
    .await;
    worker.shutdown(BOUND).await;
    let ran = ran.lock().unwrap().clone();
    assert_eq!(ran.len(), 20);
    assert!(!ran.contains(&json!("late")), "no expired job ran");
    all_expired(h, &q, &late).await;
    h.check(&q).await;
}
