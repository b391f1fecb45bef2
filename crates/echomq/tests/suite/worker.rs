//! The worker runtime against a real server: outcomes, retries, panics,
//! idle wake-ups without polling, graceful shutdown, tracing spans.

use crate::common;

use common::{Harness, blocked_clients, command_stats, state_of};
use echomq::{JobContext, JobError, JobState, NewJob, Worker};
use echomq_testkit::wait_for;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, mpsc};

const BOUND: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_worker_completes_jobs_and_stores_their_results() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("worker_completes");
    let ids: Vec<_> = q
        .enqueue_bulk((0..100).map(|n| json!(n)))
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    let worker = Worker::new(q.clone(), |job: JobContext<Value>| async move {
        Ok::<_, JobError>(json!({"double": job.payload.as_i64().unwrap() * 2}))
    })
    .concurrency(8)
    .start();
    wait_for("100 completions", BOUND, || async {
        q.admin().counts().await.unwrap().completed == 100
    })
    .await;
    let stats = worker.shutdown(BOUND).await;
    assert_eq!((stats.claimed, stats.completed, stats.lost), (100, 100, 0));
    let record = q.jobs().get(&ids[21]).await.unwrap().unwrap();
    assert_eq!(record.result.as_deref(), Some(r#"{"double":42}"#));
    h.check(&q).await;
}

#[tokio::test]
async fn a_retryable_error_is_retried_and_the_next_attempt_completes() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("worker_retry");
    let job = q.enqueue(json!("flaky")).await.unwrap();
    let worker = Worker::new(q.clone(), |job: JobContext<Value>| async move {
        if job.attempt < 3 {
            return Err(JobError::retry(format!("attempt {} failed", job.attempt)));
        }
        Ok(job.attempt)
    })
    .retry_delay(Duration::ZERO)
    .start();
    wait_for("completion", BOUND, || async {
        state_of(&q, &job.id).await == Some(JobState::Completed)
    })
    .await;
    let stats = worker.shutdown(BOUND).await;
    assert_eq!((stats.retried, stats.completed), (2, 1));
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(
        (record.failures, record.claims, record.result.as_deref()),
        (2, 3, Some("3"))
    );
    assert_eq!(record.error.as_deref(), Some("attempt 2 failed"));
    h.check(&q).await;
}

#[tokio::test]
async fn a_permanent_error_dead_letters_at_once() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("worker_permanent");
    let job = q.enqueue(NewJob::new(json!(1)).attempts(5)).await.unwrap();
    let worker = Worker::new(q.clone(), |_job: JobContext<Value>| async move {
        Err::<(), _>(JobError::permanent("malformed address"))
    })
    .start();
    wait_for("dead letter", BOUND, || async {
        state_of(&q, &job.id).await == Some(JobState::Dead)
    })
    .await;
    assert_eq!(worker.shutdown(BOUND).await.dead, 1);
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(
        (record.failures, record.error.as_deref()),
        (1, Some("malformed address"))
    );
}

#[tokio::test]
async fn a_panicking_handler_counts_as_a_retryable_failure() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("worker_panic");
    let job = q.enqueue(NewJob::new(json!(1)).attempts(2)).await.unwrap();
    let worker = Worker::new(q.clone(), |job: JobContext<Value>| async move {
        if job.attempt == 1 {
            panic!("handler bug");
        }
        Ok::<_, JobError>(())
    })
    .retry_delay(Duration::ZERO)
    .start();
    wait_for("completion after the panic", BOUND, || async {
        state_of(&q, &job.id).await == Some(JobState::Completed)
    })
    .await;
    worker.shutdown(BOUND).await;
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(record.failures, 1);
    assert_eq!(
        record.error.as_deref(),
        Some("handler panicked: handler bug")
    );
}

#[derive(Debug, Deserialize)]
struct Email {
    #[allow(dead_code)]
    to: String,
}

