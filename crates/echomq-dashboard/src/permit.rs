//! What a grant permits on the dashboard: the queues it sees, the actions
//! it runs. An action of the table (`action_map.rs`) that sends a control
//! needs `Need::Control` of it on its queue ([`Grant::allows`]); one that
//! sends none (a repeat definition, a library write) needs an operator.
//! A read-only dashboard permits no action, whatever the grant.
//!
//! Pages draw only what [`may_queue`], [`may_job`] and [`may_bulk`]
//! permit the running request's grant (`caller.rs`); actions refuse (403)
//! what [`allows`] does not; pages and feeds of a queue the grant does not
//! see answer 403 ([`see`]).

use crate::action_map::{self, Place};
use crate::caller;
use crate::error::PageError;
use crate::grant::{AccessRole, Grant, Need};
use crate::state::App;
use echomq::Transition;

/// Whether `grant` may send `transition` on `queue` (`None`: a write that
/// is no control) on `app`.
pub(crate) fn allows(
    app: &App,
    grant: Option<&Grant>,
    queue: &str,
    transition: Option<Transition>,
) -> bool {
    !app.read_only
        && grant.is_some_and(|grant| match transition {
            Some(transition) => grant.allows(queue, Need::Control(transition)),
            None => grant.role == AccessRole::Operator && grant.may_see(queue),
        })
}

/// The control queue action `verb` sends (of the queues page or a queue's
/// page; `Ok(None)` for a library write); `Err` when no queue action has
/// that name.
pub(crate) fn queue_action(verb: &str) -> Result<Option<Transition>, ()> {
    action_map::ACTIONS
        .iter()
        .find(|a| a.place != Place::Job && a.verb == verb)
        .map(|a| a.transition)
        .ok_or(())
}

/// Whether the running request may run queue action `verb` on `queue`.
pub(crate) fn may_queue(app: &App, queue: &str, verb: &str) -> bool {
    queue_action(verb).is_ok_and(|t| caller::with_grant(|g| allows(app, g, queue, t)))
}

/// Whether the running request may run job action `verb` on a job of
/// `queue`.
pub(crate) fn may_job(app: &App, queue: &str, verb: &str) -> bool {
    action_map::find(Place::Job, verb)
        .is_some_and(|a| caller::with_grant(|g| allows(app, g, queue, a.transition)))
}

/// Whether the running request may run bulk verb `verb` on `queue`.
pub(crate) fn may_bulk(app: &App, queue: &str, verb: &str) -> bool {
    action_map::bulk(verb).is_some_and(|t| caller::with_grant(|g| allows(app, g, queue, Some(t))))
}

/// Whether the running request's grant sees `queue`.
pub(crate) fn sees(queue: &str) -> bool {
    caller::with_grant(|grant| grant.is_some_and(|grant| grant.may_see(queue)))
}

/// Refuses (403) a page or feed of a queue the running request's grant
/// does not see.
pub(crate) fn see(queue: &str) -> Result<(), PageError> {
    if sees(queue) {
        return Ok(());
    }
    let name = caller::with_grant(|g| g.map_or_else(String::new, |g| g.name.clone()));
    Err(PageError::Forbidden(format!(
        "the token {name:?} may not see queue {queue:?}"
    )))
}
