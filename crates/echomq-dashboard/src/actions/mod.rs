//! Every action: a POST carrying the page's CSRF token, refused on a
//! read-only dashboard and where the caller's grant does not allow it
//! (403, `permit.rs`). Success goes back to the page it came from
//! with a notice; a refusal answers the protocol's reason (409).

use crate::action_map::{self, Place};
use crate::auth;
use crate::caller::Caller;
use crate::error::PageError;
use crate::layout;
use crate::permit;
use crate::state::App;
use axum::Extension;
use axum::Form;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use echomq::Transition;

mod job;
mod queue;

/// The fields of an action's form, in order (a field may repeat: the
/// selected job ids).
pub(crate) type Fields = Vec<(String, String)>;

/// The first value of field `name`.
pub(crate) fn field<'a>(fields: &'a Fields, name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// Every value of field `name`.
pub(crate) fn all<'a>(fields: &'a Fields, name: &'a str) -> impl Iterator<Item = &'a str> {
    fields
        .iter()
        .filter(move |(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// Refuses before anything is read or written: read-only (403), then an
/// action the caller's grant does not allow on `queue` (403; `sends` is
/// the control the action sends, `Some(None)` a library write, `None` an
/// action no table names, which its handler refuses), then a CSRF token
/// missing, repeated or not the session's (403).
fn guard(
    app: &App,
    caller: &Caller,
    request: (&HeaderMap, &Fields),
    queue: &str,
    action: &str,
    sends: Option<Option<Transition>>,
) -> Result<(), PageError> {
    if app.read_only {
        return Err(PageError::Forbidden(
            "this dashboard is read-only: every action is refused".into(),
        ));
    }
    let grant = caller.grant.as_ref();
    let allowed = match sends {
        Some(sends) => permit::allows(app, grant, queue, sends),
        None => grant.is_some_and(|g| g.may_see(queue)),
    };
    if !allowed {
        let (name, role) = grant.map_or(("", ""), |g| (g.name.as_str(), g.role.name()));
        return Err(PageError::Forbidden(format!(
            "the token {name:?} ({role}) may not {action} on queue {queue:?}"
        )));
    }
    auth::check_csrf(caller, request.0, request.1)
}

/// Where to go after an action: the form's `back` field when it is a
/// page of this dashboard, else `default`.
fn back(app: &App, fields: &Fields, default: String) -> String {
    field(fields, "back")
        .filter(|back| is_page_of(&app.base, back))
        .map_or(default, str::to_string)
}

/// Whether `back` is a path (and query) under `base` ("" for the root)
/// and nothing else: no scheme, no host, no `//` or `\` a browser would
/// read as one, no control character or space a browser would strip.
fn is_page_of(base: &str, back: &str) -> bool {
    let plain = back.bytes().all(|b| b.is_ascii_graphic() && b != b'\\');
    let Some(rest) = back.strip_prefix(base) else {
        return false;
    };
    let under = rest.is_empty() && !base.is_empty()
        || rest.starts_with('/') && !rest.starts_with("//")
        || rest.starts_with('?') && !base.is_empty();
    plain
        && under
        && back.starts_with('/')
        && back
            .parse::<axum::http::uri::PathAndQuery>()
            .is_ok_and(|parsed| parsed.as_str() == back)
}

/// `target` with the notice `done` added to its query: kept in the
/// caller's session, and named by an id only that session can show (a
/// script's redirect carries none).
fn with_notice(app: &App, caller: &Caller, target: &str, done: String) -> String {
    let Some(id) = caller
        .session
        .as_ref()
        .and_then(|session| app.sessions.leave_notice(&session.id, done))
    else {
        return target.to_string();
    };
    let joint = if target.contains('?') { '&' } else { '?' };
    format!("{target}{joint}done={}", layout::enc(&id))
}

/// `POST /queues/{queue}/act/{action}`.
pub(crate) async fn queue(
    State(app): State<App>,
    Path((queue, action)): Path<(String, String)>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Form(fields): Form<Fields>,
) -> Response {
    let back = back(&app, &fields, layout::queue_href(&app, &queue));
    let sends = match action.as_str() {
        "bulk" => action_map::bulk(field(&fields, "verb").unwrap_or("")).map(Some),
        verb => permit::queue_action(verb).ok(),
    };
    let done = match guard(&app, &caller, (&headers, &fields), &queue, &action, sends) {
        Ok(()) => queue::act(&app, &queue, &action, &fields).await,
        Err(err) => Err(err),
    };
    match done {
        Ok(done) => Redirect::to(&with_notice(&app, &caller, &back, done)).into_response(),
        Err(err) => err.respond(&app, &back),
    }
}

/// `POST /queues/{queue}/jobs/{id}/act/{action}`.
pub(crate) async fn job(
    State(app): State<App>,
    Path((queue, id, action)): Path<(String, String, String)>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Form(fields): Form<Fields>,
) -> Response {
    let back = back(&app, &fields, layout::job_href(&app, &queue, &id));
    let sends = action_map::find(Place::Job, &action).map(|a| a.transition);
    let done = match guard(&app, &caller, (&headers, &fields), &queue, &action, sends) {
        Ok(()) => job::act(&app, &queue, &id, &action, &fields).await,
        Err(err) => Err(err),
    };
    match done {
        // A job removed has no page: back to its queue's.
        Ok(done) if done.gone => Redirect::to(&with_notice(
            &app,
            &caller,
            &layout::queue_href(&app, &queue),
            done.notice,
        ))
        .into_response(),
        Ok(done) => Redirect::to(&with_notice(&app, &caller, &back, done.notice)).into_response(),
        Err(err) => err.respond(&app, &back),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_is_a_page_of_this_dashboard_and_nothing_else() {
        for good in ["/", "/queues/q", "/queues/q?state=dead&page=2", "/controls"] {
            assert!(is_page_of("", good), "{good}");
        }
        for good in ["/emq", "/emq/queues/q", "/emq?x=1"] {
            assert!(is_page_of("/emq", good), "{good}");
        }
        for bad in [
            "//evil.example",
            "/\\evil.example",
            "/\tevil.example",
            "/\t/evil.example",
            "/\n/evil.example",
            "/ /evil.example",
            "http://evil.example/",
            "javascript:alert(1)",
            "evil.example",
            "",
            "/queues/\u{e9}",
        ] {
            assert!(!is_page_of("", bad), "{bad:?}");
        }
        for bad in ["/", "/emqx", "/emq//evil.example", "/other"] {
            assert!(!is_page_of("/emq", bad), "{bad:?}");
        }
    }
}
