//! The verbs on one job's row: `cancel`, `update`, `remove`, `reprocess`,
//! `requeue`, `log`. A refusal (`BADSTATE`, `NOJOB`) exits 1 with a message
//! naming the job, the verb and the state found; a missing job reads
//! `cancel refused: no job 42 in queue mail (NOJOB)`. `cancel`, `remove`,
//! `reprocess` and `requeue` take several ids ([`super::bulk::each`]).

use super::bulk::{Done, each, open_ids, show};
use super::{job_id, json_arg, no_job, on_job, open, out, out_json};
use crate::cli::{Global, IdsArgs, LogArgs, RemoveArgs, UpdateArgs};
use crate::error::CliError;
use echomq::{CancelOutcome, IfActive, JobId, Queue};
use serde_json::{Value, json};

/// `emq cancel <queue> <id>…`.
pub(crate) async fn cancel(args: &IdsArgs, global: &Global) -> Result<(), CliError> {
    let (queue, ids) = open_ids(&args.queue, &args.ids, global).await?;
    each(global, "cancel", ids, |id| cancel_one(&queue, id)).await
}

async fn cancel_one(queue: &Queue<Value>, id: JobId) -> Result<Done, CliError> {
    let outcome = queue.jobs().cancel(&id).await.map_err(on_job(queue, &id))?;
    let (word, line) = match outcome {
        CancelOutcome::Cancelled => ("cancelled", format!("cancelled job {id}")),
        CancelOutcome::Requested => ("requested", format!("cancellation requested for job {id}")),
    };
    Ok(Done {
        line,
        json: json!({ "id": id.as_str(), "outcome": word }),
    })
}

/// `emq update <queue> <id> <json>`.
pub(crate) async fn update(args: &UpdateArgs, global: &Global) -> Result<(), CliError> {
    let id = job_id(&args.id)?;
    let payload = json_arg("<json>", &args.payload)?;
    let queue = open(&args.queue, global).await?;
    queue
        .jobs()
        .update(&id, &payload)
        .await
        .map_err(on_job(&queue, &id))?;
    show(global, &done_one("updated", id))
}

/// `emq remove <queue> <id>… [--force]`.
pub(crate) async fn remove(args: &RemoveArgs, global: &Global) -> Result<(), CliError> {
    let (queue, ids) = open_ids(&args.queue, &args.ids, global).await?;
    each(global, "remove", ids, |id| {
        let active = if args.force {
            IfActive::Force
        } else {
            IfActive::Refuse
        };
        remove_one(&queue, id, active)
    })
    .await
}

async fn remove_one(queue: &Queue<Value>, id: JobId, active: IfActive) -> Result<Done, CliError> {
    let removed = queue
        .jobs()
        .remove(&id, active)
        .await
        .map_err(on_job(queue, &id))?;
    if !removed {
        return Err(CliError::not_found(format!(
            "remove refused: {} (NOJOB)",
            no_job(queue, &id)
        )));
    }
    Ok(done_one("removed", id))
}

/// `emq reprocess <queue> <id>…`.
pub(crate) async fn reprocess(args: &IdsArgs, global: &Global) -> Result<(), CliError> {
    let (queue, ids) = open_ids(&args.queue, &args.ids, global).await?;
    each(global, "reprocess", ids, |id| reprocess_one(&queue, id)).await
}

/// Reprocesses one job (`emq reprocess`, `emq retry <id>…`).
pub(crate) async fn reprocess_one(queue: &Queue<Value>, id: JobId) -> Result<Done, CliError> {
    queue
        .jobs()
        .reprocess(&id)
        .await
        .map_err(on_job(queue, &id))?;
    Ok(done_one("reprocessed", id))
}

/// `emq requeue <queue> <id>…`.
pub(crate) async fn requeue(args: &IdsArgs, global: &Global) -> Result<(), CliError> {
    let (queue, ids) = open_ids(&args.queue, &args.ids, global).await?;
    each(global, "requeue", ids, |id| requeue_one(&queue, id)).await
}

async fn requeue_one(queue: &Queue<Value>, id: JobId) -> Result<Done, CliError> {
    queue
        .jobs()
        .requeue(&id)
        .await
        .map_err(on_job(queue, &id))?;
    Ok(done_one("requeued", id))
}

/// `<verb> job <id>`, or `{"id": …, "<verb>": true}` with `--json`.
fn done_one(verb: &str, id: JobId) -> Done {
    Done {
        line: format!("{verb} job {id}"),
        json: json!({ "id": id.as_str(), verb: true }),
    }
}

/// `emq log <queue> <id> <line>`.
pub(crate) async fn log(args: &LogArgs, global: &Global) -> Result<(), CliError> {
    let id = job_id(&args.id)?;
    let queue = open(&args.queue, global).await?;
    let length = queue
        .jobs()
        .log(&id, &args.line)
        .await
        .map_err(on_job(&queue, &id))?;
    if global.json {
        return out_json(&json!({ "id": id.as_str(), "logs": length }));
    }
    out(&format!("logged line {length} of job {id}\n"))
}
