//! A request's body is read whole before its handler runs, within
//! [`BODY_WAIT`] (408 otherwise) and up to [`BODY_MOST`] bytes (413
//! otherwise): a client that sends its body slowly holds nothing for
//! long. The connection's own limits (headers, idle, how many) are
//! [`crate::serve`]'s.

use axum::body::{Body, to_bytes};
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::time::Duration;

/// The longest a request's body may take to arrive.
pub const BODY_WAIT: Duration = Duration::from_secs(10);
/// The largest body a request may send (a form of every selected job id
/// is a few KiB).
pub const BODY_MOST: usize = 1 << 20;
/// The largest body an API request may send unless
/// [`Dashboard::max_body`](crate::Dashboard::max_body) says otherwise.
pub const API_BODY_MOST: usize = 1 << 20;

/// Reads the body whole, within the limits, before the handler.
pub(crate) async fn read_body(request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = match tokio::time::timeout(BODY_WAIT, to_bytes(body, BODY_MOST)).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(_)) => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request's body is over {BODY_MOST} bytes, or broke off\n"),
            )
                .into_response();
        }
        Err(_) => {
            return (
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request's body did not arrive within {} s\n",
                    BODY_WAIT.as_secs()
                ),
            )
                .into_response();
        }
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}
