//! `emq wait <queue> <id> [--timeout 30s]`, and the end of every wait for
//! a job's outcome (`emq enqueue --wait` too): the outcome printed, and
//! the exit it maps to (docs/outcomes.md, "From the command line").
//!
//! Without `--json`, stdout holds a completed job's result as stored (JSON,
//! its text untouched; nothing when it stored none) and nothing else; any
//! other outcome is the error line on stderr. Under `--json`, stdout is one
//! object whatever the exit: the fields known before the wait (`id`, and
//! what an enqueue did), and once the job is decided `outcome` with what
//! it carries.

use super::{job_id, open, out_json};
use crate::cli::{Global, WaitArgs};
use crate::error::{CliError, ErrorCode};
use crate::time::format_duration;
use echomq::{JobId, Outcome, Queue};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::time::Duration;

/// `emq wait <queue> <id>`: the name and id checked before anything is
/// sent, then [`Queue::outcome`] for at most `--timeout`.
pub(crate) async fn run(args: &WaitArgs, global: &Global) -> Result<(), CliError> {
    let id = job_id(&args.id)?;
    let queue = open(&args.queue, global).await?;
    let waited = queue.outcome(&id, args.timeout).await;
    let mut fields = Map::new();
    fields.insert("id".into(), Value::from(id.as_str()));
    finish(&queue, &id, waited, args.timeout, &fields, global.json)
}

/// A job's outcome as a wait returns it, its result raw.
pub(crate) type Waited = echomq::Result<Outcome<Box<RawValue>>>;

/// Prints what the wait for job `id` of `queue` found and answers the
/// error it exits with: none for a completed job, exit 1 for a dead,
/// cancelled or removed one, exit 3 when the wait of `timeout` ran out.
/// `fields` are what `--json` prints before the outcome.
pub(crate) fn finish(
    queue: &Queue<Value>,
    id: &JobId,
    waited: Waited,
    timeout: Duration,
    fields: &Map<String, Value>,
    json: bool,
) -> Result<(), CliError> {
    let job = format!("job {id} in queue {}", queue.name());
    let outcome = match waited {
        Ok(outcome) => outcome,
        Err(echomq::Error::Timeout { .. }) => {
            if json {
                out_json(fields)?;
            }
            return Err(CliError::new(
                ErrorCode::Timeout,
                format!(
                    "{job} was not finished after {}: the wait timed out; the job was left as it \
                     was and runs on (`emq wait` picks it up)",
                    format_duration(timeout)
                ),
            ));
        }
        Err(err) => return Err(err.into()),
    };
    if json {
        out_json(&DecidedJson::new(fields, &outcome))?;
    }
    match outcome {
        Outcome::Completed { result } => match result {
            Some(result) if !json => out_json(&result),
            _ => Ok(()),
        },
        Outcome::Dead { error, attempts } => {
            let plural = if attempts == 1 { "" } else { "s" };
            Err(CliError::new(
                ErrorCode::Dead,
                format!("{job} is dead after {attempts} failed attempt{plural}: {error}"),
            ))
        }
        Outcome::Cancelled => Err(CliError::new(
            ErrorCode::Cancelled,
            format!("{job} was cancelled"),
        )),
        Outcome::Removed => Err(CliError::new(
            ErrorCode::Removed,
            format!(
                "{job} was removed: no such job (removed, drained, obliterated, trimmed by \
                 retention, or never enqueued)"
            ),
        )),
    }
}

/// A decided job under `--json`: the fields known before the wait, then
/// `outcome` and what it carries.
#[derive(Serialize)]
struct DecidedJson<'a> {
    #[serde(flatten)]
    fields: &'a Map<String, Value>,
    /// `completed`, `dead`, `cancelled` or `removed`.
    outcome: &'static str,
    /// Completed: the result as stored (`null` when it stored none).
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Option<&'a RawValue>>,
    /// Dead: its last error.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    /// Dead: the attempts it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    attempts: Option<u64>,
}

impl<'a> DecidedJson<'a> {
    fn new(fields: &'a Map<String, Value>, outcome: &'a Outcome<Box<RawValue>>) -> Self {
        let mut json = Self {
            fields,
            outcome: "",
            result: None,
            error: None,
            attempts: None,
        };
        match outcome {
            Outcome::Completed { result } => {
                json.outcome = "completed";
                json.result = Some(result.as_deref());
            }
            Outcome::Dead { error, attempts } => {
                json.outcome = "dead";
                json.error = Some(error);
                json.attempts = Some(*attempts);
            }
            Outcome::Cancelled => json.outcome = "cancelled",
            Outcome::Removed => json.outcome = "removed",
        }
        json
    }
}
