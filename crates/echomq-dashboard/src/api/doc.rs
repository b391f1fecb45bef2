//! The OpenAPI 3.1 document: its header here, its paths and schemas from
//! the handlers (`mod.rs` registers both at once), served at
//! `GET /api/v1/openapi.json`.

use super::Api;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use std::sync::Arc;
use utoipa::openapi::OpenApi as Document;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::server::Server;

/// The document's header; `mod.rs` adds the paths.
#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "EchoMQ HTTP API",
        description = "Enqueue, wait for outcomes, work jobs and operate queues over HTTP (docs/http.md).",
    ),
    components(schemas(super::error::ErrorBody))
)]
pub(crate) struct Doc;

/// The finished document, as served: its server is `prefix` (the API's
/// path under the base path), its requests may carry a bearer token.
pub(crate) fn finish(mut document: Document, prefix: &str) -> Arc<str> {
    document.info.version = env!("CARGO_PKG_VERSION").to_string();
    document.servers = Some(vec![Server::new(prefix)]);
    let components = document.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        "bearer",
        SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
    );
    document.security = Some(vec![utoipa::openapi::security::SecurityRequirement::new(
        "bearer",
        Vec::<String>::new(),
    )]);
    document.to_json().expect("the document is JSON").into()
}

/// `GET /openapi.json`: this document.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "reference",
    responses((status = 200, description = "The OpenAPI 3.1 document of this API"))
)]
pub(crate) async fn openapi_json(State(api): State<Api>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        api.doc.to_string(),
    )
}
