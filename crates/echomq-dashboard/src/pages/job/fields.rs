//! Every field of a job's row as a `dl.fields`: times in UTC, the spans
//! between them, counters, and what it was enqueued with (its time limit,
//! start-by deadline and LIFO among them), and its place in a flow.

use crate::layout;
use echomq::JobRecord;
use maud::{Markup, html};

/// `ms` as a time, or a dash.
fn at(ms: Option<u64>) -> Markup {
    match ms {
        Some(ms) => html! { time { (layout::time(ms)) } },
        None => html! { span.muted { "—" } },
    }
}

/// `text`, or a dash.
fn text(text: Option<&str>) -> Markup {
    match text {
        Some(text) => html! { code { (text) } },
        None => html! { span.muted { "—" } },
    }
}

/// The span from `from` to `to`, where both are set and in order.
fn between(from: Option<u64>, to: Option<u64>) -> Option<String> {
    match (from, to) {
        (Some(from), Some(to)) if to >= from => Some(layout::span(to - from)),
        _ => None,
    }
}

/// The job's fields, each a `dt` named by `data-field` on its `dd`.
pub(super) fn list(job: &JobRecord) -> Markup {
    let waited = between(job.run_at.or(job.created_at), job.claimed_at);
    let ran = between(job.claimed_at, job.finished_at);
    let time_limit = job.time_limit.map(echomq::protocol::time_limit::shown);
    let deps = job
        .deps
        .map(|deps| format!("{deps} ({} not ended)", job.deps_left.unwrap_or(0)));
    let dependents = job.dependents.map(|n| n.to_string());
    let rows: Vec<(&str, &str, Markup)> = vec![
        ("id", "Id", html! { code { (job.id.as_str()) } }),
        (
            "state",
            "State",
            html! { span class=(format!("state-{}", job.state.as_str())) { (job.state.as_str()) } },
        ),
        ("priority", "Priority", html! { (job.priority) }),
        (
            "attempts",
            "Attempts",
            html! { (job.claims) " of " (job.max_attempts) " claimed" },
        ),
        ("failures", "Failures", html! { (job.failures) }),
        ("stalls", "Stalls", html! { (job.stalls) }),
        ("created_at", "Created", at(job.created_at)),
        ("run_at", "Run at", at(job.run_at)),
        ("claimed_at", "Last claimed", at(job.claimed_at)),
        ("finished_at", "Finished", at(job.finished_at)),
        ("waited", "Waited", text(waited.as_deref())),
        ("ran", "Ran", text(ran.as_deref())),
        ("worker", "Worker", text(job.worker.as_deref())),
        (
            "cancel",
            "Cancel requested",
            html! { (if job.cancel_requested { "yes" } else { "no" }) },
        ),
        ("group", "Group", text(job.group.as_deref())),
        ("repeat", "Repeat", text(job.repeat.as_deref())),
        ("dedup", "Dedup key", text(job.dedup.as_deref())),
        (
            "dedup_mode",
            "Dedup mode",
            text(job.dedup_mode.map(|m| m.as_str())),
        ),
        ("traceparent", "Trace", text(job.traceparent.as_deref())),
        ("time_limit", "Time limit", text(time_limit.as_deref())),
        ("start_by", "Start by", at(job.start_by)),
        ("reason", "Reason", text(job.reason.as_deref())),
        (
            "lifo",
            "LIFO",
            html! { (if job.lifo { "yes" } else { "no" }) },
        ),
        ("flow", "Flow", text(job.flow.as_deref())),
        ("ref", "Ref in its flow", text(job.flow_ref.as_deref())),
        (
            "on_failure",
            "On a failed dependency",
            text((job.flow.is_some() || job.deps.is_some()).then(|| job.on_failure.as_str())),
        ),
        ("deps", "Dependencies", text(deps.as_deref())),
        ("dependents", "Dependents", text(dependents.as_deref())),
        ("logs", "Log lines", html! { (job.logs) }),
    ];
    html! {
        dl.fields {
            @for (field, name, value) in rows {
                dt { (name) }
                dd data-field=(field) { (value) }
            }
        }
    }
}
