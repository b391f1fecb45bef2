//! Just enough HTTP/1.1 for the example, on tokio alone: one request a
//! connection, its head read within a time limit and a size limit, the
//! answer sent with its length and `Connection: close`. A real service
//! would use a framework (the dashboard uses axum); this one keeps the
//! echomq crate's tests free of an HTTP stack.

use serde_json::Value;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The most a request's head (request line and headers) may take.
pub(crate) const MAX_HEAD: usize = 8 * 1024;

/// A request's line and the one header the example reads.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) method: String,
    /// The path and query: `/report?month=2026-11`.
    pub(crate) target: String,
    /// The `Host` header, lower case.
    pub(crate) host: Option<String>,
}

/// An answer: a status and a JSON body, and the job it is about.
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) body: Value,
    /// Sent as `Job-Id`.
    pub(crate) job: Option<String>,
}

impl Response {
    /// `status` with `body`.
    pub(crate) fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            body,
            job: None,
        }
    }

    /// `status` with `{"error": message}`.
    pub(crate) fn error(status: u16, message: impl Into<String>) -> Self {
        Self::json(status, serde_json::json!({ "error": message.into() }))
    }

    /// The answer about job `id`.
    pub(crate) fn about(mut self, id: &str) -> Self {
        self.job = Some(id.to_string());
        self
    }
}

/// Reads one request's head within `limit`. `Err(Some(answer))` for a
/// request refused before it is read whole (too slow: 408; too large:
/// 431; not HTTP/1.x: 400); `Err(None)` when the client went away.
pub(crate) async fn read_request(
    stream: &mut TcpStream,
    limit: Duration,
) -> Result<Request, Option<Response>> {
    let head = match tokio::time::timeout(limit, read_head(stream)).await {
        Err(_) => {
            let message = format!("no whole request within {} ms", limit.as_millis());
            return Err(Some(Response::error(408, message)));
        }
        Ok(head) => head?,
    };
    parse(&head).ok_or_else(|| Some(Response::error(400, "not an HTTP/1.1 request")))
}

/// The bytes up to the blank line that ends a head.
async fn read_head(stream: &mut TcpStream) -> Result<Vec<u8>, Option<Response>> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let end = head.windows(4).position(|w| w == b"\r\n\r\n");
        if let Some(end) = end.filter(|&end| end <= MAX_HEAD) {
            head.truncate(end);
            return Ok(head);
        }
        if head.len() > MAX_HEAD {
            let message = format!("the request's head is over {MAX_HEAD} bytes");
            return Err(Some(Response::error(431, message)));
        }
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return Err(None),
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
}

/// The request line and `Host` of a head; `None` when it is not HTTP/1.x.
fn parse(head: &[u8]) -> Option<Request> {
    let head = std::str::from_utf8(head).ok()?;
    let mut lines = head.split("\r\n");
    let mut line = lines.next()?.split(' ');
    let (method, target, version) = (line.next()?, line.next()?, line.next()?);
    if line.next().is_some() || !version.starts_with("HTTP/1.") {
        return None;
    }
    let host = lines.find_map(|header| {
        let (name, value) = header.split_once(':')?;
        name.eq_ignore_ascii_case("host")
            .then(|| value.trim().to_ascii_lowercase())
    });
    Some(Request {
        method: method.to_string(),
        target: target.to_string(),
        host,
    })
}

/// Sends `response` and closes the connection, within `limit`.
pub(crate) async fn write_response(stream: &mut TcpStream, response: &Response, limit: Duration) {
    let body = response.body.to_string();
    let job = match &response.job {
        Some(id) => format!("Job-Id: {id}\r\n"),
        None => String::new(),
    };
    let allow = if response.status == 405 {
        "Allow: GET\r\n"
    } else {
        ""
    };
    let head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\n{allow}{job}Connection: close\r\n\r\n",
        response.status,
        reason(response.status),
        body.len(),
    );
    let send = async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.shutdown().await?;
        // Until the client closes: closing with some of a refused
        // request unread would reset the connection, and the client
        // could lose the answer.
        let mut rest = [0u8; 1024];
        while stream.read(&mut rest).await? > 0 {}
        Ok::<_, std::io::Error>(())
    };
    // A client that does not read its answer, or does not close, loses it.
    let _ = tokio::time::timeout(limit, send).await;
}

/// The reason phrase of each status the example sends.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        410 => "Gone",
        421 => "Misdirected Request",
        431 => "Request Header Fields Too Large",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Internal Server Error",
    }
}
