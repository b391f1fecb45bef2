//! The command line: global options and one subcommand per command family.
//! The arguments of the per-job verbs live in `cli/row.rs`, of the
//! queue-wide verbs in `cli/queue.rs`, of flow control in `cli/flow.rs`,
//! of retention in `cli/retention.rs`,
//! of groups in `cli/groups.rs`, of `worker` and `watch` in `cli/run.rs`,
//! of `wait` in `cli/wait.rs`, and of the verbs on many jobs in
//! `cli/bulk.rs`. How the line is read
//! (help, usage errors, `--json` errors) is in `cli/parse.rs`.

mod bulk;
mod examples;
mod flow;
mod flows;
mod groups;
#[cfg(test)]
mod old_spellings;
mod parse;
mod queue;
mod retention;
mod row;
mod run;
mod token;
mod wait;
mod whole;

pub use bulk::{CleanArgs, IdsArgs, RetryArgs};
pub use examples::command;
pub use parse::{json_requested, parse_from};

pub use flow::{ConcurrencyCapArgs, RateLimitArgs};
pub use flows::{FLOW_SHOW_DEPTH_MAX, FlowAddArgs, FlowCommand, FlowRelayArgs, FlowShowArgs};
pub use groups::{GroupArgs, GroupsArgs};
pub use queue::{DrainArgs, JobsArgs, ObliterateArgs, QueueArgs, SweepArgs};
pub use retention::{Age, RetentionArgs};
pub use row::{LogArgs, RemoveArgs, UpdateArgs};
pub use run::{WatchArgs, WorkerArgs};
pub use token::{TokenCommand, TokenNewArgs};
pub use wait::WaitArgs;

use crate::time::{parse_duration, parse_positive_duration, parse_rfc3339};
use clap::builder::TypedValueParser;
use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// URL used by every command but `demo` and `bench` when neither `--url` nor
/// `EMQ_URL` is given.
pub const DEFAULT_URL: &str = "redis://127.0.0.1:6379";
/// The port of [`DEFAULT_URL`], where `emq server` listens by default.
pub const DEFAULT_PORT: u16 = 6379;

/// The `--help` heading of the options every command takes.
pub const GLOBAL_HEADING: &str = "Global options";
/// The `--help` heading of the options naming the server and how to reach
/// it; commands that need no server (`controls`, `acl`, `token`) accept them but do
/// not list them.
pub const CONNECTION_HEADING: &str = "Connection options";

