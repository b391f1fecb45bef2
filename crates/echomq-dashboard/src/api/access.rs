//! Who may call the API, and what each call may do: [`admit`] runs before
//! every handler (the Host, the `Origin`, the body's size and type, the
//! bearer token → [`Grant`]), and [`permit`] is the one place a handler
//! asks whether its grant allows what it is about to do.
//!
//! The API takes no cookies, so a browser cannot call it with a session
//! it holds; without tokens every request carries
//! [`Grant::anonymous`], and a cross-site page is kept out by the two
//! checks a form or a script of another origin cannot pass: an `Origin`
//! that is not one the server serves answers 403, and a body that is not
//! `application/json` answers 415 (a form cannot send that type, and a
//! script of another origin that sends it names its `Origin`).

use super::Api;
use super::error::ApiError;
use crate::auth::check_host;
use crate::grant::{AccessRole, Grant, Need};
use crate::limits::{BodyRead, in_words, read_within};
use crate::state::Shared;
use crate::tokens::request_grant;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The grant a request's headers carry (`tokens::request_grant`, as the
/// dashboard's): with no tokens, the anonymous one; with tokens,
/// `Authorization: Bearer <token>` is required (401 otherwise). On a
/// read-only server every grant reads only. The one place a bearer token
/// becomes a grant.
pub(crate) fn grant(app: &Shared, headers: &HeaderMap) -> Result<Grant, ApiError> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    match request_grant(app.tokens.as_ref(), app.read_only, bearer) {
        Some(grant) if app.read_only => Ok(Grant {
            role: AccessRole::Reader,
            ..grant
        }),
        Some(grant) => Ok(grant),
        None if bearer.is_some() => Err(ApiError::unauthorized("wrong token")),
        None => Err(ApiError::unauthorized(
            "this server requires a token: send Authorization: Bearer <token>",
        )),
    }
}

/// Whether `grant` may do `need` on `queue`: 403 naming the holder, the
/// queue and what it may not do otherwise. Every permission check of the
/// API is this one.
pub(crate) fn permit(grant: &Grant, queue: &str, need: Need) -> Result<(), ApiError> {
    if !grant.may_see(queue) {
        return Err(ApiError::forbidden(format!(
            "{:?} may not touch queue {queue:?}",
            grant.name
        )));
    }
    if !grant.role.allows(need) {
        let what = match need {
            Need::Read => "read".to_string(),
            Need::Produce => "enqueue on".to_string(),
            Need::Work => "work".to_string(),
            Need::Control(transition) => format!("send {} to", transition.verb()),
        };
        let read_only = match grant.name.as_str() {
            "anonymous" => " (the server is read-only)",
            _ => "",
        };
        return Err(ApiError::forbidden(format!(
            "{:?} is a {}{read_only}: it may not {what} queue {queue:?}",
            grant.name,
            grant.role.name()
        )));
    }
    Ok(())
}

/// Every API request, before its handler: the Host (421), the `Origin`
/// (403), the body's size (413) and type (415), the grant (401); the
/// grant rides in the request's extensions for the handler.
/// Each request is logged on one line with its grant's name (never the
/// token).
pub(crate) async fn admit(State(api): State<Api>, request: Request, next: Next) -> Response {
    let (method, path) = (request.method().clone(), request.uri().path().to_string());
    let (response, name) = match admitted(&api, request).await {
        Ok((request, name)) => (next.run(request).await, name),
        Err(err) => (err.into_response(), "-".to_string()),
    };
    tracing::info!(
        grant = %name,
        %method,
        path = %format!("{}{}{path}", api.app.base, super::PREFIX),
        status = response.status().as_u16(),
        "api request"
    );
    response
}

async fn admitted(api: &Api, request: Request) -> Result<(Request, String), ApiError> {
    let app = &api.app;
    check_host(&app.hosts, request.uri(), request.headers())?;
    check_origin(app, request.headers())?;
    let grant = grant(app, request.headers())?;
    let (mut parts, body) = request.into_parts();
    let bytes = match read_within(&parts.headers, body, app.max_body, app.body_wait).await {
        BodyRead::Whole(bytes) => bytes,
        BodyRead::TooLarge => return Err(ApiError::too_large(app.max_body)),
        BodyRead::Late => {
            return Err(ApiError::new(
                axum::http::StatusCode::REQUEST_TIMEOUT,
                "TIMEOUT",
                format!("the body did not arrive within {}", in_words(app.body_wait)),
            ));
        }
    };
    check_type(&parts.headers, !bytes.is_empty())?;
    let name = grant.name.clone();
    parts.extensions.insert(grant);
    Ok((Request::from_parts(parts, Body::from(bytes)), name))
}

/// Refuses (403) a request whose `Origin` is not one the server serves
/// (the request's own Host, or a host configuration named).
fn check_origin(app: &Shared, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin.to_str().unwrap_or("");
    let authority = origin
        .parse::<Uri>()
        .ok()
        .filter(|uri| matches!(uri.scheme_str(), Some("http" | "https")))
        .and_then(|uri| uri.authority().map(|a| a.as_str().to_string()));
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    match authority {
        Some(authority) if app.hosts.same_origin(&authority, host) => Ok(()),
        _ => Err(ApiError::forbidden(format!(
            "the request came from {origin:?} (Origin), a page this server does not serve"
        ))),
    }
}

/// Refuses (415) a body that is not `application/json`, and a
/// `Content-Type` of anything else even without a body (a cross-site
/// form's).
fn check_type(headers: &HeaderMap, has_body: bool) -> Result<(), ApiError> {
    let kind = headers
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or(""));
    let json = kind.is_some_and(|kind| {
        kind.split(';')
            .next()
            .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"))
    });
    match kind {
        Some(_) if json => Ok(()),
        None if !has_body => Ok(()),
        Some(kind) => Err(ApiError::unsupported(format!(
            "the body is {kind:?}: the API takes application/json"
        ))),
        None => Err(ApiError::unsupported(
            "the body has no Content-Type: the API takes application/json",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grant::AccessRole;
    use axum::http::StatusCode;

    fn grant(role: AccessRole, queues: &[&str]) -> Grant {
        Grant {
            name: "web".into(),
            role,
            queues: queues.iter().map(|q| q.to_string()).collect(),
        }
    }

    #[test]
    fn permit_refuses_a_queue_outside_the_grant_with_403() {
        let web = grant(AccessRole::Operator, &["emails", "reports-*"]);
        assert_eq!(permit(&web, "reports-eu", Need::Produce), Ok(()));
        let refused = permit(&web, "billing", Need::Read).unwrap_err();
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        assert!(refused.detail.message.contains("billing"), "{refused:?}");
    }

    #[test]
    fn permit_refuses_what_the_role_may_not_do_with_403() {
        let reader = grant(AccessRole::Reader, &["*"]);
        assert_eq!(permit(&reader, "q", Need::Read), Ok(()));
        let refused = permit(&reader, "q", Need::Produce).unwrap_err();
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
        assert!(refused.detail.message.contains("reader"), "{refused:?}");
        let read_only = permit(&Grant::anonymous(true), "q", Need::Produce).unwrap_err();
        assert!(
            read_only.detail.message.contains("read-only"),
            "{read_only:?}"
        );
    }
}
