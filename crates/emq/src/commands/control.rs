//! The verbs over a whole queue: `pause`, `resume`, `drain`, `sweep`
//! (`obliterate` has a module of its own).

use super::{note_if_empty, open, out, out_json};
use crate::cli::{DrainArgs, Global, QueueArgs, SweepArgs};
use crate::error::CliError;
use echomq::{DrainScope, Swept};
use serde_json::json;

/// Jobs one stalled sweep call takes back at most; `emq sweep` repeats
/// until a call takes back fewer.
const SWEEP_CHUNK: u64 = 1000;

/// `emq pause <queue>`.
pub(crate) async fn pause(args: &QueueArgs, global: &Global) -> Result<(), CliError> {
    let queue = open(&args.queue, global).await?;
    queue.admin().pause().await?;
    paused(global, queue.name().as_str(), true)?;
    note_if_empty(&queue, global).await
}

/// `emq resume <queue>`.
pub(crate) async fn resume(args: &QueueArgs, global: &Global) -> Result<(), CliError> {
    let queue = open(&args.queue, global).await?;
    queue.admin().resume().await?;
    paused(global, queue.name().as_str(), false)?;
    note_if_empty(&queue, global).await
}

fn paused(global: &Global, name: &str, paused: bool) -> Result<(), CliError> {
    if global.json {
        return out_json(&json!({ "queue": name, "paused": paused }));
    }
    let verb = if paused { "paused" } else { "resumed" };
    out(&format!("{verb} queue {name}\n"))
}

/// `emq drain <queue> [--scheduled]`.
pub(crate) async fn drain(args: &DrainArgs, global: &Global) -> Result<(), CliError> {
    let queue = open(&args.queue, global).await?;
    let mut scope = DrainScope::PENDING;
    if args.scheduled {
        scope = scope.and_scheduled();
    }
    if args.blocked {
        scope = scope.and_blocked();
    }
    let drained = queue.admin().drain(scope).await?;
    if global.json {
        return out_json(&json!({ "queue": queue.name().as_str(), "drained": drained }));
    }
    out(&format!(
        "drained {drained} {} from queue {}\n",
        plural(drained, "job"),
        queue.name()
    ))
}

/// `emq sweep <queue> [--max-stalls N]`.
pub(crate) async fn sweep(args: &SweepArgs, global: &Global) -> Result<(), CliError> {
    let queue = open(&args.queue, global).await?;
    let mut total = Swept::default();
    loop {
        let swept = queue.sweep_stalled(args.max_stalls, SWEEP_CHUNK).await?;
        total.recovered += swept.recovered;
        total.dead += swept.dead;
        total.timed_out += swept.timed_out;
        total.expired += swept.expired;
        if swept.recovered + swept.dead + swept.timed_out < SWEEP_CHUNK {
            break;
        }
    }
    if global.json {
        return out_json(&total);
    }
    // Jobs failed at their time limit, only when there were some.
    let timed_out = match total.timed_out {
        0 => String::new(),
        n => format!(", failed {n} {} at its time limit", plural(n, "job")),
    };
    out(&format!(
        "recovered {} {} to pending, dead-lettered {}{timed_out} (queue {})\n",
        total.recovered,
        plural(total.recovered, "stalled job"),
        total.dead,
        queue.name()
    ))
}

/// `job` or `jobs`.
pub(crate) fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}