/// `emq`: the EchoMQ operator CLI.
// Clippy reads the two `mut_subcommand` calls below, one per command that
// needs no server, as one attribute given twice.
#[allow(clippy::duplicated_attributes)]
#[derive(Debug, Parser)]
#[command(
    name = "emq",
    version,
    about = "EchoMQ operator CLI: a job queue on Valkey",
    mut_subcommand("controls", parse::without_connection_help),
    mut_subcommand("acl", parse::without_connection_help),
    mut_subcommand("token", |token: clap::Command| token
        .mut_subcommand("new", parse::without_connection_help))
)]
pub struct Cli {
    /// Options every command takes.
    #[command(flatten)]
    pub global: Global,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes.
#[derive(Debug, Clone, Args)]
pub struct Global {
    /// Key prefix: every key of queue q lives under <prefix>:{q}.
    #[arg(long, default_value = "emq", global = true, help_heading = GLOBAL_HEADING)]
    pub prefix: String,
    /// Machine output: JSON on stdout, and an error as one JSON line on
    /// stderr.
    ///
    /// One JSON value on stdout (`worker` and `watch`: one JSON object per
    /// line; `serve`, `dashboard` and `metrics --listen`: {"url": …} as the first
    /// line). `metrics` prints the Prometheus text format as it is. An
    /// error is one line on stderr, {"error": {"code": …, "message": …}},
    /// with the same exit code (docs/cli.md lists the codes).
    #[arg(long, global = true, help_heading = GLOBAL_HEADING)]
    pub json: bool,
    /// Wire: `script` (wire 4, Lua scripts) or `native` (wire 6, the EchoMQ module).
    #[arg(long, value_enum, default_value_t = WireArg::Script, global = true, help_heading = GLOBAL_HEADING)]
    pub wire: WireArg,
    /// How far an acknowledged write must reach before emq answers:
    /// `memory` (the server's reply), `local` (fsynced to the server's
    /// AOF), `replicas:N` (to N replicas' AOF; `replicas:N:MS` waits MS
    /// ms, default 5000). A server that cannot give it is refused at
    /// connect (docs/protocol.md, Durability).
    #[arg(
        long,
        env = "EMQ_DURABILITY",
        hide_env_values = true,
        value_name = "LEVEL",
        default_value = "memory",
        value_parser = parse_durability,
        global = true,
        help_heading = CONNECTION_HEADING
    )]
    pub durability: echomq::Durability,
    /// Server URL (redis://host:port). `demo` and `bench` start an embedded
    /// server when it is not given; other commands default to
    /// redis://127.0.0.1:6379.
    // Help names each variable, never its value: a URL may carry a
    // password, and a variable left unset would show as `[env: X=]`. So does
    // every option below read from the environment.
    #[arg(
        long,
        env = "EMQ_URL",
        hide_env_values = true,
        global = true,
        help_heading = CONNECTION_HEADING
    )]
    pub url: Option<String>,
    /// For a rediss:// server: a PEM file of the CA certificates to trust
    /// instead of the system's roots.
    #[arg(
        long,
        env = "EMQ_TLS_CA_CERT",
        hide_env_values = true,
        value_name = "FILE",
        global = true,
        help_heading = CONNECTION_HEADING
    )]
    pub tls_ca_cert: Option<PathBuf>,
    /// For a rediss:// server that asks for a client certificate: a PEM file
    /// of the certificate chain (with --tls-key).
    #[arg(
        long,
        env = "EMQ_TLS_CERT",
        hide_env_values = true,
        value_name = "FILE",
        global = true,
        requires = "tls_key",
        help_heading = CONNECTION_HEADING
    )]
    pub tls_cert: Option<PathBuf>,
    /// Find the primary through Redis/Valkey Sentinel instead of --url: a
    /// sentinel's URL (repeat the flag, or separate them with commas).
    #[arg(
        long = "sentinel",
        value_name = "URL",
        env = "EMQ_SENTINEL",
        hide_env_values = true,
        value_delimiter = ',',
        global = true,
        conflicts_with = "url",
        requires = "sentinel_service",
        help_heading = CONNECTION_HEADING
    )]
    pub sentinel: Vec<String>,
    /// With --sentinel: the service (master) name the sentinels know the
    /// primary by.
    #[arg(
        long,
        value_name = "NAME",
        env = "EMQ_SENTINEL_SERVICE",
        hide_env_values = true,
        global = true,
        help_heading = CONNECTION_HEADING
    )]
    pub sentinel_service: Option<String>,
    /// With --sentinel: the primary's password (a sentinel's own goes in
    /// its URL).
    #[arg(
        long,
        value_name = "PASSWORD",
        env = "EMQ_PRIMARY_PASSWORD",
        hide_env_values = true,
        global = true,
        help_heading = CONNECTION_HEADING
    )]
    pub primary_password: Option<String>,
    /// Reach a cluster instead of --url: some of its nodes' URLs (repeat
    /// the flag, or separate them with commas); each queue's commands go
    /// to the master of its slot, wherever failovers moved it.
    #[arg(
        long = "cluster",
        value_name = "URL",
        env = "EMQ_CLUSTER",
        hide_env_values = true,
        value_delimiter = ',',
        global = true,
        conflicts_with_all = ["url", "sentinel"],
        help_heading = CONNECTION_HEADING
    )]
    pub cluster: Vec<String>,
    /// The private key of --tls-cert, a PEM file.
    #[arg(
        long,
        env = "EMQ_TLS_KEY",
        hide_env_values = true,
        value_name = "FILE",
        global = true,
        requires = "tls_cert",
        help_heading = CONNECTION_HEADING
    )]
    pub tls_key: Option<PathBuf>,
}

/// `--durability`'s value, as the library reads it.
fn parse_durability(text: &str) -> Result<echomq::Durability, String> {
    text.parse::<echomq::Durability>().map_err(|err| match err {
        echomq::Error::BadArgument { reason, .. } => reason,
        other => other.to_string(),
    })
}

impl Global {
    /// `--url`, or [`DEFAULT_URL`].
    pub fn url_or_default(&self) -> String {
        self.url.clone().unwrap_or_else(|| DEFAULT_URL.to_string())
    }
}

/// The `--wire` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WireArg {
    /// Wire 4: Lua scripts, as one function library by FCALL (works on any Valkey ≥ 7.2 / Redis ≥ 7.0).
    Script,
    /// Wire 6: the native EMQ.* commands of the EchoMQ module.
    Native,
}

impl WireArg {
    /// The library's wire.
    pub fn wire(self) -> echomq::Wire {
        match self {
            WireArg::Script => echomq::Wire::Script,
            WireArg::Native => echomq::Wire::Native,
        }
    }

