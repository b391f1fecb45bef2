//! The flow phases of `emq bench --flows` (jobs that wait for other jobs,
//! docs/flows.md; not the flow-control phases of `flow.rs`): what a
//! dependency costs the server per job, and how soon a dependent becomes
//! claimable once its last dependency completed.
//!
//! Three variants of the same number of jobs, in rounds interleaved as the
//! flow-control phases are, each processed by one worker at concurrency 50
//! with a no-op handler, its server CPU counted from the first write to
//! the last completion:
//!
//! - **plain**: the jobs enqueued in bulk, no flow (a job's lifecycle);
//! - **plain, one a call**: the same processed at concurrency 1 with
//!   nothing claimed ahead (each completion carrying the next claim), the
//!   baseline of the chain, whose jobs can only run one at a time: a call
//!   per job, as a chain's hop, where the plain variant's calls carry
//!   dozens;
//! - **fan-out / fan-in**: one flow of a root, the jobs between depending
//!   on it, and a last job depending on them all (flows of at most
//!   [`FAN_MOST`] jobs, one after the other, when `--jobs` is larger);
//! - **chain**: one flow, each job depending on the one before;
//! - **a bare round trip**: as many `PING`s, each sent when the last one's
//!   reply came back: what one request and its reply cost the server with
//!   nothing else in flight, the floor of a chain's hop (a job the client
//!   runs between its dependency's completion and its own, so at least
//!   one request and one reply a hop, however little the server does).
//!
//! Then the unblocking latency: pairs of a dependency in one queue and its
//! dependent in another, submitted up front and processed by one worker
//! over both queues at concurrency 50; per pair, the dependent's `run_at`
//! (the server's clock when `FLOW.RESOLVE` unblocked it) less the
//! dependency's `finished_at` (its `COMPLETE`): the relay's whole path,
//! from the worker's decision through `FLOW.OUTBOX`, `FLOW.RESOLVE` and
//! `FLOW.ACK`.

use super::flow::{ROUNDS, Tally, rotated};
use super::lateness::percentile;
use super::{
    CONCURRENCY, Cpu, Phase, STALL, Session, drain, enqueue_phase, finish, noop_worker_over,
    process_phase_holding,
};
use crate::error::CliError;
use echomq::{Connector, Flow, JobId, JobRef, NewJob, Queue, QueueSettings};
use futures_util::{StreamExt, TryStreamExt, stream};
use serde::Serialize;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The most jobs of one fan-out / fan-in flow: a root, 10,000 jobs after
/// it (a job's most dependencies, `FLOW_EDGES_MAX`), and the last job.
pub const FAN_MOST: u64 = 10_002;

/// The most dependency / dependent pairs the latency is sampled over.
pub const PAIRS_MOST: u64 = 10_000;

/// Flows submitted at once while the pairs are written.
const IN_FLIGHT: usize = 200;

/// What the flow phases measured.
#[derive(Debug, Clone, Serialize)]
pub struct FlowsReport {
    /// The jobs enqueued and processed without a flow, summed over the
    /// rounds (submit or enqueue included in each variant's CPU).
    pub plain: Phase,
    /// The same jobs processed at concurrency 1, nothing claimed ahead:
    /// one call a job.
    pub plain_serial: Phase,
    /// The same number of jobs as fan-out / fan-in flows.
    pub fan_out_in: Phase,
    /// The same number of jobs as one chain per round.
    pub chain: Phase,
    /// As many bare round trips (`PING`, one at a time): `jobs` counts
    /// the requests.
    pub round_trip: Phase,
    /// Jobs of each fan-out / fan-in flow.
    pub fan_jobs: u64,
    /// Server CPU per job, fan-out / fan-in ÷ plain.
    pub fan_out_in_cpu_ratio: f64,
    /// Server CPU per job, chain ÷ plain.
    pub chain_cpu_ratio: f64,
    /// Server CPU per job, chain ÷ plain one a call.
    pub chain_serial_cpu_ratio: f64,
    /// Server CPU of a bare round trip ÷ a plain job's: the least a
    /// chain's ratio can be.
    pub round_trip_cpu_ratio: f64,
    /// From a dependency's completion to its dependent being claimable.
    pub unblock: UnblockLatency,
}

/// From a dependency's `COMPLETE` to its dependent's unblocking, both on
/// the server's clock (milliseconds, its resolution).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct UnblockLatency {
    /// Pairs sampled (each a flow of two jobs in two queues).
    pub pairs: u64,
    /// Median, milliseconds.
    pub p50_ms: f64,
    /// 99th percentile, milliseconds.
    pub p99_ms: f64,
    /// The longest, milliseconds.
    pub max_ms: f64,
}

