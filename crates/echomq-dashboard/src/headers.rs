//! The headers every answer carries: a content security policy that runs
//! only the dashboard's own scripts and styles and lets no page frame it,
//! no MIME sniffing, no referrer to other origins (`same-origin`: under
//! `no-referrer` a browser sends `Origin: null` with the dashboard's own
//! forms, which the origin check would refuse); and `Cache-Control: no-store` on every
//! answer but the vendored assets, so no page of queues and payloads
//! stays in a shared or browser cache.

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

/// Only this origin's scripts, styles, images, live streams and forms; no
/// plugin, no frame around the page, no `<base>`.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; \
     frame-ancestors 'none'; base-uri 'none'";

const EVERY_ANSWER: [(HeaderName, &str); 4] = [
    (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
    (header::X_FRAME_OPTIONS, "DENY"),
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
    (header::REFERRER_POLICY, "same-origin"),
];

/// Adds the headers to every answer.
pub(crate) async fn secure(request: Request, next: Next) -> Response {
    let asset = request.uri().path().contains("/assets/");
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in EVERY_ANSWER {
        headers.insert(name, HeaderValue::from_static(value));
    }
    if !asset {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}
