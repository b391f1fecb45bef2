//! The queues page: every queue under the prefix with its counts per
//! state, paused, oldest pending age, jobs finished per minute over the
//! last hour, its limits and groups; pause and resume. The rows update
//! live (`/live/queues`).

use super::STATES;
use crate::chart;
use crate::error::PageResult;
use crate::layout::{self, Nav};
use crate::overview::{GROUPS_SHOWN, Overview, QueueOverview, read_all};
use crate::permit;
use crate::state::App;
use axum::extract::State;
use echomq::Unreadable;
use maud::{Markup, html};

/// `GET /`.
pub(crate) async fn page(State(app): State<App>) -> axum::response::Response {
    match render(&app).await {
        Ok(page) => axum::response::IntoResponse::into_response(page),
        Err(err) => err.respond(&app, &app.href("/controls")),
    }
}

async fn render(app: &App) -> PageResult {
    let mut queues = read_all(&app.connector).await?;
    queues.retain(|q| permit::sees(q.name()));
    let body = html! {
        h1 { "Queues" span.muted { " under " code { (app.connector.prefix()) } } }
        @if queues.is_empty() {
            p.muted id="no-queues" { "No queue under this prefix yet (that your token may see): enqueue a job and it shows here." }
        }
        div.scroll {
            table id="queues" {
                thead { tr {
                    th { "Queue" }
                    @for state in STATES { th.num { (state.as_str()) } }
                    th.hide-narrow { "Oldest pending" }
                    th.hide-narrow { "Finished per minute, last hour" }
                    th.hide-narrow { "Limits" }
                    th.hide-narrow.num { "Groups" }
                    th { "" }
                } }
                tbody hx-ext="sse" sse-connect=(app.href("/live/queues")) sse-swap="queues" {
                    (rows(app, &queues))
                }
            }
        }
    };
    Ok(layout::page(app, "Queues", Some(Nav::Queues), body))
}

/// The table's rows (the page, and each live update): the queues the
/// running request's grant sees.
pub(crate) fn rows(app: &App, queues: &[Overview]) -> Markup {
    html! {
        @for row in queues.iter().filter(|q| permit::sees(q.name())) {
            @match row {
                Overview::Read(q) => (row_of(app, q)),
                Overview::Unreadable(unreadable) => (unreadable_row(unreadable)),
            }
        }
    }
}

/// The row of a queue that could not be read: its name, then the key and
/// what it holds across the other columns.
fn unreadable_row(unreadable: &Unreadable) -> Markup {
    html! {
        tr.unreadable data-queue=(unreadable.queue) {
            td { (unreadable.queue) }
            td.refused colspan=(STATES.len() + 5) {
                "could not be read: " (unreadable.problem)
            }
        }
    }
}

/// The row of a queue read.
fn row_of(app: &App, q: &QueueOverview) -> Markup {
    html! {
        @let name = &q.snapshot.queue;
        @let counts = &q.snapshot.counts;
        tr data-queue=(name) {
            td {
                a href=(layout::queue_href(app, name)) { (name) }
                @if counts.paused { " " span.paused.badge { "paused" } }
            }
            @for state in STATES {
                td class=(format!("num state-{}", state.as_str())) data-state=(state.as_str()) {
                    (counts.get(state))
                }
            }
            td.hide-narrow {
                @match q.snapshot.oldest_pending_ms { Some(ms) => (layout::span(ms)), None => span.muted { "—" } }
            }
            td.hide-narrow {
                (chart::spark(&q.per_minute, &format!("{} finished in the last hour", q.per_minute.iter().sum::<u64>())))
            }
            td.hide-narrow { (limits(q)) }
            td.hide-narrow.num {
                @if q.groups.is_empty() { span.muted { "—" } }
                @else if q.groups.len() as u64 >= GROUPS_SHOWN { (GROUPS_SHOWN) "+" }
                @else { (q.groups.len()) }
            }
            td {
                @let act = |verb: &str| app.href(&format!("/queues/{}/act/{verb}", layout::enc(name)));
                @let verb = if counts.paused { "resume" } else { "pause" };
                @if permit::may_queue(app, name, verb) {
                    (layout::button(&act(verb), if counts.paused { "Resume" } else { "Pause" }, ""))
                }
            }
        }
    }
}

/// A queue's rate limit and cap, where set.
pub(crate) fn limits(q: &QueueOverview) -> Markup {
    let rate = q.snapshot.rate_limit.as_ref().filter(|r| r.max > 0);
    let cap = q.snapshot.concurrency.as_ref().filter(|c| c.is_set());
    html! {
        @if let Some(rate) = rate {
            span title="rate limit: jobs started per window" { (rate.max) " per " (layout::span(rate.per.as_millis() as u64)) }
            " "
        }
        @if let Some(cap) = cap {
            span title="concurrency: at most this many active at once" { "≤ " (cap.max) " active (" (cap.active) " now)" }
        }
        @if rate.is_none() && cap.is_none() { span.muted { "—" } }
    }
}
