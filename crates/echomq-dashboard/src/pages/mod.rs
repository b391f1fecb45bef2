//! The pages: queues, one queue, one job, the control map, `/metrics`.

pub(crate) mod controls;
pub(crate) mod job;
pub(crate) mod metrics;
pub(crate) mod queue;
pub(crate) mod queues;

use crate::error::PageError;
use crate::state::App;
use axum::extract::State;
use axum::response::Response;

/// Every path no page answers.
pub(crate) async fn not_found(State(app): State<App>, uri: axum::http::Uri) -> Response {
    PageError::NotFound(format!("no page at {}", uri.path())).respond(&app, &app.href("/"))
}

/// The states in the order the pages show them (`blocked` last, as
/// `COUNTS` answers it: jobs waiting for their dependencies, issue 43).
pub(crate) const STATES: [echomq::JobState; 7] = echomq::JobState::ALL;
