//! The job page: every field, the payload and result pretty-printed, the
//! error, progress, log, its own events as a timeline, the verbs that
//! apply in its state, and for a job of a flow the DAG around it.

mod fields;
mod graph;
mod timeline;
pub(crate) mod verbs;

use crate::error::{PageError, PageResult};
use crate::layout::{self, Nav};
use crate::permit;
use crate::state::App;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use echomq::JobId;
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

/// Log lines shown: the newest.
pub(crate) const LOG_SHOWN: u64 = 200;
/// Events of the queue's stream read back for the timeline (the newest);
/// the job's own are shown.
pub(crate) const EVENTS_SCANNED: u64 = 2000;

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

/// `text` pretty-printed when it is JSON, as it is otherwise.
pub(crate) fn pretty(text: &str) -> String {
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|value| serde_json::to_string_pretty(&value).ok())
        .unwrap_or_else(|| text.to_string())
}

/// The href of job action `verb`.
pub(crate) fn action_href(app: &App, name: &str, id: &str, verb: &str) -> String {
    format!("{}/act/{verb}", layout::job_href(app, name, id))
}

async fn render(app: &App, name: &str, id: &str, view: &View) -> PageResult {
    permit::see(name)?;
    let queue = app.connector.queue::<Value>(name)?;
    let id = JobId::new(id.to_string())?;
    let jobs = queue.jobs();
    let (job, log, events) = tokio::join!(
        jobs.get(&id),
        jobs.logs(&id, LOG_SHOWN),
        queue.recent_events(EVENTS_SCANNED),
    );
    let job = job?.ok_or_else(|| PageError::NotFound(format!("no job {id} in queue {name}")))?;
    let (log, events) = (log?, events?);
    // Only a job whose record names edges is walked: a plain job's page
    // reads nothing more.
    let flow = match job.deps.is_some() || job.dependents.is_some() {
        true => jobs.flow_graph(&id, graph::DEPTH).await?,
        false => None,
    };
    let own: Vec<&echomq::Event> = events
        .iter()
        .filter(|event| event.job.as_ref() == Some(&id))
        .collect();
    let state = job.state.as_str();
    let body = html! {
        p.muted { a href=(layout::queue_href(app, name)) { "Queue " code { (name) } } " › job" }
        h1 {
            "Job " code { (id.as_str()) } " "
            span id="job-state" class=(format!("badge state-{state}")) { (state) }
        }
        (layout::notice(app, view.done.as_deref()))
        div.actions id="verbs" { (verbs::draw(app, name, &job)) }
        @if let Some(flow) = &flow { (graph::section(app, flow)) }
        div.grid {
            section.panel { h2 { "Fields" } (fields::list(&job)) }
            section.panel {
                h2 { "Progress" }
                (progress(job.progress.as_deref()))
                h2 { "Timeline" }
                (timeline::list(&own, events.len() as u64))
            }
        }
        h2 { "Payload" }
        pre id="payload" { (pretty(&job.payload)) }
        @if let Some(result) = &job.result { h2 { "Result" } pre id="result" { (pretty(result)) } }
        @if let Some(error) = &job.error { h2 { "Error" } pre.refused id="error" { (error) } }
        h2 { "Log" }
        (log_lines(&log, job.logs))
        (verbs::update_form(app, name, &job))
    };
    Ok(layout::page(
        app,
        &format!("Job {id}"),
        Some(Nav::Queues),
        body,
    ))
}

/// The holder's last progress: a bar when it is a number 0–100, the value
/// pretty-printed.
fn progress(progress: Option<&str>) -> Markup {
    let Some(text) = progress else {
        return html! { p.muted id="progress" { "None reported." } };
    };
    let percent = text
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|p| (0.0..=100.0).contains(p));
    html! {
        @if let Some(percent) = percent {
            progress max="100" value=(percent) { (percent) "%" }
        }
        pre id="progress" { (pretty(text)) }
    }
}

/// The newest log lines, oldest first, and how many there are in all.
fn log_lines(lines: &[String], total: u64) -> Markup {
    html! {
        @if lines.is_empty() {
            p.muted id="log" { "No log lines." }
        } @else {
            @if total > lines.len() as u64 {
                p.muted { "The newest " (lines.len()) " of " (total) " lines." }
            }
            ol.log id="log" start=(total.saturating_sub(lines.len() as u64) + 1) {
                @for line in lines { li { code { (line) } } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_pretty_printed_and_other_text_left_as_it_is() {
        assert_eq!(pretty(r#"{"a":1}"#), "{\n  \"a\": 1\n}");
        assert_eq!(pretty("not json <b>"), "not json <b>");
    }
}