    /// `"script"` or `"native"`.
    pub fn as_str(self) -> &'static str {
        match self {
            WireArg::Script => "script",
            WireArg::Native => "native",
        }
    }

    /// How the wire is described to people: `wire 4 (Lua scripts)`.
    pub fn describe(self) -> &'static str {
        match self {
            WireArg::Script => "wire 4 (Lua scripts)",
            WireArg::Native => "wire 6 (native module)",
        }
    }
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the embedded Valkey server in the foreground (AOF on) until Ctrl-C.
    Server(ServerArgs),
    /// Enqueue jobs, process them with a worker and print a summary
    /// (starts an embedded server unless --url is given).
    Demo(DemoArgs),
    /// Enqueue one job (idempotent when --id is given), now or scheduled
    /// with --in / --at; with --wait, wait for its outcome and print it.
    Enqueue(EnqueueArgs),
    /// Wait for a job's outcome (a job enqueued by any process) and print
    /// it: a completed job's result on stdout (exit 0); dead, cancelled or
    /// removed exits 1; a wait that runs out of time exits 3 (the job runs
    /// on).
    Wait(WaitArgs),
    /// Flows: jobs that wait for other jobs, across queues (add, relay, show).
    #[command(subcommand)]
    Flow(FlowCommand),
    /// Move a scheduled job's run-at.
    Reschedule(RescheduleArgs),
    /// Move due scheduled jobs to pending now.
    Promote(PromoteArgs),
    /// Repeating jobs: add, list and remove definitions.
    #[command(subcommand)]
    Repeat(RepeatCommand),
    /// Job counts per state of a queue, whether it is paused, the age of
    /// its oldest pending job, and its flow control (rate limit, the
    /// window's use, cap on active jobs).
    Stats(StatsArgs),
    /// The Prometheus text format of every queue under the prefix (counts,
    /// oldest pending age, finished jobs by outcome, wait and run time
    /// histograms, flow control where set): printed once, or with
    /// --listen served at /metrics, read from the server on each scrape.
    /// --json leaves the text as it is (a machine format of its own).
    Metrics(MetricsArgs),
    /// The web dashboard: every queue, job and control, live, with the
    /// actions of the control plane (pause, retry, cancel, drain, …),
    /// /metrics and the HTTP API at /api/v1 (`emq serve`, of which this is
    /// a synonym). Serves until Ctrl-C; the first line printed names the
    /// address ({"url": …} under --json).
    Dashboard(DashboardArgs),
    /// One server, one process: the dashboard at /, the HTTP API at
    /// /api/v1 (docs/http.md; its reference at /api/v1/openapi.json) and
    /// Prometheus at /metrics (--no-dashboard: the API and /metrics
    /// alone). `emq dashboard` is a synonym. Serves until Ctrl-C; the
    /// first line printed names the address ({"url": …} under --json).
    Serve(DashboardArgs),
    /// Every queue under the prefix, with its counts per state. A queue
    /// holding a key of the wrong type is named with the key, and the exit
    /// code is 1.
    Queues,
    /// One page of a queue's jobs in one state, as a table.
    Jobs(JobsArgs),
    /// Every field of one job and the newest lines of its log (10, or
    /// --logs N).
    Job(JobArgs),
    /// Which job holds a deduplication key and until when; with --release,
    /// free the key so the next enqueue with it creates a job.
    Dedup(DedupArgs),
    /// Run a shell command for each job: payload on stdin, stdout the
    /// result, exit 0 completes, any other exit fails (retried); Ctrl-C or
    /// SIGTERM stops gracefully.
    Worker(WorkerArgs),
    /// Tail a queue's lifecycle events live, one line per event, until Ctrl-C.
    Watch(WatchArgs),
    /// Cancel jobs: a waiting one at once, a running one by asking its
    /// worker to stop.
    Cancel(IdsArgs),
    /// Replace a job's payload.
    Update(UpdateArgs),
    /// Delete jobs and their logs (an active one only with --force).
    Remove(RemoveArgs),
    /// Send completed, dead or cancelled jobs back to pending.
    Reprocess(IdsArgs),
    /// Send scheduled or active jobs back to pending now (an active job's
    /// worker is told to stop).
    Requeue(IdsArgs),
    /// Retry finished jobs (reprocess: back to pending, failures cleared):
    /// the ids given, or with --all every job of --state (dead unless
    /// said; asks first unless --yes).
    Retry(RetryArgs),
    /// Delete the jobs of a finished state (completed, dead or cancelled),
    /// only those finished before --older-than ago when given (asks first
    /// unless --yes).
    Clean(CleanArgs),
    /// Append a line to a job's log.
    Log(LogArgs),
    /// Stop handing out jobs (running jobs run on).
    Pause(QueueArgs),
    /// Hand out jobs again.
    Resume(QueueArgs),
    /// Delete every pending job (and scheduled ones with --scheduled,
    /// blocked ones with --blocked).
    Drain(DrainArgs),
    /// Delete a paused queue: every job, log and key (asks first unless --yes).
    Obliterate(ObliterateArgs),
    /// Take back active jobs whose lease ran out (what workers do every
    /// --stalled-interval).
    Sweep(SweepArgs),
    /// The queue's rate limit: at most --max jobs start per --per, across
    /// every worker; --off removes it; with neither, show it.
    #[command(alias = "limit")]
    RateLimit(RateLimitArgs),
    /// The queue's cap on active jobs: at most N at once, across every
    /// worker; --off removes it; with neither, show it.
    #[command(alias = "concurrency")]
    ConcurrencyCap(ConcurrencyCapArgs),
    /// How many finished jobs the queue keeps and for how long: the newest
    /// --completed N completed jobs, each for at most --completed-for D
    /// (likewise --dead, --cancelled); an age of 0 or off removes the age
    /// rule. With no option, show them. Changing them deletes nothing at
    /// once: the next job to finish, or the next sweep, trims.
    Retention(RetentionArgs),
    /// Every group of a queue that has jobs or settings, by name, with its
    /// pending and active jobs, pause, cap and rate limit; a page at a time.
    Groups(GroupsArgs),
    /// One group: set or clear its cap (--concurrency-cap N,
    /// --no-concurrency-cap),
    /// its rate limit (--max N --per D, --no-rate-limit), both (--off), pause or
    /// resume it; then show it.
    Group(GroupArgs),
    /// The control map: every control grouped by scope, with the library
    /// function that sends it, the keys it touches, its effect, its Lua
    /// script (wire 4) and native command (wire 6); with a name, one
    /// control in full (arguments, reply, refusals, events). Needs no server.
    Controls(ControlsArgs),
    /// Tokens for `--tokens FILE` (the dashboard's and the API's): `new`
    /// makes one. Needs no server.
    #[command(subcommand)]
    Token(TokenCommand),
    /// The ACL rules a user needs for a role, on one queue (--queue) or on
    /// every queue under the prefix: prints an `ACL SETUSER` line for the
    /// wire given (--wire). Needs no server.
    Acl(AclArgs),
    /// Measure throughput and server CPU per job, or with --lateness how
    /// late scheduled jobs start (starts an embedded server unless --url is
    /// given).
    Bench(BenchArgs),
}

