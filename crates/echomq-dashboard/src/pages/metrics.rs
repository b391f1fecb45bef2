//! `GET /metrics`: the Prometheus text format of every queue under the
//! prefix (`echomq::prometheus`), read from the server on each scrape.

use crate::state::App;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use echomq::{Connector, prometheus};

/// One scrape: 200 with the text, or 503 naming what failed (a scrape
/// that cannot reach the server must not read as empty queues).
pub(crate) async fn scrape(State(app): State<App>) -> Response {
    render(&app.connector).await
}

/// One scrape of [`crate::metrics_router`].
pub(crate) async fn scrape_alone(State(connector): State<Connector>) -> Response {
    render(&connector).await
}

/// The scrape's answer for `connector`'s queues.
async fn render(connector: &Connector) -> Response {
    match prometheus::render(connector).await {
        Ok(body) => ([(header::CONTENT_TYPE, prometheus::CONTENT_TYPE)], body).into_response(),
        Err(err) => (StatusCode::SERVICE_UNAVAILABLE, format!("{err}\n")).into_response(),
    }
}
