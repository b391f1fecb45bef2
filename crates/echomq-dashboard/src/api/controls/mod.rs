//! The operating endpoints (docs/http.md, "Operating"), derived from the
//! registry of controls: `POST /queues/{q}/controls/{verb}` for a queue's
//! control, `POST /queues/{q}/jobs/{id}/controls/{verb}` for a job's,
//! one route per control [`table::served`] places there, each with the
//! body its row takes ([`fields`]), documented in the OpenAPI document
//! from the same row ([`doc`]), sent through the library ([`run`]).
//!
//! - `table.rs`: where each control is served (one exhaustive `match`).
//! - `fields.rs`: a control's body from its row, checked.
//! - `run.rs`: the library call each control makes.
//! - `doc.rs`: each route's entry of the OpenAPI document.

mod doc;
pub(crate) mod fields;
mod run;
pub(crate) mod table;
#[cfg(test)]
mod tests;

use super::access::permit;
use super::error::ApiError;
use super::{Api, json};
use crate::grant::{Grant, Need};
use axum::Extension;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::routing::post;
use echomq::{JobId, Transition};
use serde_json::Value;
use table::Served;
use utoipa_axum::router::OpenApiRouter;

/// The path of `t`'s endpoint, if it is a control's (`Queue` or `Job`).
pub(crate) fn path(t: Transition) -> Option<String> {
    match table::served(t) {
        Served::Queue => Some(format!("/queues/{{q}}/controls/{}", table::verb(t))),
        Served::Job => Some(format!(
            "/queues/{{q}}/jobs/{{id}}/controls/{}",
            table::verb(t)
        )),
        _ => None,
    }
}

/// `router` with a route (and its document entry) for every control
/// served as a queue's or a job's.
pub(crate) fn routes(mut router: OpenApiRouter<Api>) -> OpenApiRouter<Api> {
    for t in table::at(Served::Queue) {
        let path = path(t).expect("a queue's control");
        let handler = post(
            move |State(api): State<Api>,
                  Extension(grant): Extension<Grant>,
                  Path(queue): Path<String>,
                  body: Bytes| queue_control(api, grant, queue, t, body),
        );
        router = router.routes((Vec::new(), doc::paths(&path, t), handler));
    }
    for t in table::at(Served::Job) {
        let path = path(t).expect("a job's control");
        let handler = post(
            move |State(api): State<Api>,
                  Extension(grant): Extension<Grant>,
                  Path((queue, id)): Path<(String, String)>,
                  body: Bytes| job_control(api, grant, queue, id, t, body),
        );
        router = router.routes((Vec::new(), doc::paths(&path, t), handler));
    }
    router
}

/// The body of `t`, checked against its row (no body reads as `{}`).
fn body(t: Transition, bytes: &Bytes) -> Result<fields::Body, ApiError> {
    let value = match bytes.is_empty() {
        true => Value::Null,
        false => json::parse::<Value>(bytes)?,
    };
    fields::parse(t, value).map_err(|bad| {
        let error = ApiError::bad_request(bad.message);
        match bad.field.is_empty() {
            true => error,
            false => error.with_field(bad.field),
        }
    })
}

async fn queue_control(
    api: Api,
    grant: Grant,
    queue: String,
    t: Transition,
    bytes: Bytes,
) -> Result<axum::Json<Value>, ApiError> {
    permit(&grant, &queue, Need::Control(t))?;
    let body = body(t, &bytes)?;
    let handle = api.app.connector.queue::<Value>(&queue)?;
    Ok(axum::Json(run::queue(&handle, t, &body).await?))
}

async fn job_control(
    api: Api,
    grant: Grant,
    queue: String,
    id: String,
    t: Transition,
    bytes: Bytes,
) -> Result<axum::Json<Value>, ApiError> {
    permit(&grant, &queue, Need::Control(t))?;
    let body = body(t, &bytes)?;
    let handle = api.app.connector.queue::<Value>(&queue)?;
    let id = JobId::new(id)?;
    Ok(axum::Json(run::job(&handle, &id, t, &body).await?))
}
