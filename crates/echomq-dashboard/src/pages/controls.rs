//! The control map, from the registry of controls: grouped by scope, the
//! function(s), keys touched, effect, script and native command (and bulk
//! form) of each, and where the dashboard uses it — derived from the
//! table of the dashboard's actions ([`action_map::ACTIONS`]).

use crate::action_map::{self, Action, Place};
use crate::layout::{self, Nav};
use crate::permit;
use crate::state::App;
use axum::extract::{Query, State};
use echomq::Transition;
use echomq::protocol::{Control, Scope};
use maud::{Markup, html};
use serde::Deserialize;

/// The page's query: the queue its links go to.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct View {
    queue: Option<String>,
}

/// `GET /controls[?queue=q]`: links to a queue's page go to `q`, else to
/// the first queue under the prefix (the queues page when there is none).
pub(crate) async fn page(State(app): State<App>, Query(view): Query<View>) -> Markup {
    let queue = match view.queue {
        Some(queue) => Some(queue),
        None => app.connector.queues().await.ok().and_then(|mut names| {
            names.retain(|name| permit::sees(name));
            names.sort();
            names.into_iter().next()
        }),
    };
    let base = format!("{}:{{q}}", app.connector.prefix());
    let library_writes: Vec<&Action> = action_map::ACTIONS
        .iter()
        .filter(|a| a.transition.is_none())
        .collect();
    let body = html! {
        h1 { "Controls" }
        p.muted {
            "Every control of the control plane, from the registry both wires are built from: "
            "wire 4 runs its Lua script, wire 6 its native command. Keys are named under "
            code { (base) ":" } " for a queue " code { "q" } "."
        }
        div.scroll { table id="controls" {
            thead { tr {
                th { "Control" } th { "Function" } th { "Keys touched" } th { "Effect" }
                th { "Script" } th { "Native" } th { "On the dashboard" }
            } }
            @for scope in Scope::ALL {
                tbody data-scope=(scope.name()) {
                    tr.scope { th colspan="7" id=(format!("scope-{}", scope.name())) { (scope.title()) } }
                    @for t in Transition::ALL.iter().filter(|t| t.control().scope == scope) {
                        (row(&app, *t, queue.as_deref()))
                    }
                }
            }
        } }
        @if !library_writes.is_empty() {
            p.muted id="no-control" {
                "Sent by no control (library writes): "
                @for (n, action) in library_writes.iter().enumerate() {
                    @if n > 0 { ", " }
                    a href=(place_href(&app, action.place, queue.as_deref())) { (action.label) }
                }
                "."
            }
        }
    };
    layout::page(&app, "Controls", Some(Nav::Controls), body)
}

/// One control's row.
fn row(app: &App, t: Transition, queue: Option<&str>) -> Markup {
    let control = t.control();
    let forms: Vec<_> = control.commands().map(|(_, command)| command).collect();
    let used: Vec<&Action> = action_map::sending(t).collect();
    html! {
        tr id=(format!("control-{}", t.name())) data-control=(t.name()) {
            td { code { (t.name()) } br; span.muted { (control.verb) } }
            td { @for f in control.functions { code { (f) } br; } }
            td.wrap { @for key in keys(control) { code { (key) } " " } }
            td.wrap { (control.effect) }
            td { @for c in &forms { code { (c.script) ".lua" } br; } }
            td { @for c in &forms { code { (c.native) } br; } }
            td.wrap data-used=(if used.is_empty() { "no" } else { "yes" }) {
                @if used.is_empty() {
                    span.muted { "library only" }
                } @else {
                    @for action in &used {
                        a href=(place_href(app, action.place, queue)) data-place=(place_name(action.place)) {
                            (place_title(action.place)) ": " (action.label)
                        }
                        br;
                    }
                }
            }
        }
    }
}

/// The keys `control` touches under the queue's base: its fixed keys
/// (the base itself names the queue and holds nothing), a job's keys, and
/// the cancel and outcome channels where it publishes.
fn keys(control: &Control) -> Vec<String> {
    let fixed = control
        .keys
        .iter()
        .map(|key| key.name())
        .filter(|name| *name != "base")
        .map(str::to_string);
    let job = control
        .job_keys
        .iter()
        .map(|key| key.pattern().trim_start_matches(':').to_string());
    let cancel = control
        .publishes_cancel
        .then(|| "cancel (channel)".to_string());
    let outcome = control
        .publishes_outcome
        .then(|| "outcome (channel)".to_string());
    fixed.chain(job).chain(cancel).chain(outcome).collect()
}

fn place_name(place: Place) -> &'static str {
    match place {
        Place::Queues => "queues",
        Place::Queue(_) => "queue",
        Place::Job => "job",
    }
}

fn place_title(place: Place) -> String {
    match place {
        Place::Queues => "Queues page".into(),
        Place::Queue("") => "Queue page".into(),
        Place::Queue(anchor) => format!("Queue page › {anchor}"),
        Place::Job => "Job page".into(),
    }
}

/// Where `place` is: a queue's page (at its anchor) for `queue`; a job's
/// page is reached from its queue's table of jobs.
fn place_href(app: &App, place: Place, queue: Option<&str>) -> String {
    match (place, queue) {
        (Place::Queues, _) | (_, None) => app.href("/"),
        (Place::Queue(""), Some(q)) => layout::queue_href(app, q),
        (Place::Queue(anchor), Some(q)) => format!("{}#{anchor}", layout::queue_href(app, q)),
        (Place::Job, Some(q)) => format!("{}#jobs", layout::queue_href(app, q)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_named_under_the_base_without_it() {
        let keys = keys(Transition::Get.control());
        assert_eq!(keys, ["job:<id>", "logs:<id>"]);
        assert!(
            super::keys(Transition::Cancel.control()).contains(&"cancel (channel)".to_string())
        );
    }
}
