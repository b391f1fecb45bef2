//! The queue page's jobs: the search form, the table (a bulk form around
//! it where the request may act), the pager or the search's "more", and the
//! bulk verbs on everything matching.

use super::{PAGE_SIZE, act};
use crate::layout;
use crate::permit;
use crate::selection::by_name;
use crate::state::App;
use echomq::{JobMatch, JobRecord, JobState, SearchPage};
use maud::{Markup, html};

/// Which view of the queue the page shows.
pub(super) struct Here<'a> {
    pub(super) name: &'a str,
    pub(super) state: JobState,
    pub(super) matching: Option<&'a JobMatch>,
}

impl Here<'_> {
    /// This view's URL (state and search; no page, cursor or notice).
    fn href(&self, app: &App) -> String {
        let mut href = format!(
            "{}?state={}",
            layout::queue_href(app, self.name),
            self.state.as_str()
        );
        if let Some(m) = self.matching {
            href.push_str(&format!("&by={}&q={}", by_name(m), layout::enc(m.text())));
        }
        href
    }

    /// The verbs that apply to jobs in this state and the request may
    /// run: field value and label.
    fn verbs(&self, app: &App) -> Vec<(&'static str, &'static str)> {
        let all: &[(&str, &str)] = match self.state {
            JobState::Scheduled => &[
                ("promote", "Promote"),
                ("cancel", "Cancel"),
                ("remove", "Remove"),
            ],
            JobState::Pending | JobState::Blocked => &[("cancel", "Cancel"), ("remove", "Remove")],
            JobState::Active => &[("cancel", "Cancel")],
            _ => &[("reprocess", "Retry"), ("remove", "Remove")],
        };
        all.iter()
            .copied()
            .filter(|(verb, _)| permit::may_bulk(app, self.name, verb))
            .collect()
    }

    /// The hidden fields every bulk form carries.
    fn hidden(&self, app: &App) -> Markup {
        html! {
            (layout::csrf())
            input type="hidden" name="state" value=(self.state.as_str());
            input type="hidden" name="back" value=(self.href(app));
        }
    }
}

/// The search form (GET): by id prefix, payload or error text, in the
/// current state.
pub(super) fn search_form(app: &App, here: &Here<'_>) -> Markup {
    let by = here.matching.map_or("id", by_name);
    let q = here.matching.map_or("", JobMatch::text);
    html! {
        form id="search" method="get" action=(layout::queue_href(app, here.name)) role="search" {
            input type="hidden" name="state" value=(here.state.as_str());
            label { "Search " (here.state.as_str()) " jobs by "
                select name="by" {
                    @for (value, label) in [("id", "id prefix"), ("payload", "payload text"), ("error", "error text")] {
                        option value=(value) selected[by == value] { (label) }
                    }
                }
            }
            " "
            input type="search" name="q" value=(q) placeholder="text (case-sensitive)" aria-label="search text";
            " "
            button type="submit" { "Search" }
            @if here.matching.is_some() {
                " " a href=(format!("{}?state={}", layout::queue_href(app, here.name), here.state.as_str())) { "Clear" }
            }
        }
    }
}

/// The jobs table; where the request may run a bulk verb, inside the
/// bulk form with a checkbox per row and the verbs that apply in this
/// state.
pub(super) fn table(app: &App, here: &Here<'_>, jobs: &[JobRecord]) -> Markup {
    let verbs = here.verbs(app);
    let writable = !verbs.is_empty();
    let table = html! {
        div.scroll { table id="jobs" {
            thead { tr {
                th { "Id" } th { "State" } th { "Created" } th { "Run at" } th.num { "Attempts" } th { "Error" }
                @if writable { th { span.muted { "Select" } } }
            } }
            tbody {
                @for job in jobs {
                    tr data-job=(job.id.as_str()) {
                        td { a href=(layout::job_href(app, here.name, job.id.as_str())) { code { (job.id.as_str()) } } }
                        td class=(format!("state-{}", job.state.as_str())) { (job.state.as_str()) }
                        td { (job.created_at.map(layout::time).unwrap_or_default()) }
                        td { (job.run_at.map(layout::time).unwrap_or_default()) }
                        td.num { (job.claims) " / " (job.max_attempts) }
                        td.wrap { (job.error.as_deref().unwrap_or("")) }
                        @if writable {
                            td { input type="checkbox" name="id" value=(job.id.as_str()) aria-label=(format!("select {}", job.id.as_str())); }
                        }
                    }
                }
                @if jobs.is_empty() {
                    tr.empty { td colspan="7" { span.muted { "No job here." } } }
                }
            }
        } }
    };
    if !writable {
        return table;
    }
    html! {
        form id="bulk" method="post" action=(act(app, here.name, "bulk")) {
            (here.hidden(app))
            div.actions {
                "Selected: "
                @for (verb, label) in &verbs {
                    button type="submit" name="verb" value=(verb) { (label) } " "
                }
            }
            (table)
        }
    }
}

/// The bulk verbs on everything matching (the search, or the whole state):
/// a cursor walk on the server side of the dashboard.
pub(super) fn bulk_all(app: &App, here: &Here<'_>) -> Markup {
    let verbs = here.verbs(app);
    if verbs.is_empty() {
        return html! {};
    }
    html! {
        form id="bulk-all" method="post" action=(act(app, here.name, "bulk")) {
            (here.hidden(app))
            input type="hidden" name="all" value="1";
            @if let Some(m) = here.matching {
                input type="hidden" name="by" value=(by_name(m));
                input type="hidden" name="q" value=(m.text());
            }
            div.actions {
                @match here.matching {
                    Some(m) => { "Every " (here.state.as_str()) " job whose " (by_name(m)) " matches " code { (m.text()) } ": " }
                    None => { "Every " (here.state.as_str()) " job: " }
                }
                label { "Type the queue name to confirm " input name="confirm" autocomplete="off" required; } " "
                @for (verb, label) in &verbs {
                    button type="submit" name="verb" value=(verb) { (label) " all" } " "
                }
            }
        }
    }
}

/// Previous and next pages of the state set.
pub(super) fn pager(app: &App, here: &Here<'_>, page: u64, total: u64) -> Markup {
    let pages = total.div_ceil(PAGE_SIZE).max(1);
    let at = |p: u64| format!("{}&page={p}", here.href(app));
    html! {
        nav.pager aria-label="pages" {
            @if page > 0 { a rel="prev" href=(at(page - 1)) { "← Previous" } " " }
            span.muted { "page " (page + 1) " of " (pages) " · " (total) " jobs " (here.state.as_str()) }
            @if (page + 1).saturating_mul(PAGE_SIZE) < total { " " a rel="next" href=(at(page + 1)) { "Next →" } }
        }
    }
}

/// What a search page found, and the link that continues it.
pub(super) fn more(app: &App, here: &Here<'_>, found: &SearchPage) -> Markup {
    html! {
        nav.pager aria-label="more matches" {
            span.muted { (found.jobs.len()) " matches, " (found.scanned) " jobs looked at" }
            @if found.cursor != 0 {
                " " a.more rel="next" href=(format!("{}&cursor={}", here.href(app), found.cursor)) { "More →" }
            } @else {
                " " span.muted id="search-done" { "· end of the search" }
            }
        }
    }
}
