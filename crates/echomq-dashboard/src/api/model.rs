//! What the API answers with: a job as the library's [`JobRecord`] reads
//! it, snake_case, with its queue and fencing token; payloads, results
//! and progress as the JSON they were written as; how a job ended.

use super::error::ApiError;
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use echomq::{JobId, JobRecord, Outcome, OutcomeNow};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

/// A job: every field of the library's `JobRecord`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub(crate) struct Job {
    /// The queue it is in.
    pub(crate) queue: String,
    /// Its id.
    pub(crate) id: String,
    /// `scheduled`, `pending`, `active`, `completed`, `dead`, `cancelled`
    /// or `blocked`.
    pub(crate) state: String,
    /// The payload, any JSON; a string when it is not JSON (then
    /// `payload_raw` is true and bytes that are not UTF-8 read `\xNN`).
    #[schema(value_type = Object)]
    pub(crate) payload: Value,
    /// Whether the payload was not JSON (written by another client).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) payload_raw: bool,
    /// Priority, 0 most urgent.
    pub(crate) priority: u64,
    /// Attempts allowed.
    pub(crate) max_attempts: u64,
    /// Times claimed.
    pub(crate) claims: u64,
    /// Failed attempts.
    pub(crate) failures: u64,
    /// Times recovered by the stalled sweep.
    pub(crate) stalls: u64,
    /// The last claim's fencing token; none before the first claim.
    pub(crate) token: Option<u64>,
    /// Created at (unix ms, server clock).
    pub(crate) created_at: Option<u64>,
    /// Runnable at (unix ms).
    pub(crate) run_at: Option<u64>,
    /// Last claimed at (unix ms).
    pub(crate) claimed_at: Option<u64>,
    /// Finished at (unix ms).
    pub(crate) finished_at: Option<u64>,
    /// The worker that last claimed it.
    pub(crate) worker: Option<String>,
    /// The holder's last progress (any JSON).
    #[schema(value_type = Option<Object>)]
    pub(crate) progress: Option<Value>,
    /// The result (any JSON).
    #[schema(value_type = Option<Object>)]
    pub(crate) result: Option<Value>,
    /// The last error.
    pub(crate) error: Option<String>,
    /// Whether a cancellation was requested while it ran.
    pub(crate) cancel_requested: bool,
    /// The repeat definition that produced it.
    pub(crate) repeat: Option<String>,
    /// The deduplication key it was enqueued with.
    pub(crate) dedup: Option<String>,
    /// How that key held: `simple`, `throttle`, `debounce`.
    pub(crate) dedup_mode: Option<String>,
    /// The group it belongs to.
    pub(crate) group: Option<String>,
    /// The W3C trace context it was enqueued with.
    pub(crate) traceparent: Option<String>,
    /// How long a run may last.
    pub(crate) time_limit_ms: Option<u64>,
    /// When it must have started by (unix ms).
    pub(crate) start_by: Option<u64>,
    /// Why the queue cancelled it (`expired`).
    pub(crate) reason: Option<String>,
    /// Whether it was enqueued LIFO.
    pub(crate) lifo: bool,
    /// The flow it was added in.
    pub(crate) flow: Option<String>,
    /// Its name in that flow.
    pub(crate) flow_ref: Option<String>,
    /// What it does when a dependency fails: `fail`, `ignore`, `remove`, …
    pub(crate) on_failure: String,
    /// How many dependencies it has.
    pub(crate) deps: Option<u64>,
    /// How many of them are still unresolved.
    pub(crate) deps_left: Option<u64>,
    /// How many dependents it has.
    pub(crate) dependents: Option<u64>,
    /// Number of log lines.
    pub(crate) logs: u64,
}