/// `emq acl`.
#[derive(Debug, Args)]
pub struct AclArgs {
    /// What the user does: `producer` (enqueues and reads back), `worker` (runs a
    /// worker) or `operator` (everything emq does).
    #[arg(value_enum)]
    pub role: RoleArg,
    /// The one queue the user may use; without it, every queue under the
    /// prefix and the registry of queues (a tenant).
    #[arg(long)]
    pub queue: Option<String>,
    /// The user's name in the printed line.
    #[arg(long, default_value = "tenant")]
    pub user: String,
    /// A worker's flows: the other queues its jobs' dependencies and
    /// dependents live in (comma-separated). Grants, on those queues only,
    /// what its relay and check-up send there (FLOW.RESOLVE, FLOW.LINK),
    /// as an ACL selector. Needs --queue.
    #[arg(long, value_name = "QUEUES", value_delimiter = ',')]
    pub flow_queues: Vec<String>,
}

/// A role of `emq acl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RoleArg {
    /// Enqueues jobs, reads them back and waits for their outcomes.
    Producer,
    /// Runs a worker.
    Worker,
    /// Everything emq does.
    Operator,
}

impl RoleArg {
    /// The library's role.
    pub fn role(self) -> echomq::acl::Role {
        match self {
            RoleArg::Producer => echomq::acl::Role::Producer,
            RoleArg::Worker => echomq::acl::Role::Worker,
            RoleArg::Operator => echomq::acl::Role::Operator,
        }
    }
}

/// `emq controls`.
#[derive(Debug, Args)]
pub struct ControlsArgs {
    /// One control to show in full: its name (`claim`, `stalled_check`),
    /// verb (`STALLED.CHECK`) or native command (`EMQ.CLAIM`).
    pub name: Option<String>,
    /// The map as the README's markdown table.
    #[arg(long, conflicts_with = "name")]
    pub markdown: bool,
}

/// `emq server`.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Port on 127.0.0.1: the one every other command connects to by
    /// default; 0 picks a free one (the URL to use is printed).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    pub port: u16,
    /// Data directory (created if missing).
    #[arg(long, default_value = ".emq")]
    pub dir: PathBuf,
}

/// `emq demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Jobs to enqueue and process.
    #[arg(long, default_value_t = 10_000, value_parser = whole::at_least(1))]
    pub jobs: u64,
    /// Jobs the worker runs at once.
    #[arg(long, default_value_t = 50, value_parser = whole::between(1, 100_000))]
    pub concurrency: u64,
    /// Keep the demo's queue (`demo-<ms>`) when it ends; without it, the
    /// queue is removed (obliterated) once the summary is read.
    #[arg(long)]
    pub keep: bool,
}

