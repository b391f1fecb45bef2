//! The flow-control phases of `emq bench` (`--rate-limit`,
//! `--concurrency-cap`, `--dedup`): what a rate limit that never binds and a
//! cap of 50 cost a worker at concurrency 50, and what a deduplication key
//! costs an enqueue, each against the same work without the feature.
//!
//! A feature and its baseline are measured interleaved: the run's jobs are
//! split into [`ROUNDS`] chunks, and every round runs one chunk of each
//! variant, in an order that rotates from round to round, each on a queue
//! of its own. A machine that slows down or speeds up during the run (these
//! machines are noisy) then weighs on every variant alike, so the ratios
//! hold where a phase after phase would compare different moments.

use super::{CONCURRENCY, Cpu, Phase, Session, check_fresh, jobs, process_phase};
use crate::error::CliError;
use echomq::{NewJob, Queue};
use serde::Serialize;
use serde_json::Value;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// Jobs a rate-limit window lets start in `emq bench --rate-limit`: more
/// than any machine claims in a second, so the limit never binds.
pub(super) const UNBINDING_RATE: u64 = 1_000_000_000;
/// The cap on active jobs of `emq bench --concurrency-cap`: the worker's
/// own concurrency, so the cap is at its edge without binding.
pub(super) const CAP: u64 = CONCURRENCY;
/// Chunks the flow phases' jobs are split into, one of each variant per
/// round.
pub const ROUNDS: u64 = 5;
/// Single enqueues in flight at once in the `--dedup` phases (the
/// connection pipelines them).
const IN_FLIGHT: usize = 200;

/// Which flow-control phases to run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowPhases {
    /// Processing at concurrency 50 under a rate limit that never binds.
    pub rate_limit: bool,
    /// Processing at concurrency 50 under a cap of 50 active jobs.
    pub concurrency_cap: bool,
    /// Single enqueues with a dedup key each, and the same without.
    pub dedup: bool,
}

/// What the flow-control phases measured: each variant summed over its
/// rounds, and each feature against its interleaved baseline.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FlowReport {
    /// Processing at concurrency 50 without flow control, interleaved with
    /// the two below (their baseline).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_c50_baseline: Option<Phase>,
    /// Processing at concurrency 50 under a rate limit that never binds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_c50_rate_limited: Option<Phase>,
    /// Processing at concurrency 50 under a cap of 50 active jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_c50_capped: Option<Phase>,
    /// Single enqueues without a dedup key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enqueue_single: Option<Phase>,
    /// Single enqueues, each with its own dedup key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enqueue_single_dedup: Option<Phase>,
    /// Each feature over its baseline.
    #[serde(skip_serializing_if = "FlowRatios::is_empty")]
    pub flow_ratios: FlowRatios,
}

/// Each flow-control feature's figure over its interleaved baseline's.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FlowRatios {
    /// Jobs per second at concurrency 50, rate limit not binding / none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limited_jobs_per_sec: Option<f64>,
    /// Jobs per second at concurrency 50, cap of 50 / none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capped_jobs_per_sec: Option<f64>,
    /// Server CPU per single enqueue, with a dedup key / without.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dedup_enqueue_server_cpu: Option<f64>,
}

impl FlowRatios {
    fn is_empty(&self) -> bool {
        self.rate_limited_jobs_per_sec.is_none()
            && self.capped_jobs_per_sec.is_none()
            && self.dedup_enqueue_server_cpu.is_none()
    }

    /// One line per ratio measured, for the text report.
    pub fn lines(&self) -> String {
        let rows = [
            (
                "rate limit not binding / none, jobs/s at concurrency 50",
                self.rate_limited_jobs_per_sec,
            ),
            (
                "concurrency cap 50 / none, jobs/s at concurrency 50",
                self.capped_jobs_per_sec,
            ),
            (
                "dedup key / none, server CPU per single enqueue",
                self.dedup_enqueue_server_cpu,
            ),
        ];
        rows.iter()
            .filter_map(|(label, ratio)| ratio.map(|r| format!("{label}: {r:.2}\n")))
            .collect()
    }
}

/// One variant's measurements summed over the rounds.
#[derive(Default)]
pub(crate) struct Tally {
    jobs: u64,
    wall: Duration,
    cpu: Cpu,
    concurrency: Option<u64>,
}

impl Tally {
    pub(crate) fn add(&mut self, phase: Phase) {
        self.jobs += phase.jobs;
        self.wall += Duration::from_secs_f64(phase.seconds);
        self.cpu += Cpu {
            server: phase.server_cpu_seconds,
            client: phase.client_cpu_seconds,
        };
        self.concurrency = phase.concurrency;
    }

    pub(crate) fn phase(&self) -> Phase {
        Phase::new(self.jobs, self.concurrency, self.wall, self.cpu)
    }
}

/// A processing variant: how its queue is set up.
#[derive(Clone, Copy)]
enum Processing {
    Baseline,
    RateLimited,
    Capped,
}

/// Runs the requested phases over `n` jobs per variant (rounded down to a
/// multiple of [`ROUNDS`], at least one job per round).
pub(crate) async fn run(
    n: u64,
    phases: FlowPhases,
    session: &mut Session,
) -> Result<FlowReport, CliError> {
    let chunk = (n / ROUNDS).max(1);
    let mut report = FlowReport::default();
    if phases.rate_limit || phases.concurrency_cap {
        let mut variants = vec![Processing::Baseline];
        if phases.rate_limit {
            variants.push(Processing::RateLimited);
        }
        if phases.concurrency_cap {
            variants.push(Processing::Capped);
        }
        let tallies = processing(&variants, chunk, session).await?;
        for (variant, tally) in variants.iter().zip(tallies) {
            let slot = match variant {
                Processing::Baseline => &mut report.process_c50_baseline,
                Processing::RateLimited => &mut report.process_c50_rate_limited,
                Processing::Capped => &mut report.process_c50_capped,
            };
            *slot = Some(tally.phase());
        }
    }
    if phases.dedup {
        let [plain, dedup] = enqueues(chunk, session).await?;
        report.enqueue_single = Some(plain.phase());
        report.enqueue_single_dedup = Some(dedup.phase());
    }
    report.flow_ratios = ratios(&report);
    Ok(report)
}

