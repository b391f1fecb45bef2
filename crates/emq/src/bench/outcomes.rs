//! The outcome phases of `emq bench --outcomes` (docs/outcomes.md):
//!
//! - what a waiter on every job costs the server: the lifecycle (bulk
//!   enqueue, then processing at concurrency 50) with nobody waiting, with
//!   the producer waiting for every job it enqueued awaited
//!   ([`NewJob::awaited`]: each wait registered at the enqueue, read
//!   nowhere), and with the producer waiting for every job by its id
//!   after the enqueue ([`Queue::outcome`]: each wait reads its job
//!   once); one connector, the waits begun as the worker starts, in
//!   rounds interleaved as the flow phases are (see `flow.rs`), each
//!   queue keeping one round's completed jobs;
//! - how soon a waiter hears: up to [`LATENCY_WAITS`] waits open at once on
//!   one connector and one queue, every one open (its job marked waited
//!   for on the server) before the worker starts; for each, the time from
//!   its handler's return to its wait's return.
//!
//! Every handler returns its job's number, and every wait must return
//! `Completed` with that number: any other outcome, an error or a timeout
//! fails the bench.

use super::flow::{ROUNDS, Tally, rotated};
use super::lateness::percentile;
use super::{CONCURRENCY, Phase, STALL, Session, enqueue_batch_timed, finish, jobs};
use crate::error::CliError;
use echomq::{
    Enqueued, JobContext, JobError, JobId, NewJob, Outcome, Queue, QueueSettings, Worker,
};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// Waits open at once in the latency phase (fewer when `--jobs` is
/// smaller).
pub const LATENCY_WAITS: u64 = 10_000;
/// How long a bench wait may take before the bench fails.
const WAIT_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the latency phase checks that its waits are open.
const OPEN_POLL: Duration = Duration::from_millis(5);

/// What the outcome phases measured.
#[derive(Debug, Clone, Serialize)]
pub struct OutcomesReport {
    /// Nobody waits: bulk enqueue, summed over the rounds.
    pub enqueue_nobody_waits: Phase,
    /// Nobody waits: processing at concurrency 50.
    pub process_c50_nobody_waits: Phase,
    /// A waiter on every job, awaited at its enqueue: bulk enqueue.
    pub enqueue_waited: Phase,
    /// A waiter on every job, awaited at its enqueue: processing at
    /// concurrency 50, from the waits' start to the last wait's return.
    pub process_c50_waited: Phase,
    /// A waiter on every job, by its id after the enqueue: bulk enqueue.
    pub enqueue_waited_by_id: Phase,
    /// A waiter on every job, by its id: processing at concurrency 50.
    pub process_c50_waited_by_id: Phase,
    /// Server CPU per job over the lifecycle, nobody waiting,
    /// microseconds.
    pub lifecycle_server_cpu_us_per_job_nobody_waits: f64,
    /// Server CPU per job over the lifecycle, a waiter on every job
    /// awaited at its enqueue, microseconds.
    pub lifecycle_server_cpu_us_per_job_waited: f64,
    /// Server CPU per job over the lifecycle, a waiter on every job by
    /// its id, microseconds.
    pub lifecycle_server_cpu_us_per_job_waited_by_id: f64,
    /// Each round's lifecycle server CPU per job, awaited over nobody
    /// waiting.
    pub lifecycle_cpu_ratio_rounds: Vec<f64>,
    /// The median of those rounds' ratios.
    pub lifecycle_cpu_ratio_median: f64,
    /// Each round's lifecycle server CPU per job, waited by id over
    /// nobody waiting.
    pub lifecycle_cpu_ratio_by_id_rounds: Vec<f64>,
    /// The median of those rounds' ratios.
    pub lifecycle_cpu_ratio_by_id_median: f64,
    /// Waits of the waited phases that returned their job's result.
    pub waits_completed: u64,
    /// The latency phase.
    pub latency: WaitLatency,
}

