//! The verbs that apply to a job in its state, as forms POSTing to
//! `…/jobs/{id}/act/{verb}` (drawn only where the request may run them), and the
//! payload editor.

use super::{action_href, pretty};
use crate::action_map::{self, Place};
use crate::layout;
use crate::permit;
use crate::state::App;
use echomq::{JobRecord, JobState};
use maud::{Markup, html};

/// One verb drawn on the job page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Verb {
    /// The action (`cancel`, `remove`, …) of [`action_map::ACTIONS`].
    pub(crate) verb: &'static str,
    /// Its button, where it says more than the table's label.
    pub(crate) label: &'static str,
    /// The field its form sends besides the CSRF token.
    pub(crate) field: Field,
    /// The button's class.
    pub(crate) class: &'static str,
}

/// The field a verb's form sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    /// None.
    None,
    /// `force=1` (the remove of an active job).
    Force,
    /// `run_at`: a UTC date and time, the job's run-at to start with.
    RunAt,
}

/// The job action `verb`'s label in the table.
fn label(verb: &'static str) -> &'static str {
    action_map::find(Place::Job, verb).map_or(verb, |a| a.label)
}

fn verb(verb: &'static str, class: &'static str) -> Verb {
    Verb {
        verb,
        label: label(verb),
        field: Field::None,
        class,
    }
}

/// The verbs that apply to a job in `state`, in the order drawn (the
/// payload editor, which applies in every state, aside).
pub(crate) fn of(state: JobState) -> Vec<Verb> {
    let remove = verb("remove", "danger");
    match state {
        JobState::Scheduled => vec![
            verb("promote", "primary"),
            Verb {
                field: Field::RunAt,
                ..verb("reschedule", "")
            },
            verb("cancel", ""),
            remove,
        ],
        JobState::Pending | JobState::Blocked => vec![verb("cancel", ""), remove],
        JobState::Active => vec![
            Verb {
                label: "Cancel (ask the holder)",
                ..verb("cancel", "")
            },
            verb("requeue", ""),
            Verb {
                label: "Remove (force)",
                field: Field::Force,
                ..remove
            },
        ],
        JobState::Dead => vec![
            Verb {
                label: "Retry",
                ..verb("reprocess", "primary")
            },
            remove,
        ],
        JobState::Completed | JobState::Cancelled => vec![verb("reprocess", "primary"), remove],
    }
}

/// The verbs of `job`'s state the request may run, as buttons (none on
/// a read-only dashboard).
pub(super) fn draw(app: &App, name: &str, job: &JobRecord) -> Markup {
    let id = job.id.as_str();
    html! {
        @for v in of(job.state).into_iter().filter(|v| permit::may_job(app, name, v.verb)) {
            @let href = action_href(app, name, id, v.verb);
            @if v.field == Field::None {
                (layout::button(&href, v.label, v.class))
            } @else {
                form.inline method="post" action=(href) data-action=(v.verb) {
                    (layout::csrf())
                    @match v.field {
                        Field::Force => { input type="hidden" name="force" value="1"; }
                        _ => {
                            input type="datetime-local" name="run_at" step="1" required
                                aria-label="run at (UTC)" value=(run_at_value(job.run_at));
                            " UTC "
                        }
                    }
                    button class=(v.class) type="submit" { (v.label) }
                }
            }
        }
    }
}

/// A run-at as a `datetime-local` value (UTC, to the second).
fn run_at_value(ms: Option<u64>) -> String {
    ms.map(|ms| layout::time(ms).replace(' ', "T"))
        .unwrap_or_default()
}

/// The payload editor: the pretty payload in a textarea, checked as JSON
/// when sent; only where the request may update the job.
pub(super) fn update_form(app: &App, name: &str, job: &JobRecord) -> Markup {
    if !permit::may_job(app, name, "update") {
        return html! {};
    }
    html! {
        section.panel id="update" {
            h2 { "Update payload" }
            form method="post" action=(action_href(app, name, job.id.as_str(), "update")) data-action="update" {
                (layout::csrf())
                textarea name="payload" spellcheck="false" aria-label="payload (JSON)" { (pretty(&job.payload)) }
                p.actions {
                    button type="submit" { (label("update")) }
                    span.muted { "Checked as JSON before anything is written." }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_verb_drawn_is_a_job_action_of_the_table() {
        for state in JobState::ALL {
            for v in of(state) {
                assert!(
                    action_map::find(Place::Job, v.verb).is_some(),
                    "{} drawn for {state} is not in the table",
                    v.verb
                );
            }
        }
    }

    #[test]
    fn a_dead_job_is_retried_and_an_active_one_removed_by_force() {
        let dead = of(JobState::Dead);
        assert_eq!((dead[0].verb, dead[0].label), ("reprocess", "Retry"));
        assert!(
            of(JobState::Active)
                .iter()
                .any(|v| v.verb == "remove" && v.field == Field::Force)
        );
        assert_eq!(run_at_value(Some(0)), "1970-01-01T00:00:00");
    }
}
