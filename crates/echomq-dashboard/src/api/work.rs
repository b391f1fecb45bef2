//! A worker's calls on the job it holds (docs/http.md, "Workers in any
//! language"): complete, fail, extend, progress, log, delay — each fenced
//! by the job's token exactly as the library's worker is (the same
//! library calls), so a lost lease answers 409 `NOTACTIVE`.

use super::Api;
use super::access::permit;
use super::error::{ApiError, ErrorBody};
use super::json::Json;
use crate::grant::{Grant, Need};
use axum::Extension;
use axum::extract::{Path, State};
use echomq::{FailAction, FailOutcome, JobId, JobState, Queue, Refusal, Refused};
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;
use utoipa::ToSchema;

/// What a worker's call answers: `{"ok": true}`, or its outcome.
type Answer = Result<axum::Json<Value>, ApiError>;

/// The queue handle and job id of a worker's call, once the grant may
/// work the queue.
fn held(
    api: &Api,
    grant: &Grant,
    queue: &str,
    id: String,
) -> Result<(Queue<Value>, JobId), ApiError> {
    permit(grant, queue, Need::Work)?;
    Ok((api.app.connector.queue::<Value>(queue)?, JobId::new(id)?))
}

fn ok() -> Answer {
    Ok(axum::Json(json!({ "ok": true })))
}

/// `{"token", "result"}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CompleteBody {
    /// The token of the claim.
    token: u64,
    /// The result, any JSON (none: `null`).
    #[schema(value_type = Option<Object>)]
    result: Option<Value>,
}

/// `POST /queues/{q}/jobs/{id}/complete`.
#[utoipa::path(post, path = "/queues/{q}/jobs/{id}/complete", tag = "workers",
    params(("q" = String, Path, description = "The queue"), ("id" = String, Path, description = "The job")),
    request_body = CompleteBody,
    responses((status = 200, description = "Completed: {\"ok\": true}"),
        (status = 409, description = "The lease was lost (NOTACTIVE)", body = ErrorBody)))]
pub(crate) async fn complete(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Path((queue, id)): Path<(String, String)>,
    Json(body): Json<CompleteBody>,
) -> Answer {
    let (queue, id) = held(&api, &grant, &queue, id)?;
    let result = body.result.unwrap_or(Value::Null);
    queue.complete(&id, body.token, &result).await?;
    ok()
}

/// What to do with a failed attempt.
#[derive(Debug, Clone, Copy, Default, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Action {
    /// Retry after `delay_ms` (default 0) while attempts remain, else dead.
    #[default]
    Retry,
    /// Dead-letter now.
    Dead,
    /// Cancel the job (no failure counted).
    Cancelled,
    /// Back to pending, no failure counted; the queue held `delay_ms`.
    RateLimited,
}

/// `{"token", "error", "action", "delay_ms"}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FailBody {
    /// The token of the claim.
    token: u64,
    /// What went wrong, stored on the job.
    error: String,
    /// `retry` (default), `dead`, `cancelled` or `rate_limited`.
    action: Option<Action>,
    /// With `retry`, the delay before the next attempt; with
    /// `rate_limited`, how long the queue is held (required).
    delay_ms: Option<u64>,
}

/// `POST /queues/{q}/jobs/{id}/fail`.
#[utoipa::path(post, path = "/queues/{q}/jobs/{id}/fail", tag = "workers",
    params(("q" = String, Path, description = "The queue"), ("id" = String, Path, description = "The job")),
    request_body = FailBody,
    responses((status = 200, description = "Where it went: {\"outcome\": \"retry\" | \"dead\" | \"cancelled\" | \"rate_limited\"}"),
        (status = 400, description = "delay_ms missing with rate_limited, or given with dead or cancelled", body = ErrorBody),
        (status = 409, description = "The lease was lost (NOTACTIVE)", body = ErrorBody)))]
pub(crate) async fn fail(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Path((queue, id)): Path<(String, String)>,
    Json(body): Json<FailBody>,
) -> Answer {
    let (queue, id) = held(&api, &grant, &queue, id)?;
    let delay = body.delay_ms.map(Duration::from_millis);
    let action = match (body.action.unwrap_or_default(), delay) {
        (Action::Retry, delay) => FailAction::Retry(delay.unwrap_or_default()),
        (Action::RateLimited, Some(hold)) => FailAction::RateLimited(hold),
        (Action::RateLimited, None) => {
            return Err(ApiError::bad_request(
                "rate_limited needs delay_ms: how long the queue is held",
            )
            .with_field("delay_ms"));
        }
        (Action::Dead | Action::Cancelled, Some(_)) => {
            return Err(
                ApiError::bad_request("delay_ms goes with retry or rate_limited only")
                    .with_field("delay_ms"),
            );
        }
        (Action::Dead, None) => FailAction::Dead,
        (Action::Cancelled, None) => FailAction::Cancelled,
    };
    let outcome = match queue.fail(&id, body.token, &body.error, action).await? {
        FailOutcome::Retry => "retry",
        FailOutcome::Dead => "dead",
        FailOutcome::Cancelled => "cancelled",
        FailOutcome::RateLimited => "rate_limited",
    };
    Ok(axum::Json(json!({ "outcome": outcome })))
}

