//! `emq enqueue <queue> <json>`: one job, idempotent with `--id`.

use super::{connect, out, out_json, queue_name};
use crate::cli::{EnqueueArgs, Global};
use crate::error::CliError;
use echomq::NewJob;
use serde_json::{Value, json};

pub(crate) async fn run(args: &EnqueueArgs, global: &Global) -> Result<(), CliError> {
    let name = queue_name(&args.queue)?;
    let payload: Value = serde_json::from_str(&args.payload).map_err(|err| {
        CliError::usage(format!(
            "argument <json> is not valid JSON: {err} (got {:?})",
            args.payload
        ))
    })?;
    let mut job = NewJob::new(payload)
        .priority(args.priority)
        .attempts(args.attempts);
    if let Some(id) = &args.id {
        job = job
            .id(id.as_str())
            .map_err(|err| CliError::usage(err.to_string()))?;
    }
    let url = global.url_or_default();
    let queue = connect(&url, global).await?.queue::<Value>(name.as_str())?;
    let enqueued = queue.enqueue(job).await?;
    if global.json {
        return out_json(&json!({ "id": enqueued.id.as_str(), "created": enqueued.created }));
    }
    let word = if enqueued.created {
        "enqueued"
    } else {
        "exists"
    };
    out(&format!("{word} {}\n", enqueued.id))
}
