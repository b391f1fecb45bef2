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
//! of `INFO cpu` (the server process), read before and after each
//! phase over a connection of its own. Queues are named `<phase>-<n>`, the
//! first n whose queue has no key (so a run never meets an earlier run's
//! keys, and job keys fit the allocation BullMQ's benchmark queue
//! `bench-a`'s do); retention and
//! events stay at their defaults, or with `--like-bullmq` are set as
//! BullMQ's benchmark runs ([`Configuration::LikeBullmq`]).
//!
//! Every phase also reports the server's busy share (its CPU seconds over
//! the phase's wall seconds) and the client's CPU per job (this process's
//! user + system time, `getrusage(RUSAGE_SELF)`, over the same window);
//! the enqueue phase reports the server's `used_memory` per pending job
//! ([`PendingMemory`]).
//!
//! `emq bench --rate-limit --concurrency-cap --dedup` add the flow-control
//! phases ([`FlowReport`]): each feature measured in rounds interleaved with
//! the same work without it, and reported as a ratio to that baseline.
//!
//! `emq bench --flows` adds the phases of jobs with dependencies
//! ([`FlowsReport`]): a fan-out / fan-in and a chain against plain jobs in
//! server CPU per job, and the time from a dependency's completion to its
//! dependent being claimable.
//!
//! `emq bench --outcomes` adds the outcome-wait phases ([`OutcomesReport`]):
//! the lifecycle with nobody waiting and with a waiter on every job,
//! interleaved, and how soon 10,000 waits open at once hear their jobs'
//! outcomes.
//!
//! `emq bench --lateness` ([`fn@lateness`], in [`mod@lateness`]) measures how
//! late scheduled jobs start, the way the peer harness does.
//!
//! ```no_run
//! # async fn run() -> Result<(), emq::error::CliError> {
//! use emq::bench::{BenchConfig, run};
//! let report = run(&BenchConfig::new(10_000)).await?;
//! println!("{}", emq::bench::render(&report));
//! # Ok(()) }
//! ```

mod dashboard;
mod durability;
mod flow;
mod flows;
mod groups;
mod http;
mod keep_alive;
pub mod lateness;
mod many_queues;
mod metrics_cost;
mod outcomes;
mod rusage;
mod scrape;

pub use dashboard::{DashboardReport, PageTimes};
pub use durability::DurabilityReport;
pub use flow::{FlowPhases, FlowRatios, FlowReport, ROUNDS as FLOW_ROUNDS};
pub use flows::{FAN_MOST, FlowsReport, PAIRS_MOST, UnblockLatency, unblock_latency_over};
pub use groups::{GroupedRun, GroupsReport};
pub use http::{BULK, BULK_STREAMS, CLIENTS, COUNT, HttpPair, HttpReport};
pub use many_queues::ManyQueuesReport;
pub use metrics_cost::MetricsCostReport;
pub use outcomes::{LATENCY_WAITS, OutcomesReport, WaitLatency};
pub use scrape::ScrapeReport;

pub use lateness::{
    LATENESS_CHUNK, LATENESS_JOBS, LATENESS_MAX_DELAY_MS, LATENESS_SETTLE, LatenessConfig,
    LatenessReport, LatenessRun, lateness, render_lateness,
};

use crate::cli::WireArg;
use crate::embedded::Target;
use crate::error::CliError;
use crate::info;
use crate::table::{Align, Table};
use echomq::{
    Connector, Durability, JobContext, JobError, JobId, MetricsSettings, NewJob, Queue,
    QueueSettings, TlsOptions, Worker, WorkerHandle,
};
use redis::aio::MultiplexedConnection;
use serde::Serialize;
use serde::de::IgnoredAny;
use serde_json::{Value, json};
use std::ops::{AddAssign, Sub};
use std::time::{Duration, Instant};

