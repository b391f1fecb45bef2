//! Who a request is, before any page or action runs ([`admit`]): the Host
//! it names (421 otherwise, `host.rs`), the origin of a POST (403
//! otherwise), a token of the dashboard's when it has tokens (401 and the
//! login form otherwise: a session signed in with the form, or
//! `Authorization: Bearer` from a script) and so the request's grant
//! (`tokens.rs`; without tokens, an operator of every queue, or a reader
//! when read-only), and the session whose CSRF token every form carries.
//! Each request is logged on one line with its grant's name, never the
//! token.
//!
//! Every browser gets a session (`session.rs`), with or without a token:
//! its CSRF token is its own, so a token read from one page opens no other
//! browser's forms. The request's [`Caller`] rides in a task-local while
//! its handler runs (`caller.rs`), so the page shell draws its forms with
//! the right token without every handler passing it down.

use crate::caller::{self, CSRF_FIELD, Caller, Proof};
use crate::error::PageError;
use crate::host::Hosts;
use crate::layout;
use crate::session::{Current, same};
use crate::state::App;
use crate::tokens::request_grant;
use axum::Extension;
use axum::Form;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;
use std::net::{IpAddr, SocketAddr};

/// The session cookie: a session id, nothing else.
const COOKIE: &str = "emq_session";
/// The header form of the CSRF token.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";

/// The token of an `Authorization: Bearer` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

fn session_cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value)
}

/// The `Set-Cookie` value that gives the browser session `id`.
fn set_cookie(app: &App, id: &str) -> String {
    cookie(app, id, "")
}

/// The `Set-Cookie` value that makes the browser forget its session.
fn clear_cookie(app: &App) -> String {
    cookie(app, "", "; Max-Age=0")
}

/// The session cookie with `value`: every attribute in one place.
fn cookie(app: &App, value: &str, lifetime: &str) -> String {
    let secure = if app.secure_cookies { "; Secure" } else { "" };
    format!(
        "{COOKIE}={value}; Path={}; HttpOnly; SameSite=Strict{lifetime}{secure}",
        cookie_path(app)
    )
}

fn cookie_path(app: &App) -> &str {
    if app.base.is_empty() { "/" } else { &app.base }
}

/// Every request, before its handler: the Host, the origin of a POST, the
/// token (its grant), the session. Assets are served to anyone on a served
/// Host; the login form to anyone, with a session of its own for its CSRF
/// token. Each request is logged on one line with its grant's name (never
/// the token).
pub(crate) async fn admit(State(app): State<App>, request: Request, next: Next) -> Response {
    let (method, path) = (request.method().clone(), request.uri().path().to_string());
    let (response, grant) = admit_and_run(&app, request, next).await;
    tracing::info!(
        grant = %grant.as_deref().unwrap_or("-"),
        %method,
        path = %format!("{}{path}", app.base),
        status = response.status().as_u16(),
        "request"
    );
    response
}

/// [`admit`]'s work: the response, and the name of the grant it was
/// served as (`None`: none, or refused before one was known).
async fn admit_and_run(app: &App, mut request: Request, next: Next) -> (Response, Option<String>) {
    if let Err(err) = check_host(&app.hosts, request.uri(), request.headers()) {
        return (err.respond_bare(app), None);
    }
    let path = request.uri().path();
    let asset = path.starts_with("/assets/");
    let login = path == "/login";
    let headers = request.headers();
    let found = session_cookie(headers).and_then(|id| app.sessions.find(id));
    let presented = request_grant(app.tokens.as_ref(), app.read_only, bearer(headers));
    let (proof, grant) = match (&app.tokens, presented) {
        (None, anonymous) => (Proof::Open, anonymous),
        (Some(_), Some(grant)) => (Proof::Bearer, Some(grant)),
        (Some(_), None) => match found.as_ref().and_then(|s| s.grant.clone()) {
            Some(grant) => (Proof::Session, Some(grant)),
            None if asset || login => (Proof::Open, None),
            None => return (unauthorized(app, client(&request), found).await, None),
        },
    };
    if let Err(err) = check_origin(&app.hosts, request.method(), request.headers(), proof) {
        return (err.respond_bare(app), None);
    }
    // A browser without a session gets one (scripts and assets need none).
    let (session, fresh) = match found {
        Some(session) => (Some(session), false),
        None if proof == Proof::Bearer || asset => (None, false),
        None => (Some(app.sessions.start(None)), true),
    };
    let name = grant.as_ref().map(|g| g.name.clone());
    let caller = Caller {
        proof,
        grant,
        session: session.clone(),
        client: client(&request),
    };
    request.extensions_mut().insert(caller.clone());
    let mut response = caller::as_caller(caller, next.run(request)).await;
    if let (true, Some(session)) = (fresh, &session) {
        give_cookie(app, &mut response, session);
    }
    (response, name)
}

