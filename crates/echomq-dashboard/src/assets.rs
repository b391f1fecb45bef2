//! The stylesheet and scripts, compiled into the binary: the page works
//! offline and never reaches a CDN.

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Every asset: its file name, content type and bytes.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../assets/style.css"),
    ),
    (
        "htmx.min.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/htmx.min.js"),
    ),
    (
        "sse.min.js",
        "text/javascript; charset=utf-8",
        include_str!("../assets/sse.min.js"),
    ),
];

/// `GET /assets/{file}`.
pub(crate) async fn serve(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|(name, _, _)| *name == file) {
        Some((_, content_type, body)) => (
            [
                (header::CONTENT_TYPE, *content_type),
                (header::CACHE_CONTROL, "public, max-age=3600"),
            ],
            *body,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, format!("no asset named {file:?}\n")).into_response(),
    }
}