/// Jobs of `emq bench` when `--jobs` is not given.
pub const DEFAULT_JOBS: u64 = 100_000;
/// Worker concurrency of the main processing phase (and of the lateness runs).
pub const CONCURRENCY: u64 = 50;
/// The serial phase processes `jobs / SERIAL_FRACTION` jobs at concurrency 1.
pub const SERIAL_FRACTION: u64 = 10;
/// How often a processing phase checks the worker's counters.
const POLL: Duration = Duration::from_millis(2);
/// A phase fails when no job finishes for this long.
const STALL: Duration = Duration::from_secs(30);
/// How long a bench worker's running jobs may take at shutdown.
const SHUTDOWN: Duration = Duration::from_secs(10);

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
    /// TLS settings for a `rediss://` server.
    pub tls: Option<TlsOptions>,
    /// Which flow-control phases to add.
    pub flow: FlowPhases,
    /// Group counts to process the jobs over (`--groups`), each against
    /// the same work without groups; empty for none.
    pub groups: Vec<u64>,
    /// Whether to measure the lifecycle with metrics on and off
    /// (`--metrics-cost`).
    pub metrics_cost: bool,
    /// Whether to measure the lifecycle with nobody waiting and with a
    /// waiter on every job, and the latency of waits open at once
    /// (`--outcomes`).
    pub outcomes: bool,
    /// Whether to measure one worker over three queues against one over
    /// one (`--many-queues`).
    pub many_queues: bool,
    /// Whether to measure jobs with dependencies against plain ones, and
    /// how soon a dependent is claimable (`--flows`).
    pub flows: bool,
    /// Whether to measure the HTTP API against the library (`--http`).
    pub http: bool,
    /// A level to measure against memory (`--durability`); memory for none.
    pub durability: Durability,
    /// Queues to fill and scrape over HTTP (`--scrape N`); `None` for none.
    pub scrape: Option<u64>,
    /// Jobs of the queue whose dashboard pages are timed (`--dashboard
    /// N`); `None` for none.
    pub dashboard: Option<u64>,
    /// How the bench queues are configured (`--like-bullmq`).
    pub configuration: Configuration,
    /// Jobs the processing workers hold claimed ahead (`--claim-ahead`);
    /// `None`: the library's default.
    pub claim_ahead: Option<u64>,
}

impl BenchConfig {
    /// How the bench's extra connections connect: under `prefix`, on the
    /// run's wire, at durability memory.
    fn how<'a>(&self, prefix: &'a str) -> crate::commands::How<'a> {
        crate::commands::How {
            prefix,
            wire: self.wire,
            durability: echomq::Durability::Memory,
        }
    }
}

/// How `emq bench` configures its queues.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Configuration {
    /// The queues' defaults: the last 1,000 completed jobs kept, events
    /// capped at about 10,000.
    #[default]
    Default,
    /// As BullMQ's benchmark runs (`--like-bullmq`): every completed job
    /// deleted at once (its `removeOnComplete: true`), events capped at
    /// about 10,000 (its `maxLenEvents` default), no metrics kept (a
    /// BullMQ worker keeps none unless given `metrics`). Set on every queue
    /// of the throughput phases before they run.
    LikeBullmq,
}

impl Configuration {
    /// `keep_completed` and `events_max` of the bench queues.
    pub fn settings(self) -> QueueSettings {
        match self {
            Configuration::Default => QueueSettings::default(),
            Configuration::LikeBullmq => QueueSettings {
                keep_completed: 0,
                events_max: BULLMQ_MAX_LEN_EVENTS,
                ..QueueSettings::default()
            },
        }
    }

    /// Whether the bench queues keep metrics.
    pub fn metrics(self) -> bool {
        self == Configuration::Default
    }

    /// `default` or `like BullMQ`, with the settings it means.
    fn describe(self) -> String {
        let settings = self.settings();
        let name = match self {
            Configuration::Default => "default",
            Configuration::LikeBullmq => "like BullMQ",
        };
        let metrics = if self.metrics() { "on" } else { "off" };
        format!(
            "{name} (keep_completed {}, events_max {}, metrics {metrics})",
            settings.keep_completed, settings.events_max
        )
    }
}

/// BullMQ's default cap of a queue's events stream (`maxLenEvents`,
/// BullMQ 6.7's `Queue`).
pub const BULLMQ_MAX_LEN_EVENTS: u64 = 10_000;

/// The queue settings a run used (in the report).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ConfigurationReport {
    /// `default` or `like-bullmq`.
    pub name: Configuration,
    /// Completed jobs kept per queue.
    pub keep_completed: u64,
    /// The events stream's approximate cap.
    pub events_max: u64,
    /// Whether the queues keep metrics.
    pub metrics: bool,
    /// Jobs the processing workers held claimed ahead (`--claim-ahead`);
    /// `null`: the library's default.
    pub claim_ahead: Option<u64>,
}

impl ConfigurationReport {
    /// The settings of `name`, with workers holding `claim_ahead`.
    fn of(name: Configuration, claim_ahead: Option<u64>) -> Self {
        let settings = name.settings();
        Self {
            name,
            keep_completed: settings.keep_completed,
            events_max: settings.events_max,
            metrics: name.metrics(),
            claim_ahead,
        }
    }

    /// `default (keep_completed 1000, …)`, and the workers' claim ahead
    /// when fixed.
    fn describe(&self) -> String {
        match self.claim_ahead {
            None => self.name.describe(),
            Some(jobs) => format!("{}; workers claim {jobs} ahead", self.name.describe()),
        }
    }
}

impl BenchConfig {
    /// `jobs` jobs on an embedded server, prefix `emq`, wire 4.
    pub fn new(jobs: u64) -> Self {
        Self {
            jobs,
            url: None,
            prefix: "emq".into(),
            wire: WireArg::Script,
            tls: None,
            flow: FlowPhases::default(),
            groups: Vec::new(),
            metrics_cost: false,
            outcomes: false,
            many_queues: false,
            flows: false,
            http: false,
            durability: Durability::Memory,
            scrape: None,
            dashboard: None,
            configuration: Configuration::Default,
            claim_ahead: None,
        }
    }
}

