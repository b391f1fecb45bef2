//! Flow control with workers running: what started when, read back from
//! the queue's events (each `claimed` entry's stream id is its start on
//! the server clock), and what an idle limited worker sends.

use super::cases::meta;
use super::common::{Harness, blocked_clients, event_entries, server_now, worker_calls};
use echomq::{JobContext, JobError, JobId, NewJob, Queue, QueueSettings, Worker, WorkerHandle};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, mpsc};

/// Every event of the queue: the ms of its stream id, and its fields.
async fn entries(h: &Harness, q: &Queue<Value>) -> Vec<(u64, Vec<String>)> {
    event_entries(h, q)
        .await
        .into_iter()
        .map(|(id, fields)| (id.split('-').next().unwrap().parse().unwrap(), fields))
        .collect()
}

/// A queue that keeps `jobs` completed jobs and their events.
async fn roomy(h: &Harness, name: &str, jobs: u64) -> Queue<Value> {
    let q = h.queue::<Value>(name);
    q.configure(&QueueSettings {
        events_max: jobs * 10,
        keep_completed: jobs,
        ..QueueSettings::default()
    })
    .await
    .unwrap();
    q
}

async fn enqueue(q: &Queue<Value>, n: usize) {
    q.enqueue_bulk((0..n).map(|i| NewJob::new(json!(i)).id(format!("j{i}")).unwrap()))
        .await
        .unwrap();
}

async fn completed(q: &Queue<Value>, n: u64, within: Duration) {
    wait_for(&format!("{n} completions"), within, || async {
        q.admin().counts().await.unwrap().completed == n
    })
    .await;
}

async fn shut(workers: Vec<WorkerHandle>) {
    for worker in workers {
        worker.shutdown(Duration::from_secs(10)).await;
    }
}