/// `emq enqueue`.
#[derive(Debug, Args)]
pub struct EnqueueArgs {
    /// Queue name (1–128 bytes of A-Z a-z 0-9 _ . : -).
    #[arg(value_name = "queue")]
    pub queue: String,
    /// The payload, as JSON (e.g. '{"to":"ada@example.com"}').
    #[arg(id = "payload", value_name = "json")]
    pub payload: String,
    /// Job id (default: generated). Enqueueing an existing id changes nothing.
    #[arg(long)]
    pub id: Option<String>,
    /// Priority 0–255, 0 claimed first.
    #[arg(long, default_value_t = 0)]
    pub priority: u8,
    /// Attempts before the job is dead-lettered.
    #[arg(long, default_value_t = 3, value_parser = whole::at_least(1))]
    pub attempts: u64,
    /// Schedule the job this long from now, counted on the server's clock
    /// (300ms, 5s, 5m, 2h, 1d, 1h30m).
    #[arg(long = "in", id = "in", value_name = "duration", value_parser = parse_duration, allow_hyphen_values = true, conflicts_with = "at")]
    pub delay: Option<Duration>,
    /// Schedule the job for this instant (RFC 3339, e.g.
    /// 2099-01-01T09:00:00Z); a past instant makes it pending at once.
    #[arg(long, value_name = "RFC 3339", value_parser = parse_rfc3339)]
    pub at: Option<SystemTime>,
    /// Deduplicate by this key (1–256 bytes, no whitespace, braces or
    /// control characters): while another job holds it, nothing is
    /// enqueued and that job is named. Alone, the key holds until the job
    /// finishes.
    #[arg(long, value_name = "KEY")]
    pub dedup: Option<String>,
    /// With --dedup: the key holds this long from the enqueue, finished or
    /// not (throttle; server clock).
    #[arg(long, value_name = "duration", value_parser = parse_duration, allow_hyphen_values = true,
          requires = "dedup", conflicts_with = "debounce")]
    pub dedup_for: Option<Duration>,
    /// With --dedup: run the job this long after the last enqueue with the
    /// key; each enqueue while it waits replaces its payload (debounce;
    /// server clock). Takes no --in or --at.
    #[arg(long, value_name = "duration", value_parser = parse_duration, allow_hyphen_values = true,
          requires = "dedup", conflicts_with_all = ["in", "at"])]
    pub debounce: Option<Duration>,
    /// Put the job in this group (1–128 bytes, no whitespace, braces or
    /// control characters): claims take jobs round robin across groups
    /// (docs/groups.md).
    #[arg(long, value_name = "GROUP")]
    pub group: Option<String>,
    /// Wait for the job's outcome, then print it: a completed job's result
    /// on stdout, as stored (exit 0). A job that ends dead, cancelled or
    /// removed exits 1, naming its outcome (and a dead job's error and
    /// attempts) on stderr; a wait that runs out of time exits 3, the job
    /// left as it is: it runs on, and `emq wait` picks it up. A deduplicated
    /// or existing id waits for the job that holds it.
    #[arg(long)]
    pub wait: bool,
    /// With --wait: how long to wait at most (300ms, 5s, 5m, 2h, 1d,
    /// 1h30m), counted from the enqueue.
    #[arg(long, value_name = "duration", default_value = "30s",
          value_parser = parse_positive_duration, allow_hyphen_values = true,
          requires = "wait")]
    pub wait_timeout: Duration,
    /// Stop each run of the job after this long (at least 1ms): the
    /// worker cancels the handler and the attempt fails with `time limit
    /// <d> exceeded`, retried while attempts remain (docs/time.md).
    #[arg(long, value_name = "duration", value_parser = parse_duration, allow_hyphen_values = true)]
    pub time_limit: Option<Duration>,
    /// Claim the job before every job of its priority that waits, the
    /// newest LIFO job first; inside its group's lane (docs/time.md).
    #[arg(long)]
    pub lifo: bool,
    /// Never start the job after this instant (RFC 3339, later than now
    /// and than --at or --in): a job no claim took by then is cancelled
    /// with the reason `expired` (server clock; docs/time.md).
    #[arg(long, value_name = "RFC 3339", value_parser = parse_rfc3339,
          conflicts_with_all = ["start_within", "debounce"])]
    pub start_by: Option<SystemTime>,
    /// Never start the job after this long from now (at least 1ms; server
    /// clock), as --start-by now + the duration.
    #[arg(long, value_name = "duration", value_parser = parse_duration, allow_hyphen_values = true,
          conflicts_with = "debounce")]
    pub start_within: Option<Duration>,
}

/// `emq reschedule`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("when").required(true).args(["at", "in"])))]
pub struct RescheduleArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// Id of a scheduled job.
    #[arg(value_name = "id")]
    pub id: String,
    /// The new run-at (RFC 3339, e.g. 2099-01-01T09:00:00Z).
    #[arg(long, value_name = "RFC 3339", value_parser = parse_rfc3339)]
    pub at: Option<SystemTime>,
    /// The new run-at as a delay from now on this host's clock (unlike
    /// `enqueue --in`, which counts on the server's clock).
    #[arg(long = "in", id = "in", value_name = "duration", value_parser = parse_duration, allow_hyphen_values = true)]
    pub delay: Option<Duration>,
}

/// `emq promote`.
#[derive(Debug, Args)]
pub struct PromoteArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// At most this many jobs, oldest run-at first.
    #[arg(long, default_value_t = 1000, value_parser = whole::at_least(1))]
    pub limit: u64,
}

/// `emq repeat …`.
#[derive(Debug, Subcommand)]
pub enum RepeatCommand {
    /// Store (or replace) a repeat definition; its first occurrence is
    /// scheduled at once, and every worker of the queue keeps the next one
    /// scheduled.
    Add(RepeatAddArgs),
    /// Every repeat definition of a queue, with its next occurrence.
    List(RepeatListArgs),
    /// Remove a repeat definition and its scheduled occurrences.
    Remove(RepeatRemoveArgs),
}