/// Where a run took place (both reports carry it).
#[derive(Debug, Clone, Serialize)]
pub struct Setup {
    /// `script` or `native`.
    pub wire: &'static str,
    /// `wire 4 (Lua scripts)` or `wire 6 (native module)`.
    pub wire_name: &'static str,
    /// Server software and version, e.g. `Valkey 9.1.2`.
    pub server: String,
    /// Whether the server was started for the run.
    pub embedded: bool,
    /// The started server's binary path, when the run started one.
    pub server_binary: Option<String>,
    /// The client's tokio runtime, filled in by the caller (empty when unknown).
    pub runtime: String,
}

impl Setup {
    /// `<title>: wire 4 (Lua scripts), Valkey 9.1.2 (embedded:
    /// /path/valkey-server), current-thread runtime`.
    fn heading(&self, title: &str) -> String {
        let embedded = match &self.server_binary {
            Some(path) => format!(" (embedded: {path})"),
            None => String::new(),
        };
        let runtime = if self.runtime.is_empty() {
            String::new()
        } else {
            format!(", {} runtime", self.runtime)
        };
        format!(
            "{title}: {}, {}{embedded}{runtime}",
            self.wire_name, self.server
        )
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
    /// The server's CPU seconds over the phase's wall seconds: the share of
    /// one core it was busy (its main thread can use at most 1).
    pub server_busy_share: f64,
    /// This process's CPU (user + system, all threads) during the phase,
    /// seconds.
    pub client_cpu_seconds: f64,
    /// This process's CPU per job, microseconds.
    pub client_cpu_us_per_job: f64,
}

impl Phase {
    fn new(jobs: u64, concurrency: Option<u64>, wall: Duration, cpu: Cpu) -> Self {
        let seconds = wall.as_secs_f64();
        let per_job = |s: f64| s * 1e6 / jobs.max(1) as f64;
        Self {
            jobs,
            concurrency,
            seconds,
            jobs_per_sec: jobs as f64 / seconds.max(f64::MIN_POSITIVE),
            server_cpu_seconds: cpu.server,
            server_cpu_us_per_job: per_job(cpu.server),
            server_busy_share: cpu.server / seconds.max(f64::MIN_POSITIVE),
            client_cpu_seconds: cpu.client,
            client_cpu_us_per_job: per_job(cpu.client),
        }
    }
}

/// CPU seconds used so far, or over a window: the server's (`INFO cpu`)
/// and this process's (`getrusage`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Cpu {
    pub server: f64,
    pub client: f64,
}

impl Sub for Cpu {
    type Output = Cpu;
    fn sub(self, earlier: Cpu) -> Cpu {
        Cpu {
            server: self.server - earlier.server,
            client: self.client - earlier.client,
        }
    }
}

impl AddAssign for Cpu {
    fn add_assign(&mut self, other: Cpu) {
        self.server += other.server;
        self.client += other.client;
    }
}

/// The server's memory for the enqueue phase's pending jobs: `used_memory`
/// of `INFO memory`, less its clients' buffers, before and after
/// `enqueue_bulk` of N jobs on a fresh queue (everything the jobs brought:
/// hashes, the pending set, the events they wrote, the queue's own keys).
/// What the server spends once (wire 4's scripts) is spent before the
/// first reading; the clients' buffers, which the server frees on its own
/// time, are left out of both.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PendingMemory {
    /// Jobs pending after the enqueue.
    pub jobs: u64,
    /// The server's memory before the enqueue, bytes: `used_memory` less
    /// its clients' buffers (`CLIENT LIST`'s `tot-mem`).
    pub memory_before: u64,
    /// The same after it, bytes.
    pub memory_after: u64,
    /// (after − before) / jobs, bytes.
    pub bytes_per_job: f64,
}

impl PendingMemory {
    fn new(jobs: u64, before: u64, after: u64) -> Self {
        Self {
            jobs,
            memory_before: before,
            memory_after: after,
            bytes_per_job: (after as f64 - before as f64) / jobs.max(1) as f64,
        }
    }
}

