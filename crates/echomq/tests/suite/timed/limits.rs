//! The time limit on both wires: CLAIM caps the lease and answers seven
//! elements on a timed queue, EXTEND is capped and then refused
//! `TIMELIMIT`, STALLED.CHECK fails a job at its limit; and the worker's
//! timer, its handling of `TIMELIMIT`, and its sweep.

use super::common::{Harness, error_text, events, job_field, raw_call, server_now};
use echomq::{CancelReason, JobContext, JobError, JobId, JobState, NewJob, Queue, Refusal, Worker};
use echomq_protocol::backoff::Backoff;
use echomq_testkit::wait_for;
use redis::Value as Resp;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(10);
const LEASE: Duration = Duration::from_secs(30);

/// A job hash's `field`, read raw.
async fn field<T>(h: &Harness, q: &Queue<T>, id: &str, field: &str) -> Option<String> {
    job_field(h, q, &JobId::new(id).unwrap(), field).await
}

/// The job's lease deadline (its score in `active`).
async fn lease_ends<T>(h: &Harness, q: &Queue<T>, id: &str) -> Option<u64> {
    let score: Option<f64> = redis::cmd("ZSCORE")
        .arg(q.keys().state_set(JobState::Active))
        .arg(id)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
    score.map(|score| score as u64)
}

/// The entries of a raw CLAIM reply, each as its elements.
fn entries(reply: Resp) -> Vec<Vec<Resp>> {
    let Resp::Array(entries) = reply else {
        panic!("CLAIM answered {reply:?}");
    };
    entries
        .into_iter()
        .filter_map(|entry| match entry {
            Resp::Array(items) => Some(items),
            _ => None,
        })
        .collect()
}

/// Enqueues job `id` with `limit` and claims it raw under a 30 s lease;
/// its token and `claimed_at`.
async fn claim_limited(h: &Harness, q: &Queue<Value>, id: &str, limit: Duration) -> (u64, u64) {
    q.enqueue(NewJob::new(json!(1)).id(id).unwrap().time_limit(limit))
        .await
        .unwrap();
    let claimed = q.claim_one("w", LEASE).await.unwrap().expect("the job");
    assert_eq!(claimed.time_limit(), Some(limit));
    let claimed_at = field(h, q, id, "claimed_at")
        .await
        .unwrap()
        .parse()
        .unwrap();
    (claimed.token, claimed_at)
}

/// Waits until the server's clock passes `at` (ms).
async fn server_passes<T>(h: &Harness, q: &Queue<T>, at: u64) {
    wait_for("the server's clock to pass the limit", BOUND, || async {
        server_now(h, q).await > at
    })
    .await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn claim_caps_the_lease_at_the_limit_and_answers_seven_elements(h: &Harness) {
    let q = h.queue::<Value>("limit_claim");
    q.enqueue(NewJob::new(json!(0)).id("before").unwrap())
        .await
        .unwrap();
    // An untimed queue answers five elements.
    let reply = raw_call(h, &q, "claim", &["w", "30000"]).await.unwrap();
    assert_eq!(entries(reply)[0].len(), 5);
    q.enqueue(
        NewJob::new(json!(1))
            .id("limited")
            .unwrap()
            .time_limit(Duration::from_millis(1500)),
    )
    .await
    .unwrap();
    q.enqueue(NewJob::new(json!(2)).id("plain").unwrap())
        .await
        .unwrap();
    let reply = raw_call(h, &q, "claim", &["w", "30000", "COUNT", "2"])
        .await
        .unwrap();
    let entries = entries(reply);
    assert_eq!(entries.len(), 2);
    assert_eq!(
        entries[0][5..],
        [Resp::BulkString(Vec::new()), Resp::Int(1500)]
    );
    assert_eq!(
        entries[1][5..],
        [Resp::BulkString(Vec::new()), Resp::Int(0)]
    );
    let claimed_at: u64 = field(h, &q, "limited", "claimed_at")
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(lease_ends(h, &q, "limited").await, Some(claimed_at + 1500));
    assert_eq!(lease_ends(h, &q, "plain").await, Some(claimed_at + 30_000));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn extend_is_capped_at_the_time_limit(h: &Harness) {
    let q = h.queue::<Value>("limit_extend");
    let limit = Duration::from_secs(60);
    let (token, claimed_at) = claim_limited(h, &q, "j", limit).await;
    let id = JobId::new("j").unwrap();
    let extended = q
        .extend(&id, token, Duration::from_secs(600))
        .await
        .unwrap();
    assert_eq!(extended.deadline_ms, claimed_at + 60_000);
    assert_eq!(lease_ends(h, &q, "j").await, Some(claimed_at + 60_000));
    // A shorter lease stays as asked.
    let extended = q.extend(&id, token, Duration::from_secs(5)).await.unwrap();
    assert!(extended.deadline_ms < claimed_at + 60_000);
}

#[echomq_testkit::case(cluster)]
pub(super) async fn extend_past_the_time_limit_is_refused_timelimit(h: &Harness) {
    let q = h.queue::<Value>("limit_extend_late");
    let (token, claimed_at) = claim_limited(h, &q, "j", Duration::from_millis(200)).await;
    server_passes(h, &q, claimed_at + 200).await;
    let before = lease_ends(h, &q, "j").await;
    let err = raw_call(h, &q, "extend", &["j", &token.to_string(), "30000"])
        .await
        .unwrap_err();
    assert_eq!(error_text(&err), "TIMELIMIT");
    assert_eq!(lease_ends(h, &q, "j").await, before, "nothing written");
    let err = q
        .extend(&JobId::new("j").unwrap(), token, LEASE)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, echomq::Error::Refused(r) if r.reason == Refusal::TimeLimit),
        "{err:?}"
    );
    // A stale token meets the fence first.
    let err = raw_call(h, &q, "extend", &["j", &(token + 1).to_string(), "30000"])
        .await
        .unwrap_err();
    assert_eq!(error_text(&err), "NOTACTIVE");
}

