//! [`ApiError`]: every refusal of the API in one shape (docs/http.md,
//! "Errors"): `{"error": {"code", "message", "field"?, "job"?, "state"?,
//! "line"?}}` with the status of the table there.

use crate::error::PageError;
use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use echomq::protocol::Refusal;
use serde::Serialize;
use utoipa::ToSchema;

/// Why an API request was not served, and what to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub(crate) status: StatusCode,
    /// Boxed: every handler's `Result` carries it.
    pub(crate) detail: Box<ErrorDetail>,
}

/// The body of every error answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub(crate) struct ErrorBody {
    pub(crate) error: ErrorDetail,
}

/// What was refused, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub(crate) struct ErrorDetail {
    /// A protocol refusal code (`BADSTATE`, `NOTACTIVE`, `NOJOB`, …) or
    /// the HTTP layer's own (`BADREQUEST`, `UNAUTHORIZED`, `FORBIDDEN`,
    /// `NOTFOUND`, `TOOLARGE`, `UNSUPPORTED`, `UNAVAILABLE`, …).
    pub(crate) code: String,
    /// What was wrong, in words.
    pub(crate) message: String,
    /// The field or query parameter that was wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) field: Option<String>,
    /// The job concerned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) job: Option<String>,
    /// The state the server found the job in (`BADSTATE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) state: Option<String>,
    /// The protocol's error line (`BADSTATE completed`), for a refusal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) line: Option<String>,
}

impl ApiError {
    /// An error of `status` and `code` saying `message`.
    pub(crate) fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            detail: Box::new(ErrorDetail {
                code: code.into(),
                message: message.into(),
                field: None,
                job: None,
                state: None,
                line: None,
            }),
        }
    }

    /// 400 `BADREQUEST`: input the API cannot take.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "BADREQUEST", message)
    }

    /// 401 `UNAUTHORIZED`.
    pub(crate) fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", message)
    }

    /// 403 `FORBIDDEN`.
    pub(crate) fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "FORBIDDEN", message)
    }

    /// 404 `NOTFOUND`.
    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "NOTFOUND", message)
    }

    /// 404 `NOJOB`: no job `id` in `queue`.
    pub(crate) fn no_job(queue: &str, id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "NOJOB",
            format!("no job {id} in queue {queue}"),
        )
        .with_job(id)
    }

    /// 413 `TOOLARGE`: a body over `limit` bytes.
    pub(crate) fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "TOOLARGE",
            format!("the body is over {limit} bytes (--max-body)"),
        )
    }

    /// 415 `UNSUPPORTED`: a body that is not `application/json`.
    pub(crate) fn unsupported(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, "UNSUPPORTED", message)
    }

    /// The same error naming `field`.
    pub(crate) fn with_field(mut self, field: impl Into<String>) -> Self {
        self.detail.field = Some(field.into());
        self
    }

    /// The same error naming job `id`.
    pub(crate) fn with_job(mut self, id: impl Into<String>) -> Self {
        self.detail.job = Some(id.into());
        self
    }
}

impl From<echomq::Error> for ApiError {
    fn from(err: echomq::Error) -> Self {
        let message = err.to_string();
        match err {
            echomq::Error::Refused(refused) => {
                let status = match &refused.reason {
                    Refusal::NoJob => StatusCode::NOT_FOUND,
                    Refusal::BadArg(_) | Refusal::Syntax(_) => StatusCode::BAD_REQUEST,
                    _ => StatusCode::CONFLICT,
                };
                let mut error = Self::new(status, refused.reason.code(), message);
                error.detail.job = refused.job.as_ref().map(|id| id.as_str().to_string());
                error.detail.state = refused.found().map(|state| state.as_str().to_string());
                error.detail.line = Some(refused.reason.line());
                error
            }
            echomq::Error::BadArgument { name, .. } => {
                Self::new(StatusCode::BAD_REQUEST, "BADARG", message).with_field(name)
            }
            echomq::Error::Name(_) | echomq::Error::Payload(_) => {
                Self::new(StatusCode::BAD_REQUEST, "BADARG", message)
            }
            err if err.is_transient() => {
                Self::new(StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE", message)
            }
            echomq::Error::Redis(_) | echomq::Error::Auth(_) | echomq::Error::ModuleMissing(_) => {
                Self::new(StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE", message)
            }
            _ => Self::new(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL", message),
        }
    }
}

impl From<echomq::protocol::NameError> for ApiError {
    fn from(err: echomq::protocol::NameError) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "BADARG", err.to_string())
    }
}

impl From<PageError> for ApiError {
    /// The checks the API shares with the pages (the Host).
    fn from(err: PageError) -> Self {
        let code = match err.status() {
            StatusCode::MISDIRECTED_REQUEST => "MISDIRECTED",
            StatusCode::FORBIDDEN => "FORBIDDEN",
            StatusCode::NOT_FOUND => "NOTFOUND",
            StatusCode::BAD_REQUEST => "BADREQUEST",
            _ => "UNAVAILABLE",
        };
        Self::new(err.status(), code, err.message())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let unauthorized = self.status == StatusCode::UNAUTHORIZED;
        let mut response = (
            self.status,
            Json(ErrorBody {
                error: *self.detail,
            }),
        )
            .into_response();
        if unauthorized {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"emq api\""),
            );
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use echomq::protocol::Refused;
    use echomq::{JobId, JobState, Transition};

    fn refused(reason: Refusal) -> ApiError {
        echomq::Error::Refused(Refused {
            job: Some(JobId::new("42").unwrap()),
            transition: Transition::Reprocess,
            reason,
        })
        .into()
    }

    #[test]
    fn a_refused_transition_is_409_with_its_code_job_state_and_line() {
        let error = refused(Refusal::BadState(JobState::Completed));
        assert_eq!(error.status, StatusCode::CONFLICT);
        let detail = &error.detail;
        assert_eq!(detail.code, "BADSTATE");
        assert_eq!(detail.job.as_deref(), Some("42"));
        assert_eq!(detail.state.as_deref(), Some("completed"));
        assert_eq!(detail.line.as_deref(), Some("BADSTATE completed"));
        assert!(detail.message.contains("completed"), "{detail:?}");
        assert_eq!(refused(Refusal::NotActive).status, StatusCode::CONFLICT);
    }

    #[test]
    fn nojob_is_404_and_an_argument_refusal_400() {
        let error = refused(Refusal::NoJob);
        assert_eq!(
            (error.status, error.detail.code.as_str()),
            (StatusCode::NOT_FOUND, "NOJOB")
        );
        let error = refused(Refusal::BadArg("priority".into()));
        assert_eq!(
            (error.status, error.detail.code.as_str()),
            (StatusCode::BAD_REQUEST, "BADARG")
        );
    }
}