/// Everything one run measured (`emq bench --json` prints it).
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// Jobs of the enqueue and concurrency-50 phases.
    pub jobs: u64,
    /// Wire, server and runtime.
    #[serde(flatten)]
    pub setup: Setup,
    /// The bench queues' settings (`--like-bullmq`).
    pub configuration: ConfigurationReport,
    /// Bulk enqueue of `jobs` jobs.
    pub enqueue: Phase,
    /// The server's memory per job pending after the enqueue phase.
    pub pending_memory: PendingMemory,
    /// Processing `jobs` jobs at concurrency 50 (claim + complete).
    pub process_c50: Phase,
    /// Processing `jobs / 10` jobs at concurrency 1.
    pub process_c1: Phase,
    /// (enqueue CPU + concurrency-50 processing CPU) / jobs, microseconds.
    pub lifecycle_server_cpu_us_per_job: f64,
    /// The flow-control phases asked for (`--rate-limit`,
    /// `--concurrency-cap`, `--dedup`), each interleaved with its baseline.
    #[serde(flatten)]
    pub flow: FlowReport,
    /// The groups phases asked for (`--groups`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<GroupsReport>,
    /// The metrics phases asked for (`--metrics-cost`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_cost: Option<MetricsCostReport>,
    /// The outcome-wait phases asked for (`--outcomes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcomes: Option<OutcomesReport>,
    /// The many-queues phases asked for (`--many-queues`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub many_queues: Option<ManyQueuesReport>,
    /// The flow phases asked for (`--flows`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flows: Option<FlowsReport>,
    /// The HTTP phases asked for (`--http`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpReport>,
    /// The durability phases asked for (`--durability` above memory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub durability: Option<DurabilityReport>,
    /// The scrape phase asked for (`--scrape N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scrape: Option<ScrapeReport>,
    /// The dashboard phase asked for (`--dashboard N`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dashboard: Option<DashboardReport>,
}

/// The same phases on both wires, and wire 6's figures as a share of
/// wire 4's (`emq bench --compare`).
#[derive(Debug, Serialize)]
pub struct Comparison {
    /// Wire 4 (Lua scripts).
    pub script: BenchReport,
    /// Wire 6 (the module).
    pub native: BenchReport,
    /// Wire 6 over wire 4, phase by phase.
    pub native_over_script: Ratios,
}

/// Wire 6's figures divided by wire 4's.
#[derive(Debug, Serialize)]
pub struct Ratios {
    /// Server CPU per job, bulk enqueue.
    pub enqueue_server_cpu: f64,
    /// Server CPU per job, processing at concurrency 50.
    pub process_c50_server_cpu: f64,
    /// Server CPU per job, enqueue + processing.
    pub lifecycle_server_cpu: f64,
    /// Jobs per second, processing at concurrency 50.
    pub process_c50_jobs_per_sec: f64,
}

impl Comparison {
    /// Both reports and their ratios.
    pub fn of(script: BenchReport, native: BenchReport) -> Self {
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        let native_over_script = Ratios {
            enqueue_server_cpu: ratio(
                native.enqueue.server_cpu_us_per_job,
                script.enqueue.server_cpu_us_per_job,
            ),
            process_c50_server_cpu: ratio(
                native.process_c50.server_cpu_us_per_job,
                script.process_c50.server_cpu_us_per_job,
            ),
            lifecycle_server_cpu: ratio(
                native.lifecycle_server_cpu_us_per_job,
                script.lifecycle_server_cpu_us_per_job,
            ),
            process_c50_jobs_per_sec: ratio(
                native.process_c50.jobs_per_sec,
                script.process_c50.jobs_per_sec,
            ),
        };
        Self {
            script,
            native,
            native_over_script,
        }
    }
}

impl Ratios {
    /// Each ratio's median over `all` (the mean of the middle two for an
    /// even count).
    pub fn median(all: &[&Ratios]) -> Ratios {
        let of = |field: fn(&Ratios) -> f64| {
            let mut values: Vec<f64> = all.iter().map(|r| field(r)).collect();
            values.sort_by(f64::total_cmp);
            match values.len() {
                0 => 0.0,
                n if n % 2 == 1 => values[n / 2],
                n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
            }
        };
        Ratios {
            enqueue_server_cpu: of(|r| r.enqueue_server_cpu),
            process_c50_server_cpu: of(|r| r.process_c50_server_cpu),
            lifecycle_server_cpu: of(|r| r.lifecycle_server_cpu),
            process_c50_jobs_per_sec: of(|r| r.process_c50_jobs_per_sec),
        }
    }

    /// One line: `<label>: server CPU per job … ; jobs/s …`.
    fn line(&self, label: &str) -> String {
        format!(
            "{label}: server CPU per job {:.2} (enqueue), {:.2} (process, concurrency 50), {:.2} (lifecycle); jobs/s at concurrency 50 {:.2}\n",
            self.enqueue_server_cpu,
            self.process_c50_server_cpu,
            self.lifecycle_server_cpu,
            self.process_c50_jobs_per_sec
        )
    }
}

/// Both tables, then the ratios.
pub fn render_comparison(comparison: &Comparison) -> String {
    format!(
        "{}\n{}\n{}",
        render(&comparison.script).trim_end(),
        render(&comparison.native).trim_end(),
        comparison.native_over_script.line("wire 6 / wire 4")
    )
}