#[echomq_testkit::case(cluster)]
pub(super) async fn the_sweep_fails_a_job_at_its_limit_and_retries_it_after_retry_in(h: &Harness) {
    let q = h.queue::<Value>("limit_sweep");
    let (_, claimed_at) = claim_limited(h, &q, "j", Duration::from_millis(200)).await;
    server_passes(h, &q, claimed_at + 200).await;
    let retry_in = [Duration::from_secs(60), Duration::from_secs(120)];
    let swept = q.sweep_stalled_retrying(5, 100, &retry_in).await.unwrap();
    assert_eq!((swept.recovered, swept.dead, swept.timed_out), (0, 0, 1));
    let record = q
        .jobs()
        .get(&JobId::new("j").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.state, JobState::Scheduled);
    assert_eq!(record.error.as_deref(), Some("time limit 200ms exceeded"));
    assert_eq!((record.failures, record.stalls), (1, 0));
    let run_at: u64 = field(h, &q, "j", "run_at").await.unwrap().parse().unwrap();
    let now = server_now(h, &q).await;
    assert!(
        (now + 50_000..=now + 60_000).contains(&run_at),
        "after RETRY_IN's first delay"
    );
    let retried = events(h, &q).await.into_iter().any(|event| {
        event.windows(2).any(|w| w == ["event", "retried"])
            && event.contains(&"time limit 200ms exceeded".to_string())
    });
    assert!(retried, "a retried event with the error");
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn the_sweep_dead_letters_a_job_at_its_limit_out_of_attempts(h: &Harness) {
    let q = h.queue::<Value>("limit_sweep_dead");
    q.enqueue(
        NewJob::new(json!(1))
            .id("j")
            .unwrap()
            .attempts(1)
            .time_limit(Duration::from_secs(1)),
    )
    .await
    .unwrap();
    q.claim_one("w", LEASE).await.unwrap().expect("the job");
    let claimed_at: u64 = field(h, &q, "j", "claimed_at")
        .await
        .unwrap()
        .parse()
        .unwrap();
    server_passes(h, &q, claimed_at + 1000).await;
    let swept = q.sweep_stalled(5, 100).await.unwrap();
    assert_eq!(
        (swept.dead, swept.timed_out),
        (0, 1),
        "dead counts stalls only"
    );
    let record = q
        .jobs()
        .get(&JobId::new("j").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.state, JobState::Dead);
    assert_eq!(record.error.as_deref(), Some("time limit 1s exceeded"));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_lease_that_ran_out_before_the_limit_is_a_stall(h: &Harness) {
    let q = h.queue::<Value>("limit_stall");
    q.enqueue(
        NewJob::new(json!(1))
            .id("j")
            .unwrap()
            .time_limit(Duration::from_secs(600)),
    )
    .await
    .unwrap();
    q.claim_one("w", Duration::from_millis(100))
        .await
        .unwrap()
        .expect("the job");
    let ends = lease_ends(h, &q, "j").await.unwrap();
    server_passes(h, &q, ends).await;
    let swept = q.sweep_stalled(5, 100).await.unwrap();
    assert_eq!((swept.recovered, swept.timed_out), (1, 0));
    let record = q
        .jobs()
        .get(&JobId::new("j").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (record.state, record.stalls, record.failures),
        (JobState::Pending, 1, 0)
    );
}

#[echomq_testkit::case]
pub(super) async fn retry_in_without_a_delay_is_refused_badarg_retry_in(h: &Harness) {
    let q = h.queue::<Value>("limit_retry_in");
    for args in [
        &["5", "RETRY_IN"][..],
        &["5", "RETRY_IN", "10", "x"],
        &["5", "RETRY_IN", "-1"],
    ] {
        let err = raw_call(h, &q, "stalled_check", args).await.unwrap_err();
        assert_eq!(error_text(&err), "BADARG retry_in", "{args:?}");
    }
    let err = raw_call(
        h,
        &q,
        "stalled_check",
        &["5", "RETRY_IN", "10", "LIMIT", "5"],
    )
    .await
    .unwrap_err();
    assert_eq!(error_text(&err), "BADARG retry_in", "RETRY_IN comes last");
}

#[echomq_testkit::case]
pub(super) async fn a_handler_that_ignores_cancellation_is_failed_at_its_limit_by_the_sweep(
    h: &Harness,
) {
    let q = h.queue::<Value>("limit_ignored");
    let release = Arc::new(tokio::sync::Notify::new());
    let held = release.clone();
    let worker = Worker::new(q.clone(), move |_ctx: JobContext<Value>| {
        let held = held.clone();
        // Ignores its token: returns only when the test lets it.
        async move {
            held.notified().await;
            Ok::<_, JobError>(())
        }
    })
    .lease(Duration::from_secs(3))
    .stalled_interval(Duration::from_millis(100))
    .start();
    let job = q
        .enqueue(
            NewJob::new(json!(1))
                .attempts(1)
                .time_limit(Duration::from_millis(300)),
        )
        .await
        .unwrap();
    wait_for("the sweep to fail the job at its limit", BOUND, || async {
        let record = q.jobs().get(&job.id).await.unwrap().unwrap();
        record.state == JobState::Dead
    })
    .await;
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(record.error.as_deref(), Some("time limit 300ms exceeded"));
    release.notify_waiters();
    worker.shutdown(Duration::from_secs(1)).await;
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(
        record.state,
        JobState::Dead,
        "the late completion is refused"
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_handler_that_honours_its_limit_fails_with_the_limit_error_and_retries(
    h: &Harness,
) {
    let q = h.queue::<Value>("limit_honoured");
    let reasons = Arc::new(Mutex::new(Vec::new()));
    let seen = reasons.clone();
    let worker = Worker::new(q.clone(), move |ctx: JobContext<Value>| {
        let seen = seen.clone();
        async move {
            if ctx.attempt == 1 {
                ctx.cancelled().await;
                seen.lock().unwrap().push(ctx.cancel_reason());
                return Err(JobError::Cancelled);
            }
            Ok(())
        }
    })
    // Neither a checkpoint (every 20 s) nor a sweep (every 600 s) comes
    // within the bound: only the worker's own timer stops the run.
    .lease(Duration::from_secs(60))
    .stalled_interval(Duration::from_secs(600))
    .backoff(Backoff::fixed(Duration::ZERO))
    .start();
    let job = q
        .enqueue(NewJob::new(json!(1)).time_limit(Duration::from_millis(300)))
        .await
        .unwrap();
    wait_for("the retry to complete", BOUND, || async {
        q.jobs().get(&job.id).await.unwrap().unwrap().state == JobState::Completed
    })
    .await;
    worker.shutdown(Duration::from_secs(1)).await;
    assert_eq!(*reasons.lock().unwrap(), [Some(CancelReason::TimeLimit)]);
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(record.failures, 1);
    assert_eq!(record.error.as_deref(), Some("time limit 300ms exceeded"));
    h.check(&q).await;
}
