//! `emq enqueue <queue> <json>`: one job, idempotent with `--id`; scheduled
//! with `--in` (server clock) or `--at` (an instant).

use super::{connect, json_arg, out, out_json, queue_name};
use crate::cli::{EnqueueArgs, Global};
use crate::error::CliError;
use crate::time::{now_ms, rfc3339, unix_ms};
use echomq::{JobState, NewJob};
use serde_json::{Value, json};

pub(crate) async fn run(args: &EnqueueArgs, global: &Global) -> Result<(), CliError> {
    let name = queue_name(&args.queue)?;
    let payload = json_arg("<json>", &args.payload)?;
    let mut job = NewJob::new(payload)
        .priority(args.priority)
        .attempts(args.attempts);
    if let Some(id) = &args.id {
        job = job
            .id(id.as_str())
            .map_err(|err| CliError::usage(err.to_string()))?;
    }
    // What the run-at should be, on the host clock (only for the output when
    // the server's own record cannot be read back).
    let mut expected = None;
    if let Some(delay) = args.delay {
        job = job.delay(delay);
        expected = Some(now_ms().saturating_add(delay.as_millis() as u64));
    }
    if let Some(at) = args.at {
        job = job.at(at);
        expected = Some(unix_ms(at));
    }
    let url = global.url_or_default();
    let queue = connect(&url, global).await?.queue::<Value>(name.as_str())?;
    let enqueued = queue.enqueue(job).await?;
    // A new scheduled job: read back the run-at the server stored (for
    // --in, counted on its clock). A run-at already due left it pending.
    let mut scheduled = None;
    if enqueued.created && expected.is_some() {
        scheduled = match queue.get(&enqueued.id).await? {
            Some(record) if record.state == JobState::Scheduled => record.run_at.or(expected),
            Some(_) => None,
            None => expected,
        };
    }
    if global.json {
        let mut value = json!({ "id": enqueued.id.as_str(), "created": enqueued.created });
        if expected.is_some() && enqueued.created {
            value["scheduled"] = Value::Bool(scheduled.is_some());
            value["run_at"] = json!(scheduled);
            value["run_at_utc"] = json!(scheduled.map(rfc3339));
        }
        return out_json(&value);
    }
    let line = match (enqueued.created, scheduled) {
        (false, _) => format!("exists {}", enqueued.id),
        (true, Some(at)) => format!("scheduled {} at {}", enqueued.id, rfc3339(at)),
        (true, None) if expected.is_some() => {
            format!("enqueued {} (its run-at had already passed)", enqueued.id)
        }
        (true, None) => format!("enqueued {}", enqueued.id),
    };
    out(&format!("{line}\n"))
}
