//! `emq bench --lateness`: how late scheduled jobs start, measured the way
//! the peer harness measures it (`bench/peers/bench-queue.js`, tests e and
//! f), so the numbers compare:
//!
//! 1. a fresh queue keeps no completed job (`keep_completed` 0, the peers'
//!    `removeOnComplete`);
//! 2. a [`Worker`] at concurrency 50 is started and given
//!    [`LATENESS_SETTLE`] to connect and go idle;
//! 3. the clock starts (server CPU read); N jobs are enqueued with
//!    `enqueue_bulk` in chunks of [`LATENESS_CHUNK`], one chunk after the
//!    other; each job is due at the host's now at the start of its chunk
//!    plus a uniform random 0..=[`LATENESS_MAX_DELAY_MS`] ms, carries that
//!    due instant (ms, with sub-ms precision) in its payload, and is
//!    scheduled with [`NewJob::at`] for it rounded up to the whole ms the
//!    protocol stores (so no job is claimable before its due);
//! 4. the handler records its start (host clock) minus the due instant —
//!    client and server share the machine, so one clock serves both;
//! 5. the clock stops (server CPU read) when the last job has completed.
//!
//! Reported per run: p50 / p90 / p99 / max (and min, mean) lateness, the
//! enqueue and total wall time, and the server CPU per job over the whole
//! window. The default runs are 2,000 jobs (the peers' test f: timer
//! precision well below capacity) and 20,000 (test e).

use super::{CONCURRENCY, STALL, Session, Setup, check_fresh, finish};
use crate::cli::WireArg;
use crate::embedded::Target;
use crate::error::CliError;
use crate::table::{Align, Table};
use echomq::{JobContext, JobError, NewJob, Queue, QueueSettings, TlsOptions, Worker};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The runs of `emq bench --lateness` when `--jobs` is not given.
pub const LATENESS_JOBS: [u64; 2] = [2_000, 20_000];
/// Jobs per `enqueue_bulk` call.
pub const LATENESS_CHUNK: u64 = 1_000;
/// Each job is due up to this many ms (inclusive) after its chunk starts.
pub const LATENESS_MAX_DELAY_MS: u64 = 1_000;
/// How long the worker runs before the clock starts.
pub const LATENESS_SETTLE: Duration = Duration::from_millis(500);

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
    /// TLS settings for a `rediss://` server.
    pub tls: Option<TlsOptions>,
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
            tls: None,
        }
    }
}

impl Default for LatenessConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// One lateness run.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct LatenessRun {
    /// Jobs scheduled (and run).
    pub jobs: u64,
    /// Wall time of the enqueue (every chunk), seconds.
    pub enqueue_seconds: f64,
    /// Wall time from the start of the enqueue to the last completion, seconds.
    pub seconds: f64,
    /// Median lateness (handler start minus due), ms.
    pub p50_ms: f64,
    /// 90th percentile lateness, ms.
    pub p90_ms: f64,
    /// 99th percentile lateness, ms.
    pub p99_ms: f64,
    /// Largest lateness, ms.
    pub max_ms: f64,
    /// Smallest lateness, ms.
    pub min_ms: f64,
    /// Mean lateness, ms.
    pub mean_ms: f64,
    /// Server CPU over the whole window, seconds.
    pub server_cpu_seconds: f64,
    /// Server CPU per job over the whole window, microseconds.
    pub server_cpu_us_per_job: f64,
}

/// Everything `emq bench --lateness` measured (`--json` prints it).
#[derive(Debug, Clone, Serialize)]
pub struct LatenessReport {
    /// Wire, server and runtime.
    #[serde(flatten)]
    pub setup: Setup,
    /// Worker concurrency.
    pub concurrency: u64,
    /// Jobs per `enqueue_bulk` call.
    pub chunk: u64,
    /// Each job is due up to this many ms after its chunk starts.
    pub max_delay_ms: u64,
    /// How long the worker ran before the clock started, ms.
    pub settle_ms: u64,
    /// One entry per run, in order.
    pub runs: Vec<LatenessRun>,
}

/// The payload of a lateness job: its due instant, unix ms.
#[derive(Debug, Deserialize)]
struct Due {
    due: f64,
}

/// Runs the lateness runs one after the other (starting an embedded server
/// when `config.url` is `None`, stopped again before returning).
pub async fn lateness(config: &LatenessConfig) -> Result<LatenessReport, CliError> {
    let target = Target::resolve(config.url.as_deref()).await?;
    let work = measure(config, target.url.clone(), target.embedded_binary());
    target.run(work).await
}

async fn measure(
    config: &LatenessConfig,
    url: String,
    server_binary: Option<String>,
) -> Result<LatenessReport, CliError> {
    let mut session = Session::open(
        &url,
        &config.prefix,
        config.wire,
        server_binary,
        config.tls.as_ref(),
    )
    .await?;
    let mut runs = Vec::with_capacity(config.runs.len());
    for (i, &n) in config.runs.iter().enumerate() {
        let queue = session.queue::<Value>(&format!("lateness-{i}")).await?;
        runs.push(run_once(&queue, n.max(1), &mut session).await?);
    }
    Ok(LatenessReport {
        setup: session.setup,
        concurrency: CONCURRENCY,
        chunk: LATENESS_CHUNK,
        max_delay_ms: LATENESS_MAX_DELAY_MS,
        settle_ms: LATENESS_SETTLE.as_millis() as u64,
        runs,
    })
}

