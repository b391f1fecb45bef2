//! The measurements behind `emq bench` and `cargo bench -p emq`.
//!
//! On one server, in one run:
//!
//! 1. **enqueue**: `enqueue_bulk` of N jobs;
//! 2. **process, concurrency 50**: a [`Worker`] with a no-op handler drains
//!    those N jobs;
//! 3. **process, concurrency 1**: the same over N/10 fresh jobs (enqueued
//!    outside the measurement);
//!
//! and the whole-lifecycle server CPU per job, (enqueue CPU + process
//! CPU at concurrency 50) / N. Server CPU is `used_cpu_sys + used_cpu_user`
//! of `INFO cpu` (the server's main process), read before and after each
//! phase over a connection of its own. Queues are named
//! `bench-<unix-ms>-<phase>`, so runs never share keys; retention and
//! events stay at their defaults.
//!
//! `emq bench --lateness` ([`lateness`]) measures something else: how late
//! scheduled jobs start. A [`Worker`] at concurrency 50 is started and left
//! idle; then N jobs are bulk-enqueued whose run-ats are spread evenly over
//! one second starting 500 ms later (N jobs/s), each payload carrying its
//! run-at in unix ms. The handler records host-now minus run-at (client and
//! server share the machine, so the host clock is the server's clock), and
//! the run reports p50 / p99 / max lateness and the server CPU per job from
//! the enqueue to the last completion. The default runs are 2,000 and
//! 20,000 jobs.
//!
//! ```no_run
//! # async fn run() -> Result<(), emq::error::CliError> {
//! use emq::bench::{BenchConfig, run};
//! let report = run(&BenchConfig::new(10_000)).await?;
//! println!("{}", emq::bench::render(&report));
//! # Ok(()) }
//! ```

use crate::cli::WireArg;
use crate::embedded::Target;
use crate::error::CliError;
use crate::info;
use crate::table::{Align, Table};
use echomq::{Connector, JobContext, JobError, NewJob, Queue, Worker};
use redis::aio::MultiplexedConnection;
use serde::Deserialize;
use serde::Serialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Jobs of `emq bench` when `--jobs` is not given.
pub const DEFAULT_JOBS: u64 = 100_000;
/// Worker concurrency of the main processing phase (and of the lateness runs).
pub const CONCURRENCY: u64 = 50;
/// The runs of `emq bench --lateness` when `--jobs` is not given.
pub const LATENESS_JOBS: [u64; 2] = [2_000, 20_000];
/// The first run-at of a lateness run is this long after its enqueue starts.
pub const LATENESS_LEAD: Duration = Duration::from_millis(500);
/// The run-ats of a lateness run are spread evenly over this long.
pub const LATENESS_SPREAD: Duration = Duration::from_secs(1);
/// How long the worker of a lateness run idles before the enqueue.
const SETTLE: Duration = Duration::from_millis(200);
/// The serial phase processes `jobs / SERIAL_FRACTION` jobs at concurrency 1.
pub const SERIAL_FRACTION: u64 = 10;
/// How often a processing phase checks the worker's counters.
const POLL: Duration = Duration::from_millis(2);
/// A phase fails when no job finishes for this long.
const STALL: Duration = Duration::from_secs(30);

/// What to measure, and where.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Jobs of the enqueue and concurrency-50 phases.
    pub jobs: u64,
    /// The server; `None` starts an embedded one for the run.
    pub url: Option<String>,
    /// Key prefix.
    pub prefix: String,
    /// Wire.
    pub wire: WireArg,
}

impl BenchConfig {
    /// `jobs` jobs on an embedded server, prefix `emq`, wire 4.
    pub fn new(jobs: u64) -> Self {
        Self {
            jobs,
            url: None,
            prefix: "emq".into(),
            wire: WireArg::Script,
        }
    }
}

/// One measured phase.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Phase {
    /// Jobs moved.
    pub jobs: u64,
    /// Worker concurrency (`None` for the enqueue phase).
    pub concurrency: Option<u64>,
    /// Wall time, seconds.
    pub seconds: f64,
    /// Jobs per second of wall time.
    pub jobs_per_sec: f64,
    /// Server CPU used during the phase, seconds.
    pub server_cpu_seconds: f64,
    /// Server CPU per job, microseconds.
    pub server_cpu_us_per_job: f64,
}