#[echomq_testkit::case]
pub(super) async fn a_rate_limit_holds_across_four_workers_in_every_window(h: &Harness) {
    const JOBS: u64 = 2000;
    let q = roomy(h, "precision", JOBS).await;
    enqueue(&q, JOBS as usize).await;
    q.admin()
        .set_rate_limit(200, Duration::from_secs(1))
        .await
        .unwrap();
    let workers: Vec<WorkerHandle> = (0..4)
        .map(|_| {
            Worker::new(q.clone(), |_job: JobContext<Value>| async move {
                Ok::<_, JobError>(())
            })
            .concurrency(20)
            .schedule_repeats(false)
            .start()
        })
        .collect();
    completed(&q, JOBS, Duration::from_secs(40)).await;
    shut(workers).await;

    let starts = entries(h, &q)
        .await
        .into_iter()
        .filter(|(_, fields)| fields[1] == "claimed")
        .count();
    assert_eq!(starts as u64, JOBS, "every job started once");
    // Each start counted in the window of the clock the claim enforces the
    // limit on: its `now`, stored as the job's `claimed_at`. An event's
    // stream id reads the server's clock at another moment of the command,
    // so near a window's edge it can name the next window (seen once on
    // wire 6: 196 then 204 by stream ids).
    let mut per_window: BTreeMap<u64, u64> = BTreeMap::new();
    for i in 0..JOBS {
        let id = JobId::new(format!("j{i}")).unwrap();
        let record = q.jobs().get(&id).await.unwrap().expect("the job exists");
        let claimed_at = record.claimed_at.expect("the job was claimed");
        *per_window.entry(claimed_at / 1000).or_default() += 1;
    }
    let busiest = per_window.values().max().copied().unwrap_or(0);
    assert!(
        busiest <= 200,
        "a window started {busiest} jobs: {per_window:?}"
    );
    let first = *per_window.keys().next().unwrap();
    let last = *per_window.keys().last().unwrap();
    let spanned = last - first + 1;
    assert!(
        (9..=11).contains(&spanned),
        "the run spanned {spanned} windows: {per_window:?}"
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_rate_limited_handler_holds_the_queue_and_its_job_runs_later(h: &Harness) {
    let q = roomy(h, "handler_429", 10).await;
    enqueue(&q, 3).await;
    // j0's first run is rate limited; its second completes.
    let limited = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let worker = Worker::new(q.clone(), move |job: JobContext<Value>| {
        let limited = limited.clone();
        async move {
            let first = !limited.load(std::sync::atomic::Ordering::SeqCst);
            if job.id.as_str() == "j0" && first {
                limited.store(true, std::sync::atomic::Ordering::SeqCst);
                return Err(JobError::rate_limited(Duration::from_millis(500)));
            }
            Ok(job.attempt)
        }
    })
    .concurrency(1)
    .idle_wait(Duration::from_secs(60))
    .schedule_repeats(false)
    .start();
    completed(&q, 3, Duration::from_secs(10)).await;
    let stats = worker.shutdown(Duration::from_secs(10)).await;
    assert_eq!(
        (stats.rate_limited, stats.completed, stats.retried),
        (1, 3, 0)
    );

    let record = q
        .jobs()
        .get(&echomq::JobId::new("j0").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (record.failures, record.claims),
        (0, 2),
        "no failure counted"
    );
    assert_eq!(
        record.result.as_deref(),
        Some("1"),
        "the next run is attempt 1 again"
    );
    let hold: u64 = meta(h, &q).await["limit_hold"].parse().unwrap();
    let all = entries(h, &q).await;
    let held_at = all
        .iter()
        .position(|(_, fields)| fields[1] == "rate_limited")
        .expect("a rate_limited event");
    let later: Vec<u64> = all[held_at..]
        .iter()
        .filter(|(_, fields)| fields[1] == "claimed")
        .map(|(ms, _)| *ms)
        .collect();
    // j1 may start before the FAIL that sets the hold lands; j0's second
    // run, and anything else after that FAIL, starts once the hold is over.
    assert!(!later.is_empty(), "j0 ran again");
    assert!(
        later.iter().all(|ms| *ms >= hold),
        "a job started before the hold ended at {hold}: {later:?}"
    );
    h.check(&q).await;
}

/// Events that take a job out of `active`.
const LEAVING: [&str; 9] = [
    "completed",
    "retried",
    "dead",
    "cancelled",
    "stalled",
    "delayed",
    "requeued",
    "removed",
    "rate_limited",
];

#[echomq_testkit::case(cluster)]
pub(super) async fn a_cap_of_three_holds_across_four_workers(h: &Harness) {
    const JOBS: u64 = 90;
    let q = roomy(h, "cap_three", JOBS).await;
    enqueue(&q, JOBS as usize).await;
    q.admin().set_concurrency_cap(3).await.unwrap();
    let workers: Vec<WorkerHandle> = (0..4)
        .map(|_| {
            Worker::new(q.clone(), |_job: JobContext<Value>| async move {
                // A little work, so jobs overlap.
                tokio::time::sleep(Duration::from_millis(5)).await;
                Ok::<_, JobError>(())
            })
            .concurrency(10)
            .idle_wait(Duration::from_secs(60))
            .schedule_repeats(false)
            .start()
        })
        .collect();
    completed(&q, JOBS, Duration::from_secs(30)).await;
    shut(workers).await;

    let mut active: HashSet<String> = HashSet::new();
    let mut most = 0;
    let mut started = 0;
    for (_, fields) in entries(h, &q).await {
        let (event, id) = (
            fields[1].as_str(),
            fields.get(3).cloned().unwrap_or_default(),
        );
        if event == "claimed" {
            started += 1;
            active.insert(id);
            most = most.max(active.len());
        } else if LEAVING.contains(&event) {
            active.remove(&id);
        }
    }
    assert_eq!(started, JOBS, "each job started once");
    assert!(most <= 3, "{most} jobs were active at once");
    assert!(most == 3, "the cap was reached: {most}");
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_finishing_job_wakes_a_worker_waiting_on_the_cap(h: &Harness) {
    let q = h.queue::<Value>("cap_wake");
    enqueue(&q, 2).await;
    q.admin().set_concurrency_cap(1).await.unwrap();
    let release = Arc::new(Notify::new());
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let workers: Vec<WorkerHandle> = (0..2)
        .map(|_| {
            let (release, started_tx) = (release.clone(), started_tx.clone());
            Worker::new(q.clone(), move |job: JobContext<Value>| {
                let (release, started_tx) = (release.clone(), started_tx.clone());
                async move {
                    started_tx.send(job.id.to_string()).unwrap();
                    if job.id.as_str() == "j0" {
                        release.notified().await;
                    }
                    Ok::<_, JobError>(())
                }
            })
            .concurrency(2)
            // Far longer than the test: only a wake-up can start j1.
            .idle_wait(Duration::from_secs(600))
            .schedule_repeats(false)
            .start()
        })
        .collect();
    let first = tokio::time::timeout(Duration::from_secs(10), started.recv()).await;
    assert_eq!(first.unwrap().as_deref(), Some("j0"));
    wait_for(
        "both workers to wait for room",
        Duration::from_secs(10),
        || async { blocked_clients(h, &q).await == 2 },
    )
    .await;
    assert!(started.try_recv().is_err(), "j1 waited for room");
    release.notify_one();
    let second = tokio::time::timeout(Duration::from_secs(5), started.recv()).await;
    assert_eq!(second.expect("woken, not timed out").as_deref(), Some("j1"));
    completed(&q, 2, Duration::from_secs(10)).await;
    shut(workers).await;
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn an_idle_limited_worker_sends_at_most_two_commands_a_window(h: &Harness) {
    const PER_MS: u64 = 300;
    const MEASURED: u64 = 6;
    let q = h.queue::<Value>("limited_idle");
    enqueue(&q, 40).await;
    q.admin()
        .set_rate_limit(1, Duration::from_millis(PER_MS))
        .await
        .unwrap();
    let worker = Worker::new(q.clone(), |_job: JobContext<Value>| async move {
        Ok::<_, JobError>(())
    })
    .concurrency(4)
    .idle_wait(Duration::from_secs(60))
    .stalled_interval(Duration::from_secs(3600))
    .schedule_repeats(false)
    .start();
    completed(&q, 2, Duration::from_secs(10)).await;
    let mut conn = h.raw(&q).await;
    // The clock before the counter at the start and after it at the end:
    // every command counted was sent between `from` and `to`.
    let from = server_now(h, &q).await;
    let before = worker_calls(&mut conn).await;
    let done = finished(&mut conn, &q).await;
    // The measured interval ends once the worker has done six more jobs,
    // one a window: it spans at least five window boundaries. Completions
    // are read with ZCARD, a command the count leaves out (COUNTS would
    // be a script call, counted as the worker's).
    let more = format!("{MEASURED} more completions");
    wait_for(&more, Duration::from_secs(20), || {
        let (mut conn, q) = (conn.clone(), &q);
        async move { finished(&mut conn, q).await >= done + MEASURED }
    })
    .await;
    let after = worker_calls(&mut conn).await;
    let to = server_now(h, &q).await;
    worker.shutdown(Duration::from_secs(10)).await;
    let windows = to / PER_MS - from / PER_MS + 1;
    let sent = after - before;
    assert!(
        sent <= 2 * windows,
        "{sent} commands over {windows} windows of {PER_MS} ms"
    );
    assert!(
        sent >= MEASURED,
        "the count sees the worker: {sent} commands for {MEASURED} jobs"
    );
    h.check(&q).await;
}

/// The queue's completed jobs, read with `ZCARD` (not a command
/// [`worker_calls`] counts).
async fn finished(conn: &mut redis::aio::MultiplexedConnection, q: &Queue<Value>) -> u64 {
    redis::cmd("ZCARD")
        .arg(q.keys().completed())
        .query_async(conn)
        .await
        .unwrap()
}
