//! Every action: a POST carrying the page's CSRF token, refused on a
//! read-only dashboard (403). Success goes back to the page it came from
//! with a notice; a refusal answers the protocol's reason (409).

use crate::auth::{self, Proof};
use crate::error::PageError;
use crate::layout;
use crate::state::App;
use axum::Extension;
use axum::Form;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};

mod job;
pub(crate) mod map;
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

/// Refuses before anything is read or written: read-only (403), then a
/// CSRF token missing or wrong (403).
fn guard(app: &App, proof: Proof, headers: &HeaderMap, fields: &Fields) -> Result<(), PageError> {
    if app.read_only {
        return Err(PageError::Forbidden(
            "this dashboard is read-only: every action is refused".into(),
        ));
    }
    auth::check_csrf(app, proof, headers, fields)
}

/// Where to go after an action: the form's `back` field when it is a
/// page of this dashboard, else `default`.
fn back(app: &App, fields: &Fields, default: String) -> String {
    field(fields, "back")
        .filter(|b| b.starts_with(&app.href("/")) && !b.starts_with("//"))
        .map_or(default, str::to_string)
}

/// `target` with the notice `done` added to its query.
fn with_notice(target: &str, done: &str) -> String {
    let joint = if target.contains('?') { '&' } else { '?' };
    format!("{target}{joint}done={}", layout::enc(done))
}

/// `POST /queues/{queue}/act/{action}`.
pub(crate) async fn queue(
    State(app): State<App>,
    Path((queue, action)): Path<(String, String)>,
    Extension(proof): Extension<Proof>,
    headers: HeaderMap,
    Form(fields): Form<Fields>,
) -> Response {
    let back = back(&app, &fields, layout::queue_href(&app, &queue));
    let done = match guard(&app, proof, &headers, &fields) {
        Ok(()) => queue::act(&app, &queue, &action, &fields).await,
        Err(err) => Err(err),
    };
    match done {
        Ok(done) => Redirect::to(&with_notice(&back, &done)).into_response(),
        Err(err) => err.respond(&app, &back),
    }
}

/// `POST /queues/{queue}/jobs/{id}/act/{action}`.
pub(crate) async fn job(
    State(app): State<App>,
    Path((queue, id, action)): Path<(String, String, String)>,
    Extension(proof): Extension<Proof>,
    headers: HeaderMap,
    Form(fields): Form<Fields>,
) -> Response {
    let back = back(&app, &fields, layout::job_href(&app, &queue, &id));
    let done = match guard(&app, proof, &headers, &fields) {
        Ok(()) => job::act(&app, &queue, &id, &action, &fields).await,
        Err(err) => Err(err),
    };
    match done {
        // A job removed has no page: back to its queue's.
        Ok(done) if done.gone => Redirect::to(&with_notice(
            &layout::queue_href(&app, &queue),
            &done.notice,
        ))
        .into_response(),
        Ok(done) => Redirect::to(&with_notice(&back, &done.notice)).into_response(),
        Err(err) => err.respond(&app, &back),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_joins_the_query() {
        assert_eq!(with_notice("/q", "paused a"), "/q?done=paused%20a");
        assert_eq!(with_notice("/q?state=dead", "x"), "/q?state=dead&done=x");
    }
}