fn ratios(report: &FlowReport) -> FlowRatios {
    let over = |a: &Option<Phase>, b: &Option<Phase>, field: fn(&Phase) -> f64| match (a, b) {
        (Some(a), Some(b)) if field(b) > 0.0 => Some(field(a) / field(b)),
        _ => None,
    };
    let base = &report.process_c50_baseline;
    FlowRatios {
        rate_limited_jobs_per_sec: over(&report.process_c50_rate_limited, base, |p| p.jobs_per_sec),
        capped_jobs_per_sec: over(&report.process_c50_capped, base, |p| p.jobs_per_sec),
        dedup_enqueue_server_cpu: over(&report.enqueue_single_dedup, &report.enqueue_single, |p| {
            p.server_cpu_us_per_job
        }),
    }
}

/// `chunk` jobs per variant per round, processed at concurrency 50 on each
/// variant's queue (enqueued in bulk outside the measurement).
async fn processing(
    variants: &[Processing],
    chunk: u64,
    session: &mut Session,
) -> Result<Vec<Tally>, CliError> {
    let mut queues = Vec::new();
    for variant in variants {
        queues.push(processing_queue(*variant, session).await?);
    }
    let mut tallies: Vec<Tally> = variants.iter().map(|_| Tally::default()).collect();
    for round in 0..ROUNDS as usize {
        for at in rotated(variants.len(), round) {
            queues[at].enqueue_bulk(jobs(chunk)).await?;
            let phase = process_phase(&queues[at], chunk, CONCURRENCY, session).await?;
            tallies[at].add(phase);
        }
    }
    Ok(tallies)
}

async fn processing_queue(
    variant: Processing,
    session: &Session,
) -> Result<Queue<Value>, CliError> {
    Ok(match variant {
        Processing::Baseline => session.queue("flow-baseline").await?,
        Processing::RateLimited => {
            let queue = session.queue::<Value>("rate-limit").await?;
            queue
                .admin()
                .set_rate_limit(UNBINDING_RATE, Duration::from_secs(1))
                .await?;
            queue
        }
        Processing::Capped => {
            let queue = session.queue::<Value>("concurrency-cap").await?;
            queue.admin().set_concurrency_cap(CAP).await?;
            queue
        }
    })
}

/// The indexes `0..len` starting at `round mod len`.
pub(crate) fn rotated(len: usize, round: usize) -> impl Iterator<Item = usize> {
    (0..len).map(move |i| (round + i) % len)
}

/// `chunk` single enqueues per round without a key and `chunk` with one,
/// the order alternating by round: `[plain, dedup]`. Both go to one queue,
/// so the two differ only by the key: the queue-wide cost of deduplication
/// (the `dedup` mark, which gives a queue without settings a meta hash that
/// every command then reads) falls on both, as it does on a queue whose
/// enqueues mix keyed and plain jobs.
async fn enqueues(chunk: u64, session: &mut Session) -> Result<[Tally; 2], CliError> {
    let queue = session.queue::<Value>("dedup").await?;
    let mut tallies = [Tally::default(), Tally::default()];
    for round in 0..ROUNDS {
        for at in rotated(2, round as usize) {
            let keys = (at == 1).then_some(round * chunk);
            let phase = single_enqueues(&queue, chunk, keys, session).await?;
            tallies[at].add(phase);
        }
    }
    Ok(tallies)
}

/// `n` single enqueues (`ENQUEUE`, not the bulk form) on `queue`,
/// `IN_FLIGHT` at a time; with `keys`, each with its own dedup key
/// (`k<first + i>`, so no round meets another's keys).
async fn single_enqueues(
    queue: &Queue<Value>,
    n: u64,
    keys: Option<u64>,
    session: &mut Session,
) -> Result<Phase, CliError> {
    let batch: Vec<NewJob<Value>> = jobs(n)
        .into_iter()
        .zip(0..)
        .map(|(job, i)| match keys {
            Some(first) => job.dedup(format!("k{}", first + i)),
            None => job,
        })
        .collect();
    let cpu = session.cpu().await?;
    let started = Instant::now();
    let created = enqueue_each(queue, batch).await?;
    let wall = started.elapsed();
    let cpu = session.cpu().await? - cpu;
    check_fresh(queue, created, n)?;
    Ok(Phase::new(n, None, wall, cpu))
}

/// Sends each job as its own enqueue, `IN_FLIGHT` at once; how many were
/// created.
async fn enqueue_each(queue: &Queue<Value>, batch: Vec<NewJob<Value>>) -> Result<u64, CliError> {
    let mut created = 0;
    let mut running = JoinSet::new();
    for job in batch {
        if running.len() >= IN_FLIGHT
            && let Some(done) = running.join_next().await
        {
            created += u64::from(joined(done)?);
        }
        let queue = queue.clone();
        running.spawn(async move { queue.enqueue(job).await });
    }
    while let Some(done) = running.join_next().await {
        created += u64::from(joined(done)?);
    }
    Ok(created)
}

fn joined(
    done: Result<echomq::Result<echomq::Enqueued>, tokio::task::JoinError>,
) -> Result<bool, CliError> {
    let enqueued = done.map_err(|err| CliError::usage(format!("bench: an enqueue task: {err}")))?;
    Ok(enqueued?.created)
}
