//! Start-by deadlines on both wires: the sweep (STALLED.CHECK) expires a
//! waiting job past its deadline (→ `cancelled`, `reason` expired, event
//! `expired`, `<id> cancelled` to a waiter) and drops stale members of
//! `deadlines`.

use super::common::{Harness, events, job_field as field, server_now};
use echomq::{FailAction, JobId, JobState, NewJob, Outcome, Queue};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::time::Duration;

pub(super) const BOUND: Duration = Duration::from_secs(10);
/// A deadline short enough to pass within a test, long enough to enqueue.
pub(super) const SHORT: Duration = Duration::from_millis(300);

/// The `deadlines` set's members, in order.
pub(super) async fn deadline_members<T>(h: &Harness, q: &Queue<T>) -> Vec<String> {
    redis::cmd("ZRANGE")
        .arg(q.keys().deadlines())
        .arg(0)
        .arg(-1)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// The job's start_by (ms), read raw.
pub(super) async fn start_by<T>(h: &Harness, q: &Queue<T>, id: &JobId) -> u64 {
    field(h, q, id, "start_by").await.unwrap().parse().unwrap()
}

/// Waits until the server's clock passes the job's start_by.
pub(super) async fn deadline_passes<T>(h: &Harness, q: &Queue<T>, id: &JobId) {
    let by = start_by(h, q, id).await;
    wait_for("the server's clock to pass the deadline", BOUND, || async {
        server_now(h, q).await > by
    })
    .await;
}

/// Rewrites the job's start_by and its `deadlines` score to one second
/// ago on the server's clock (ages a deadline no enqueue could set).
pub(super) async fn age_deadline<T>(h: &Harness, q: &Queue<T>, id: &JobId) -> u64 {
    let past = server_now(h, q).await - 1000;
    let mut raw = h.raw(q).await;
    let _: () = redis::cmd("HSET")
        .arg(q.keys().job(id))
        .arg("start_by")
        .arg(past)
        .query_async(&mut raw)
        .await
        .unwrap();
    let _: () = redis::cmd("ZADD")
        .arg(q.keys().deadlines())
        .arg(past)
        .arg(id.as_str())
        .query_async(&mut raw)
        .await
        .unwrap();
    past
}

/// Starts a wait for `id` and returns once the server marked it waited.
pub(super) async fn waiting(
    h: &Harness,
    q: &Queue<Value>,
    id: &JobId,
) -> tokio::task::JoinHandle<echomq::Result<Outcome<Value>>> {
    let wait = tokio::spawn({
        let (q, id) = (q.clone(), id.clone());
        async move { q.outcome::<Value>(&id, BOUND).await }
    });
    wait_for("the job to be marked waited for", BOUND, || async {
        field(h, q, id, "waited").await.as_deref() == Some("1")
    })
    .await;
    wait
}

/// Whether an `expired` event names `id` and `start_by`.
pub(super) async fn expired_event<T>(h: &Harness, q: &Queue<T>, id: &JobId, start_by: u64) -> bool {
    events(h, q).await.iter().any(|event| {
        event.windows(2).any(|w| w == ["event", "expired"])
            && event.contains(&id.to_string())
            && event.contains(&start_by.to_string())
    })
}

/// The job's state, read by the client.
pub(super) async fn state_of(q: &Queue<Value>, id: &JobId) -> JobState {
    q.jobs().get(id).await.unwrap().expect("the job").state
}

#[echomq_testkit::case(cluster)]
pub(super) async fn the_sweep_expires_a_waiting_job_no_claim_reaches(h: &Harness) {
    let q = h.queue::<Value>("expiry_sweep");
    q.admin().pause().await.unwrap();
    let job = q
        .enqueue(NewJob::new(json!(1)).start_within(SHORT))
        .await
        .unwrap();
    let wait = waiting(h, &q, &job.id).await;
    deadline_passes(h, &q, &job.id).await;
    let by = start_by(h, &q, &job.id).await;

    let swept = q.sweep_stalled(5, 100).await.unwrap();
    assert_eq!(
        (swept.recovered, swept.dead, swept.timed_out, swept.expired),
        (0, 0, 0, 1)
    );
    assert_eq!(state_of(&q, &job.id).await, JobState::Cancelled);
    assert_eq!(
        field(h, &q, &job.id, "reason").await.as_deref(),
        Some("expired")
    );
    assert!(expired_event(h, &q, &job.id, by).await, "an expired event");
    assert!(deadline_members(h, &q).await.is_empty(), "out of deadlines");
    assert_eq!(wait.await.unwrap().unwrap(), Outcome::Cancelled);
    h.check(&q).await;

    let again = q.sweep_stalled(5, 100).await.unwrap();
    assert_eq!(again.expired, 0, "an expired job expires once");
}

/// A job scheduled an hour on, with its deadline two hours on; its id.
pub(super) async fn scheduled_an_hour_on(q: &Queue<Value>) -> JobId {
    let job = NewJob::new(json!(1))
        .after(Duration::from_secs(3600))
        .start_within(Duration::from_secs(7200));
    q.enqueue(job).await.unwrap().id
}

#[echomq_testkit::case(cluster)]
pub(super) async fn the_sweep_expires_a_scheduled_job_past_its_deadline(h: &Harness) {
    let q = h.queue::<Value>("expiry_scheduled");
    let id = scheduled_an_hour_on(&q).await;
    assert_eq!(state_of(&q, &id).await, JobState::Scheduled);
    let by = age_deadline(h, &q, &id).await;
    let swept = q.sweep_stalled(5, 100).await.unwrap();
    assert_eq!(swept.expired, 1);
    assert_eq!(state_of(&q, &id).await, JobState::Cancelled);
    assert!(expired_event(h, &q, &id, by).await, "an expired event");
    assert_eq!(
        q.admin().counts().await.unwrap().get(JobState::Scheduled),
        0,
        "out of the schedule"
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn the_sweep_drops_a_stale_member_and_writes_no_job(h: &Harness) {
    let q = h.queue::<Value>("expiry_stale");
    let job = q
        .enqueue(NewJob::new(json!(1)).start_within(SHORT))
        .await
        .unwrap();
    // CANCEL leaves a cancelled job's member, stale, as is one whose job
    // is gone.
    q.jobs().cancel(&job.id).await.unwrap();
    let mut raw = h.raw(&q).await;
    let _: () = redis::cmd("ZADD")
        .arg(q.keys().deadlines())
        .arg(1)
        .arg("gone")
        .query_async(&mut raw)
        .await
        .unwrap();
    deadline_passes(h, &q, &job.id).await;
    let swept = q.sweep_stalled(5, 100).await.unwrap();
    assert_eq!(swept.expired, 0, "nothing waiting expired");
    assert!(deadline_members(h, &q).await.is_empty(), "both dropped");
    assert_eq!(state_of(&q, &job.id).await, JobState::Cancelled);
    assert_eq!(field(h, &q, &job.id, "reason").await, None);
    let gone: u64 = redis::cmd("EXISTS")
        .arg(q.keys().job(&JobId::new("gone").unwrap()))
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(gone, 0, "no job written for a gone member");
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn an_expired_job_frees_its_dedup_key_and_keeps_its_group_lane_right(h: &Harness) {
    let q = h.queue::<Value>("expiry_dedup_group");
    q.admin().pause().await.unwrap();
    let job = q
        .enqueue(
            NewJob::new(json!(1))
                .dedup("k")
                .group("g")
                .start_within(SHORT),
        )
        .await
        .unwrap();
    let other = q.enqueue(NewJob::new(json!(2)).group("g")).await.unwrap();
    deadline_passes(h, &q, &job.id).await;
    assert_eq!(q.sweep_stalled(5, 100).await.unwrap().expired, 1);
    h.check(&q).await;
    let fresh = q.enqueue(NewJob::new(json!(3)).dedup("k")).await.unwrap();
    assert_ne!(fresh.id, job.id, "the key was released: a new job");
    q.admin().resume().await.unwrap();
    let first = q.claim_one("w", BOUND).await.unwrap().expect("a job");
    assert_eq!(first.id, other.id, "the lane's other job is claimable");
    h.check(&q).await;
}

/// Removes the job's member of `deadlines`, as a claim does once it takes
/// the job (or the sweep, finding it active).
async fn drop_member<T>(h: &Harness, q: &Queue<T>, id: &JobId) {
    let _: () = redis::cmd("ZREM")
        .arg(q.keys().deadlines())
        .arg(id.as_str())
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
}

/// The job's score in `deadlines`, if a member.
pub(super) async fn deadline_score<T>(h: &Harness, q: &Queue<T>, id: &JobId) -> Option<u64> {
    let score: Option<f64> = redis::cmd("ZSCORE")
        .arg(q.keys().deadlines())
        .arg(id.as_str())
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
    score.map(|score| score as u64)
}

/// Asserts the job is back in `deadlines` at its start_by after `path`,
/// and the invariant holds.
async fn deadline_back(h: &Harness, q: &Queue<Value>, id: &JobId, by: u64, path: &str) {
    assert_eq!(
        deadline_score(h, q, id).await,
        Some(by),
        "{path} puts the deadline back"
    );
    h.check(q).await;
}

/// Claims the queue's next job, which must be `id`, and checks the claim
/// took its member out of `deadlines`; its token.
async fn claimed_out_of_deadlines(h: &Harness, q: &Queue<Value>, id: &JobId) -> u64 {
    let job = q.claim_one("w", BOUND).await.unwrap().expect("the job");
    assert_eq!(&job.id, id);
    assert_eq!(deadline_score(h, q, id).await, None, "a claim drops it");
    job.token
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_retrying_job_keeps_its_deadline_and_expires_in_the_sweep(h: &Harness) {
    let q = h.queue::<Value>("expiry_retry");
    let job = q
        .enqueue(NewJob::new(json!(1)).start_within(SHORT))
        .await
        .unwrap();
    let by = start_by(h, &q, &job.id).await;
    let token = claimed_out_of_deadlines(h, &q, &job.id).await;
    q.fail(&job.id, token, "boom", FailAction::Retry(Duration::ZERO))
        .await
        .unwrap();
    assert_eq!(deadline_score(h, &q, &job.id).await, Some(by), "back in");
    h.check(&q).await;
    q.admin().pause().await.unwrap();
    deadline_passes(h, &q, &job.id).await;
    assert_eq!(q.sweep_stalled(5, 100).await.unwrap().expired, 1);
    assert_eq!(state_of(&q, &job.id).await, JobState::Cancelled);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn every_path_back_to_waiting_puts_the_deadline_back(h: &Harness) {
    let q = h.queue::<Value>("expiry_paths");
    let far = Duration::from_secs(3600);
    let job = q
        .enqueue(NewJob::new(json!(1)).start_within(far))
        .await
        .unwrap();
    let by = start_by(h, &q, &job.id).await;
    // FAIL with a delay: scheduled.
    let token = claimed_out_of_deadlines(h, &q, &job.id).await;
    q.fail(&job.id, token, "boom", FailAction::Retry(far))
        .await
        .unwrap();
    deadline_back(h, &q, &job.id, by, "a retry after a delay").await;
    // REQUEUE of a scheduled job, then of an active one.
    drop_member(h, &q, &job.id).await;
    q.jobs().requeue(&job.id).await.unwrap();
    deadline_back(h, &q, &job.id, by, "requeue").await;
    let token = claimed_out_of_deadlines(h, &q, &job.id).await;
    // DELAY by the holder.
    q.delay(&job.id, token, far).await.unwrap();
    deadline_back(h, &q, &job.id, by, "delay").await;
    q.jobs().requeue(&job.id).await.unwrap();
    let token = claimed_out_of_deadlines(h, &q, &job.id).await;
    // RATE_LIMITED: pending, no failure.
    q.fail(
        &job.id,
        token,
        "429",
        FailAction::RateLimited(Duration::from_millis(1)),
    )
    .await
    .unwrap();
    deadline_back(h, &q, &job.id, by, "rate limited").await;
    wait_for("the queue's hold to end", BOUND, || async {
        matches!(q.claim_one("w", BOUND).await, Ok(Some(_)))
    })
    .await;
    assert_eq!(deadline_score(h, &q, &job.id).await, None, "claimed");
    // Cancelled while active, then REPROCESS.
    let claimed = q.jobs().get(&job.id).await.unwrap().unwrap();
    let token = claimed.token().expect("active");
    q.fail(&job.id, token, "stop", FailAction::Cancelled)
        .await
        .unwrap();
    q.jobs().reprocess(&job.id).await.unwrap();
    deadline_back(h, &q, &job.id, by, "reprocess").await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_stalled_job_recovered_gets_its_deadline_back(h: &Harness) {
    let q = h.queue::<Value>("expiry_stalled");
    let job = q
        .enqueue(NewJob::new(json!(1)).start_within(Duration::from_secs(3600)))
        .await
        .unwrap();
    let by = start_by(h, &q, &job.id).await;
    let claimed = q
        .claim_one("w", Duration::from_millis(50))
        .await
        .unwrap()
        .expect("the job");
    assert_eq!(deadline_score(h, &q, &claimed.id).await, None, "claimed");
    let mut recovered = 0;
    wait_for(
        "the lease to lapse and the sweep to recover it",
        BOUND,
        || {
            let q = q.clone();
            async move {
                let swept = q.sweep_stalled(5, 100).await.unwrap();
                recovered += swept.recovered;
                recovered == 1
            }
        },
    )
    .await;
    assert_eq!(deadline_score(h, &q, &job.id).await, Some(by));
    h.check(&q).await;
}
