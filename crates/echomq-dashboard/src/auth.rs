//! The token (401 without it: a login form sets a cookie, scripts send
//! `Authorization: Bearer`) and the CSRF token every POST carries.

use crate::layout;
use crate::state::App;
use axum::Form;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;

/// The cookie the login form sets: the token, hex-encoded.
const COOKIE: &str = "emq_dashboard";
/// The form field, and the header for scripts, that carry the CSRF token.
pub(crate) const CSRF_FIELD: &str = "_csrf";
/// The header form of the CSRF token.
pub(crate) const CSRF_HEADER: &str = "x-csrf-token";
/// Random bytes in a fresh CSRF token.
const SECRET_BYTES: usize = 24;

/// A fresh random secret, hex-encoded (the process's CSRF token).
pub(crate) fn new_secret() -> String {
    let mut bytes = [0u8; SECRET_BYTES];
    getrandom::fill(&mut bytes).expect("the operating system's random source");
    hex(bytes.as_slice())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

/// Equal in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// How a request proved it holds the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Proof {
    /// No token is set.
    Open,
    /// The login cookie (a browser: its POSTs need the CSRF token).
    Cookie,
    /// `Authorization: Bearer` (a script: no CSRF token needed, a browser
    /// never sends this header by itself).
    Bearer,
}

fn proof(app: &App, headers: &HeaderMap) -> Option<Proof> {
    let Some(token) = &app.token else {
        return Some(Proof::Open);
    };
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if bearer.is_some_and(|given| same(given.trim().as_bytes(), token.as_bytes())) {
        return Some(Proof::Bearer);
    }
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .and_then(|(_, value)| unhex(value));
    cookie
        .is_some_and(|given| same(&given, token.as_bytes()))
        .then_some(Proof::Cookie)
}

/// Lets a request through when it holds the token (or none is set), and
/// the login form and assets always; answers 401 with the login form
/// otherwise.
pub(crate) async fn require_token(
    State(app): State<App>,
    mut request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    let open = path == "/login" || path.starts_with("/assets/");
    match proof(&app, request.headers()) {
        Some(proof) => {
            request.extensions_mut().insert(proof);
            next.run(request).await
        }
        None if open => {
            request.extensions_mut().insert(Proof::Open);
            next.run(request).await
        }
        None => {
            let mut response = (StatusCode::UNAUTHORIZED, login_page(&app, None)).into_response();
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"emq dashboard\""),
            );
            response
        }
    }
}

/// Refuses a POST whose CSRF token is missing or wrong (403), unless it
/// came with `Authorization: Bearer`.
pub(crate) fn check_csrf(
    app: &App,
    proof: Proof,
    headers: &HeaderMap,
    fields: &[(String, String)],
) -> Result<(), crate::error::PageError> {
    if proof == Proof::Bearer {
        return Ok(());
    }
    let given = fields
        .iter()
        .find(|(name, _)| name == CSRF_FIELD)
        .map(|(_, value)| value.as_str())
        .or_else(|| headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()));
    match given {
        Some(given) if same(given.as_bytes(), app.csrf.as_bytes()) => Ok(()),
        Some(_) => Err(crate::error::PageError::Forbidden(
            "the form's CSRF token is wrong (reload the page)".into(),
        )),
        None => Err(crate::error::PageError::Forbidden(
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
                input type="hidden" name=(CSRF_FIELD) value=(app.csrf);
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

/// `POST /login`: the right token sets the cookie and goes to the queues.
pub(crate) async fn login(State(app): State<App>, Form(login): Form<Login>) -> Response {
    if !same(login.csrf.as_bytes(), app.csrf.as_bytes()) {
        return (
            StatusCode::FORBIDDEN,
            login_page(
                &app,
                Some("the form's CSRF token is wrong (reload the page)"),
            ),
        )
            .into_response();
    }
    let Some(token) = &app.token else {
        return Redirect::to(&app.href("/")).into_response();
    };
    if !same(login.token.as_bytes(), token.as_bytes()) {
        return (
            StatusCode::UNAUTHORIZED,
            login_page(&app, Some("wrong token")),
        )
            .into_response();
    }
    let cookie = format!(
        "{COOKIE}={}; Path={}; HttpOnly; SameSite=Strict",
        hex(token.as_bytes()),
        cookie_path(&app)
    );
    ([(header::SET_COOKIE, cookie)], Redirect::to(&app.href("/"))).into_response()
}

/// `POST /logout`: forgets the cookie.
pub(crate) async fn logout(State(app): State<App>) -> Response {
    let cookie = format!(
        "{COOKIE}=; Path={}; HttpOnly; SameSite=Strict; Max-Age=0",
        cookie_path(&app)
    );
    (
        [(header::SET_COOKIE, cookie)],
        Redirect::to(&app.href("/login")),
    )
        .into_response()
}

fn cookie_path(app: &App) -> &str {
    if app.base.is_empty() { "/" } else { &app.base }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_refuses_odd_or_non_hex_text() {
        assert_eq!(unhex(&hex(b"t0k\xff")), Some(b"t0k\xff".to_vec()));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
    }

    #[test]
    fn same_compares_whole_values() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"ab"));
    }

    #[test]
    fn secrets_are_fresh() {
        assert_ne!(new_secret(), new_secret());
        assert_eq!(new_secret().len(), 2 * SECRET_BYTES);
    }
}