#[tokio::test]
async fn a_payload_that_does_not_decode_is_dead_lettered_with_the_reason() {
    let h = Harness::server().await;
    let raw = h.queue::<Value>("worker_bad_payload");
    let job = raw.enqueue(json!({"recipient": "nobody"})).await.unwrap();
    let typed = raw.typed::<Email>();
    let worker = Worker::new(typed, |_job: JobContext<Email>| async move {
        Ok::<_, JobError>(())
    })
    .start();
    wait_for("dead letter", BOUND, || async {
        state_of(&raw, &job.id).await == Some(JobState::Dead)
    })
    .await;
    worker.shutdown(BOUND).await;
    let error = raw
        .jobs()
        .get(&job.id)
        .await
        .unwrap()
        .unwrap()
        .error
        .unwrap();
    assert!(
        error.starts_with("payload does not decode") && error.contains("`to`"),
        "{error}"
    );
}

/// Calls of the commands a worker would poll with, from `INFO commandstats`.
async fn worker_command_calls(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    command_stats(conn, &["fcall", "evalsha", "bzpopmin", "eval"], &["calls"]).await
}

#[tokio::test]
async fn an_idle_worker_sleeps_on_the_signal_key_and_an_enqueue_wakes_it() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("worker_idle");
    let mut conn = h.raw(&q).await;
    let (done_tx, mut done) = mpsc::unbounded_channel();
    let worker = Worker::new(q.clone(), move |job: JobContext<Value>| {
        let done_tx = done_tx.clone();
        async move {
            done_tx.send(job.id.clone()).unwrap();
            Ok::<_, JobError>(())
        }
    })
    .idle_wait(Duration::from_secs(60))
    .start();
    wait_for("the worker to block on the signal key", BOUND, || async {
        blocked_clients(&h, &q).await == 1
    })
    .await;
    let before = worker_command_calls(&mut conn).await;
    // The measured interval: an idle worker must send nothing during it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        worker_command_calls(&mut conn).await,
        before,
        "an idle worker polled the server"
    );
    let job = q.enqueue(json!("wake up")).await.unwrap();
    let ran = tokio::time::timeout(BOUND, done.recv())
        .await
        .expect("woken within the bound");
    assert_eq!(ran, Some(job.id));
    worker.shutdown(BOUND).await;
}

#[tokio::test]
async fn graceful_shutdown_stops_claiming_and_finishes_jobs_in_flight() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("worker_shutdown");
    let started = Arc::new(Notify::new());
    let release = Arc::new(Notify::new());
    let (s, r) = (started.clone(), release.clone());
    let first = q.enqueue(json!("in flight")).await.unwrap();
    let worker = Worker::new(q.clone(), move |_job: JobContext<Value>| {
        let (s, r) = (s.clone(), r.clone());
        async move {
            s.notify_one();
            r.notified().await;
            Ok::<_, JobError>("finished")
        }
    })
    .concurrency(1)
    .claim_ahead(0)
    .start();
    tokio::time::timeout(BOUND, started.notified())
        .await
        .expect("the job started");
    let later = q.enqueue(json!("never claimed")).await.unwrap();
    let shutdown = tokio::spawn(worker.shutdown(BOUND));
    release.notify_one();
    let stats = shutdown.await.unwrap();
    assert_eq!((stats.claimed, stats.completed), (1, 1));
    assert_eq!(state_of(&q, &first.id).await, Some(JobState::Completed));
    assert_eq!(state_of(&q, &later.id).await, Some(JobState::Pending));
    h.check(&q).await;
}

#[tokio::test]
async fn shutdown_past_its_deadline_releases_a_stuck_job_to_pending() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("worker_stuck");
    let job = q.enqueue(json!("stuck")).await.unwrap();
    let started = Arc::new(Notify::new());
    let s = started.clone();
    // A handler that ignores its cancellation token and never returns.
    let worker = Worker::new(q.clone(), move |_job: JobContext<Value>| {
        let s = s.clone();
        async move {
            s.notify_one();
            std::future::pending::<()>().await;
            Ok::<_, JobError>(())
        }
    })
    .start();
    tokio::time::timeout(BOUND, started.notified())
        .await
        .expect("the job started");
    let stats = tokio::time::timeout(BOUND, worker.shutdown(Duration::from_millis(100)))
        .await
        .expect("shutdown is bounded");
    assert_eq!((stats.completed, stats.released), (0, 1));
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(
        (record.state, record.failures),
        (JobState::Pending, 0),
        "released, not failed"
    );
    h.check(&q).await;
}