/// `emq bench --compare --rounds n`: every round, and the median of each
/// ratio over them.
#[derive(Debug, Serialize)]
pub struct Rounds {
    /// Each round's comparison, in the order run.
    pub rounds: Vec<Comparison>,
    /// The median of each ratio over the rounds.
    pub median: Ratios,
}

impl Rounds {
    /// The rounds and their medians.
    pub fn of(rounds: Vec<Comparison>) -> Self {
        let all: Vec<&Ratios> = rounds.iter().map(|c| &c.native_over_script).collect();
        let median = Ratios::median(&all);
        Self { rounds, median }
    }
}

/// Each round's ratios, then their medians.
pub fn render_rounds(rounds: &Rounds) -> String {
    let mut text = String::new();
    for (i, round) in rounds.rounds.iter().enumerate() {
        text.push_str(
            &round
                .native_over_script
                .line(&format!("round {}, wire 6 / wire 4", i + 1)),
        );
    }
    text.push_str(&rounds.median.line("median, wire 6 / wire 4"));
    text
}

/// Runs the three phases (starting an embedded server when `config.url`
/// is `None`, stopped again before returning).
pub async fn run(config: &BenchConfig) -> Result<BenchReport, CliError> {
    let target = Target::resolve(config.url.as_deref()).await?;
    let work = measure(config, target.url.clone(), target.embedded_binary());
    target.run(work).await
}

/// What every measurement opens first: the queues' connector, a plain
/// connection for `INFO`, and a run id naming its prefixes.
pub(crate) struct Session {
    pub connector: Connector,
    pub plain: MultiplexedConnection,
    pub setup: Setup,
    pub run_id: u128,
    /// How each queue of the run is configured before it is used
    /// (`--like-bullmq`); the default leaves the queues' defaults.
    pub configuration: Configuration,
    /// Jobs each processing worker holds claimed ahead (`--claim-ahead`);
    /// `None`: the library's default.
    pub claim_ahead: Option<usize>,
}

impl Session {
    pub(crate) async fn open(
        url: &str,
        prefix: &str,
        wire: WireArg,
        server_binary: Option<String>,
        tls: Option<&TlsOptions>,
    ) -> Result<Self, CliError> {
        let how = crate::commands::How {
            prefix,
            wire,
            durability: echomq::Durability::Memory,
        };
        let connector = crate::commands::connect_to(url, how, tls.cloned()).await?;
        let mut plain = info::plain_connection(url, tls).await?;
        let server = info::server_version(&mut plain).await?;
        Ok(Self {
            connector,
            plain,
            setup: Setup {
                wire: wire.as_str(),
                wire_name: wire.describe(),
                server,
                embedded: server_binary.is_some(),
                server_binary,
                runtime: String::new(),
            },
            run_id: crate::commands::unix_ms(),
            configuration: Configuration::Default,
            claim_ahead: None,
        })
    }

    /// A fresh queue for this run's `phase`, `<phase>-<n>`: n the first
    /// number from 1 such that no key of the queue exists, so a run never
    /// meets an earlier run's keys. Short, since a job's key is part of its
    /// memory: `lifecycle-<n>`'s job keys fit the allocation BullMQ's
    /// benchmark queue's (`bench-a`) do. With the run's settings stored
    /// when it has any.
    pub(crate) async fn queue<T>(&self, phase: &str) -> Result<Queue<T>, CliError> {
        let mut n = 0;
        let queue = loop {
            n += 1;
            let queue = self.connector.queue::<T>(&format!("{phase}-{n}"))?;
            if !info::queue_exists(&mut self.plain.clone(), queue.keys()).await? {
                break queue;
            }
        };
        if self.configuration != Configuration::Default {
            queue.configure(&self.configuration.settings()).await?;
        }
        if !self.configuration.metrics() {
            queue
                .configure_metrics(&MetricsSettings {
                    enabled: false,
                    ..MetricsSettings::default()
                })
                .await?;
        }
        Ok(queue)
    }

    /// The server's CPU seconds so far, and this process's.
    pub(crate) async fn cpu(&mut self) -> Result<Cpu, CliError> {
        let server = info::cpu_seconds(&mut self.plain).await?;
        Ok(Cpu {
            server,
            client: rusage::cpu_seconds(),
        })
    }

    /// The server's memory without its clients' buffers, bytes
    /// (`info::memory_without_clients`).
    pub(crate) async fn memory(&mut self) -> Result<u64, CliError> {
        info::memory_without_clients(&mut self.plain).await
    }
}