impl Phase {
    fn new(jobs: u64, concurrency: Option<u64>, wall: Duration, cpu: f64) -> Self {
        let seconds = wall.as_secs_f64();
        Self {
            jobs,
            concurrency,
            seconds,
            jobs_per_sec: jobs as f64 / seconds.max(f64::MIN_POSITIVE),
            server_cpu_seconds: cpu,
            server_cpu_us_per_job: cpu * 1e6 / jobs.max(1) as f64,
        }
    }
}

/// Everything one run measured (`emq bench --json` prints it).
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// Jobs of the enqueue and concurrency-50 phases.
    pub jobs: u64,
    /// `script` or `native`.
    pub wire: &'static str,
    /// `wire 4 (Lua scripts)` or `wire 6 (native module)`.
    pub wire_name: &'static str,
    /// Server software and version, e.g. `Valkey 9.1.2`.
    pub server: String,
    /// Whether the server was started for the run.
    pub embedded: bool,
    /// The client's tokio runtime, filled in by the caller (empty when unknown).
    pub runtime: String,
    /// Bulk enqueue of `jobs` jobs.
    pub enqueue: Phase,
    /// Processing `jobs` jobs at concurrency 50 (claim + complete).
    pub process_c50: Phase,
    /// Processing `jobs / 10` jobs at concurrency 1.
    pub process_c1: Phase,
    /// (enqueue CPU + concurrency-50 processing CPU) / jobs, microseconds.
    pub lifecycle_server_cpu_us_per_job: f64,
}

/// Runs the three phases (starting an embedded server when `config.url`
/// is `None`, stopped again before returning).
pub async fn run(config: &BenchConfig) -> Result<BenchReport, CliError> {
    let target = Target::resolve(config.url.as_deref()).await?;
    let work = measure(config, target.url.clone(), target.is_embedded());
    target.run(work).await
}

async fn measure(
    config: &BenchConfig,
    url: String,
    embedded: bool,
) -> Result<BenchReport, CliError> {
    let url = &url;
    let connector = Connector::builder(url.as_str())
        .prefix(config.prefix.as_str())
        .wire(config.wire.wire())
        .connect()
        .await
        .map_err(|err| CliError::unreachable(url, &err))?;
    let mut plain = info::plain_connection(url).await?;
    let server = info::server_version(&mut plain).await?;
    let run_id = crate::commands::unix_ms();
    let n = config.jobs.max(1);

    let lifecycle = connector.queue::<Value>(&format!("bench-{run_id}-lifecycle"))?;
    let enqueue = enqueue_phase(&lifecycle, n, &mut plain).await?;
    let process_c50 = process_phase(&lifecycle, n, CONCURRENCY, &mut plain).await?;

    let serial = connector.queue::<Value>(&format!("bench-{run_id}-serial"))?;
    let serial_jobs = (n / SERIAL_FRACTION).max(1);
    serial.enqueue_bulk(jobs(serial_jobs)).await?;
    let process_c1 = process_phase(&serial, serial_jobs, 1, &mut plain).await?;

    Ok(BenchReport {
        jobs: n,
        wire: config.wire.as_str(),
        wire_name: config.wire.describe(),
        server,
        embedded,
        runtime: String::new(),
        enqueue,
        process_c50,
        process_c1,
        lifecycle_server_cpu_us_per_job: (enqueue.server_cpu_seconds
            + process_c50.server_cpu_seconds)
            * 1e6
            / n as f64,
    })
}

/// `n` small jobs, `{"n": i}`.
fn jobs(n: u64) -> Vec<NewJob<Value>> {
    (0..n).map(|i| NewJob::new(json!({ "n": i }))).collect()
}

async fn enqueue_phase(
    queue: &Queue<Value>,
    n: u64,
    plain: &mut MultiplexedConnection,
) -> Result<Phase, CliError> {
    let batch = jobs(n);
    let cpu = info::cpu_seconds(plain).await?;
    let started = Instant::now();
    let enqueued = queue.enqueue_bulk(batch).await?;
    let wall = started.elapsed();
    let cpu = info::cpu_seconds(plain).await? - cpu;
    let created = enqueued.iter().filter(|e| e.created).count() as u64;
    if created != n {
        return Err(CliError::usage(format!(
            "bench: enqueued {created} of {n} jobs (queue {} was not fresh)",
            queue.name()
        )));
    }
    Ok(Phase::new(n, None, wall, cpu))
}