/// `{"token", "lease_ms"}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExtendBody {
    /// The token of the claim.
    token: u64,
    /// The lease from now, in ms (at least 1).
    #[schema(minimum = 1)]
    lease_ms: u64,
}

/// `POST /queues/{q}/jobs/{id}/extend`.
#[utoipa::path(post, path = "/queues/{q}/jobs/{id}/extend", tag = "workers",
    params(("q" = String, Path, description = "The queue"), ("id" = String, Path, description = "The job")),
    request_body = ExtendBody,
    responses((status = 200, description = "{\"cancel_requested\": bool, \"deadline_at\": unix ms}: stop when a cancellation was requested"),
        (status = 409, description = "The lease was lost (NOTACTIVE), or the time limit passed (TIMELIMIT)", body = ErrorBody)))]
pub(crate) async fn extend(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Path((queue, id)): Path<(String, String)>,
    Json(body): Json<ExtendBody>,
) -> Answer {
    let (queue, id) = held(&api, &grant, &queue, id)?;
    if body.lease_ms == 0 {
        return Err(ApiError::bad_request("lease_ms is at least 1").with_field("lease_ms"));
    }
    let lease = Duration::from_millis(body.lease_ms);
    let extended = queue.extend(&id, body.token, lease).await?;
    Ok(axum::Json(json!({
        "cancel_requested": extended.cancel_requested,
        "deadline_at": extended.deadline_ms,
    })))
}

/// `{"token", "progress"}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProgressBody {
    /// The token of the claim.
    token: u64,
    /// The progress, any JSON.
    #[schema(value_type = Object)]
    progress: Value,
}

/// `POST /queues/{q}/jobs/{id}/progress`.
#[utoipa::path(post, path = "/queues/{q}/jobs/{id}/progress", tag = "workers",
    params(("q" = String, Path, description = "The queue"), ("id" = String, Path, description = "The job")),
    request_body = ProgressBody,
    responses((status = 200, description = "Written: {\"ok\": true}"),
        (status = 409, description = "The lease was lost (NOTACTIVE)", body = ErrorBody)))]
pub(crate) async fn progress(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Path((queue, id)): Path<(String, String)>,
    Json(body): Json<ProgressBody>,
) -> Answer {
    let (queue, id) = held(&api, &grant, &queue, id)?;
    queue
        .jobs()
        .progress(&id, body.token, &body.progress)
        .await?;
    ok()
}

/// `{"token", "line"}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LogBody {
    /// The token of the claim.
    token: u64,
    /// The line to append (the newest 1000 are kept).
    line: String,
}

/// `POST /queues/{q}/jobs/{id}/log`. `LOG` takes no token in the
/// protocol, so the token is checked first against the job's (active,
/// under this token) with the library's read, then the line appended.
#[utoipa::path(post, path = "/queues/{q}/jobs/{id}/log", tag = "workers",
    params(("q" = String, Path, description = "The queue"), ("id" = String, Path, description = "The job")),
    request_body = LogBody,
    responses((status = 200, description = "Appended: {\"ok\": true}"),
        (status = 409, description = "The job is not active under this token (NOTACTIVE)", body = ErrorBody)))]
pub(crate) async fn log(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Path((queue, id)): Path<(String, String)>,
    Json(body): Json<LogBody>,
) -> Answer {
    let (queue, id) = held(&api, &grant, &queue, id)?;
    let jobs = queue.jobs();
    let held = jobs
        .get(&id)
        .await?
        .filter(|job| job.state == JobState::Active);
    if held.and_then(|job| job.token()) != Some(body.token) {
        let refused = Refused {
            job: Some(id.clone()),
            transition: echomq::Transition::Log,
            reason: Refusal::NotActive,
        };
        return Err(echomq::Error::Refused(refused).into());
    }
    jobs.log(&id, &body.line).await?;
    ok()
}

/// `{"token", "delay_ms"}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DelayBody {
    /// The token of the claim.
    token: u64,
    /// How long until the job runs again, in ms: not a failure, no
    /// attempt used.
    delay_ms: u64,
}

/// `POST /queues/{q}/jobs/{id}/delay`.
#[utoipa::path(post, path = "/queues/{q}/jobs/{id}/delay", tag = "workers",
    params(("q" = String, Path, description = "The queue"), ("id" = String, Path, description = "The job")),
    request_body = DelayBody,
    responses((status = 200, description = "Scheduled again: {\"ok\": true}"),
        (status = 409, description = "The lease was lost (NOTACTIVE)", body = ErrorBody)))]
pub(crate) async fn delay(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Path((queue, id)): Path<(String, String)>,
    Json(body): Json<DelayBody>,
) -> Answer {
    let (queue, id) = held(&api, &grant, &queue, id)?;
    let delay = Duration::from_millis(body.delay_ms);
    queue.delay(&id, body.token, delay).await?;
    ok()
}