/// Completion to a waiter's return, over waits all open before the
/// worker started.
#[derive(Debug, Clone, Serialize)]
pub struct WaitLatency {
    /// Waits open at once, one per job, on one connector and one queue.
    pub waits: u64,
    /// Waits that returned `Completed` with their job's result (all of
    /// them, or the bench failed).
    pub completed: u64,
    /// From a job's handler returning (this process's clock) to its wait
    /// returning, median, milliseconds.
    pub p50_ms: f64,
    /// The same, 99th percentile.
    pub p99_ms: f64,
    /// The same, the longest.
    pub max_ms: f64,
}

impl OutcomesReport {
    /// The phases as table rows' names and phases.
    pub fn phases(&self) -> Vec<(String, Phase)> {
        vec![
            ("enqueue, nobody waits".into(), self.enqueue_nobody_waits),
            (
                "process, nobody waits".into(),
                self.process_c50_nobody_waits,
            ),
            ("enqueue, waiter on each".into(), self.enqueue_waited),
            ("process, waiter on each".into(), self.process_c50_waited),
            (
                "enqueue, waiter on each by id".into(),
                self.enqueue_waited_by_id,
            ),
            (
                "process, waiter on each by id".into(),
                self.process_c50_waited_by_id,
            ),
        ]
    }

    /// The cost and the latency, as lines.
    pub fn lines(&self) -> String {
        let rounds = |ratios: &[f64]| {
            let texts: Vec<String> = ratios.iter().map(|r| format!("{r:.3}")).collect();
            texts.join(", ")
        };
        let latency = &self.latency;
        format!(
            "outcome waits, lifecycle server CPU per job: {:.2} µs nobody waiting, {:.2} µs a waiter on each awaited, {:.2} µs by id ({} waits completed)\n\
             waiter on each / nobody waits, lifecycle server CPU per job: awaited median {:.3} (rounds {}), by id median {:.3} (rounds {})\n\
             outcome waits open at once: {}, completed {}; handler return → wait return: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms\n",
            self.lifecycle_server_cpu_us_per_job_nobody_waits,
            self.lifecycle_server_cpu_us_per_job_waited,
            self.lifecycle_server_cpu_us_per_job_waited_by_id,
            self.waits_completed,
            self.lifecycle_cpu_ratio_median,
            rounds(&self.lifecycle_cpu_ratio_rounds),
            self.lifecycle_cpu_ratio_by_id_median,
            rounds(&self.lifecycle_cpu_ratio_by_id_rounds),
            latency.waits,
            latency.completed,
            latency.p50_ms,
            latency.p99_ms,
            latency.max_ms,
        )
    }
}

