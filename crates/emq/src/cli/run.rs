//! Arguments of the long-running commands: `worker` and `watch`.

use super::whole;
use crate::time::{parse_duration, parse_positive_duration};
use clap::Args;
use std::time::Duration;

/// `emq worker`.
#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Queue name, or several, comma-separated (`mail,sms,reports`): one
    /// worker over all of them, its concurrency shared, its claims spread
    /// evenly, by --weights or in --strict order. Each queue of a list must
    /// be known (`emq queues` lists it).
    #[arg(value_name = "queue[,queue…]")]
    pub queue: String,
    /// With several queues: one weight per queue, in the list's order
    /// (`5,2,1`): while every queue has jobs, claims follow the weights; a
    /// queue with nothing to claim gives its turns to the others.
    #[arg(long, value_name = "w,w,…", value_delimiter = ',')]
    pub weights: Option<Vec<u64>>,
    /// With several queues: claim from a queue only while the queues
    /// before it in the list have nothing to claim (not with --weights).
    #[arg(long)]
    pub strict: bool,
    /// The command run (by `sh -c`) for each job: the payload (JSON) on its
    /// stdin, EMQ_QUEUE, EMQ_JOB_ID, EMQ_ATTEMPT, EMQ_MAX_ATTEMPTS and
    /// EMQ_TOKEN (the claim's fencing token) in its environment. Exit 0 completes the job with its stdout as the result:
    /// stored as JSON when it parses as JSON (`{"sent":true}`, `42`), as a
    /// JSON string otherwise, null when empty (trailing newlines trimmed).
    /// Any other exit fails the attempt with its stderr as the error.
    #[arg(long, value_name = "command")]
    pub exec: String,
    /// Jobs (commands) run at once.
    #[arg(long, default_value_t = 1, value_parser = whole::between(1, 10_000))]
    pub concurrency: u64,
    /// Jobs kept claimed ahead of the running commands, each started the
    /// moment one returns. Default 0: a command usually runs long enough
    /// that a job held for it is a job another worker could have run.
    #[arg(long, value_name = "jobs", default_value_t = 0, value_parser = whole::between(0, 10_000))]
    pub claim_ahead: u64,
    /// Lease of each claim; the worker renews it every third of it while
    /// the command runs, so only a dead worker's jobs outlive it.
    #[arg(long, value_name = "duration", default_value = "30s", value_parser = parse_positive_duration, allow_hyphen_values = true)]
    pub lease: Duration,
    /// Stalls a job may have before the sweep dead-letters it.
    #[arg(long, default_value_t = 1)]
    pub max_stalls: u64,
    /// How often the stalled sweep runs (one worker per interval across
    /// all hosts does it).
    #[arg(long, value_name = "duration", default_value = "30s", value_parser = parse_positive_duration, allow_hyphen_values = true)]
    pub stalled_interval: Duration,
    /// On Ctrl-C or SIGTERM: how long running commands may take to finish;
    /// past it they get SIGTERM and their jobs go back to pending.
    #[arg(long, value_name = "duration", default_value = "10s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub shutdown_deadline: Duration,
    /// No line per job on stderr.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `emq watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// Start with the oldest event still kept, not with the next one.
    #[arg(long)]
    pub from_start: bool,
    /// Only the events of this job (repeat the flag for more jobs).
    #[arg(long = "job", value_name = "id")]
    pub jobs: Vec<String>,
    /// Only events of this name (`completed`, `dead`, …; repeat the flag
    /// for more). An unknown name is refused with the list of names.
    #[arg(long = "event", value_name = "name")]
    pub events: Vec<String>,
}