/// Drains `n` pending jobs of `queue` with a no-op handler at `concurrency`.
async fn process_phase(
    queue: &Queue<Value>,
    n: u64,
    concurrency: u64,
    plain: &mut MultiplexedConnection,
) -> Result<Phase, CliError> {
    let cpu = info::cpu_seconds(plain).await?;
    let started = Instant::now();
    let worker = Worker::new(
        queue.typed::<IgnoredAny>(),
        |_job: JobContext<IgnoredAny>| async { Ok::<_, JobError>(()) },
    )
    .concurrency(concurrency as usize)
    .start();
    let mut last = 0;
    let mut moved = Instant::now();
    let waited = loop {
        let finished = worker.stats().finished();
        if finished >= n {
            break Ok(started.elapsed());
        }
        if finished != last {
            last = finished;
            moved = Instant::now();
        } else if moved.elapsed() > STALL {
            break Err(CliError::usage(format!(
                "bench stalled: {finished} of {n} jobs finished on queue {}, nothing moved for {}s",
                queue.name(),
                STALL.as_secs()
            )));
        }
        tokio::time::sleep(POLL).await;
    };
    let cpu = info::cpu_seconds(plain).await? - cpu;
    let stats = worker.shutdown(Duration::from_secs(10)).await;
    let wall = waited?;
    if stats.completed != n {
        return Err(CliError::usage(format!(
            "bench: {} of {n} jobs completed on queue {} ({stats:?})",
            stats.completed,
            queue.name()
        )));
    }
    Ok(Phase::new(n, Some(concurrency), wall, cpu))
}

/// The report as an aligned table.
pub fn render(report: &BenchReport) -> String {
    let embedded = if report.embedded { " (embedded)" } else { "" };
    let runtime = if report.runtime.is_empty() {
        String::new()
    } else {
        format!(", {} runtime", report.runtime)
    };
    let mut table = Table::new([
        Align::Left,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
    ]);
    table.row([
        "phase",
        "jobs",
        "concurrency",
        "seconds",
        "jobs/s",
        "server µs/job",
    ]);
    let mut phase = |name: &str, p: &Phase| {
        table.row([
            name.to_string(),
            p.jobs.to_string(),
            p.concurrency.map_or("-".into(), |c| c.to_string()),
            format!("{:.2}", p.seconds),
            format!("{:.0}", p.jobs_per_sec),
            format!("{:.2}", p.server_cpu_us_per_job),
        ]);
    };
    phase("enqueue (bulk)", &report.enqueue);
    phase("process (claim+complete)", &report.process_c50);
    phase("process (claim+complete)", &report.process_c1);
    table.row([
        "lifecycle (enqueue+process)".to_string(),
        report.jobs.to_string(),
        "-".into(),
        "-".into(),
        "-".into(),
        format!("{:.2}", report.lifecycle_server_cpu_us_per_job),
    ]);
    format!(
        "EchoMQ bench: {}, {}{embedded}{runtime}\n{table}",
        report.wire_name, report.server
    )
}

/// What `emq bench --lateness` measures, and where.
#[derive(Debug, Clone)]
pub struct LatenessConfig {
    /// One run per entry, of that many jobs.
    pub runs: Vec<u64>,
    /// The server; `None` starts an embedded one for the runs.
    pub url: Option<String>,
    /// Key prefix.
    pub prefix: String,
    /// Wire.
    pub wire: WireArg,
}

impl LatenessConfig {
    /// The default runs ([`LATENESS_JOBS`]) on an embedded server, prefix
    /// `emq`, wire 4.
    pub fn new() -> Self {
        Self {
            runs: LATENESS_JOBS.to_vec(),
            url: None,
            prefix: "emq".into(),
            wire: WireArg::Script,
        }
    }
}

impl Default for LatenessConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// One lateness run: N scheduled jobs due over [`LATENESS_SPREAD`].
#[derive(Debug, Clone, Copy, Serialize)]
pub struct LatenessRun {
    /// Jobs scheduled (and run).
    pub jobs: u64,
    /// The rate at which they fall due, jobs per second.
    pub due_per_sec: f64,
    /// Wall time of the bulk enqueue, seconds.
    pub enqueue_seconds: f64,
    /// Server CPU during the bulk enqueue per job, microseconds (it includes
    /// processing of jobs that fell due while the enqueue still ran).
    pub enqueue_server_cpu_us_per_job: f64,
    /// Median lateness (handler start minus run-at), ms.
    pub p50_ms: f64,
    /// 99th percentile lateness, ms.
    pub p99_ms: f64,
    /// Largest lateness, ms.
    pub max_ms: f64,
    /// Mean lateness, ms.
    pub mean_ms: f64,
    /// Wall time from the start of the enqueue to the last completion, seconds.
    pub seconds: f64,
    /// Server CPU over that time, seconds.
    pub server_cpu_seconds: f64,
    /// Server CPU per job over that time, microseconds.
    pub server_cpu_us_per_job: f64,
}

