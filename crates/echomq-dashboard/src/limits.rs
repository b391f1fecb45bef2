//! A request's body is read whole before its handler runs, within
//! [`BODY_WAIT`] (408 otherwise, [`Dashboard::body_wait`]) and up to
//! [`BODY_MOST`] bytes (413 otherwise): a client that sends its body
//! slowly holds nothing for long. A body over the limit is read on and
//! thrown away, up to [`DRAIN_MOST`] more bytes within the same wait,
//! before the 413 is sent: a client that writes its whole body before it
//! reads would otherwise meet a reset instead of the answer. The
//! connection's own limits (headers, idle, how many) are
//! [`crate::serve`]'s.
//!
//! [`Dashboard::body_wait`]: crate::Dashboard::body_wait

use crate::state::App;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use std::time::Duration;

/// The longest a request's body may take to arrive, unless
/// [`Dashboard::body_wait`](crate::Dashboard::body_wait) says otherwise.
pub const BODY_WAIT: Duration = Duration::from_secs(10);
/// The largest body a request may send (a form of every selected job id
/// is a few KiB).
pub const BODY_MOST: usize = 1 << 20;
/// The largest body an API request may send unless
/// [`Dashboard::max_body`](crate::Dashboard::max_body) says otherwise.
pub const API_BODY_MOST: usize = 1 << 20;
/// How much of a body past its limit is read and thrown away before the
/// 413 is sent (past it, the connection is closed after the answer).
pub const DRAIN_MOST: usize = 64 << 20;

/// What reading a body within its limits came to.
pub(crate) enum BodyRead {
    /// The body, whole.
    Whole(Bytes),
    /// Over the limit, or broken off by the client.
    TooLarge,
    /// Not whole within the wait.
    Late,
}

/// Whether `headers` announce a body over `most` and wait for
/// `100 Continue` before sending it: then it is refused unread, and the
/// client sends none of it.
pub(crate) fn announced_too_large(headers: &HeaderMap, most: usize) -> bool {
    let expects_continue = headers
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    expects_continue && length.is_some_and(|length| length > most)
}

/// Reads `body` whole within `wait`, up to `most` bytes; past `most`,
/// reads on and throws away up to [`DRAIN_MOST`] more bytes, within the
/// same wait, so that the 413 reaches a client still writing. A body
/// [`announced_too_large`] by `headers` is refused unread.
pub(crate) async fn read_within(
    headers: &HeaderMap,
    body: Body,
    most: usize,
    wait: Duration,
) -> BodyRead {
    if announced_too_large(headers, most) {
        return BodyRead::TooLarge;
    }
    let deadline = tokio::time::Instant::now() + wait;
    let mut chunks = body.into_data_stream();
    let mut kept = Vec::new();
    let mut seen = 0usize;
    loop {
        let over = seen > most;
        match tokio::time::timeout_at(deadline, chunks.next()).await {
            Ok(None) if !over => return BodyRead::Whole(Bytes::from(kept)),
            Ok(Some(Ok(chunk))) => {
                seen = seen.saturating_add(chunk.len());
                if seen <= most {
                    kept.extend_from_slice(&chunk);
                } else if seen > most.saturating_add(DRAIN_MOST) {
                    return BodyRead::TooLarge;
                } else {
                    kept = Vec::new();
                }
            }
            Err(_) if !over => return BodyRead::Late,
            Ok(None) | Ok(Some(Err(_))) | Err(_) => return BodyRead::TooLarge,
        }
    }
}

/// `wait` in words: `10 s`, `250 ms`.
pub(crate) fn in_words(wait: Duration) -> String {
    match wait.subsec_millis() {
        0 => format!("{} s", wait.as_secs()),
        _ => format!("{} ms", wait.as_millis()),
    }
}

/// Reads the body whole, within the limits, before the handler.
pub(crate) async fn read_body(State(app): State<App>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = match read_within(&parts.headers, body, BODY_MOST, app.body_wait).await {
        BodyRead::Whole(bytes) => bytes,
        BodyRead::TooLarge => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the request's body is over {BODY_MOST} bytes, or broke off\n"),
            )
                .into_response();
        }
        BodyRead::Late => {
            return (
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request's body did not arrive within {}\n",
                    in_words(app.body_wait)
                ),
            )
                .into_response();
        }
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::stream;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A body of `chunks`, then (when `stalls`) one that never ends.
    fn body(chunks: Vec<Vec<u8>>, stalls: bool) -> Body {
        let sent = stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
        match stalls {
            true => Body::from_stream(sent.chain(stream::pending())),
            false => Body::from_stream(sent),
        }
    }

    const WAIT: Duration = Duration::from_millis(200);

    #[tokio::test]
    async fn a_body_within_the_limit_is_read_whole() {
        let read = read_within(
            &HeaderMap::new(),
            body(vec![b"ab".to_vec(), b"c".to_vec()], false),
            3,
            WAIT,
        )
        .await;
        assert!(matches!(read, BodyRead::Whole(bytes) if bytes == "abc"));
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_read_to_its_end_then_refused() {
        let read_chunks = Arc::new(AtomicUsize::new(0));
        let counter = read_chunks.clone();
        let chunks = stream::iter(vec![vec![0u8; 1024]; 64]).map(move |chunk| {
            counter.fetch_add(1, Ordering::Relaxed);
            Ok::<_, std::io::Error>(chunk)
        });
        let read = read_within(&HeaderMap::new(), Body::from_stream(chunks), 10, WAIT).await;
        assert!(matches!(read, BodyRead::TooLarge));
        assert_eq!(read_chunks.load(Ordering::Relaxed), 64);
    }

    #[tokio::test]
    async fn a_body_over_the_limit_and_the_drain_is_refused_before_its_end() {
        // Past the limit and DRAIN_MOST, the body is left unread: the
        // stream that would never end does not hold the answer back.
        let chunks = vec![vec![0u8; 1 << 20]; (DRAIN_MOST >> 20) + 2];
        let headers = HeaderMap::new();
        let reading = read_within(&headers, body(chunks, true), 10, Duration::from_secs(600));
        let read = tokio::time::timeout(Duration::from_secs(30), reading)
            .await
            .expect("refused without waiting out the body's wait");
        assert!(matches!(read, BodyRead::TooLarge));
    }

    #[test]
    fn only_a_body_announced_over_the_limit_awaiting_100_continue_is_refused_unread() {
        let headers = |pairs: &[(header::HeaderName, &str)]| {
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.insert(name.clone(), value.parse().unwrap());
            }
            headers
        };
        let expect = (header::EXPECT, "100-Continue");
        let over = (header::CONTENT_LENGTH, "11");
        assert!(announced_too_large(
            &headers(&[expect.clone(), over.clone()]),
            10
        ));
        assert!(!announced_too_large(&headers(&[over]), 10));
        let within = (header::CONTENT_LENGTH, "10");
        assert!(!announced_too_large(
            &headers(&[expect.clone(), within]),
            10
        ));
        assert!(!announced_too_large(&headers(&[expect]), 10));
    }

    #[tokio::test]
    async fn a_body_that_stalls_within_the_limit_is_late() {
        let read = read_within(&HeaderMap::new(), body(vec![b"a".to_vec()], true), 10, WAIT).await;
        assert!(matches!(read, BodyRead::Late));
    }

    #[tokio::test]
    async fn a_body_that_stalls_past_the_limit_is_too_large_not_late() {
        let read = read_within(&HeaderMap::new(), body(vec![vec![0u8; 20]], true), 10, WAIT).await;
        assert!(matches!(read, BodyRead::TooLarge));
    }
}
