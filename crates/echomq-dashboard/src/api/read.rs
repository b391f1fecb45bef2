//! The reading endpoints (docs/http.md, "Reading"): each asks
//! [`permit`] for [`Need::Read`] on its queue first.

use super::Api;
use super::access::permit;
use super::error::{ApiError, ErrorBody};
use super::model::Job;
use crate::grant::{Grant, Need};
use axum::extract::{Path, State};
use axum::{Extension, Json};
use echomq::JobId;
use serde_json::Value;

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