/// `n` jobs per variant (rounded down to a multiple of [`ROUNDS`]) with
/// nobody waiting, with a waiter on each awaited at its enqueue, and with
/// a waiter on each by id, each on its own queue; then `min(n,
/// LATENCY_WAITS)` waits open at once on a fourth.
pub(crate) async fn run(n: u64, session: &mut Session) -> Result<OutcomesReport, CliError> {
    let chunk = (n / ROUNDS).max(1);
    let queues = [
        session.queue::<Value>("outcome-none").await?,
        session.queue::<Value>("outcome-waited").await?,
        session.queue::<Value>("outcome-by-id").await?,
    ];
    // A wait that begins after its job was decided and trimmed answers
    // `Removed`, rightly: each queue keeps a round's completed jobs, so no
    // job is trimmed before the next round, and every completion from the
    // second round on trims one, as at the default's steady state.
    let keep_round = QueueSettings {
        keep_completed: chunk,
        ..session.configuration.settings()
    };
    for queue in &queues {
        queue.configure(&keep_round).await?;
    }
    let mut enqueues = [Tally::default(), Tally::default(), Tally::default()];
    let mut processes = [Tally::default(), Tally::default(), Tally::default()];
    let (mut ratios, mut by_id_ratios) = (Vec::new(), Vec::new());
    let mut waits_completed = 0;
    for round in 0..ROUNDS {
        let mut per_job = [0.0; 3];
        for at in rotated(3, round as usize) {
            let awaited = at == 1;
            let batch = jobs(chunk).into_iter();
            let batch = batch.map(|job| if awaited { job.awaited() } else { job });
            let batch: Vec<NewJob<Value>> = batch.collect();
            let (enqueue, enqueued) = enqueue_batch_timed(&queues[at], batch, session).await?;
            let process = if at == 0 {
                process(&queues[at], chunk, session).await?
            } else {
                let waits = if awaited { Waits::Awaited } else { Waits::ById };
                let (process, completed) =
                    process_waited(&queues[at], enqueued, waits, session).await?;
                waits_completed += completed;
                process
            };
            per_job[at] = lifecycle_us_per_job(&enqueue, &process);
            enqueues[at].add(enqueue);
            processes[at].add(process);
        }
        let nobody = per_job[0].max(f64::MIN_POSITIVE);
        ratios.push(per_job[1] / nobody);
        by_id_ratios.push(per_job[2] / nobody);
    }
    let [enqueue_none, enqueue_waited, enqueue_by_id] = enqueues.map(|t| t.phase());
    let [process_none, process_waited, process_by_id] = processes.map(|t| t.phase());
    let latency = latency(n.min(LATENCY_WAITS), session).await?;
    Ok(OutcomesReport {
        lifecycle_server_cpu_us_per_job_nobody_waits: lifecycle_us_per_job(
            &enqueue_none,
            &process_none,
        ),
        lifecycle_server_cpu_us_per_job_waited: lifecycle_us_per_job(
            &enqueue_waited,
            &process_waited,
        ),
        lifecycle_server_cpu_us_per_job_waited_by_id: lifecycle_us_per_job(
            &enqueue_by_id,
            &process_by_id,
        ),
        lifecycle_cpu_ratio_median: median(&ratios),
        lifecycle_cpu_ratio_rounds: ratios,
        lifecycle_cpu_ratio_by_id_median: median(&by_id_ratios),
        lifecycle_cpu_ratio_by_id_rounds: by_id_ratios,
        enqueue_nobody_waits: enqueue_none,
        process_c50_nobody_waits: process_none,
        enqueue_waited,
        process_c50_waited: process_waited,
        enqueue_waited_by_id: enqueue_by_id,
        process_c50_waited_by_id: process_by_id,
        waits_completed,
        latency,
    })
}

/// (enqueue + processing server CPU) per job, microseconds.
fn lifecycle_us_per_job(enqueue: &Phase, process: &Phase) -> f64 {
    (enqueue.server_cpu_seconds + process.server_cpu_seconds) * 1e6 / enqueue.jobs.max(1) as f64
}

/// The median (the mean of the middle two for an even count).
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// A worker at concurrency 50 whose handler returns its job's number
/// (`{"n": i}` returns `i`), calling `returned` with the job's id just
/// before it returns.
fn worker(
    queue: &Queue<Value>,
    returned: impl Fn(&JobId) + Send + Sync + 'static,
) -> Worker<Value> {
    let returned = Arc::new(returned);
    Worker::new(queue.clone(), move |job: JobContext<Value>| {
        let returned = Arc::clone(&returned);
        async move {
            let result = job.payload["n"].clone();
            returned(&job.id);
            Ok::<_, JobError>(result)
        }
    })
    .concurrency(CONCURRENCY as usize)
}

/// Nobody waits: drains `n` pending jobs.
async fn process(queue: &Queue<Value>, n: u64, session: &mut Session) -> Result<Phase, CliError> {
    let cpu = session.cpu().await?;
    let started = Instant::now();
    let handle = worker(queue, |_| {}).start();
    let (wall, after) = finish(handle, queue, n, started, STALL, session).await?;
    Ok(Phase::new(n, Some(CONCURRENCY), wall, after - cpu))
}

