//! Worker cases of the time controls: on-time starts, backoff, delay.

use super::common::{Harness, blocked_clients, event_entries};
use echomq::{Backoff, Jitter, JobContext, JobError, JobState, NewJob, Worker};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::sync::mpsc;

const BOUND: Duration = Duration::from_secs(10);

/// The `retried` events' delays, in order.
async fn retry_delays(h: &Harness, q: &echomq::Queue<Value>) -> Vec<u64> {
    event_entries(h, q)
        .await
        .into_iter()
        .filter(|(_, fields)| fields[1] == "retried")
        .map(|(_, fields)| fields[7].parse().unwrap())
        .collect()
}

/// A worker (idle wait 60 s, so only wake-ups start jobs) that reports the
/// id of every job it starts.
fn reporting_worker(
    q: &echomq::Queue<Value>,
) -> (echomq::WorkerHandle, mpsc::UnboundedReceiver<echomq::JobId>) {
    let (started, starts) = mpsc::unbounded_channel();
    let worker = Worker::new(q.clone(), move |job: JobContext<Value>| {
        let started = started.clone();
        async move {
            started.send(job.id).unwrap();
            Ok::<_, JobError>(())
        }
    })
    .idle_wait(Duration::from_secs(60))
    .start();
    (worker, starts)
}

pub(super) async fn an_idle_worker_starts_a_job_scheduled_300_ms_ahead_on_time(h: &Harness) {
    let q = h.queue::<Value>("on_time");
    let (worker, mut starts) = reporting_worker(&q);
    wait_for("the worker to go idle", BOUND, || async {
        blocked_clients(h, &q).await == 1
    })
    .await;
    let job = q
        .enqueue(NewJob::new(json!("on time")).after(Duration::from_millis(300)))
        .await
        .unwrap();
    let ran = tokio::time::timeout(BOUND, starts.recv())
        .await
        .expect("the job started");
    assert_eq!(ran.as_ref(), Some(&job.id));
    worker.shutdown(BOUND).await;
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    let (run_at, claimed_at) = (record.run_at.unwrap(), record.claimed_at.unwrap());
    assert!(
        claimed_at >= run_at,
        "claimed at {claimed_at}, before its run-at {run_at}"
    );
    // A short bound, loose enough for a loaded CI machine; `emq bench
    // --lateness` measures the real figure.
    assert!(
        claimed_at - run_at < 200,
        "claimed {} ms after its run-at",
        claimed_at - run_at
    );
}

pub(super) async fn an_earlier_job_wakes_a_worker_sleeping_towards_a_later_one(h: &Harness) {
    let q = h.queue::<Value>("earlier_wakes");
    let (worker, mut starts) = reporting_worker(&q);
    q.enqueue(NewJob::new(json!("late")).after(Duration::from_secs(3600)))
        .await
        .unwrap();
    wait_for("the worker to go idle", BOUND, || async {
        blocked_clients(h, &q).await == 1
    })
    .await;
    let early = q
        .enqueue(NewJob::new(json!("early")).after(Duration::from_millis(200)))
        .await
        .unwrap();
    let ran = tokio::time::timeout(BOUND, starts.recv())
        .await
        .expect("the early job started");
    assert_eq!(ran, Some(early.id.clone()));
    worker.shutdown(BOUND).await;
    let record = q.jobs().get(&early.id).await.unwrap().unwrap();
    assert!(record.claimed_at.unwrap() >= record.run_at.unwrap());
}

pub(super) async fn retries_follow_the_backoff_curve(h: &Harness) {
    let q = h.queue::<Value>("backoff_curve");
    let job = q.enqueue(NewJob::new(json!(1)).attempts(3)).await.unwrap();
    let worker = Worker::new(q.clone(), |job: JobContext<Value>| async move {
        if job.attempt < 3 {
            return Err(JobError::retry("not yet"));
        }
        Ok(job.attempt)
    })
    .backoff(Backoff::exponential(
        Duration::from_millis(100),
        2,
        Duration::from_secs(10),
    ))
    .start();
    wait_for("completion on the third attempt", BOUND, || async {
        q.jobs().get(&job.id).await.unwrap().unwrap().state == JobState::Completed
    })
    .await;
    worker.shutdown(BOUND).await;
    assert_eq!(
        retry_delays(h, &q).await,
        [100, 200],
        "RETRY_IN follows base·factor^(failures−1)"
    );
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!((record.failures, record.result.as_deref()), (2, Some("3")));
    // The last attempt could not start before its retry's run-at.
    assert!(record.claimed_at.unwrap() >= record.run_at.unwrap());
}

pub(super) async fn jittered_retries_stay_inside_their_bounds(h: &Harness) {
    let q = h.queue::<Value>("backoff_jitter");
    q.enqueue_bulk((0..20).map(|n| NewJob::new(json!(n)).attempts(2)))
        .await
        .unwrap();
    let worker = Worker::new(q.clone(), |job: JobContext<Value>| async move {
        if job.attempt == 1 {
            return Err(JobError::retry("first attempt fails"));
        }
        Ok(())
    })
    .concurrency(20)
    .backoff(Backoff::fixed(Duration::from_millis(200)).jitter(Jitter::Equal))
    .start();
    wait_for("every job to complete", BOUND, || async {
        q.admin().counts().await.unwrap().completed == 20
    })
    .await;
    worker.shutdown(BOUND).await;
    let delays = retry_delays(h, &q).await;
    assert_eq!(delays.len(), 20);
    assert!(
        delays.iter().all(|d| (100..=200).contains(d)),
        "equal jitter keeps delays in [100, 200]: {delays:?}"
    );
    assert!(
        delays.iter().any(|d| *d != delays[0]),
        "jitter varies the delays: {delays:?}"
    );
}

pub(super) async fn a_handler_delay_keeps_the_attempt_budget(h: &Harness) {
    let q = h.queue::<Value>("handler_delay");
    let job = q.enqueue(NewJob::new(json!(1)).attempts(1)).await.unwrap();
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let worker = Worker::new(q.clone(), move |ctx: JobContext<Value>| {
        let runs = runs.clone();
        async move {
            let claims_so_far = runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            if claims_so_far < 3 {
                return ctx.delay(Duration::from_millis(50));
            }
            Ok(ctx.attempt)
        }
    })
    .start();
    wait_for("completion after two delays", BOUND, || async {
        q.jobs().get(&job.id).await.unwrap().unwrap().state == JobState::Completed
    })
    .await;
    let stats = worker.shutdown(BOUND).await;
    assert_eq!((stats.delayed, stats.completed, stats.retried), (2, 1, 0));
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(
        (record.failures, record.claims, record.max_attempts),
        (0, 3, 1)
    );
    assert_eq!(
        record.result.as_deref(),
        Some("1"),
        "still the first attempt"
    );
    h.check(&q).await;
}