impl Job {
    /// The answer for `record`, of `queue`.
    pub(crate) fn of(queue: &str, record: JobRecord) -> Self {
        let token = record.token();
        let (payload, payload_raw) = json_or_text(record.payload);
        Job {
            queue: queue.to_string(),
            id: record.id.as_str().to_string(),
            state: record.state.as_str().to_string(),
            payload,
            payload_raw,
            priority: record.priority,
            max_attempts: record.max_attempts,
            claims: record.claims,
            failures: record.failures,
            stalls: record.stalls,
            token,
            created_at: record.created_at,
            run_at: record.run_at,
            claimed_at: record.claimed_at,
            finished_at: record.finished_at,
            worker: record.worker,
            progress: record.progress.map(|text| json_or_text(text).0),
            result: record.result.map(|text| json_or_text(text).0),
            error: record.error,
            cancel_requested: record.cancel_requested,
            repeat: record.repeat,
            dedup: record.dedup,
            dedup_mode: record.dedup_mode.map(|mode| mode.as_str().to_string()),
            group: record.group,
            traceparent: record.traceparent,
            time_limit_ms: record.time_limit,
            start_by: record.start_by,
            reason: record.reason,
            lifo: record.lifo,
            flow: record.flow,
            flow_ref: record.flow_ref,
            on_failure: record.on_failure.as_str().to_string(),
            deps: record.deps,
            deps_left: record.deps_left,
            dependents: record.dependents,
            logs: record.logs,
        }
    }
}

/// `text` as the JSON it holds, or as a string when it holds none (and
/// whether it did not).
pub(crate) fn json_or_text(text: String) -> (Value, bool) {
    match serde_json::from_str(&text) {
        Ok(value) => (value, false),
        Err(_) => (Value::String(text), true),
    }
}

/// How a job ended, or that it has not yet.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct JobOutcome {
    /// The job.
    id: String,
    /// `completed`, `dead`, `cancelled`, `removed`, or `pending` (the
    /// wait ran out; the job runs on).
    outcome: &'static str,
    /// A completed job's result (null when it stored none).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    result: Option<Value>,
    /// A dead job's last error.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// The attempts a dead job failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    attempts: Option<u64>,
}

/// The answer of a wait for job `id`'s outcome: 200 and how it ended, or
/// 202 `pending` when the time ran out first.
pub(crate) fn outcome_answer(
    id: &JobId,
    waited: echomq::Result<Outcome<Value>>,
) -> Result<Response, ApiError> {
    let answer = |outcome| JobOutcome {
        id: id.as_str().to_string(),
        outcome,
        result: None,
        error: None,
        attempts: None,
    };
    let outcome = match waited {
        Err(echomq::Error::Timeout { .. }) => {
            return Ok((StatusCode::ACCEPTED, Json(answer("pending"))).into_response());
        }
        Err(err) => return Err(err.into()),
        Ok(outcome) => outcome,
    };
    let body = match outcome {
        Outcome::Completed { result } => JobOutcome {
            result: Some(result.unwrap_or(Value::Null)),
            ..answer("completed")
        },
        Outcome::Dead { error, attempts } => JobOutcome {
            error: Some(error),
            attempts: Some(attempts),
            ..answer("dead")
        },
        Outcome::Cancelled => answer("cancelled"),
        Outcome::Removed => answer("removed"),
    };
    Ok((StatusCode::OK, Json(body)).into_response())
}

/// Job `id`'s outcome now, as a wait returns it: [`echomq::Error::Timeout`]
/// for a job not yet decided (its wait would still be waiting).
pub(crate) async fn outcome_now(
    queue: &echomq::Queue<Value>,
    id: &JobId,
) -> echomq::Result<Outcome<Value>> {
    Ok(match queue.jobs().outcome_now(id).await? {
        OutcomeNow::Completed { result } if result.is_empty() => {
            Outcome::Completed { result: None }
        }
        OutcomeNow::Completed { result } => Outcome::Completed {
            result: Some(serde_json::from_slice(&result).map_err(echomq::Error::JobResult)?),
        },
        OutcomeNow::Dead { error, failures } => Outcome::Dead {
            error,
            attempts: failures,
        },
        OutcomeNow::Cancelled => Outcome::Cancelled,
        OutcomeNow::Absent => Outcome::Removed,
        OutcomeNow::Unfinished { .. } => {
            return Err(echomq::Error::Timeout {
                job: id.clone(),
                waited: std::time::Duration::ZERO,
            });
        }
    })
}