impl FlowsReport {
    /// The phases as table rows' names and phases.
    pub fn phases(&self) -> Vec<(String, Phase)> {
        vec![
            ("plain, no flow".into(), self.plain),
            ("plain, one a call".into(), self.plain_serial),
            ("fan-out / fan-in".into(), self.fan_out_in),
            ("chain".into(), self.chain),
            ("a bare round trip (PING)".into(), self.round_trip),
        ]
    }

    /// The ratios and the latency, as lines.
    pub fn lines(&self) -> String {
        let u = &self.unblock;
        format!(
            "flows: server CPU per job ÷ plain: fan-out / fan-in ({} jobs a flow) {:.3}, chain {:.3}; \
             chain ÷ plain one a call {:.3}; a bare round trip (PING, one at a time, \
             a chain hop's floor) {:.3}\n\
             flows: last dependency completed → dependent claimable, {} pairs over two queues: \
             p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms\n",
            self.fan_jobs,
            self.fan_out_in_cpu_ratio,
            self.chain_cpu_ratio,
            self.chain_serial_cpu_ratio,
            self.round_trip_cpu_ratio,
            u.pairs,
            u.p50_ms,
            u.p99_ms,
            u.max_ms
        )
    }
}

/// The three variants over `n` jobs each per round (at least 3), then
/// the latency over `n / 2` pairs (at most [`PAIRS_MOST`]).
pub(crate) async fn run(n: u64, session: &mut Session) -> Result<FlowsReport, CliError> {
    let n = n.max(3);
    let fan_jobs = n.min(FAN_MOST);
    let fans = (n / fan_jobs).max(1);
    let mut tallies = [(); 5].map(|()| Tally::default());
    for round in 0..ROUNDS {
        for at in rotated(5, round as usize) {
            let phase = match at {
                0 => plain(n, CONCURRENCY, session.claim_ahead, session).await?,
                1 => plain(n, 1, Some(0), session).await?,
                2 => fan_out_in(fan_jobs, fans, round, session).await?,
                3 => chain(n, round, session).await?,
                _ => round_trips(n, session).await?,
            };
            tallies[at].add(phase);
        }
    }
    let [plain, plain_serial, fan_out_in, chain, round_trip] = tallies.map(|t| t.phase());
    let per_job = |p: &Phase| p.server_cpu_us_per_job;
    let ratio = |p: &Phase| per_job(p) / per_job(&plain).max(f64::MIN_POSITIVE);
    let unblock = unblock_latency((n / 2).clamp(1, PAIRS_MOST), session).await?;
    Ok(FlowsReport {
        fan_out_in_cpu_ratio: ratio(&fan_out_in),
        chain_cpu_ratio: ratio(&chain),
        chain_serial_cpu_ratio: per_job(&chain) / per_job(&plain_serial).max(f64::MIN_POSITIVE),
        round_trip_cpu_ratio: ratio(&round_trip),
        plain,
        plain_serial,
        fan_out_in,
        chain,
        round_trip,
        fan_jobs,
        unblock,
    })
}

/// `n` jobs enqueued in bulk and processed at `concurrency`, the worker
/// holding `claim_ahead` jobs ahead: the enqueue's CPU and the
/// processing's, in one phase.
async fn plain(
    n: u64,
    concurrency: u64,
    claim_ahead: Option<usize>,
    session: &mut Session,
) -> Result<Phase, CliError> {
    let queue = session.queue::<Value>("plain").await?;
    let enqueue = enqueue_phase(&queue, n, session).await?;
    let process = process_phase_holding(&queue, n, concurrency, claim_ahead, session).await?;
    let wall = Duration::from_secs_f64(enqueue.seconds + process.seconds);
    let cpu = Cpu {
        server: enqueue.server_cpu_seconds + process.server_cpu_seconds,
        client: enqueue.client_cpu_seconds + process.client_cpu_seconds,
    };
    Ok(Phase::new(n, Some(concurrency), wall, cpu))
}

/// `fans` flows of `size` jobs each: a root, `size - 2` jobs after it, a
/// last job after those; each submitted, then processed.
async fn fan_out_in(
    size: u64,
    fans: u64,
    round: u64,
    session: &mut Session,
) -> Result<Phase, CliError> {
    let queue = session.queue::<Value>("fan").await?;
    let mut tally = Tally::default();
    for fan in 0..fans {
        let mut flow = Flow::new(format!("fan-{round}-{fan}"));
        let root = flow.add(&queue, NewJob::new(json!({ "n": 0 })));
        let middle: Vec<JobRef> = (1..size - 1)
            .map(|i| flow.add(&queue, NewJob::new(json!({ "n": i })).depends_on([&root])))
            .collect();
        flow.add(
            &queue,
            NewJob::new(json!({ "n": size - 1 })).depends_on(&middle),
        );
        tally.add(submit_and_process(&queue, &flow, session).await?);
    }
    Ok(tally.phase())
}

