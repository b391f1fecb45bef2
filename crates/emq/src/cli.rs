//! The command line: global options and one subcommand per command family.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// URL used by `enqueue`, `stats` and `job` when neither `--url` nor
/// `EMQ_URL` is given.
pub const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// `emq`: the EchoMQ operator CLI.
#[derive(Debug, Parser)]
#[command(
    name = "emq",
    version,
    about = "EchoMQ operator CLI: a job queue on Valkey"
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
    /// Server URL (redis://host:port). `demo` and `bench` start an embedded
    /// server when it is not given; other commands default to
    /// redis://127.0.0.1:6379.
    #[arg(long, env = "EMQ_URL", global = true)]
    pub url: Option<String>,
    /// Key prefix: every key of queue q lives under <prefix>:{q}.
    #[arg(long, default_value = "emq", global = true)]
    pub prefix: String,
    /// Machine output: one JSON object on stdout.
    #[arg(long, global = true)]
    pub json: bool,
    /// Wire: `script` (wire 4, Lua scripts) or `native` (wire 6, the EchoMQ module).
    #[arg(long, value_enum, default_value_t = WireArg::Script, global = true)]
    pub wire: WireArg,
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
    /// Wire 4: Lua scripts by EVALSHA (works on any Valkey ≥ 7.2 / Redis ≥ 7.0).
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
    /// Enqueue one job (idempotent when --id is given).
    Enqueue(EnqueueArgs),
    /// Job counts per state of a queue.
    Stats(StatsArgs),
    /// Every field of one job.
    Job(JobArgs),
    /// Measure throughput and server CPU per job (starts an embedded server
    /// unless --url is given).
    Bench(BenchArgs),
}

/// `emq server`.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Port on 127.0.0.1 (default: a free one).
    #[arg(long)]
    pub port: Option<u16>,
    /// Data directory (created if missing).
    #[arg(long, default_value = ".emq")]
    pub dir: PathBuf,
}

/// `emq demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Jobs to enqueue and process.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub jobs: u64,
    /// Jobs the worker runs at once.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub concurrency: u64,
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
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub attempts: u64,
}

/// `emq stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
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
}

/// `emq bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Jobs enqueued and processed (the concurrency-1 phase runs a tenth of them).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(10..))]
    pub jobs: u64,
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
}
