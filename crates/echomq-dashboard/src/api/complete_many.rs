//! `POST /queues/{q}/complete` (docs/http.md, "Workers in any language"):
//! the completions of many jobs in hand in one request and one round trip
//! to the server (`Queue::complete_many`), each answered on its own; with
//! `claim`, the next jobs claimed in the same request, as the library's
//! worker claims with its completions.

use super::Api;
use super::access::permit;
use super::claim::{ClaimBody, claim_for};
use super::error::{ApiError, ErrorBody, ErrorDetail};
use super::json::Json;
use crate::grant::{Grant, Need};
use axum::Extension;
use axum::extract::{Path, State};
use echomq::JobId;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// The most jobs one request completes.
pub(crate) const MOST_COMPLETIONS: usize = 1000;

/// `{"jobs": [{"id", "token", "result"}], "claim"}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CompleteManyBody {
    /// The jobs to complete, 1–1000.
    jobs: Vec<Completion>,
    /// Claim the next jobs in the same request (as `POST …/claim`'s body;
    /// answered in `claimed`).
    claim: Option<ClaimBody>,
}

/// One job to complete.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Completion {
    /// The job's id.
    id: String,
    /// The token of its claim.
    token: u64,
    /// Its result, any JSON (none: `null`).
    #[schema(value_type = Option<Object>)]
    result: Option<Value>,
}

/// Each job's answer, in the body's order, and the jobs claimed.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CompletedMany {
    /// One per job of the body, in its order.
    jobs: Vec<Completed>,
    /// The jobs claimed when the body asked (`claim`).
    #[serde(skip_serializing_if = "Option::is_none")]
    claimed: Option<Vec<super::claim::ClaimedJob>>,
}

/// One job's answer: completed, or refused (`NOTACTIVE` when its lease
/// was lost) with the error's shape.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Completed {
    /// The job's id.
    id: String,
    /// Whether it was completed.
    ok: bool,
    /// Why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorDetail>,
}

/// `POST /queues/{q}/complete`.
#[utoipa::path(
    post,
    path = "/queues/{q}/complete",
    tag = "workers",
    params(("q" = String, Path, description = "The queue")),
    request_body = CompleteManyBody,
    responses(
        (status = 200, description = "Each job's answer in order (a lost lease is its own NOTACTIVE), and the jobs claimed", body = CompletedMany),
        (status = 400, description = "No jobs, more than 1000, a bad id, or a bad claim (field names it)", body = ErrorBody),
        (status = 403, description = "The token may not work this queue", body = ErrorBody),
    )
)]
pub(crate) async fn complete_many(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Path(queue): Path<String>,
    Json(body): Json<CompleteManyBody>,
) -> Result<axum::Json<CompletedMany>, ApiError> {
    permit(&grant, &queue, Need::Work)?;
    if !(1..=MOST_COMPLETIONS).contains(&body.jobs.len()) {
        return Err(ApiError::bad_request(format!(
            "jobs holds {}: a request completes 1–{MOST_COMPLETIONS} jobs",
            body.jobs.len()
        ))
        .with_field("jobs"));
    }
    let jobs = body
        .jobs
        .into_iter()
        .enumerate()
        .map(|(at, job)| {
            let id = JobId::new(job.id)
                .map_err(|err| ApiError::from(err).with_field(format!("jobs[{at}].id")))?;
            Ok((id, job.token, job.result.unwrap_or(Value::Null)))
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    let claim = body.claim.map(|claim| claim.check("claim.")).transpose()?;
    let handle = api.app.connector.queue::<Value>(&queue)?;
    let answers = handle.complete_many(&jobs).await?;
    let jobs = jobs
        .iter()
        .zip(answers)
        .map(|((id, _, _), answer)| Completed {
            id: id.as_str().to_string(),
            ok: answer.is_ok(),
            error: answer.err().map(|err| *ApiError::from(err).detail),
        })
        .collect();
    let claimed = match claim {
        Some(claim) => Some(claim_for(&api, &grant, &queue, claim).await?.jobs),
        None => None,
    };
    Ok(axum::Json(CompletedMany { jobs, claimed }))
}
