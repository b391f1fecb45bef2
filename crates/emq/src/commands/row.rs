//! The verbs on one job's row: `cancel`, `update`, `remove`, `reprocess`,
//! `requeue`, `log`. A refusal (`BADSTATE`, `NOJOB`) exits 1 with a message
//! naming the job, the verb and the state found.

use super::{job_id, json_arg, open, out, out_json};
use crate::cli::{Global, JobArgs, LogArgs, RemoveArgs, UpdateArgs};
use crate::error::CliError;
use echomq::CancelOutcome;
use serde_json::json;

/// `emq cancel <queue> <id>`.
pub(crate) async fn cancel(args: &JobArgs, global: &Global) -> Result<(), CliError> {
    let id = job_id(&args.id)?;
    let queue = open(&args.queue, global).await?;
    let outcome = queue.jobs().cancel(&id).await?;
    let (word, line) = match outcome {
        CancelOutcome::Cancelled => ("cancelled", format!("cancelled {id}")),
        CancelOutcome::Requested => ("requested", format!("cancellation requested for {id}")),
    };
    if global.json {
        return out_json(&json!({ "id": id.as_str(), "outcome": word }));
    }
    out(&format!("{line}\n"))
}

/// `emq update <queue> <id> <json>`.
pub(crate) async fn update(args: &UpdateArgs, global: &Global) -> Result<(), CliError> {
    let id = job_id(&args.id)?;
    let payload = json_arg("<json>", &args.payload)?;
    let queue = open(&args.queue, global).await?;
    queue.jobs().update(&id, &payload).await?;
    done(global, "updated", id.as_str())
}

/// `emq remove <queue> <id> [--force]`.
pub(crate) async fn remove(args: &RemoveArgs, global: &Global) -> Result<(), CliError> {
    let id = job_id(&args.id)?;
    let queue = open(&args.queue, global).await?;
    if !queue.jobs().remove(&id, args.force).await? {
        return Err(CliError::not_found(format!(
            "remove of job {id} refused: no such job in queue {} (NOJOB)",
            queue.name()
        )));
    }
    done(global, "removed", id.as_str())
}

/// `emq reprocess <queue> <id>`.
pub(crate) async fn reprocess(args: &JobArgs, global: &Global) -> Result<(), CliError> {
    let id = job_id(&args.id)?;
    let queue = open(&args.queue, global).await?;
    queue.jobs().reprocess(&id).await?;
    done(global, "reprocessed", id.as_str())
}

/// `emq requeue <queue> <id>`.
pub(crate) async fn requeue(args: &JobArgs, global: &Global) -> Result<(), CliError> {
    let id = job_id(&args.id)?;
    let queue = open(&args.queue, global).await?;
    queue.jobs().requeue(&id).await?;
    done(global, "requeued", id.as_str())
}

/// `emq log <queue> <id> <line>`.
pub(crate) async fn log(args: &LogArgs, global: &Global) -> Result<(), CliError> {
    let id = job_id(&args.id)?;
    let queue = open(&args.queue, global).await?;
    let length = queue.jobs().log(&id, &args.line).await?;
    if global.json {
        return out_json(&json!({ "id": id.as_str(), "logs": length }));
    }
    out(&format!("logged line {length} of job {id}\n"))
}

/// `<verb> <id>`, or `{"id": …, "<verb>": true}` with `--json`.
fn done(global: &Global, verb: &str, id: &str) -> Result<(), CliError> {
    if global.json {
        return out_json(&json!({ "id": id, verb: true }));
    }
    out(&format!("{verb} {id}\n"))
}
