//! The queue page: tabs per state with counts, a table paged on the
//! server, search, bulk actions, drain and obliterate, metrics, repeats,
//! groups and limits.

use super::STATES;
use crate::error::{PageError, PageResult};
use crate::layout::{self, Nav};
use crate::state::App;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use echomq::JobState;
use maud::html;
use serde::Deserialize;
use serde_json::Value;

/// Jobs per page of the table.
const PAGE_SIZE: u64 = 50;

/// The page's query: which state, which page.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct View {
    state: Option<String>,
    #[serde(default)]
    page: u64,
    done: Option<String>,
}

/// `GET /queues/{queue}`.
pub(crate) async fn page(
    State(app): State<App>,
    Path(name): Path<String>,
    Query(view): Query<View>,
) -> Response {
    match render(&app, &name, &view).await {
        Ok(page) => page.into_response(),
        Err(err) => err.respond(&app, &app.href("/")),
    }
}

async fn render(app: &App, name: &str, view: &View) -> PageResult {
    let queue = app.connector.queue::<Value>(name)?;
    let state = match view.state.as_deref() {
        None => JobState::Pending,
        Some(text) => text
            .parse::<JobState>()
            .map_err(|_| PageError::BadInput(format!("no state named {text:?}")))?,
    };
    let counts = queue.counts().await?;
    let (jobs, total) = queue
        .jobs()
        .list(state, view.page * PAGE_SIZE, PAGE_SIZE)
        .await?;
    let body = html! {
        h1 { "Queue " code { (name) } @if counts.paused { " " span.paused.badge { "paused" } } }
        @if let Some(done) = &view.done { p.notice role="status" { (done) } }
        nav.tabs hx-ext="sse" sse-connect=(format!("{}?state={}", app.href(&format!("/live/queues/{}", layout::enc(name))), state.as_str())) sse-swap="counts" {
            (tabs(app, name, &counts, state))
        }
        div.scroll { table id="jobs" {
            thead { tr { th { "Id" } th { "State" } th { "Created" } th { "Run at" } th.num { "Attempts" } th { "Error" } } }
            tbody {
                @for job in &jobs {
                    tr data-job=(job.id.as_str()) {
                        td { a href=(layout::job_href(app, name, job.id.as_str())) { code { (job.id.as_str()) } } }
                        td class=(format!("state-{}", job.state.as_str())) { (job.state.as_str()) }
                        td { (job.created_at.map(layout::time).unwrap_or_default()) }
                        td { (job.run_at.map(layout::time).unwrap_or_default()) }
                        td.num { (job.claims) " / " (job.max_attempts) }
                        td.wrap { (job.error.as_deref().unwrap_or("")) }
                    }
                }
            }
        } }
        p.muted { (total) " jobs " (state.as_str()) }
    };
    Ok(layout::page(
        app,
        &format!("Queue {name}"),
        Some(Nav::Queues),
        body,
    ))
}

/// The state tabs with their counts, `current` marked (the page, and each
/// live update).
pub(crate) fn tabs(
    app: &App,
    name: &str,
    counts: &echomq::Counts,
    current: JobState,
) -> maud::Markup {
    html! {
        @for s in STATES {
            a href=(format!("{}?state={}", layout::queue_href(app, name), s.as_str()))
                aria-current=[(s == current).then_some("page")] data-state=(s.as_str()) {
                (s.as_str()) span.count { (counts.get(s)) }
            }
        }
    }
}
