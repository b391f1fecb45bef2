//! The HTTP API (docs/http.md) driven one request at a time through the
//! dashboard's router, against real servers on both wires.

mod access;
mod claim_wait;
mod complete_many;
mod controls;
mod enqueue;
mod enqueue_refusals;
mod events;
mod flows;
mod jobs;
mod reading;
mod repeats;
mod tokens;
mod work;
mod work_refusals;

use crate::common::Site;
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode, header};
use echomq_dashboard::Dashboard;
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

/// A client of the API: `Host: 127.0.0.1`, JSON bodies, and headers of
/// its own (`Authorization`, `Origin`, another `Content-Type`).
#[derive(Debug, Clone)]
pub(crate) struct Client {
    router: Router,
    headers: Vec<(String, String)>,
}

/// One answer: its status, headers and body as JSON (`Null` when empty,
/// a string when it is not JSON).
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Answer {
    /// Panics unless the status is `status`.
    #[track_caller]
    pub(crate) fn expect(self, status: StatusCode) -> Self {
        assert_eq!(self.status, status, "{}", self.body);
        self
    }

    /// Panics unless it is the error of `status` and `code`; the error.
    #[track_caller]
    pub(crate) fn refused(self, status: StatusCode, code: &str) -> Value {
        let answer = self.expect(status);
        assert_eq!(answer.body["error"]["code"], code, "{}", answer.body);
        answer.body["error"].clone()
    }
}

/// A client of the API of `site`'s dashboard, as `dashboard` sets it up.
pub(crate) fn client(site: &Site, dashboard: impl FnOnce(Dashboard) -> Dashboard) -> Client {
    Client {
        router: dashboard(Dashboard::new(site.connector.clone())).router(),
        headers: Vec::new(),
    }
}

impl Client {
    /// The same client with `name: value` on every request (replacing
    /// its own `host` or `content-type`).
    pub(crate) fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// `method path` without a body: the answer's status and headers,
    /// its body left open (a stream).
    pub(crate) async fn open_with(
        &self,
        method: &str,
        path: &str,
    ) -> (StatusCode, HeaderMap, Body) {
        let mut request = Request::builder().method(method).uri(path);
        request = request.header(header::HOST, "127.0.0.1");
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        let request = request.body(Body::empty()).unwrap();
        let response = self.router.clone().oneshot(request).await.unwrap();
        let (parts, body) = response.into_parts();
        (parts.status, parts.headers, body)
    }

    /// `GET path`: the answer's status, its body left open (a stream).
    pub(crate) async fn open(&self, path: &str) -> (StatusCode, Body) {
        let (status, _, body) = self.open_with("GET", path).await;
        (status, body)
    }

    /// `method path` with `body` as it is (none when empty), JSON unless a
    /// `content-type` header was given.
    pub(crate) async fn send(&self, method: &str, path: &str, body: &str) -> Answer {
        let mut request = Request::builder().method(method).uri(path);
        let has = |name: &str| {
            self.headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        if !has("host") {
            request = request.header(header::HOST, "127.0.0.1");
        }
        if !body.is_empty() && !has("content-type") {
            request = request.header(header::CONTENT_TYPE, "application/json");
        }
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        let request = request.body(Body::from(body.to_string())).unwrap();
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body = match bytes.is_empty() {
            true => Value::Null,
            false => serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned())),
        };
        Answer {
            status,
            headers,
            body,
        }
    }

    /// `GET path`.
    pub(crate) async fn get(&self, path: &str) -> Answer {
        self.send("GET", path, "").await
    }

    /// `POST path` with `body` as JSON.
    pub(crate) async fn post(&self, path: &str, body: &Value) -> Answer {
        self.send("POST", path, &body.to_string()).await
    }
}