/// 401 and the login form, with a session for its CSRF token.
async fn unauthorized(app: &App, client: Option<IpAddr>, found: Option<Current>) -> Response {
    let session = found.unwrap_or_else(|| app.sessions.start(None));
    let caller = Caller {
        proof: Proof::Open,
        grant: None,
        session: Some(session.clone()),
        client,
    };
    let form = caller::as_caller(caller, async { login_page(app, None) }).await;
    let mut response = (StatusCode::UNAUTHORIZED, form).into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"emq dashboard\""),
    );
    give_cookie(app, &mut response, &session);
    response
}

/// Refuses (421) a request whose `Host` (or, over HTTP/2, authority)
/// is not served.
pub(crate) fn check_host(hosts: &Hosts, uri: &Uri, headers: &HeaderMap) -> Result<(), PageError> {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| uri.authority().map(|a| a.as_str()));
    match host {
        Some(host) if hosts.admit(host) => Ok(()),
        Some(host) => Err(PageError::Misdirected(format!(
            "this dashboard does not serve the host {host:?} (a name it does not know may be \
             a DNS rebinding attack); `emq dashboard --allow-host NAME` serves another name"
        ))),
        None => Err(PageError::Misdirected(
            "the request names no host (a Host header)".into(),
        )),
    }
}

/// Refuses (403) a POST from an origin this dashboard does not serve:
/// its `Origin`, or lacking one its `Referer`; a POST that names
/// neither passes only with a bearer token.
fn check_origin(
    hosts: &Hosts,
    method: &Method,
    headers: &HeaderMap,
    proof: Proof,
) -> Result<(), PageError> {
    if method == Method::GET || method == Method::HEAD {
        return Ok(());
    }
    let named = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let (what, value) = match (named(header::ORIGIN), named(header::REFERER)) {
        (Some(origin), _) => ("Origin", origin),
        (None, Some(referer)) => ("Referer", referer),
        (None, None) if proof == Proof::Bearer => return Ok(()),
        (None, None) => {
            return Err(PageError::Forbidden(
                "the form names no Origin or Referer: a browser always sends one".into(),
            ));
        }
    };
    let authority = value
        .parse::<Uri>()
        .ok()
        .filter(|uri| matches!(uri.scheme_str(), Some("http" | "https")))
        .and_then(|uri| uri.authority().map(|a| a.as_str().to_string()));
    let host = named(header::HOST);
    match authority {
        Some(authority) if hosts.same_origin(&authority, host) => Ok(()),
        _ => Err(PageError::Forbidden(format!(
            "the form came from {value:?} ({what}), a page this dashboard does not serve"
        ))),
    }
}

fn client(request: &Request) -> Option<IpAddr> {
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip())
}

fn give_cookie(app: &App, response: &mut Response, session: &Current) {
    if let Ok(value) = HeaderValue::from_str(&set_cookie(app, &session.id)) {
        response.headers_mut().append(header::SET_COOKIE, value);
    }
}

