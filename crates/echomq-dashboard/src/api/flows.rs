//! Flows over HTTP (docs/http.md, "Flows"): `POST /flows` takes the JSON
//! flow document `emq flow add FILE` takes, read by the library's one
//! reader ([`FlowDocument`]), and submits it with `Connector::submit`.

use super::Api;
use super::access::permit;
use super::error::{ApiError, ErrorBody};
use super::json::{Json, from_value};
use crate::grant::{Grant, Need};
use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use echomq::{DocumentError, FlowDocument};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// A flow: jobs in any queues, each running after the jobs it names.
#[derive(ToSchema)]
#[allow(dead_code)] // the document's schema of the body, read as FlowDocument
pub(crate) struct FlowBody {
    /// The flow's id: a job's id is `{id}:{ref}` unless it gives one; a
    /// second submit of the same id changes nothing.
    id: String,
    /// Its jobs.
    jobs: Vec<FlowJobBody>,
}

/// One job of a flow.
#[derive(ToSchema)]
#[allow(dead_code)] // the document's schema of the body, read as FlowDocument
pub(crate) struct FlowJobBody {
    /// Its name in the flow.
    #[schema(rename = "ref")]
    reference: String,
    /// Its queue.
    queue: String,
    /// Any JSON.
    #[schema(value_type = Object)]
    payload: Value,
    /// The jobs it runs after: refs of the flow, or `{"queue", "id"}` of
    /// a job outside it.
    #[schema(value_type = Vec<Object>)]
    after: Option<Vec<Value>>,
    /// `fail` (default), `ignore` or `cancel` when a dependency fails.
    on_failure: Option<String>,
    /// Its id, instead of `{flow}:{ref}`.
    id: Option<String>,
    /// 0–255, 0 claimed first.
    priority: Option<u8>,
    /// Attempts before it is dead-lettered.
    attempts: Option<u64>,
    /// Its group.
    group: Option<String>,
    /// Claimed newest first among its priority.
    lifo: Option<bool>,
    /// How long after it is unblocked it may run (`30s`, `5m`).
    delay: Option<String>,
    /// How long a run may last (`30s`, `5m`).
    time_limit: Option<String>,
}

/// Where one job of the flow is.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PlacedBody {
    queue: String,
    id: String,
    /// False: it existed, from an earlier submit of the same flow.
    created: bool,
}

/// What a submit did: each job by ref.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct FlowAnswer {
    flow: String,
    jobs: BTreeMap<String, PlacedBody>,
}

/// `POST /flows`.
#[utoipa::path(
    post,
    path = "/flows",
    tag = "producers",
    request_body(content = FlowBody, description = "The flow document of `emq flow add`"),
    responses(
        (status = 201, description = "Submitted (or already there): each job by ref", body = FlowAnswer),
        (status = 400, description = "A field was wrong (`field` names it), or the graph (a cycle, an unknown ref)", body = ErrorBody),
        (status = 403, description = "The grant may not enqueue on a queue the flow touches", body = ErrorBody),
    )
)]
pub(crate) async fn submit(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Json(body): Json<Value>,
) -> Result<Response, ApiError> {
    let document: FlowDocument = from_value(body)?;
    for queue in document.queues() {
        permit(&grant, queue, Need::Produce)?;
    }
    let connector = &api.app.connector;
    let flow = document
        .flow(connector)
        .map_err(|err| refused(&document, err))?;
    let submitted = connector.submit(&flow).await?;
    let jobs = document
        .placed(&submitted)
        .into_iter()
        .map(|job| {
            let placed = PlacedBody {
                queue: job.queue,
                id: job.id,
                created: job.created,
            };
            (job.reference, placed)
        })
        .collect();
    let answer = FlowAnswer {
        flow: document.id.clone(),
        jobs,
    };
    Ok((StatusCode::CREATED, axum::Json(answer)).into_response())
}

/// The 400 naming the refused field as `jobs[i].field`.
fn refused(document: &FlowDocument, err: DocumentError) -> ApiError {
    let index = document
        .jobs
        .iter()
        .position(|job| job.reference == err.reference)
        .unwrap_or_default();
    let field = format!("jobs[{index}].{}", err.field);
    ApiError::new(StatusCode::BAD_REQUEST, "BADARG", err.to_string()).with_field(field)
}
