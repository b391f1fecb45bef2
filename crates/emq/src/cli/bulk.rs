//! Arguments of the verbs on many jobs: `retry` and `clean` (every job of
//! a finished state, or the ids named), and [`IdsArgs`], what `cancel`,
//! `reprocess` and `requeue` take (one id or several).

use crate::time::parse_duration;
use clap::Args;
use echomq::JobState;
use std::time::Duration;

/// A per-job verb on one job or several (`cancel`, `reprocess`,
/// `requeue`).
#[derive(Debug, Args)]
pub struct IdsArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// Job ids: each is handled in turn, one line each; the exit code is 1
    /// when any was refused, and the refused ones are named.
    #[arg(value_name = "id", required = true, num_args = 1..)]
    pub ids: Vec<String>,
}

/// `emq retry`.
#[derive(Debug, Args)]
pub struct RetryArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// The finished jobs to send back to pending (not with --all).
    #[arg(value_name = "id")]
    pub ids: Vec<String>,
    /// Every job of --state instead of ids (asks first unless --yes).
    #[arg(long)]
    pub all: bool,
    /// With --all: which finished state's jobs (completed, dead or
    /// cancelled).
    #[arg(long, value_name = "state", default_value = "dead", value_parser = parse_finished, requires = "all")]
    pub state: JobState,
    /// Do not ask for confirmation (needed when stdin is not a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// `emq clean`.
#[derive(Debug, Args)]
pub struct CleanArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// Which finished state's jobs to delete: completed, dead or cancelled.
    #[arg(long, value_name = "state", required = true, value_parser = parse_finished)]
    pub state: JobState,
    /// Only jobs that finished at least this long ago (300ms, 5s, 5m, 2h,
    /// 7d), counted back from this host's clock; without it, every job of
    /// the state.
    #[arg(long, value_name = "duration", value_parser = parse_duration, allow_hyphen_values = true)]
    pub older_than: Option<Duration>,
    /// Do not ask for confirmation (needed when stdin is not a terminal).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// A finished state's name (`completed`, `dead`, `cancelled`), as `retry
/// --state` and `clean --state` take it.
fn parse_finished(text: &str) -> Result<JobState, String> {
    let finished: Vec<&str> = JobState::ALL
        .iter()
        .filter(|state| state.is_finished())
        .map(|state| state.as_str())
        .collect();
    match text.parse::<JobState>() {
        Ok(state) if state.is_finished() => Ok(state),
        _ => Err(format!(
            "{text:?} is not a finished state: expected one of {}",
            finished.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_finished_states_parse() {
        assert_eq!(parse_finished("dead"), Ok(JobState::Dead));
        assert_eq!(parse_finished("completed"), Ok(JobState::Completed));
        let err = parse_finished("pending").unwrap_err();
        assert!(err.contains("completed, dead, cancelled"), "{err}");
        assert!(parse_finished("nope").is_err());
    }
}