async fn measure(
    config: &BenchConfig,
    url: String,
    server_binary: Option<String>,
) -> Result<BenchReport, CliError> {
    let mut session = Session::open(
        &url,
        &config.prefix,
        config.wire,
        server_binary,
        config.tls.as_ref(),
    )
    .await?;
    session.configuration = config.configuration;
    session.claim_ahead = config.claim_ahead.map(|jobs| jobs as usize);
    let n = config.jobs.max(1);

    let lifecycle = session.queue::<Value>("lifecycle").await?;
    warm_up(&session).await?;
    let memory_before = session.memory().await?;
    let enqueue = enqueue_phase(&lifecycle, n, &mut session).await?;
    let pending_memory = PendingMemory::new(n, memory_before, session.memory().await?);
    let process_c50 = process_phase(&lifecycle, n, CONCURRENCY, &mut session).await?;

    let serial = session.queue::<Value>("serial").await?;
    let serial_jobs = (n / SERIAL_FRACTION).max(1);
    serial.enqueue_bulk(jobs(serial_jobs)).await?;
    let process_c1 = process_phase(&serial, serial_jobs, 1, &mut session).await?;

    let flow = flow::run(n, config.flow, &mut session).await?;
    let groups = if config.groups.is_empty() {
        None
    } else {
        Some(groups::run(n, &config.groups, &mut session).await?)
    };
    let metrics_cost = if config.metrics_cost {
        Some(metrics_cost::run(n, &mut session).await?)
    } else {
        None
    };
    let outcomes = if config.outcomes {
        Some(outcomes::run(n, &mut session).await?)
    } else {
        None
    };
    let many_queues = if config.many_queues {
        Some(many_queues::run(n, &mut session).await?)
    } else {
        None
    };
    let flows = if config.flows {
        Some(flows::run(n, &mut session).await?)
    } else {
        None
    };
    let http = if config.http {
        let reach = http::Reach {
            url: &url,
            prefix: &config.prefix,
            wire: config.wire,
            tls: config.tls.clone(),
        };
        Some(http::run(n, reach, &mut session).await?)
    } else {
        None
    };
    let durability = match config.durability {
        Durability::Memory => None,
        level => {
            let prepared = durability::prepare(level, &url, &mut session).await?;
            let how = crate::commands::How {
                durability: level,
                ..config.how(&config.prefix)
            };
            let durable = crate::commands::connect_to(&url, how, config.tls.clone()).await?;
            let report = durability::run(n, &durable, &mut session).await;
            let _ = tokio::task::spawn_blocking(move || drop(prepared)).await;
            Some(report?)
        }
    };
    let scrape = match config.scrape {
        Some(queues) => {
            // Under a prefix of its own: the scrape reads every queue of it.
            let prefix = format!("{}-scrape-{}", config.prefix, session.run_id);
            let connector =
                crate::commands::connect_to(&url, config.how(&prefix), config.tls.clone()).await?;
            Some(scrape::run(queues, connector).await?)
        }
        None => None,
    };
    let dashboard = match config.dashboard {
        Some(jobs) => {
            // Under a prefix of its own: the queues page reads every queue.
            let prefix = format!("{}-dashboard-{}", config.prefix, session.run_id);
            let connector =
                crate::commands::connect_to(&url, config.how(&prefix), config.tls.clone()).await?;
            Some(dashboard::run(jobs, connector, &url).await?)
        }
        None => None,
    };

    Ok(BenchReport {
        flow,
        groups,
        metrics_cost,
        outcomes,
        many_queues,
        flows,
        http,
        durability,
        scrape,
        dashboard,
        jobs: n,
        setup: session.setup,
        configuration: ConfigurationReport::of(config.configuration, config.claim_ahead),
        enqueue,
        pending_memory,
        process_c50,
        process_c1,
        lifecycle_server_cpu_us_per_job: (enqueue.server_cpu_seconds
            + process_c50.server_cpu_seconds)
            * 1e6
            / n as f64,
    })
}

/// Pays what a server spends once, not per job (wire 4's scripts loaded
/// by their first run), before the memory reading: one job enqueued in
/// bulk on a queue of its own, which is then deleted.
async fn warm_up(session: &Session) -> Result<(), CliError> {
    let scratch = session.queue::<Value>("warm-up").await?;
    scratch.enqueue_bulk(jobs(1)).await?;
    let admin = scratch.admin();
    admin.pause().await?;
    admin.obliterate(echomq::IfActive::Force).await?;
    Ok(())
}

/// `n` small jobs, `{"n": i}`.
pub(crate) fn jobs(n: u64) -> Vec<NewJob<Value>> {
    (0..n).map(|i| NewJob::new(json!({ "n": i }))).collect()
}

async fn enqueue_phase(
    queue: &Queue<Value>,
    n: u64,
    session: &mut Session,
) -> Result<Phase, CliError> {
    Ok(enqueue_timed(queue, n, session).await?.0)
}

/// The enqueue phase, and the jobs' ids (job i holds `{"n": i}`).
async fn enqueue_timed(
    queue: &Queue<Value>,
    n: u64,
    session: &mut Session,
) -> Result<(Phase, Vec<JobId>), CliError> {
    let (phase, enqueued) = enqueue_batch_timed(queue, jobs(n), session).await?;
    Ok((phase, enqueued.into_iter().map(|e| e.id).collect()))
}

