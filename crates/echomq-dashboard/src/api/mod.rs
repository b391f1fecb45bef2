//! The HTTP API at `{base}/api/v1` (docs/http.md): JSON in and out, one
//! error shape, bearer tokens instead of cookies, and an OpenAPI 3.1
//! document generated from the handlers.
//!
//! - `mod.rs`: the table of endpoints ([`endpoints`]) and the router.
//! - `access.rs`: who may call (Host, Origin, body size and type, bearer
//!   token → grant) and the one permission check, `permit`.
//! - `error.rs`: every refusal's shape and status; `json.rs`: strict
//!   JSON bodies; `model.rs`: what the answers hold.
//!   `query.rs`: strict query strings and their durations and numbers.
//! - `doc.rs`: the OpenAPI document; `produce.rs`: enqueue (and wait);
//!   `queues.rs`: the queues; `read.rs`: a queue's jobs, logs, outcomes;
//!   `events.rs`: its events, live (server-sent events).
//! - `flows.rs`: a flow's submit; `repeats.rs`: a queue's repeats.
//! - `claim.rs`, `work.rs`, `complete_many.rs`: a worker's claim, its
//!   calls on the jobs it holds, and their completions together; `controls/`: the operating endpoints, from the registry.

mod access;
mod claim;
mod complete_many;
pub(crate) mod controls;
mod doc;
mod error;
mod events;
mod flows;
mod json;
mod model;
mod produce;
mod query;
mod queues;
mod read;
mod repeats;
mod work;

use crate::state::App;
use axum::Router;
use axum::http::StatusCode;
use std::sync::Arc;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Where the API is mounted, under the base path.
pub(crate) const PREFIX: &str = "/api/v1";

/// What every API handler shares: the dashboard's state and the OpenAPI
/// document (written once, when the router is built).
#[derive(Debug, Clone)]
pub(crate) struct Api {
    pub(crate) app: App,
    doc: Arc<str>,
}

/// Every endpoint. Each handler's `#[utoipa::path]` names its method and
/// path; `routes!` registers the handler there AND in the document, so
/// the router serves exactly what the document lists (a test checks it).
fn endpoints() -> OpenApiRouter<Api> {
    OpenApiRouter::with_openapi(doc::Doc::openapi())
        .routes(routes!(doc::openapi_json))
        .routes(routes!(produce::enqueue))
        .routes(routes!(flows::submit))
        .routes(routes!(repeats::add, repeats::list))
        .routes(routes!(repeats::remove))
        .routes(routes!(queues::list))
        .routes(routes!(queues::one))
        .routes(routes!(read::jobs))
        .routes(routes!(read::job))
        .routes(routes!(read::log))
        .routes(routes!(read::outcome))
        .routes(routes!(events::stream))
        .routes(routes!(claim::claim))
        .routes(routes!(work::complete))
        .routes(routes!(complete_many::complete_many))
        .routes(routes!(work::fail))
        .routes(routes!(work::extend))
        .routes(routes!(work::progress))
        .routes(routes!(work::log))
        .routes(routes!(work::delay))
        .merge(controls::routes(OpenApiRouter::new()))
}

/// The API's router, to nest at [`PREFIX`] under the base path.
pub(crate) fn router(app: App) -> Router {
    let (routes, document) = endpoints().split_for_parts();
    let document = doc::finish(document, &app.href(PREFIX));
    let api = Api { app, doc: document };
    routes
        .fallback(no_endpoint)
        .method_not_allowed_fallback(wrong_method)
        .layer(axum::middleware::from_fn_with_state(
            api.clone(),
            access::admit,
        ))
        .with_state(api)
}

async fn no_endpoint() -> error::ApiError {
    error::ApiError::not_found("no such endpoint (GET /api/v1/openapi.json lists them)")
}

async fn wrong_method() -> error::ApiError {
    error::ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "NOTALLOWED",
        "this endpoint does not take this method (GET /api/v1/openapi.json lists them)",
    )
}