/// How the bench's waits are begun.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waits {
    /// Each job's handle ([`Enqueued::outcome`]): its wait registered at
    /// the enqueue of an awaited job.
    Awaited,
    /// By id after the enqueue ([`Queue::outcome`]).
    ById,
}

/// A waiter on each of `enqueued` (job i of the batch): the waits begin as
/// the worker starts, and the phase ends when every wait has returned and
/// the worker has finished. Returns the phase and the waits completed (all
/// of them, or an error).
async fn process_waited(
    queue: &Queue<Value>,
    enqueued: Vec<Enqueued>,
    how: Waits,
    session: &mut Session,
) -> Result<(Phase, u64), CliError> {
    let ids: Vec<JobId> = enqueued.iter().map(|e| e.id.clone()).collect();
    let n = ids.len() as u64;
    let cpu = session.cpu().await?;
    let started = Instant::now();
    let mut waits = open_waits(queue, enqueued, how, |_| {});
    let handle = worker(queue, |_| {}).start();
    let returned = collect(&mut waits).await;
    let (wall, after) = finish(handle, queue, n, started, STALL, session).await?;
    let completed = check_completed(queue, &ids, &returned?)?;
    Ok((
        Phase::new(n, Some(CONCURRENCY), wall, after - cpu),
        completed,
    ))
}

/// What one wait returned, and when.
type Returned = (JobId, echomq::Result<Outcome<Value>>, Instant);

/// One task per job, each waiting for its outcome on `queue`'s connector
/// as `how` says; `on_return` runs as each returns.
fn open_waits(
    queue: &Queue<Value>,
    enqueued: Vec<Enqueued>,
    how: Waits,
    on_return: impl Fn(&JobId) + Clone + Send + 'static,
) -> JoinSet<Returned> {
    let mut waits = JoinSet::new();
    for handle in enqueued {
        let (queue, on_return) = (queue.clone(), on_return.clone());
        waits.spawn(async move {
            let id = handle.id.clone();
            let outcome = match how {
                Waits::Awaited => handle.outcome::<Value>(WAIT_TIMEOUT).await,
                Waits::ById => queue.outcome::<Value>(&id, WAIT_TIMEOUT).await,
            };
            let at = Instant::now();
            on_return(&id);
            (id, outcome, at)
        });
    }
    waits
}

/// Every wait's return, keyed by job id.
async fn collect(waits: &mut JoinSet<Returned>) -> Result<HashMap<JobId, Returned>, CliError> {
    let mut returned = HashMap::new();
    while let Some(joined) = waits.join_next().await {
        let wait = joined.map_err(|err| CliError::usage(format!("bench: a wait failed: {err}")))?;
        returned.insert(wait.0.clone(), wait);
    }
    Ok(returned)
}

/// Every job of `ids` (job i holding `{"n": i}`) was waited for and its
/// wait returned `Completed` with result `i`; returns their count.
fn check_completed(
    queue: &Queue<Value>,
    ids: &[JobId],
    returned: &HashMap<JobId, Returned>,
) -> Result<u64, CliError> {
    for (i, id) in ids.iter().enumerate() {
        let wrong = |what: String| {
            Err(CliError::usage(format!(
                "bench: the wait for job {id} of queue {} {what}",
                queue.name()
            )))
        };
        match returned.get(id) {
            None => return wrong("never returned".into()),
            Some((_, Err(err), _)) => return wrong(format!("failed: {err}")),
            Some((_, Ok(Outcome::Completed { result }), _)) if *result == Some(Value::from(i)) => {}
            Some((_, Ok(outcome), _)) => {
                return wrong(format!("returned {outcome:?}, not Completed with {i}"));
            }
        }
    }
    Ok(ids.len() as u64)
}