/// One flow of `n` jobs, each after the one before.
async fn chain(n: u64, round: u64, session: &mut Session) -> Result<Phase, CliError> {
    let queue = session.queue::<Value>("chain").await?;
    let mut flow = Flow::new(format!("chain-{round}"));
    let mut before = flow.add(&queue, NewJob::new(json!({ "n": 0 })));
    for i in 1..n {
        before = flow.add(&queue, NewJob::new(json!({ "n": i })).depends_on([&before]));
    }
    submit_and_process(&queue, &flow, session).await
}

/// `n` `PING`s on the run's plain connection, each sent once the one
/// before has been answered: the server's CPU for a request and its reply
/// alone.
async fn round_trips(n: u64, session: &mut Session) -> Result<Phase, CliError> {
    let cpu = session.cpu().await?;
    let started = Instant::now();
    for _ in 0..n {
        redis::cmd("PING")
            .query_async::<()>(&mut session.plain)
            .await
            .map_err(|err| CliError::usage(format!("bench: PING: {err}")))?;
    }
    let wall = started.elapsed();
    let cpu_after = session.cpu().await?;
    Ok(Phase::new(n, Some(1), wall, cpu_after - cpu))
}

/// Submits `flow` (every job in `queue`) and processes it at concurrency
/// 50: one phase, the submit's CPU and the processing's.
async fn submit_and_process(
    queue: &Queue<Value>,
    flow: &Flow,
    session: &mut Session,
) -> Result<Phase, CliError> {
    let n = flow.len() as u64;
    let cpu = session.cpu().await?;
    let started = Instant::now();
    session.connector.submit(flow).await?;
    let (wall, cpu_after) = finish(
        noop_worker_over([queue], None)?,
        queue,
        n,
        started,
        STALL,
        session,
    )
    .await?;
    Ok(Phase::new(n, Some(CONCURRENCY), wall, cpu_after - cpu))
}

/// `pairs` flows of a job in one queue and its dependent in another: the
/// latency over the run's two queues, each keeping every completed job.
async fn unblock_latency(pairs: u64, session: &mut Session) -> Result<UnblockLatency, CliError> {
    let first = session.queue::<Value>("pair-a").await?;
    let then = session.queue::<Value>("pair-b").await?;
    let keep = QueueSettings {
        keep_completed: pairs,
        ..session.configuration.settings()
    };
    for queue in [&first, &then] {
        queue.configure(&keep).await?;
    }
    unblock_latency_over(&session.connector, &first, &then, pairs).await
}

/// `pairs` flows of a job in `first` and its dependent in `then` (any two
/// queues, on one server or on two shards of a cluster), submitted before
/// a worker over both starts; each dependent's unblocking less its
/// dependency's completion. Both queues must keep `pairs` completed jobs
/// (their `keep_completed`), to be read after the run.
pub async fn unblock_latency_over(
    connector: &Connector,
    first: &Queue<Value>,
    then: &Queue<Value>,
    pairs: u64,
) -> Result<UnblockLatency, CliError> {
    let ids: Vec<(JobId, JobId)> = stream::iter(0..pairs)
        .map(|pair| {
            let mut flow = Flow::new(format!("pair-{pair}"));
            let a = flow.add(first, NewJob::new(json!({ "n": pair })));
            let b = flow.add(then, NewJob::new(json!({ "n": pair })).depends_on([&a]));
            async move {
                let submitted = connector.submit(&flow).await?;
                Ok::<_, CliError>((submitted[&a].id.clone(), submitted[&b].id.clone()))
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect()
        .await?;
    drain(
        noop_worker_over([first, then], None)?,
        first,
        pairs * 2,
        Instant::now(),
    )
    .await?;
    let mut ms: Vec<f64> = stream::iter(ids)
        .map(|(a, b)| async move { unblocked_after(first, &a, then, &b).await })
        .buffer_unordered(IN_FLIGHT)
        .try_collect()
        .await?;
    ms.sort_by(f64::total_cmp);
    Ok(UnblockLatency {
        pairs,
        p50_ms: percentile(&ms, 0.5),
        p99_ms: percentile(&ms, 0.99),
        max_ms: ms.last().copied().unwrap_or(0.0),
    })
}

/// Milliseconds from `a`'s completion to `b`'s unblocking.
async fn unblocked_after(
    first: &Queue<Value>,
    a: &JobId,
    then: &Queue<Value>,
    b: &JobId,
) -> Result<f64, CliError> {
    let missing = |queue: &Queue<Value>, id: &JobId, field: &str| {
        CliError::usage(format!(
            "bench: job {id} of queue {} has no {field} after the flow phase",
            queue.name()
        ))
    };
    let done = first.jobs().get(a).await?.and_then(|r| r.finished_at);
    let done = done.ok_or_else(|| missing(first, a, "finished_at"))?;
    let unblocked = then.jobs().get(b).await?.and_then(|r| r.run_at);
    let unblocked = unblocked.ok_or_else(|| missing(then, b, "run_at"))?;
    Ok(unblocked.saturating_sub(done) as f64)
}
