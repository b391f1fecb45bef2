//! The queue page: tabs per state with counts, a table paged on the
//! server, search, bulk actions, drain and obliterate, metrics, repeats,
//! groups, limits and retention.
//!
//! The page never scans: it reads the counts, one page of the state
//! (`Jobs::list`: a `ZRANGE` of the state set; for pending, an `LRANGE` of
//! `fifo` then `pending`'s) and the records on it (or one bounded search
//! step, see [`SEARCH_BUDGET`]), the metrics windows of the last hour, the
//! repeat definitions, the first [`GROUPS_SHOWN`] groups, the limits and
//! the retention —
//! all at once.

mod jobs;
mod panels;

use super::STATES;
use crate::error::PageResult;
use crate::layout::{self, Nav};
use crate::permit;
use crate::selection::{parse_match, parse_state};
use crate::state::App;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use echomq::{JobRecord, JobState, MetricsRange};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;
use std::time::Duration;

/// Jobs per page of the table, and matches a search page asks for.
pub(crate) const PAGE_SIZE: u64 = 50;
/// Entries of the state one search page walks at most (in steps of
/// [`echomq::SEARCH_BATCH`]); the "more" link continues from its cursor.
pub(crate) const SEARCH_BUDGET: u64 = 5_000;
/// Groups the page lists.
const GROUPS_SHOWN: u64 = 100;
/// The span the metrics charts cover.
const METRICS_SPAN: Duration = Duration::from_secs(3600);

/// The page's query: which state, which page, which search.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct View {
    state: Option<String>,
    #[serde(default)]
    page: u64,
    /// What to search: `id`, `payload` or `error`.
    by: Option<String>,
    /// The text searched for; empty or absent for no search.
    q: Option<String>,
    /// Where a search continues ("more").
    #[serde(default)]
    cursor: u64,
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

/// What the table shows: a page of the state set, or a search's matches.
enum Listing {
    /// Page `page` (0-based) of `total` jobs.
    Page {
        jobs: Vec<JobRecord>,
        total: u64,
        page: u64,
    },
    Found(echomq::SearchPage),
}

async fn render(app: &App, name: &str, view: &View) -> PageResult {
    permit::see(name)?;
    let queue = app.connector.queue::<Value>(name)?;
    let state = parse_state(view.state.as_deref())?;
    let matching = parse_match(view.by.as_deref(), view.q.as_deref())?;
    let (jobs, admin) = (queue.jobs(), queue.admin());
    let listing = async {
        match &matching {
            Some(m) => jobs
                .search(state, m, view.cursor, PAGE_SIZE as usize, SEARCH_BUDGET)
                .await
                .map(Listing::Found),
            None => {
                let (found, total) = jobs
                    .list(state, view.page.saturating_mul(PAGE_SIZE), PAGE_SIZE)
                    .await?;
                // A page past the last shows the last.
                let last = total.div_ceil(PAGE_SIZE).saturating_sub(1);
                if view.page <= last {
                    return Ok(Listing::Page {
                        jobs: found,
                        total,
                        page: view.page,
                    });
                }
                let (found, total) = jobs.list(state, last * PAGE_SIZE, PAGE_SIZE).await?;
                Ok(Listing::Page {
                    jobs: found,
                    total,
                    page: last.min(total.div_ceil(PAGE_SIZE).saturating_sub(1)),
                })
            }
        }
    };
    let (counts, listing, metrics, repeats, groups, rate, cap, retention) = tokio::try_join!(
        admin.counts(),
        listing,
        queue.metrics(MetricsRange::Last(METRICS_SPAN)),
        queue.repeats(),
        admin.groups(None, GROUPS_SHOWN),
        admin.rate_limit(),
        admin.concurrency_cap(),
        admin.retention(),
    )?;
    let here = jobs::Here {
        name,
        state,
        matching: matching.as_ref(),
    };
    let body = html! {
        h1 { "Queue " code { (name) } @if counts.paused { " " span.paused.badge { "paused" } } }
        (layout::notice(app, view.done.as_deref()))
        div.actions { (panels::queue_buttons(app, name, counts.paused)) }
        nav.tabs hx-ext="sse" sse-connect=(format!("{}?state={}", app.href(&format!("/live/queues/{}", layout::enc(name))), state.as_str())) sse-swap="counts" {
            (tabs(app, name, &counts, state))
        }
        (jobs::search_form(app, &here))
        @match &listing {
            Listing::Page { jobs, total, page } => {
                (jobs::table(app, &here, jobs))
                (jobs::pager(app, &here, *page, *total))
            }
            Listing::Found(found) => {
                (jobs::table(app, &here, &found.jobs))
                (jobs::more(app, &here, found))
            }
        }
        (jobs::bulk_all(app, &here))
        (panels::metrics(&metrics))
        (panels::repeats(app, name, &repeats))
        (panels::groups(app, name, &groups, GROUPS_SHOWN))
        (panels::limits(app, name, &rate, &cap))
        (panels::retention(&retention))
        (panels::danger(app, name))
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
pub(crate) fn tabs(app: &App, name: &str, counts: &echomq::Counts, current: JobState) -> Markup {
    html! {
        @for s in STATES {
            a href=(format!("{}?state={}", layout::queue_href(app, name), s.as_str()))
                aria-current=[(s == current).then_some("page")] data-state=(s.as_str()) {
                (s.as_str()) span.count { (counts.get(s)) }
            }
        }
    }
}

/// A form POSTing to the queue action `verb` with `fields` hidden and one
/// button; drawn only where the request may run it (`permit.rs`).
pub(crate) fn post(
    app: &App,
    name: &str,
    verb: &str,
    fields: &[(&str, &str)],
    label: &str,
    class: &str,
) -> Markup {
    if !permit::may_queue(app, name, verb) {
        return html! {};
    }
    html! {
        form.inline method="post" action=(act(app, name, verb)) data-action=(verb) {
            (layout::csrf())
            @for (field, value) in fields { input type="hidden" name=(field) value=(value); }
            button class=(class) type="submit" { (label) }
        }
    }
}

/// The URL of queue action `verb`.
pub(crate) fn act(app: &App, name: &str, verb: &str) -> String {
    app.href(&format!("/queues/{}/act/{verb}", layout::enc(name)))
}
