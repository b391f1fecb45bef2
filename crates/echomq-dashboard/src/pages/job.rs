//! The job page: every field, the payload and result pretty-printed, the
//! error, progress, log, its own events as a timeline, and the verbs that
//! apply in its state.

use crate::error::{PageError, PageResult};
use crate::layout::{self, Nav};
use crate::state::App;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use echomq::JobId;
use maud::html;
use serde::Deserialize;
use serde_json::Value;

/// The page's query.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct View {
    done: Option<String>,
}

/// `GET /queues/{queue}/jobs/{id}`.
pub(crate) async fn page(
    State(app): State<App>,
    Path((name, id)): Path<(String, String)>,
    Query(view): Query<View>,
) -> Response {
    match render(&app, &name, &id, &view).await {
        Ok(page) => page.into_response(),
        Err(err) => err.respond(&app, &layout::queue_href(&app, &name)),
    }
}

async fn render(app: &App, name: &str, id: &str, view: &View) -> PageResult {
    let queue = app.connector.queue::<Value>(name)?;
    let id = JobId::new(id.to_string())?;
    let job = queue
        .jobs()
        .get(&id)
        .await?
        .ok_or_else(|| PageError::NotFound(format!("no job {id} in queue {name}")))?;
    let action = |verb: &str| {
        app.href(&format!(
            "/queues/{}/jobs/{}/act/{verb}",
            layout::enc(name),
            layout::enc(id.as_str())
        ))
    };
    let body = html! {
        h1 { "Job " code { (id.as_str()) } " " span class=(format!("badge state-{}", job.state.as_str())) { (job.state.as_str()) } }
        @if let Some(done) = &view.done { p.notice role="status" { (done) } }
        div.actions {
            @if job.state == echomq::JobState::Dead { (layout::button(app, &action("reprocess"), "Retry", "primary")) }
        }
        h2 { "Payload" }
        pre id="payload" { (job.payload) }
        @if let Some(error) = &job.error { h2 { "Error" } pre id="error" { (error) } }
    };
    Ok(layout::page(
        app,
        &format!("Job {id}"),
        Some(Nav::Queues),
        body,
    ))
}