/// The enqueue phase of `batch`, in one bulk enqueue, and its handles.
async fn enqueue_batch_timed(
    queue: &Queue<Value>,
    batch: Vec<NewJob<Value>>,
    session: &mut Session,
) -> Result<(Phase, Vec<echomq::Enqueued>), CliError> {
    let n = batch.len() as u64;
    let cpu = session.cpu().await?;
    let started = Instant::now();
    let enqueued = queue.enqueue_bulk(batch).await?;
    let wall = started.elapsed();
    let cpu = session.cpu().await? - cpu;
    let created = enqueued.iter().filter(|e| e.created).count() as u64;
    check_fresh(queue, created, n)?;
    Ok((Phase::new(n, None, wall, cpu), enqueued))
}

/// Every one of `n` enqueued jobs was created: the queue was fresh.
pub(crate) fn check_fresh<T>(queue: &Queue<T>, created: u64, n: u64) -> Result<(), CliError> {
    if created == n {
        return Ok(());
    }
    Err(CliError::usage(format!(
        "bench: enqueued {created} of {n} jobs (queue {} was not fresh)",
        queue.name()
    )))
}

/// Drains `n` pending jobs of `queue` with a no-op handler at `concurrency`.
async fn process_phase(
    queue: &Queue<Value>,
    n: u64,
    concurrency: u64,
    session: &mut Session,
) -> Result<Phase, CliError> {
    let claim_ahead = session.claim_ahead;
    process_phase_holding(queue, n, concurrency, claim_ahead, session).await
}

/// [`process_phase`] with the worker holding `claim_ahead` jobs claimed
/// ahead (`None`: the library's default), whatever `--claim-ahead` says.
async fn process_phase_holding(
    queue: &Queue<Value>,
    n: u64,
    concurrency: u64,
    claim_ahead: Option<usize>,
    session: &mut Session,
) -> Result<Phase, CliError> {
    let cpu = session.cpu().await?;
    let started = Instant::now();
    let worker = Worker::new(
        queue.typed::<IgnoredAny>(),
        |_job: JobContext<IgnoredAny>| async { Ok::<_, JobError>(()) },
    )
    .concurrency(concurrency as usize);
    let worker = match claim_ahead {
        Some(jobs) => worker.claim_ahead(jobs),
        None => worker,
    }
    .start();
    let (wall, cpu_after) = finish(worker, queue, n, started, STALL, session).await?;
    Ok(Phase::new(n, Some(concurrency), wall, cpu_after - cpu))
}

/// One worker over `queues` with a no-op handler at concurrency 50,
/// holding `claim_ahead` jobs ahead when given (else the library's
/// default).
pub(crate) fn noop_worker_over<'q>(
    queues: impl IntoIterator<Item = &'q Queue<Value>>,
    claim_ahead: Option<usize>,
) -> Result<WorkerHandle, CliError> {
    let typed = queues.into_iter().map(|queue| queue.typed::<IgnoredAny>());
    let worker = Worker::over(typed, |_job: JobContext<IgnoredAny>| async {
        Ok::<_, JobError>(())
    })?
    .concurrency(CONCURRENCY as usize);
    Ok(match claim_ahead {
        Some(jobs) => worker.claim_ahead(jobs),
        None => worker,
    }
    .start())
}

/// Waits until `worker` has finished `n` jobs (failing when none finishes
/// for `stall`), reads the server's CPU, stops the worker and checks that
/// all `n` completed. Returns the wall time since `started` and the CPU
/// reading.
pub(crate) async fn finish<T>(
    worker: WorkerHandle,
    queue: &Queue<T>,
    n: u64,
    started: Instant,
    stall: Duration,
    session: &mut Session,
) -> Result<(Duration, Cpu), CliError> {
    let waited = wait_finished(&worker, queue, n, started, stall).await;
    let cpu = match waited {
        Ok(_) => session.cpu().await,
        Err(_) => Ok(Cpu::default()),
    };
    let stopped = stop_all_completed(worker, queue, n).await;
    let (wall, cpu) = (waited?, cpu?);
    stopped?;
    Ok((wall, cpu))
}

/// [`finish`] without a CPU reading: the wall time since `started`.
pub(crate) async fn drain<T>(
    worker: WorkerHandle,
    queue: &Queue<T>,
    n: u64,
    started: Instant,
) -> Result<Duration, CliError> {
    let waited = wait_finished(&worker, queue, n, started, STALL).await;
    let stopped = stop_all_completed(worker, queue, n).await;
    let wall = waited?;
    stopped?;
    Ok(wall)
}

