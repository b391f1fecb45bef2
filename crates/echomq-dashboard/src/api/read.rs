//! The reading endpoints (docs/http.md, "Reading"): each asks
//! [`permit`] for [`Need::Read`] on its queue first.

use super::Api;
use super::access::permit;
use super::error::{ApiError, ErrorBody};
use super::model::{Job, JobOutcome, outcome_answer, outcome_now};
use super::query::{LONGEST_WAIT, Query, duration, whole};
use crate::grant::{Grant, Need};
use axum::extract::{Path, State};
use axum::response::Response;
use axum::{Extension, Json};
use echomq::{JobId, JobState};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// Jobs on a page unless `limit` says otherwise.
const DEFAULT_PAGE: u64 = 50;
/// The most jobs on a page.
const MOST_ON_A_PAGE: u64 = 1000;

/// `GET /queues/{q}/jobs/{id}`: one job.
#[utoipa::path(
    get,
    path = "/queues/{q}/jobs/{id}",
    tag = "reading",
    params(("q" = String, Path, description = "The queue"), ("id" = String, Path, description = "The job")),
    responses(
        (status = 200, description = "The job", body = Job),
        (status = 404, description = "No such job (NOJOB)", body = ErrorBody),
    )
)]
pub(crate) async fn job(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Path((queue, id)): Path<(String, String)>,
) -> Result<Json<Job>, ApiError> {
    permit(&grant, &queue, Need::Read)?;
    let jobs = api.app.connector.queue::<Value>(&queue)?.jobs();
    let record = jobs
        .get(&JobId::new(id.clone())?)
        .await?
        .ok_or_else(|| ApiError::no_job(&queue, &id))?;
    Ok(Json(Job::of(&queue, record)))
}

/// The query of a page of jobs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PageQuery {
    state: Option<String>,
    limit: Option<String>,
    cursor: Option<String>,
}

/// A page of jobs, and the cursor of the next (null after the last).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct JobPage {
    jobs: Vec<Job>,
    next: Option<String>,
}

/// `GET /queues/{q}/jobs`: one page of the jobs in a state, in the
/// state's order (pending: claim order; scheduled: run-at; active: lease
/// deadline; finished: oldest first).
#[utoipa::path(
    get,
    path = "/queues/{q}/jobs",
    tag = "reading",
    params(
        ("q" = String, Path, description = "The queue"),
        ("state" = Option<String>, Query, description = "scheduled, pending (the default), active, completed, dead, cancelled or blocked"),
        ("limit" = Option<u64>, Query, description = "Jobs on the page, 1–1000 (default 50)"),
        ("cursor" = Option<String>, Query, description = "The `next` of the page before"),
    ),
    responses(
        (status = 200, description = "A page of jobs", body = JobPage),
        (status = 400, description = "A bad query parameter (`field` names it)", body = ErrorBody),
    )
)]
pub(crate) async fn jobs(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Path(queue): Path<String>,
    Query(query): Query<PageQuery>,
) -> Result<Json<JobPage>, ApiError> {
    permit(&grant, &queue, Need::Read)?;
    let state = match query.state.as_deref() {
        None => JobState::Pending,
        Some(word) => word.parse().map_err(|_| {
            ApiError::bad_request(format!(
                "query parameter state={word:?}: expected scheduled, pending, active, completed, dead, cancelled or blocked"
            ))
            .with_field("state")
        })?,
    };
    let limit = match query.limit.as_deref() {
        Some(text) => whole("limit", text, 1, MOST_ON_A_PAGE)?,
        None => DEFAULT_PAGE,
    };
    let offset = match query.cursor.as_deref() {
        Some(text) => whole("cursor", text, 0, u64::MAX)?,
        None => 0,
    };
    let jobs = api.app.connector.queue::<Value>(&queue)?.jobs();
    let (records, total) = jobs.list(state, offset, limit).await?;
    let end = offset.saturating_add(limit);
    Ok(Json(JobPage {
        jobs: records.into_iter().map(|r| Job::of(&queue, r)).collect(),
        next: (end < total).then(|| end.to_string()),
    }))
}

/// A job's log.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Log {
    /// Its lines, oldest first (the log keeps the newest 1,000).
    lines: Vec<String>,
}

/// `GET /queues/{q}/jobs/{id}/log`.
#[utoipa::path(
    get,
    path = "/queues/{q}/jobs/{id}/log",
    tag = "reading",
    params(("q" = String, Path, description = "The queue"), ("id" = String, Path, description = "The job")),
    responses(
        (status = 200, description = "The job's log", body = Log),
        (status = 404, description = "No such job (NOJOB)", body = ErrorBody),
    )
)]
pub(crate) async fn log(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Path((queue, id)): Path<(String, String)>,
) -> Result<Json<Log>, ApiError> {
    permit(&grant, &queue, Need::Read)?;
    let jobs = api.app.connector.queue::<Value>(&queue)?.jobs();
    let job = JobId::new(id.clone())?;
    let lines = jobs.logs(&job, echomq::LOG_KEEP).await?;
    if lines.is_empty() && jobs.get(&job).await?.is_none() {
        return Err(ApiError::no_job(&queue, &id));
    }
    Ok(Json(Log { lines }))
}

/// The query of an outcome.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OutcomeQuery {
    timeout: Option<String>,
}

/// `GET /queues/{q}/jobs/{id}/outcome`: how the job ended, waiting at
/// most `timeout` (none: answers at once).
#[utoipa::path(
    get,
    path = "/queues/{q}/jobs/{id}/outcome",
    tag = "reading",
    params(
        ("q" = String, Path, description = "The queue"),
        ("id" = String, Path, description = "The job"),
        ("timeout" = Option<String>, Query, description = "Wait this long (250ms, 30s, at most 5m); none: answer at once"),
    ),
    responses(
        (status = 200, description = "How the job ended (`removed`: no such job)", body = JobOutcome),
        (status = 202, description = "Not decided within the time (`pending`)", body = JobOutcome),
    )
)]
pub(crate) async fn outcome(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Path((queue, id)): Path<(String, String)>,
    Query(query): Query<OutcomeQuery>,
) -> Result<Response, ApiError> {
    permit(&grant, &queue, Need::Read)?;
    let q = api.app.connector.queue::<Value>(&queue)?;
    let job = JobId::new(id)?;
    match query.timeout.as_deref() {
        Some(text) => {
            let timeout = duration("timeout", text, LONGEST_WAIT)?;
            outcome_answer(&job, q.outcome(&job, timeout).await)
        }
        None => outcome_answer(&job, outcome_now(&q, &job).await),
    }
}