#[tokio::test]
async fn shutdown_past_its_deadline_cancels_a_cooperative_handler_and_releases_its_job() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("worker_cooperative");
    let job = q.enqueue(json!("long")).await.unwrap();
    let started = Arc::new(Notify::new());
    let s = started.clone();
    let reasons = Arc::new(Mutex::new(Vec::new()));
    let r = reasons.clone();
    let worker = Worker::new(q.clone(), move |ctx: JobContext<Value>| {
        let (s, r) = (s.clone(), r.clone());
        async move {
            s.notify_one();
            ctx.cancelled().await;
            r.lock().unwrap().push(ctx.cancel_reason());
            Err::<(), _>(JobError::Cancelled)
        }
    })
    .start();
    tokio::time::timeout(BOUND, started.notified())
        .await
        .expect("the job started");
    let stats = worker.shutdown(Duration::from_millis(100)).await;
    assert_eq!(stats.released, 1);
    assert_eq!(
        *reasons.lock().unwrap(),
        [Some(echomq::CancelReason::Shutdown)]
    );
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!((record.state, record.failures), (JobState::Pending, 0));
    h.check(&q).await;
}

#[tokio::test]
async fn a_refused_completion_counts_as_lost_and_the_others_complete() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("worker_lost");
    let taken = q
        .enqueue(NewJob::new(json!("taken")).id("taken").unwrap())
        .await
        .unwrap();
    let kept = q
        .enqueue(NewJob::new(json!("kept")).id("kept").unwrap())
        .await
        .unwrap();
    let both_started = Arc::new(tokio::sync::Barrier::new(2));
    let outside = q.clone();
    let worker = Worker::new(q.clone(), move |job: JobContext<Value>| {
        let (both_started, outside) = (both_started.clone(), outside.clone());
        async move {
            both_started.wait().await;
            if job.id.as_str() == "taken" {
                // Someone else finishes this job first: the worker's own completion must be refused.
                outside
                    .complete(&job.id, job.token, &"from outside")
                    .await
                    .unwrap();
            }
            Ok::<_, JobError>("from the worker")
        }
    })
    .concurrency(2)
    .start();
    wait_for("both jobs to finish", BOUND, || async {
        q.admin().counts().await.unwrap().completed == 2
    })
    .await;
    wait_for("both outcomes to be written", BOUND, || async {
        worker.stats().finished() + worker.stats().lost == 2
    })
    .await;
    let stats = worker.shutdown(BOUND).await;
    assert_eq!((stats.completed, stats.lost), (1, 1));
    let taken = q.jobs().get(&taken.id).await.unwrap().unwrap();
    let kept = q.jobs().get(&kept.id).await.unwrap().unwrap();
    assert_eq!(taken.result.as_deref(), Some(r#""from outside""#));
    assert_eq!(kept.result.as_deref(), Some(r#""from the worker""#));
    h.check(&q).await;
}

/// Captures the fields of every `job` span.
#[derive(Clone, Default)]
struct SpanFields(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for SpanFields {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        struct Visit(String);
        impl tracing::field::Visit for Visit {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                self.0.push_str(&format!("{}={:?} ", field.name(), value));
            }
        }
        if attrs.metadata().name() == "job" {
            let mut visit = Visit(String::new());
            attrs.record(&mut visit);
            self.0.lock().unwrap().push(visit.0.trim().to_string());
        }
    }
}

#[tokio::test]
async fn each_job_runs_in_a_span_naming_queue_id_and_attempt() {
    use tracing_subscriber::layer::SubscriberExt;
    let spans = SpanFields::default();
    let _guard = common::traces::scoped(tracing_subscriber::registry().with(spans.clone()));
    let h = Harness::server().await;
    let q = h.queue::<Value>("worker_spans");
    let job = q
        .enqueue(NewJob::new(json!(1)).id("traced-1").unwrap())
        .await
        .unwrap();
    let worker = Worker::new(q.clone(), |_job: JobContext<Value>| async move {
        Ok::<_, JobError>(())
    })
    .start();
    wait_for("completion", BOUND, || async {
        state_of(&q, &job.id).await == Some(JobState::Completed)
    })
    .await;
    worker.shutdown(BOUND).await;
    let recorded = spans.0.lock().unwrap().clone();
    assert_eq!(recorded, ["queue=worker_spans id=traced-1 attempt=1"]);
}

#[tokio::test]
async fn a_worker_runs_immediate_and_scheduled_jobs_on_a_cluster() {
    let h = Harness::cluster().await;
    let q = h.queue::<Value>("worker_cluster");
    let (done_tx, mut done) = mpsc::unbounded_channel();
    let worker = Worker::new(q.clone(), move |ctx: JobContext<Value>| {
        let done_tx = done_tx.clone();
        async move {
            ctx.progress(&"working").await.map_err(JobError::retry)?;
            done_tx.send(ctx.id.clone()).unwrap();
            Ok::<_, JobError>(())
        }
    })
    .idle_wait(Duration::from_secs(60))
    .start();
    let now = q.enqueue(json!("now")).await.unwrap();
    assert_eq!(
        tokio::time::timeout(BOUND, done.recv()).await.unwrap(),
        Some(now.id)
    );
    let later = q
        .enqueue(NewJob::new(json!("later")).after(Duration::from_millis(200)))
        .await
        .unwrap();
    assert_eq!(
        tokio::time::timeout(BOUND, done.recv()).await.unwrap(),
        Some(later.id.clone())
    );
    let stats = worker.shutdown(BOUND).await;
    assert_eq!((stats.completed, stats.lost, stats.write_errors), (2, 0, 0));
    let record = q.jobs().get(&later.id).await.unwrap().unwrap();
    assert!(record.claimed_at.unwrap() >= record.run_at.unwrap());
    h.check(&q).await;
}

/// A busy worker's completions carry its next claim (`COMPLETE.BULK …
/// CLAIM`): one command per job at concurrency 1, not a claim and a
/// completion.
#[tokio::test]
async fn a_busy_worker_claims_with_its_completions() {
    let h = Harness::native().await;
    let q = h.queue::<Value>("worker_rides");
    q.enqueue_bulk((0..200).map(|n| json!(n))).await.unwrap();
    let mut conn = h.raw(&q).await;
    let worker = Worker::new(q.clone(), |_job: JobContext<Value>| async {
        Ok::<_, JobError>(())
    })
    .concurrency(1)
    .start();
    wait_for("every job to complete", BOUND, || async {
        q.admin().counts().await.unwrap().completed == 200
    })
    .await;
    worker.shutdown(BOUND).await;
    let completions = command_stats(&mut conn, &["emq.complete.bulk"], &["calls"]).await;
    let claims = command_stats(&mut conn, &["emq.claim"], &["calls"]).await;
    // One completion call per job at most (several jobs share one when the
    // jobs claimed ahead finished while the last write was on its way).
    assert!(
        (200 / 17..=200).contains(&completions),
        "{completions} completion calls"
    );
    // Its first claim, and one or two when the queue ran dry (a wake-up
    // marker the enqueue left): none per job.
    assert!(claims <= 3, "{claims} claims of its own for 200 jobs");
}

/// A job claimed ahead of the running one waits for it; at shutdown it
/// goes back to pending without running. Until a handler has returned
/// (its pace unknown), one batch is held ahead however many jobs wait.
#[tokio::test]
async fn a_job_claimed_ahead_is_released_at_shutdown_without_running() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("worker_ahead");
    let first = q.enqueue(json!("first")).await.unwrap();
    let ahead = q.enqueue(json!("ahead")).await.unwrap();
    q.enqueue_bulk([json!("behind"), json!("behind")])
        .await
        .unwrap();
    let (ran_tx, mut ran) = mpsc::unbounded_channel();
    let release = Arc::new(Notify::new());
    let r = release.clone();
    let worker = Worker::new(q.clone(), move |job: JobContext<Value>| {
        let (ran_tx, r) = (ran_tx.clone(), r.clone());
        async move {
            ran_tx.send(job.payload.clone()).unwrap();
            r.notified().await;
            Ok::<_, JobError>(())
        }
    })
    .concurrency(1)
    .start();
    let started = tokio::time::timeout(BOUND, ran.recv()).await.unwrap();
    assert_eq!(started, Some(json!("first")));
    // One batch (the concurrency, 1) is claimed ahead of the running job.
    wait_for("the second job to be claimed ahead", BOUND, || async {
        state_of(&q, &ahead.id).await == Some(JobState::Active)
    })
    .await;
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.active, counts.pending), (2, 2));
    let shutdown = tokio::spawn(worker.shutdown(BOUND));
    release.notify_one();
    let stats = shutdown.await.unwrap();
    assert_eq!((stats.claimed, stats.completed, stats.released), (2, 1, 1));
    assert_eq!(state_of(&q, &first.id).await, Some(JobState::Completed));
    assert_eq!(state_of(&q, &ahead.id).await, Some(JobState::Pending));
    assert!(ran.try_recv().is_err(), "the job claimed ahead ran");
    h.check(&q).await;
}

