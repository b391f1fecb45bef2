//! [`PageError`]: what a page or an action answers when it cannot do what
//! was asked — the protocol's reason for a refusal, never a stack trace.

use crate::layout;
use crate::state::App;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;

/// Why a request could not be served.
#[derive(Debug)]
pub(crate) enum PageError {
    /// No such queue, job or page (404).
    NotFound(String),
    /// The input named is wrong (400).
    BadInput(String),
    /// Not allowed here: read-only, or a CSRF token missing or wrong (403).
    Forbidden(String),
    /// A `Host` this dashboard does not serve (421).
    Misdirected(String),
    /// The server refused the transition (409): the protocol's error line
    /// (`BADSTATE completed`) and the refusal in words.
    Refused { line: String, words: String },
    /// The server could not be read (503).
    Unavailable(String),
}

impl From<echomq::Error> for PageError {
    fn from(err: echomq::Error) -> Self {
        match &err {
            echomq::Error::Refused(refused) => PageError::Refused {
                line: refused.reason.line(),
                words: refused.to_string(),
            },
            echomq::Error::BadArgument { .. }
            | echomq::Error::Name(_)
            | echomq::Error::Payload(_) => PageError::BadInput(err.to_string()),
            _ => PageError::Unavailable(err.to_string()),
        }
    }
}

impl From<echomq::protocol::NameError> for PageError {
    fn from(err: echomq::protocol::NameError) -> Self {
        PageError::BadInput(err.to_string())
    }
}

impl PageError {
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            PageError::NotFound(_) => StatusCode::NOT_FOUND,
            PageError::BadInput(_) => StatusCode::BAD_REQUEST,
            PageError::Forbidden(_) => StatusCode::FORBIDDEN,
            PageError::Misdirected(_) => StatusCode::MISDIRECTED_REQUEST,
            PageError::Refused { .. } => StatusCode::CONFLICT,
            PageError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    pub(crate) fn message(&self) -> &str {
        match self {
            PageError::NotFound(m)
            | PageError::BadInput(m)
            | PageError::Forbidden(m)
            | PageError::Misdirected(m)
            | PageError::Refused { words: m, .. }
            | PageError::Unavailable(m) => m,
        }
    }

    /// The answer: the status and a page saying why, with a way back.
    pub(crate) fn respond(self, app: &App, back: &str) -> Response {
        let title = self.title();
        let body = html! {
            h1 { (title) }
            p.refused role="alert" {
                @if let PageError::Refused { line, .. } = &self { code.reason { (line) } ": " }
                (self.message())
            }
            p { a href=(back) { "Back" } }
        };
        (self.status(), layout::page(app, title, None, body)).into_response()
    }

    /// The answer before the request is admitted (a wrong Host, a foreign
    /// origin): the status and why, with no navigation and no form.
    pub(crate) fn respond_bare(self, app: &App) -> Response {
        let title = self.title();
        let body = html! {
            h1 { (title) }
            p.refused role="alert" { (self.message()) }
        };
        (self.status(), layout::bare(app, title, body)).into_response()
    }

    fn title(&self) -> &'static str {
        match self {
            PageError::NotFound(_) => "Not found",
            PageError::BadInput(_) => "Bad input",
            PageError::Forbidden(_) => "Forbidden",
            PageError::Misdirected(_) => "Wrong host",
            PageError::Refused { .. } => "Refused",
            PageError::Unavailable(_) => "Server unavailable",
        }
    }
}

/// What a page handler answers: the page, or why not.
pub(crate) type PageResult = Result<maud::Markup, PageError>;