/// `waits` jobs on a queue of their own, a wait open on each (its job
/// marked waited for on the server) before the worker starts; each
/// handler's return and each wait's return timed on this process's clock.
async fn latency(waits: u64, session: &mut Session) -> Result<WaitLatency, CliError> {
    let queue = session.queue::<Value>("outcome-latency").await?;
    let (_, enqueued) = enqueue_batch_timed(&queue, jobs(waits), session).await?;
    let ids: Vec<JobId> = enqueued.iter().map(|e| e.id.clone()).collect();
    let early = Arc::new(AtomicU64::new(0));
    let early_count = Arc::clone(&early);
    let mut open = open_waits(&queue, enqueued, Waits::ById, move |_| {
        early_count.fetch_add(1, Ordering::Relaxed);
    });
    await_marked(&queue, &ids, &early, session).await?;
    let handler_returns: Arc<Mutex<HashMap<JobId, Instant>>> = Arc::default();
    let stamps = Arc::clone(&handler_returns);
    let started = Instant::now();
    let handle = worker(&queue, move |id| {
        stamps
            .lock()
            .expect("no handler panics holding the lock")
            .insert(id.clone(), Instant::now());
    })
    .start();
    let returned = collect(&mut open).await;
    finish(handle, &queue, waits, started, STALL, session).await?;
    let returned = returned?;
    let completed = check_completed(&queue, &ids, &returned)?;
    let handler_returns = handler_returns
        .lock()
        .expect("no handler panics holding the lock");
    let mut ms = Vec::with_capacity(ids.len());
    for id in &ids {
        let Some(done) = handler_returns.get(id) else {
            return Err(CliError::usage(format!(
                "bench: job {id} of queue {} completed with no handler return recorded",
                queue.name()
            )));
        };
        let (_, _, at) = &returned[id];
        ms.push(at.saturating_duration_since(*done).as_secs_f64() * 1e3);
    }
    ms.sort_by(f64::total_cmp);
    Ok(WaitLatency {
        waits,
        completed,
        p50_ms: percentile(&ms, 0.50),
        p99_ms: percentile(&ms, 0.99),
        max_ms: ms.last().copied().unwrap_or(0.0),
    })
}

/// Waits until every job of `ids` carries the `waited` field
/// (docs/protocol.md, "Outcome waits"): each wait's subscription is open
/// and its `OUTCOME` answered. Fails when a wait returns first (no job has
/// run) or nothing moves for the stall time.
async fn await_marked(
    queue: &Queue<Value>,
    ids: &[JobId],
    early: &AtomicU64,
    session: &mut Session,
) -> Result<(), CliError> {
    let mut unmarked: Vec<String> = ids.iter().map(|id| queue.keys().job(id)).collect();
    let mut moved = Instant::now();
    while !unmarked.is_empty() {
        if early.load(Ordering::Relaxed) > 0 {
            return Err(CliError::usage(format!(
                "bench: a wait on queue {} returned before any job ran",
                queue.name()
            )));
        }
        let mut pipe = redis::pipe();
        for key in &unmarked {
            pipe.hget(key, "waited");
        }
        let marks: Vec<Option<String>> = pipe
            .query_async(&mut session.plain)
            .await
            .map_err(|err| CliError::usage(format!("HGET of a waited job's mark: {err}")))?;
        let before = unmarked.len();
        unmarked = unmarked
            .into_iter()
            .zip(marks)
            .filter(|(_, mark)| mark.as_deref() != Some("1"))
            .map(|(key, _)| key)
            .collect();
        if unmarked.len() != before {
            moved = Instant::now();
        } else if moved.elapsed() > STALL {
            return Err(CliError::usage(format!(
                "bench: {} waits on queue {} not open after {}s",
                unmarked.len(),
                queue.name(),
                STALL.as_secs()
            )));
        }
        tokio::time::sleep(OPEN_POLL).await;
    }
    Ok(())
}