/// Everything `emq bench --lateness` measured (`--json` prints it).
#[derive(Debug, Clone, Serialize)]
pub struct LatenessReport {
    /// `script` or `native`.
    pub wire: &'static str,
    /// `wire 4 (Lua scripts)` or `wire 6 (native module)`.
    pub wire_name: &'static str,
    /// Server software and version, e.g. `Valkey 9.1.2`.
    pub server: String,
    /// Whether the server was started for the runs.
    pub embedded: bool,
    /// The client's tokio runtime, filled in by the caller (empty when unknown).
    pub runtime: String,
    /// Worker concurrency.
    pub concurrency: u64,
    /// The first run-at is this long after the enqueue starts, ms.
    pub lead_ms: u64,
    /// The run-ats are spread evenly over this long, ms.
    pub spread_ms: u64,
    /// One entry per run, in order.
    pub runs: Vec<LatenessRun>,
}

/// The payload of a lateness job: its run-at.
#[derive(Debug, Deserialize)]
struct Due {
    run_at: u64,
}

/// Runs the lateness runs one after the other (starting an embedded server
/// when `config.url` is `None`, stopped again before returning).
pub async fn lateness(config: &LatenessConfig) -> Result<LatenessReport, CliError> {
    let target = Target::resolve(config.url.as_deref()).await?;
    let work = measure_lateness(config, target.url.clone(), target.is_embedded());
    target.run(work).await
}

async fn measure_lateness(
    config: &LatenessConfig,
    url: String,
    embedded: bool,
) -> Result<LatenessReport, CliError> {
    let url = &url;
    let connector = Connector::builder(url.as_str())
        .prefix(config.prefix.as_str())
        .wire(config.wire.wire())
        .connect()
        .await
        .map_err(|err| CliError::unreachable(url, &err))?;
    let mut plain = info::plain_connection(url).await?;
    let server = info::server_version(&mut plain).await?;
    let run_id = crate::commands::unix_ms();
    let mut runs = Vec::with_capacity(config.runs.len());
    for (i, &n) in config.runs.iter().enumerate() {
        let queue = connector.queue::<Value>(&format!("bench-{run_id}-lateness-{i}"))?;
        runs.push(lateness_run(&queue, n.max(1), &mut plain).await?);
    }
    Ok(LatenessReport {
        wire: config.wire.as_str(),
        wire_name: config.wire.describe(),
        server,
        embedded,
        runtime: String::new(),
        concurrency: CONCURRENCY,
        lead_ms: LATENESS_LEAD.as_millis() as u64,
        spread_ms: LATENESS_SPREAD.as_millis() as u64,
        runs,
    })
}

/// Microseconds since the Unix epoch, host clock.
fn unix_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_micros() as i64)
}