/// Refuses a POST whose CSRF token is missing or not its session's (403),
/// unless it came with `Authorization: Bearer`.
pub(crate) fn check_csrf(
    caller: &Caller,
    headers: &HeaderMap,
    fields: &[(String, String)],
) -> Result<(), PageError> {
    if caller.proof == Proof::Bearer {
        return Ok(());
    }
    let mut given = fields
        .iter()
        .filter(|(name, _)| name == CSRF_FIELD)
        .map(|(_, value)| value.as_str())
        .chain(
            headers
                .get_all(CSRF_HEADER)
                .iter()
                .filter_map(|v| v.to_str().ok()),
        );
    let (first, second) = (given.next(), given.next());
    let Some(session) = &caller.session else {
        return Err(PageError::Forbidden(
            "the form's session has ended (reload the page)".into(),
        ));
    };
    match (first, second) {
        (Some(_), Some(_)) => Err(PageError::Forbidden(
            "the form carries more than one CSRF token".into(),
        )),
        (Some(given), None) if same(given.as_bytes(), session.csrf.as_bytes()) => Ok(()),
        (Some(_), None) => Err(PageError::Forbidden(
            "the form's CSRF token is wrong (reload the page)".into(),
        )),
        (None, _) => Err(PageError::Forbidden(
            "the form carries no CSRF token".into(),
        )),
    }
}

fn login_page(app: &App, wrong: Option<&str>) -> maud::Markup {
    layout::bare(
        app,
        "Sign in",
        html! {
            form.login method="post" action=(app.href("/login")) {
                h1 { "EchoMQ" }
                @if let Some(wrong) = wrong { p.refused role="alert" { (wrong) } }
                label for="token" { "Token" }
                input id="token" type="password" name="token" autocomplete="current-password" autofocus;
                (layout::csrf())
                button.primary type="submit" { "Sign in" }
            }
        },
    )
}

/// `GET /login`.
pub(crate) async fn login_form(State(app): State<App>) -> maud::Markup {
    login_page(&app, None)
}

/// The login form's fields.
#[derive(Debug, Deserialize)]
pub(crate) struct Login {
    token: String,
    #[serde(rename = "_csrf", default)]
    csrf: String,
}

/// `POST /login`: a token of the dashboard's starts a session signed in
/// with its grant (a new id: the one the form came with ends; the session
/// keeps the grant, never the token) and goes to the queues. Wrong tokens
/// from one address are throttled (429).
pub(crate) async fn login(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    Form(login): Form<Login>,
) -> Response {
    let fields = [(CSRF_FIELD.to_string(), login.csrf)];
    if let Err(err) = check_csrf(&caller, &HeaderMap::new(), &fields) {
        return err.respond(&app, &app.href("/login"));
    }
    let Some(tokens) = &app.tokens else {
        return Redirect::to(&app.href("/")).into_response();
    };
    if let Some(wait) = app.throttle.wait(caller.client) {
        let seconds = wait.as_secs().max(1);
        let words = format!("too many wrong tokens from your address: try again in {seconds} s");
        let mut response = (
            StatusCode::TOO_MANY_REQUESTS,
            login_page(&app, Some(&words)),
        )
            .into_response();
        if let Ok(value) = HeaderValue::from_str(&seconds.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
        return response;
    }
    let Some(grant) = tokens.grant_for(login.token.trim()) else {
        app.throttle.failed(caller.client);
        return (
            StatusCode::UNAUTHORIZED,
            login_page(&app, Some("wrong token")),
        )
            .into_response();
    };
    app.throttle.succeeded(caller.client);
    if let Some(old) = &caller.session {
        app.sessions.end(&old.id);
    }
    tracing::info!(grant = %grant.name, "signed in");
    let session = app.sessions.start(Some(grant));
    (
        [(header::SET_COOKIE, set_cookie(&app, &session.id))],
        Redirect::to(&app.href("/")),
    )
        .into_response()
}

/// `POST /logout`: ends the session on the server and in the browser.
pub(crate) async fn logout(
    State(app): State<App>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Form(fields): Form<Vec<(String, String)>>,
) -> Response {
    if let Err(err) = check_csrf(&caller, &headers, &fields) {
        return err.respond(&app, &app.href("/"));
    }
    if let Some(session) = &caller.session {
        app.sessions.end(&session.id);
    }
    (
        [(header::SET_COOKIE, clear_cookie(&app))],
        Redirect::to(&app.href("/login")),
    )
        .into_response()
}