/// Under a cap on active jobs a worker claims nothing ahead: a job
/// waiting ahead would take the cap's room from another worker.
#[tokio::test]
async fn under_a_cap_two_workers_run_what_the_cap_lets_out() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("worker_capped_ahead");
    q.admin().set_concurrency_cap(2).await.unwrap();
    q.enqueue_bulk((0..4).map(|n| json!(n))).await.unwrap();
    two_workers_run_two_jobs_at_once(&h, &q).await;
}

/// The same under a group's cap: every job in one group capped at 2.
#[tokio::test]
async fn under_a_group_cap_two_workers_run_what_the_cap_lets_out() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("worker_group_capped_ahead");
    let group = q.admin().group("g").unwrap();
    group.set_concurrency_cap(2).await.unwrap();
    for n in 0..4 {
        q.enqueue(NewJob::new(json!(n)).group("g")).await.unwrap();
    }
    two_workers_run_two_jobs_at_once(&h, &q).await;
}

/// Two workers at concurrency 1 whose handlers wait to be released both
/// get a job while the four jobs of `q` are capped at two active.
async fn two_workers_run_two_jobs_at_once(h: &Harness, q: &echomq::Queue<Value>) {
    let (ran_tx, mut ran) = mpsc::unbounded_channel();
    let release = Arc::new(Notify::new());
    let start = |name: &str| {
        let (ran_tx, release) = (ran_tx.clone(), release.clone());
        Worker::new(q.clone(), move |job: JobContext<Value>| {
            let (ran_tx, release) = (ran_tx.clone(), release.clone());
            async move {
                ran_tx.send(job.id.clone()).unwrap();
                release.notified().await;
                Ok::<_, JobError>(())
            }
        })
        .name(name)
        .concurrency(1)
        .start()
    };
    let first = start("first");
    let started = tokio::time::timeout(BOUND, ran.recv()).await.unwrap();
    assert!(started.is_some());
    let second = start("second");
    // The second worker gets the cap's other place: the first holds no
    // job waiting ahead in it.
    let other = tokio::time::timeout(BOUND, ran.recv())
        .await
        .expect("the second worker ran nothing: the first held the cap's room");
    assert_ne!(other, started);
    let counts = q.admin().counts().await.unwrap();
    assert_eq!(counts.active, 2);
    release.notify_waiters();
    wait_for("every job to complete", BOUND, || async {
        release.notify_waiters();
        q.admin().counts().await.unwrap().completed == 4
    })
    .await;
    first.shutdown(BOUND).await;
    second.shutdown(BOUND).await;
    h.check(q).await;
}
