//! [`ACTIONS`]: the one table of the dashboard's actions — the verb each
//! POSTs to, the control it sends, and the page it is drawn on. The
//! control map (`/controls`) derives its links from it; the job page's
//! verbs and handler are checked against it. Pages (which draw the
//! actions) and actions (which run them) both import it.

use echomq::Transition;

/// Where on the dashboard an action is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// The queues page, on each queue's row.
    Queues,
    /// A queue's page, in the section with this anchor (`""`: its top).
    Queue(&'static str),
    /// A job's page.
    Job,
}

/// One action of the dashboard.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Action {
    /// The last segment of its POST (`…/act/<verb>`), and its form's
    /// `data-action`.
    pub(crate) verb: &'static str,
    /// The control it sends; `None` for a library write that is no
    /// control (a repeat definition).
    pub(crate) transition: Option<Transition>,
    /// Where it is drawn.
    pub(crate) place: Place,
    /// Its button, in words.
    pub(crate) label: &'static str,
}

const fn action(
    verb: &'static str,
    transition: Transition,
    place: Place,
    label: &'static str,
) -> Action {
    Action {
        verb,
        transition: Some(transition),
        place,
        label,
    }
}

/// An action that sends no control: a library write (a repeat
/// definition is a hash field, not a transition).
const fn library(verb: &'static str, place: Place, label: &'static str) -> Action {
    Action {
        verb,
        transition: None,
        place,
        label,
    }
}

/// Every action of the dashboard, by page.
#[rustfmt::skip]
pub(crate) const ACTIONS: &[Action] = &[
    // The queues page, on each queue's row.
    action("pause",             Transition::Pause,       Place::Queues,           "Pause"),
    action("resume",            Transition::Resume,      Place::Queues,           "Resume"),
    // A queue's page. The bulk verbs are one POST (`bulk`) whose `verb`
    // field names the control.
    action("pause",             Transition::Pause,       Place::Queue(""),        "Pause"),
    action("resume",            Transition::Resume,      Place::Queue(""),        "Resume"),
    action("promote-due",       Transition::Promote,     Place::Queue(""),        "Promote due"),
    action("bulk",              Transition::Reprocess,   Place::Queue("bulk"),    "Reprocess"),
    action("bulk",              Transition::Cancel,      Place::Queue("bulk"),    "Cancel"),
    action("bulk",              Transition::Remove,      Place::Queue("bulk"),    "Remove"),
    action("bulk",              Transition::Requeue,     Place::Queue("bulk"),    "Promote"),
    action("drain",             Transition::Drain,       Place::Queue("danger"),  "Drain"),
    action("obliterate",        Transition::Obliterate,  Place::Queue("danger"),  "Obliterate"),
    library("repeat-add",                                Place::Queue("repeats"), "Add repeat"),
    library("repeat-remove",                             Place::Queue("repeats"), "Remove repeat"),
    action("group-pause",       Transition::GroupPause,  Place::Queue("groups"),  "Pause group"),
    action("group-resume",      Transition::GroupResume, Place::Queue("groups"),  "Resume group"),
    action("limit",             Transition::Limit,       Place::Queue("limits"),  "Set rate limit"),
    action("limit-clear",       Transition::Limit,       Place::Queue("limits"),  "Clear rate limit"),
    action("concurrency",       Transition::Concurrency, Place::Queue("limits"),  "Set concurrency"),
    action("concurrency-clear", Transition::Concurrency, Place::Queue("limits"),  "Clear concurrency"),
    // A job's page.
    action("promote",           Transition::Requeue,     Place::Job,             "Promote"),
    action("reschedule",        Transition::Reschedule,  Place::Job,             "Reschedule"),
    action("cancel",            Transition::Cancel,      Place::Job,             "Cancel"),
    action("requeue",           Transition::Requeue,     Place::Job,             "Requeue"),
    action("reprocess",         Transition::Reprocess,   Place::Job,             "Reprocess"),
    action("remove",            Transition::Remove,      Place::Job,             "Remove"),
    action("update",            Transition::Update,      Place::Job,             "Update payload"),
];

/// The actions that send `transition`, in table order.
pub(crate) fn sending(transition: Transition) -> impl Iterator<Item = &'static Action> {
    ACTIONS
        .iter()
        .filter(move |a| a.transition == Some(transition))
}

/// The control bulk verb `verb` (the bulk form's `verb` field) sends:
/// one of the table's `bulk` actions.
pub(crate) fn bulk(verb: &str) -> Option<Transition> {
    match verb {
        "reprocess" => Some(Transition::Reprocess),
        "cancel" => Some(Transition::Cancel),
        "remove" => Some(Transition::Remove),
        "promote" => Some(Transition::Requeue),
        _ => None,
    }
}

/// The action `verb` drawn at `place`.
pub(crate) fn find(place: Place, verb: &str) -> Option<&'static Action> {
    ACTIONS.iter().find(|a| a.place == place && a.verb == verb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verb_sends_a_control_once_per_place() {
        for (n, a) in ACTIONS.iter().enumerate() {
            assert!(
                !ACTIONS[..n].iter().any(|b| b.place == a.place
                    && b.verb == a.verb
                    && b.transition == a.transition),
                "{} twice at {:?}",
                a.verb,
                a.place
            );
        }
    }

    #[test]
    fn every_action_sends_a_control_but_the_repeat_definitions() {
        let without: Vec<&str> = ACTIONS
            .iter()
            .filter(|a| a.transition.is_none())
            .map(|a| a.verb)
            .collect();
        assert_eq!(without, ["repeat-add", "repeat-remove"]);
        assert!(sending(Transition::Requeue).count() >= 2);
        assert!(find(Place::Job, "cancel").is_some());
    }

    #[test]
    fn every_bulk_verb_sends_a_bulk_action_of_the_table() {
        for verb in ["reprocess", "cancel", "remove", "promote"] {
            let sent = bulk(verb).expect(verb);
            assert!(
                ACTIONS.iter().any(|a| a.place == Place::Queue("bulk")
                    && a.transition == Some(sent)
                    && a.label.eq_ignore_ascii_case(verb)),
                "{verb}"
            );
        }
        assert_eq!(bulk("obliterate"), None);
    }
}
