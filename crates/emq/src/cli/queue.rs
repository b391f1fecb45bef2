//! Arguments of the verbs over a whole queue: `pause`, `resume`, `jobs`,
//! `drain`, `obliterate`, `sweep`.

use super::whole;
use clap::Args;
use echomq::JobState;

/// A command that names only a queue (`pause`, `resume`).
#[derive(Debug, Args)]
pub struct QueueArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
}

/// `emq jobs`.
#[derive(Debug, Args)]
pub struct JobsArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// Which state's jobs: scheduled, pending, active, completed, dead or
    /// cancelled.
    #[arg(long, value_name = "state", default_value = "pending", value_parser = parse_state)]
    pub state: JobState,
    /// Page number, from 1. A page past the last one prints nothing but a
    /// note on stderr naming the last page (exit 0).
    #[arg(long, default_value_t = 1, value_parser = whole::at_least(1))]
    pub page: u64,
    /// Jobs per page.
    #[arg(long, default_value_t = 20, value_parser = whole::between(1, 1000))]
    pub per_page: u64,
}

/// `emq drain`.
#[derive(Debug, Args)]
pub struct DrainArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// Also delete scheduled jobs.
    #[arg(long)]
    pub scheduled: bool,
    /// Also delete blocked jobs (waiting for their dependencies); their
    /// dependents hear `removed`.
    #[arg(long)]
    pub blocked: bool,
}

/// `emq obliterate`.
#[derive(Debug, Args)]
pub struct ObliterateArgs {
    /// Queue name (the queue must be paused).
    #[arg(value_name = "queue")]
    pub queue: String,
    /// Also when jobs are active: their workers are told to stop.
    #[arg(long)]
    pub force: bool,
    /// Do not ask for confirmation (needed when stdin is not a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// `emq sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// Stalls a job may have before it is dead-lettered instead of
    /// recovered.
    #[arg(long, default_value_t = 1)]
    pub max_stalls: u64,
}

/// A state name, as `--state` takes it.
fn parse_state(text: &str) -> Result<JobState, String> {
    text.parse().map_err(|_| {
        let names: Vec<&str> = JobState::ALL.iter().map(|state| state.as_str()).collect();
        format!(
            "unknown state {text:?}: expected one of {}",
            names.join(", ")
        )
    })
}