/// `emq repeat add`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("cadence").required(true).args(["every", "cron"])))]
pub struct RepeatAddArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// The definition's key (a job-id-like name without ':'); occurrences
    /// get the ids repeat:<key>:<run-at ms>.
    #[arg(value_name = "key")]
    pub key: String,
    /// The payload of every occurrence, as JSON.
    #[arg(id = "payload", value_name = "json")]
    pub payload: String,
    /// Fire every this long (300ms, 5s, 5m, 2h, 1d, 1h30m), counted from
    /// now or from --start.
    #[arg(long, value_name = "duration", value_parser = parse_duration, allow_hyphen_values = true)]
    pub every: Option<Duration>,
    /// Fire when this cron expression matches (5 fields, or 6 with seconds
    /// first), in UTC unless --tz names a zone.
    #[arg(long, value_name = "expr")]
    pub cron: Option<String>,
    /// IANA time zone of --cron (e.g. Europe/Berlin).
    #[arg(long, value_name = "zone", conflicts_with = "every")]
    pub tz: Option<String>,
    /// No occurrence before this instant (RFC 3339).
    #[arg(long, value_name = "RFC 3339", value_parser = parse_rfc3339)]
    pub start: Option<SystemTime>,
    /// No occurrence after this instant (RFC 3339).
    #[arg(long, value_name = "RFC 3339", value_parser = parse_rfc3339)]
    pub end: Option<SystemTime>,
    /// At most this many occurrences in all.
    #[arg(long, alias = "limit", value_parser = whole::at_least(1))]
    pub times: Option<u64>,
    /// Priority 0–255 of every occurrence, 0 claimed first.
    #[arg(long, default_value_t = 0)]
    pub priority: u8,
    /// Attempts of every occurrence.
    #[arg(long, default_value_t = 3, value_parser = whole::at_least(1))]
    pub attempts: u64,
}

/// `emq repeat list`.
#[derive(Debug, Args)]
pub struct RepeatListArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
}

/// `emq repeat remove`.
#[derive(Debug, Args)]
pub struct RepeatRemoveArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// The definition's key.
    #[arg(value_name = "key")]
    pub key: String,
}

/// `emq stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
}

/// `emq metrics`.
#[derive(Debug, Args)]
pub struct MetricsArgs {
    /// Serve the text at http://ADDR/metrics until Ctrl-C instead of
    /// printing it once (port 0 picks a free one; the first line printed
    /// names the address, {"url": …} under --json).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
}

/// `emq serve` and its synonym `emq dashboard`.
#[derive(Debug, Args)]
pub struct DashboardArgs {
    /// Where to listen (port 0 picks a free one). A non-loopback address
    /// is refused without a token (--tokens, --token, --token-file) unless
    /// --insecure.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7070")]
    pub listen: std::net::SocketAddr,
    /// Show everything, refuse every action (403, and no buttons drawn).
    #[arg(long)]
    pub read_only: bool,
    /// Require this token, an operator of every queue (named `token` in
    /// the log): the sign-in form takes it, scripts send
    /// `Authorization: Bearer <token>`.
    #[arg(
        long,
        value_name = "T",
        env = "EMQ_DASHBOARD_TOKEN",
        hide_env_values = true,
        conflicts_with_all = ["token_file", "tokens"]
    )]
    pub token: Option<String>,
    /// Read the token from this file (its first line).
    #[arg(long, value_name = "F", conflicts_with = "tokens")]
    pub token_file: Option<std::path::PathBuf>,
    /// The tokens file (TOML): each token's SHA-256, name, role (reader,
    /// producer, worker, operator) and queues (names or globs); a request
    /// sees only its token's queues and does only what its role may.
    /// `emq token new` prints a token and its entry.
    #[arg(long, value_name = "FILE")]
    pub tokens: Option<std::path::PathBuf>,
    /// Serve a non-loopback --listen without any token: anyone who can
    /// reach it acts on every queue (refused otherwise).
    #[arg(long)]
    pub insecure: bool,
    /// Serve every page under this path (`/emq`), for a reverse proxy;
    /// the API is then at PATH/api/v1.
    #[arg(long, value_name = "PATH", default_value = "/")]
    pub base_path: String,
    /// Serve requests for this host too (`ops.example.com`, or with a
    /// port); repeat the flag for more. Only `127.0.0.1`, `localhost`, `[::1]`
    /// and the listening address are served otherwise: any other Host
    /// answers 421 (against DNS rebinding).
    #[arg(long, value_name = "HOST")]
    pub allow_host: Vec<String>,
    /// The URL browsers open, behind a reverse proxy
    /// (`https://ops.example.com/emq`): its host is served, and https
    /// makes the session cookie Secure.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Connections open at once, at most (past it, new ones wait).
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = whole::at_least(1).map(|n| n as usize))]
    pub max_connections: usize,
    /// Serve live updates to at most N pages at once; the next page's live
    /// stream is answered 503 and the page works on without them (0 turns
    /// them off). All live pages share one reader of events.
    #[arg(long, value_name = "N", default_value_t = echomq_dashboard::DEFAULT_LIVE_VIEWERS)]
    pub live_viewers: usize,
    /// Serve the HTTP API and /metrics alone, no pages.
    #[arg(long)]
    pub no_dashboard: bool,
    /// The largest body an API request may send, in bytes (413 past it).
    #[arg(long, value_name = "BYTES", default_value_t = echomq_dashboard::API_BODY_MOST, value_parser = whole::at_least(1).map(|n| n as usize))]
    pub max_body: usize,
    /// How long a client may take to send a request's headers, and an
    /// open connection may sit idle between requests (closed past it).
    #[arg(long, value_name = "duration", default_value = "10s", value_parser = parse_positive_duration)]
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive (408 past it).
    #[arg(long, value_name = "duration", default_value = "10s", value_parser = parse_positive_duration)]
    pub body_timeout: Duration,
}