/// One run: an idle worker, then `n` jobs due over the spread.
async fn lateness_run(
    queue: &Queue<Value>,
    n: u64,
    plain: &mut MultiplexedConnection,
) -> Result<LatenessRun, CliError> {
    let late = Arc::new(Mutex::new(Vec::<f64>::with_capacity(n as usize)));
    let record = late.clone();
    let worker = Worker::new(queue.typed::<Due>(), move |job: JobContext<Due>| {
        let lateness_us = unix_us() - job.payload.run_at as i64 * 1000;
        record
            .lock()
            .expect("lateness lock")
            .push(lateness_us as f64 / 1000.0);
        std::future::ready(Ok::<_, JobError>(()))
    })
    .concurrency(CONCURRENCY as usize)
    .start();
    // Let the worker find the queue empty and go idle.
    tokio::time::sleep(SETTLE).await;

    let cpu = info::cpu_seconds(plain).await?;
    let started = Instant::now();
    let first = crate::time::now_ms() + LATENESS_LEAD.as_millis() as u64;
    let spread = LATENESS_SPREAD.as_millis() as u64;
    let batch: Vec<NewJob<Value>> = (0..n)
        .map(|i| {
            let run_at = first + i * spread / n;
            NewJob::new(json!({ "run_at": run_at })).at(UNIX_EPOCH + Duration::from_millis(run_at))
        })
        .collect();
    let enqueued = match queue.enqueue_bulk(batch).await {
        Ok(enqueued) => enqueued,
        Err(err) => {
            worker.shutdown(Duration::from_secs(10)).await;
            return Err(err.into());
        }
    };
    let enqueue_wall = started.elapsed();
    let enqueue_cpu = info::cpu_seconds(plain).await? - cpu;
    let created = enqueued.iter().filter(|e| e.created).count() as u64;
    if created != n {
        worker.shutdown(Duration::from_secs(10)).await;
        return Err(CliError::usage(format!(
            "bench: scheduled {created} of {n} jobs (queue {} was not fresh)",
            queue.name()
        )));
    }

    let mut last = 0;
    let mut moved = Instant::now();
    let waited = loop {
        let finished = worker.stats().finished();
        if finished >= n {
            break Ok(started.elapsed());
        }
        if finished != last {
            last = finished;
            moved = Instant::now();
        } else if moved.elapsed() > STALL + LATENESS_LEAD + LATENESS_SPREAD {
            break Err(CliError::usage(format!(
                "bench stalled: {finished} of {n} scheduled jobs finished on queue {}, nothing moved for {}s",
                queue.name(),
                moved.elapsed().as_secs()
            )));
        }
        tokio::time::sleep(POLL).await;
    };
    let cpu = info::cpu_seconds(plain).await? - cpu;
    let stats = worker.shutdown(Duration::from_secs(10)).await;
    let wall = waited?;
    if stats.completed != n {
        return Err(CliError::usage(format!(
            "bench: {} of {n} scheduled jobs completed on queue {} ({stats:?})",
            stats.completed,
            queue.name()
        )));
    }
    let mut late = std::mem::take(&mut *late.lock().expect("lateness lock"));
    late.sort_by(f64::total_cmp);
    let mean = late.iter().sum::<f64>() / late.len().max(1) as f64;
    Ok(LatenessRun {
        jobs: n,
        due_per_sec: n as f64 / LATENESS_SPREAD.as_secs_f64(),
        enqueue_seconds: enqueue_wall.as_secs_f64(),
        enqueue_server_cpu_us_per_job: enqueue_cpu * 1e6 / n as f64,
        p50_ms: percentile(&late, 0.50),
        p99_ms: percentile(&late, 0.99),
        max_ms: late.last().copied().unwrap_or(0.0),
        mean_ms: mean,
        seconds: wall.as_secs_f64(),
        server_cpu_seconds: cpu,
        server_cpu_us_per_job: cpu * 1e6 / n as f64,
    })
}

/// The nearest-rank `q` quantile of ascending `sorted` (0 when empty).
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The lateness report as an aligned table.
pub fn render_lateness(report: &LatenessReport) -> String {
    let embedded = if report.embedded { " (embedded)" } else { "" };
    let runtime = if report.runtime.is_empty() {
        String::new()
    } else {
        format!(", {} runtime", report.runtime)
    };
    let mut table = Table::new([Align::Right; 8]);
    table.row([
        "jobs",
        "due jobs/s",
        "enqueue s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "enqueue µs/job",
        "server µs/job",
    ]);
    let mut notes = String::new();
    for run in &report.runs {
        table.row([
            run.jobs.to_string(),
            format!("{:.0}", run.due_per_sec),
            format!("{:.3}", run.enqueue_seconds),
            format!("{:.1}", run.p50_ms),
            format!("{:.1}", run.p99_ms),
            format!("{:.1}", run.max_ms),
            format!("{:.2}", run.enqueue_server_cpu_us_per_job),
            format!("{:.2}", run.server_cpu_us_per_job),
        ]);
        if run.enqueue_seconds * 1000.0 > report.lead_ms as f64 {
            notes.push_str(&format!(
                "note: the enqueue of {} jobs outlasted the {} ms lead: jobs fell due while it still ran\n",
                run.jobs, report.lead_ms
            ));
        }
    }
    format!(
        "EchoMQ bench --lateness: {}, {}{embedded}{runtime}\n\
         jobs due evenly over {} ms from {} ms after the bulk enqueue starts, to an idle worker (concurrency {});\n\
         lateness = handler start - run-at (one host clock); server µs/job: enqueue to last completion\n{table}{notes}",
        report.wire_name, report.server, report.spread_ms, report.lead_ms, report.concurrency
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 0.50), 50.0);
        assert_eq!(percentile(&values, 0.99), 99.0);
        assert_eq!(percentile(&values, 1.0), 100.0);
        assert_eq!(percentile(&[7.0], 0.99), 7.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