/// The host clock, unix ms with sub-ms precision.
fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |since| since.as_secs_f64() * 1000.0)
}

/// One run: a running worker, then `n` jobs due over about a second.
async fn run_once(
    queue: &Queue<Value>,
    n: u64,
    session: &mut Session,
) -> Result<LatenessRun, CliError> {
    queue
        .configure(&QueueSettings {
            keep_completed: 0,
            ..QueueSettings::default()
        })
        .await?;
    let late = Arc::new(Mutex::new(Vec::<f64>::with_capacity(n as usize)));
    let record = late.clone();
    let worker = Worker::new(queue.typed::<Due>(), move |job: JobContext<Due>| {
        let lateness = now_ms() - job.payload.due;
        record.lock().expect("lateness lock").push(lateness);
        std::future::ready(Ok::<_, JobError>(()))
    })
    .concurrency(CONCURRENCY as usize)
    .start();
    // As the peers do: let the worker connect before the clock starts.
    tokio::time::sleep(LATENESS_SETTLE).await;

    let cpu = session.cpu().await?;
    let started = Instant::now();
    let enqueued = enqueue(queue, n).await;
    let enqueue_wall = started.elapsed();
    let checked = enqueued.and_then(|created| check_fresh(queue, created, n));
    if let Err(err) = checked {
        worker.shutdown(Duration::from_secs(10)).await;
        return Err(err);
    }
    let stall = STALL + Duration::from_millis(LATENESS_MAX_DELAY_MS);
    let (wall, cpu_after) = finish(worker, queue, n, started, stall, session).await?;
    let cpu = (cpu_after - cpu).server;

    let mut late = std::mem::take(&mut *late.lock().expect("lateness lock"));
    late.sort_by(f64::total_cmp);
    Ok(LatenessRun {
        jobs: n,
        enqueue_seconds: enqueue_wall.as_secs_f64(),
        seconds: wall.as_secs_f64(),
        p50_ms: percentile(&late, 0.50),
        p90_ms: percentile(&late, 0.90),
        p99_ms: percentile(&late, 0.99),
        max_ms: late.last().copied().unwrap_or(0.0),
        min_ms: late.first().copied().unwrap_or(0.0),
        mean_ms: late.iter().sum::<f64>() / late.len().max(1) as f64,
        server_cpu_seconds: cpu,
        server_cpu_us_per_job: cpu * 1e6 / n as f64,
    })
}

/// Enqueues `n` jobs in chunks of [`LATENESS_CHUNK`], each due a random
/// 0..=[`LATENESS_MAX_DELAY_MS`] ms after its chunk starts; returns how
/// many were created.
async fn enqueue(queue: &Queue<Value>, n: u64) -> Result<u64, CliError> {
    let mut created = 0;
    for first in (0..n).step_by(LATENESS_CHUNK as usize) {
        let base = now_ms();
        let chunk: Vec<NewJob<Value>> = (first..n.min(first + LATENESS_CHUNK))
            .map(|i| {
                let due = base + fastrand::u64(0..=LATENESS_MAX_DELAY_MS) as f64;
                let run_at = UNIX_EPOCH + Duration::from_millis(due.ceil() as u64);
                NewJob::new(json!({ "n": i, "due": due })).at(run_at)
            })
            .collect();
        let enqueued = queue.enqueue_bulk(chunk).await?;
        created += enqueued.iter().filter(|e| e.created).count() as u64;
    }
    Ok(created)
}

/// The nearest-rank `q` quantile of ascending `sorted` (0 when empty), as
/// the peers' `percentile` computes it.
pub(super) fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The lateness report as an aligned table.
pub fn render_lateness(report: &LatenessReport) -> String {
    let mut table = Table::new([Align::Right; 9]);
    table.row([
        "jobs",
        "enqueue s",
        "total s",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms",
        "min ms",
        "server µs/job",
    ]);
    for run in &report.runs {
        table.row([
            run.jobs.to_string(),
            format!("{:.3}", run.enqueue_seconds),
            format!("{:.3}", run.seconds),
            format!("{:.1}", run.p50_ms),
            format!("{:.1}", run.p90_ms),
            format!("{:.1}", run.p99_ms),
            format!("{:.1}", run.max_ms),
            format!("{:.1}", run.min_ms),
            format!("{:.2}", run.server_cpu_us_per_job),
        ]);
    }
    format!(
        "{}\n\
         worker (concurrency {}) running {} ms before the clock starts; jobs enqueued in chunks of {},\n\
         each due a uniform random 0-{} ms after its chunk starts; lateness = handler start - due\n\
         (one host clock); server µs/job: first enqueue to last completion\n{table}",
        report.setup.heading("EchoMQ bench --lateness"),
        report.concurrency,
        report.settle_ms,
        report.chunk,
        report.max_delay_ms
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 0.50), 50.0);
        assert_eq!(percentile(&values, 0.90), 90.0);
        assert_eq!(percentile(&values, 0.99), 99.0);
        assert_eq!(percentile(&values, 1.0), 100.0);
        assert_eq!(percentile(&[7.0], 0.99), 7.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