/// `emq job`.
#[derive(Debug, Args)]
pub struct JobArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// Job id.
    #[arg(value_name = "id")]
    pub id: String,
    /// Log lines shown, the newest (0 shows none; the log keeps the newest
    /// 1000).
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = whole::between(0, echomq::LOG_KEEP))]
    pub logs: u64,
}

/// `emq dedup`.
#[derive(Debug, Args)]
pub struct DedupArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// The deduplication key.
    #[arg(value_name = "KEY")]
    pub key: String,
    /// Free the key (whatever its mode) instead of showing it.
    #[arg(long)]
    pub release: bool,
}

/// `emq bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Jobs enqueued and processed (the concurrency-1 phase runs a tenth of
    /// them) [default: 100000]. With --lateness: one run of this many jobs
    /// [default: two runs, 2000 and 20000 jobs].
    #[arg(long, value_parser = whole::at_least(10))]
    pub jobs: Option<u64>,
    /// Measure only how late scheduled jobs start: with a worker
    /// (concurrency 50) running, N jobs are enqueued in chunks of 1000,
    /// each due a uniform random 0–1000 ms after its chunk starts;
    /// p50 / p90 / p99 / max lateness and server CPU per job.
    #[arg(long)]
    pub lateness: bool,
    /// Run the throughput phases on wire 4 and then on wire 6 (each on a
    /// fresh embedded server, or both on `--url`) and print both, with
    /// wire 6's server CPU per job as a share of wire 4's.
    #[arg(long, conflicts_with = "lateness")]
    pub compare: bool,
    /// Also process the jobs at concurrency 50 under a rate limit that
    /// never binds (what the window's bookkeeping costs a claim), in five
    /// rounds interleaved with the same work without flow control.
    #[arg(long, conflicts_with = "lateness")]
    pub rate_limit: bool,
    /// Also process the jobs at concurrency 50 under a cap of 50 active
    /// jobs (what the cap's check and wake-ups cost), in five rounds
    /// interleaved with the same work without flow control.
    #[arg(long, conflicts_with = "lateness")]
    pub concurrency_cap: bool,
    /// Also enqueue the jobs one by one (not in bulk), without and with a
    /// dedup key each, on one queue, in five interleaved rounds (what a key
    /// costs an enqueue).
    #[arg(long, conflicts_with = "lateness")]
    pub dedup: bool,
    /// Also process the jobs at concurrency 50 spread over N groups (job i
    /// in group i mod N), for each N given (--groups 1000,100000), in five
    /// rounds interleaved with the same work without groups.
    #[arg(long, value_name = "N,…", value_delimiter = ',',
          value_parser = whole::at_least(1))]
    pub groups: Vec<u64>,
    /// Also run the lifecycle (bulk enqueue, then processing at
    /// concurrency 50) with the queue's metrics off, in five rounds
    /// interleaved with the same work with metrics on (the default): what
    /// keeping metrics costs the server per job.
    #[arg(long, conflicts_with = "lateness")]
    pub metrics_cost: bool,
    /// Also measure outcome waits: the lifecycle with nobody waiting and
    /// with the producer waiting for every job it enqueued (on one
    /// connector, the waits begun as the worker starts; each queue keeps a
    /// round's completed jobs), in five interleaved rounds, each's server
    /// CPU per job and their ratio; then 10,000 waits (fewer with fewer
    /// --jobs) open at once on one queue before the worker starts, timed
    /// from each job's handler returning to its wait returning (p50 / p99
    /// / max, this process's clock, so the worker's completion batching is
    /// in it). Every wait must return its job's result, or the bench fails.
    #[arg(long, conflicts_with = "lateness")]
    pub outcomes: bool,
    /// Also process the jobs at concurrency 50 with one worker over three
    /// queues (a third of the jobs each, even weights), in five rounds
    /// interleaved with one worker over one queue of the same jobs: the
    /// jobs/s of the first as a share of the second's.
    #[arg(long, conflicts_with = "lateness")]
    pub many_queues: bool,
    /// Also measure flows (jobs that wait for other jobs): the same number
    /// of jobs plain, as fan-out / fan-in flows (a root, up to 10,000 jobs
    /// after it, one job after those) and as one chain, in five
    /// interleaved rounds, processed at concurrency 50, each's server CPU
    /// per job and its ratio to plain (the chain's also to plain jobs
    /// processed one at a time with nothing claimed ahead, one call a job
    /// as a chain's hop is), and as many bare
    /// round trips (`PING`, one at a time: the floor of a chain's hop);
    /// then --jobs / 2 pairs (at most 10,000) of a job and its dependent
    /// in another queue, from the dependency's completion to the
    /// dependent's unblocking on the server's clock (p50 / p99 / max).
    #[arg(long, conflicts_with = "lateness")]
    pub flows: bool,
    /// Also measure the HTTP API (`emq serve`'s, served by a thread of
    /// this process) against the library, in five interleaved rounds:
    /// single enqueues from 50 keep-alive clients against 50 pipelined
    /// library enqueues, bulk POSTs of 100 jobs against `enqueue_bulk` of
    /// 100 (4 at once each), and an HTTP worker loop at count 50 (each
    /// batch completed and the next claimed in one request) against the
    /// library's worker at concurrency 50;
    /// each HTTP jobs/s as a share of the library's, against issue 44's
    /// floors (0.25, 0.60, 0.30).
    #[arg(long, conflicts_with = "lateness")]
    pub http: bool,
    /// Also fill N queues (20 jobs each: completed, dead and pending) under
    /// a prefix of their own, serve them with `emq metrics --listen`'s
    /// handler on a loopback port, and time 30 HTTP scrapes of them all.
    #[arg(long, value_name = "N", conflicts_with = "lateness",
          value_parser = whole::at_least(1))]
    pub scrape: Option<u64>,
    /// Also fill a queue with N pending jobs and one with 100,000 (one in
    /// a thousand payloads holding a needle) under a prefix of their own,
    /// serve the dashboard on a loopback port, time its queue page (first
    /// and a deep page), queues page and a payload search over HTTP, and
    /// walk the search to its end with every server call in the slow log.
    #[arg(long, value_name = "N", conflicts_with = "lateness",
          value_parser = whole::at_least(1))]
    pub dashboard: Option<u64>,
    /// Configure the bench queues as BullMQ's benchmark runs: completed
    /// jobs deleted at once (keep_completed 0, its removeOnComplete: true),
    /// the events stream capped at about 10,000 (its maxLenEvents) and no
    /// metrics kept (its workers keep none unless asked).
    #[arg(long, conflicts_with = "lateness")]
    pub like_bullmq: bool,
    /// The processing phases' workers hold exactly this many jobs claimed
    /// ahead of their running ones (the library's `claim_ahead`) instead
    /// of the default: one batch, more while handlers are quick. 0 holds
    /// what BullMQ's worker holds: none, its next job coming back with
    /// each completion.
    #[arg(long, value_name = "jobs", conflicts_with = "lateness",
          value_parser = whole::between(0, 10_000))]
    pub claim_ahead: Option<u64>,
    /// With --compare: this many rounds, wire 4 first in odd rounds and
    /// wire 6 first in even ones, then the median of each ratio (the
    /// figure that holds on a noisy machine).
    #[arg(long, default_value_t = 1, requires = "compare",
          value_parser = whole::between(1, 20))]
    pub rounds: u64,
    /// Tokio runtime the client runs on.
    #[arg(long, value_enum, default_value_t = RuntimeArg::CurrentThread)]
    pub runtime: RuntimeArg,
}

