//! `emq obliterate <queue> [--force] [--yes]`: deletes a paused queue,
//! every job, log and key.
//!
//! Without `--yes` it asks `Obliterate queue <q> and all its jobs? [y/N]`
//! on stderr and reads the answer from stdin; anything but `y` or `yes`
//! aborts (exit 1). When stdin is not a terminal and `--yes` is not given
//! it refuses at once (exit 2), before connecting: a script must say
//! `--yes`, never pipe an answer in by accident. Refusals the server would
//! certainly answer — a queue holding jobs that is not paused
//! (`NOTPAUSED`), active jobs without `--force` (`BADSTATE active`) — are
//! reported before the question is asked.

use super::confirm::{ask, yes_or_terminal};
use super::control::plural;
use super::{open, out, out_json};
use crate::cli::{Global, ObliterateArgs};
use crate::error::CliError;
use echomq::{IfActive, Refusal, Refused};
use serde_json::json;

pub(crate) async fn run(args: &ObliterateArgs, global: &Global) -> Result<(), CliError> {
    yes_or_terminal(args.yes, "obliterate")?;
    let queue = open(&args.queue, global).await?;
    let name = queue.name().to_string();
    let counts = queue.admin().counts().await?;
    if counts.total() > 0 && !counts.paused {
        return Err(refusal(&name, &Refusal::NotPaused, counts.active));
    }
    if counts.active > 0 && !args.force {
        let active = Refusal::BadState(echomq::JobState::Active);
        return Err(refusal(&name, &active, counts.active));
    }
    if !args.yes && !ask(&format!("Obliterate queue {name} and all its jobs?")).await? {
        return Err(CliError::refused("aborted"));
    }
    let if_active = if args.force {
        IfActive::Force
    } else {
        IfActive::Refuse
    };
    match queue.admin().obliterate(if_active).await {
        Ok(()) => {}
        Err(echomq::Error::Refused(Refused { reason, .. })) => {
            return Err(refusal(&name, &reason, counts.active));
        }
        Err(err) => return Err(err.into()),
    }
    let jobs = counts.total();
    if global.json {
        return out_json(&json!({ "queue": name, "obliterated": true, "jobs": jobs }));
    }
    out(&format!(
        "obliterated queue {name} ({jobs} {})\n",
        plural(jobs, "job")
    ))
}

/// The refusal, naming the queue, the verb and what was found.
fn refusal(name: &str, reason: &Refusal, active: u64) -> CliError {
    let why = match reason {
        Refusal::NotPaused => {
            format!("the queue is not paused (NOTPAUSED); pause it first with `emq pause {name}`")
        }
        Refusal::BadState(state) => format!(
            "{active} {} {state} (BADSTATE {state}); --force stops them",
            plural(active, "job"),
        ),
        other => other.to_string(),
    };
    CliError::refusal(reason, format!("obliterate of queue {name} refused: {why}"))
}