/// Waits until `worker` has finished `n` jobs, failing when none finishes
/// for `stall`; the wall time since `started`.
async fn wait_finished<T>(
    worker: &WorkerHandle,
    queue: &Queue<T>,
    n: u64,
    started: Instant,
    stall: Duration,
) -> Result<Duration, CliError> {
    let mut last = 0;
    let mut moved = Instant::now();
    loop {
        let finished = worker.stats().finished();
        if finished >= n {
            return Ok(started.elapsed());
        }
        if finished != last {
            last = finished;
            moved = Instant::now();
        } else if moved.elapsed() > stall {
            return Err(CliError::usage(format!(
                "bench stalled: {finished} of {n} jobs finished on queue {}, nothing moved for {}s",
                queue.name(),
                moved.elapsed().as_secs()
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Stops `worker` and checks that it completed all `n` jobs.
async fn stop_all_completed<T>(
    worker: WorkerHandle,
    queue: &Queue<T>,
    n: u64,
) -> Result<(), CliError> {
    let stats = worker.shutdown(SHUTDOWN).await;
    if stats.completed != n {
        return Err(CliError::usage(format!(
            "bench: {} of {n} jobs completed on queue {} ({stats:?})",
            stats.completed,
            queue.name()
        )));
    }
    Ok(())
}

/// The report as an aligned table.
pub fn render(report: &BenchReport) -> String {
    let mut table = Table::new([
        Align::Left,
        Align::Right,
        Align::Right,
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
        "server busy",
        "client µs/job",
    ]);
    let phase_row = |name: &str, p: &Phase| {
        [
            name.to_string(),
            p.jobs.to_string(),
            p.concurrency.map_or("-".into(), |c| c.to_string()),
            format!("{:.2}", p.seconds),
            format!("{:.0}", p.jobs_per_sec),
            format!("{:.2}", p.server_cpu_us_per_job),
            format!("{:.0}%", p.server_busy_share * 100.0),
            format!("{:.2}", p.client_cpu_us_per_job),
        ]
    };
    table.row(phase_row("enqueue (bulk)", &report.enqueue));
    table.row(phase_row("process (claim+complete)", &report.process_c50));
    table.row(phase_row("process (claim+complete)", &report.process_c1));
    table.row([
        "lifecycle (enqueue+process)".to_string(),
        report.jobs.to_string(),
        "-".into(),
        "-".into(),
        "-".into(),
        format!("{:.2}", report.lifecycle_server_cpu_us_per_job),
        "-".into(),
        "-".into(),
    ]);
    let flow = &report.flow;
    let optional = [
        ("process, no flow control", &flow.process_c50_baseline),
        (
            "process, rate limit not binding",
            &flow.process_c50_rate_limited,
        ),
        ("process, concurrency cap 50", &flow.process_c50_capped),
        ("enqueue (single)", &flow.enqueue_single),
        ("enqueue (single, dedup key)", &flow.enqueue_single_dedup),
    ];
    for (name, measured) in optional {
        if let Some(p) = measured {
            table.row(phase_row(name, p));
        }
    }
    let extra = report
        .groups
        .iter()
        .flat_map(GroupsReport::phases)
        .chain(
            report
                .metrics_cost
                .iter()
                .flat_map(MetricsCostReport::phases),
        )
        .chain(report.outcomes.iter().flat_map(OutcomesReport::phases))
        .chain(report.many_queues.iter().flat_map(ManyQueuesReport::phases))
        .chain(report.flows.iter().flat_map(FlowsReport::phases))
        .chain(report.http.iter().flat_map(HttpReport::phases))
        .chain(report.durability.iter().flat_map(DurabilityReport::phases));
    for (name, p) in extra {
        table.row(phase_row(&name, &p));
    }
    let memory = &report.pending_memory;
    format!(
        "{}\nqueues: {}\n{table}{}{}{}{}",
        report.setup.heading("EchoMQ bench"),
        report.configuration.describe(),
        format_args!(
            "memory per pending job: {:.0} B (used_memory less clients {} → {} B over {} jobs)\n",
            memory.bytes_per_job, memory.memory_before, memory.memory_after, memory.jobs
        ),
        flow.flow_ratios.lines(),
        report
            .groups
            .as_ref()
            .map(GroupsReport::lines)
            .unwrap_or_default(),
        report
            .metrics_cost
            .as_ref()
            .map(MetricsCostReport::lines)
            .unwrap_or_default(),
    ) + &report
        .outcomes
        .as_ref()
        .map(OutcomesReport::lines)
        .unwrap_or_default()
        + &report
            .many_queues
            .as_ref()
            .map(ManyQueuesReport::lines)
            .unwrap_or_default()
        + &report
            .flows
            .as_ref()
            .map(FlowsReport::lines)
            .unwrap_or_default()
        + &report
            .http
            .as_ref()
            .map(HttpReport::lines)
            .unwrap_or_default()
        + &report
            .durability
            .as_ref()
            .map(DurabilityReport::lines)
            .unwrap_or_default()
        + &report
            .scrape
            .as_ref()
            .map(ScrapeReport::lines)
            .unwrap_or_default()
        + &report
            .dashboard
            .as_ref()
            .map(DashboardReport::lines)
            .unwrap_or_default()
}