/// The `--runtime` values of `emq bench`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RuntimeArg {
    /// One thread for the client (faster on small machines).
    CurrentThread,
    /// Tokio's work-stealing runtime, one thread per core.
    MultiThread,
}

impl RuntimeArg {
    /// `"current-thread"` or `"multi-thread"`.
    pub fn as_str(self) -> &'static str {
        match self {
            RuntimeArg::CurrentThread => "current-thread",
            RuntimeArg::MultiThread => "multi-thread",
        }
    }

    /// Builds the runtime.
    pub fn build(self) -> std::io::Result<tokio::runtime::Runtime> {
        match self {
            RuntimeArg::CurrentThread => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build(),
            RuntimeArg::MultiThread => tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_options_follow_the_subcommand() {
        let cli = Cli::try_parse_from(["emq", "stats", "q", "--json", "--wire", "native"]).unwrap();
        assert!(cli.global.json);
        assert_eq!(cli.global.wire, WireArg::Native);
        let cli = Cli::try_parse_from(["emq", "enqueue", "q", "{}", "--json"]).unwrap();
        assert!(cli.global.json);
        assert!(
            matches!(cli.command, Command::Enqueue(EnqueueArgs { ref payload, .. }) if payload == "{}")
        );
    }

    #[test]
    fn time_flags_parse_and_exclude_each_other() {
        let parse = |args: &[&str]| Cli::try_parse_from([&["emq"], args].concat());
        let cli = parse(&["enqueue", "q", "{}", "--in", "1h30m"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Enqueue(EnqueueArgs { delay: Some(d), at: None, .. }) if d == Duration::from_secs(5400)
        ));
        let both = [
            "enqueue",
            "q",
            "{}",
            "--in",
            "5s",
            "--at",
            "2030-01-01T00:00:00Z",
        ];
        assert!(parse(&both).is_err());
        let err = parse(&["enqueue", "q", "{}", "--in", "5 minutes"]).unwrap_err();
        assert!(err.to_string().contains("--in"), "{err}");
        assert!(parse(&["dedup", "q", "k", "--release"]).is_ok());
        assert!(parse(&["reschedule", "q", "id"]).is_err());
        assert!(parse(&["reschedule", "q", "id", "--in", "5s"]).is_ok());
        assert!(parse(&["repeat", "add", "q", "k", "{}"]).is_err());
        assert!(
            parse(&[
                "repeat",
                "add",
                "q",
                "k",
                "{}",
                "--every",
                "1m",
                "--cron",
                "* * * * *"
            ])
            .is_err()
        );
        assert!(
            parse(&[
                "repeat", "add", "q", "k", "{}", "--every", "1m", "--tz", "UTC"
            ])
            .is_err()
        );
        assert!(
            parse(&[
                "repeat",
                "add",
                "q",
                "k",
                "{}",
                "--cron",
                "* * * * *",
                "--tz",
                "UTC"
            ])
            .is_ok()
        );
    }
}
