//! The dashboard's handler tests: its router driven one request at a time
//! (no browser, no socket) against real servers, on wire 4 and, with the
//! module loaded, wire 6.

#![allow(dead_code)]

mod log;

pub(crate) use log::Captured;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use echomq::{Connector, Queue, Wire};
use echomq_dashboard::Dashboard;
use echomq_testkit::{ServerBinary, TestServer, module_path};
use http_body_util::BodyExt;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use tower::ServiceExt;

/// The Host every request names unless a test sets another, and the
/// origin of its POSTs: one the dashboard serves.
pub(crate) const SERVED: &str = "http://127.0.0.1";

/// A real server and a connector to it on one wire.
pub(crate) struct Site {
    pub server: TestServer,
    pub wire: Wire,
    pub connector: Connector,
}

impl Site {
    /// A server on `wire` (the module loaded for wire 6).
    pub(crate) async fn start(wire: Wire) -> Self {
        let server = match wire {
            Wire::Script => TestServer::start(),
            Wire::Native => {
                TestServer::with_config(ServerBinary::locate().unwrap(), false, vec![module_path()])
            }
        };
        let connector = Connector::builder(server.url())
            .wire(wire)
            .connect()
            .await
            .unwrap();
        Self {
            server,
            wire,
            connector,
        }
    }

    /// Queue `name` of this site.
    pub(crate) fn queue(&self, name: &str) -> Queue<Value> {
        self.connector.queue(name).unwrap()
    }

    /// A browser of the dashboard of this site, as `dashboard` sets it up.
    pub(crate) fn browse(&self, dashboard: impl FnOnce(Dashboard) -> Dashboard) -> Browser {
        Browser {
            router: dashboard(Dashboard::new(self.connector.clone())).router(),
            headers: Vec::new(),
            jar: Arc::default(),
            origin: Some(SERVED.to_string()),
            client: None,
        }
    }

    /// A browser of the default dashboard (writable, no token, at `/`).
    pub(crate) fn dashboard(&self) -> Browser {
        self.browse(|d| d)
    }
}

/// Runs `test` once on wire 4 and once on wire 6, each on a fresh server.
pub(crate) async fn on_both_wires<F, Fut>(test: F)
where
    F: Fn(Site) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for wire in [Wire::Script, Wire::Native] {
        test(Site::start(wire).await).await;
    }
}

/// One answer: status, headers, body as text, and the browser that got it.
#[derive(Debug)]
pub(crate) struct Page {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: String,
    pub via: Browser,
}

impl Page {
    /// The page's CSRF token (the value of its first `_csrf` field).
    pub(crate) fn csrf(&self) -> String {
        let at = self
            .body
            .find(r#"name="_csrf" value=""#)
            .unwrap_or_else(|| panic!("no CSRF field in:\n{}", self.body));
        let rest = &self.body[at + r#"name="_csrf" value=""#.len()..];
        rest[..rest.find('"').unwrap()].to_string()
    }

    /// Where a redirect goes.
    pub(crate) fn location(&self) -> &str {
        self.headers
            .get(header::LOCATION)
            .unwrap_or_else(|| panic!("no Location ({}): {}", self.status, self.body))
            .to_str()
            .unwrap()
    }

    /// The notice the page a redirect goes to shows, as the same browser
    /// (its session) sees it.
    pub(crate) async fn notice(&self) -> String {
        let page = self.via.get(self.location()).await.expect(StatusCode::OK);
        let start = r#"<p class="notice" role="status">"#;
        let at = page
            .body
            .find(start)
            .unwrap_or_else(|| panic!("no notice at {}:\n{}", self.location(), page.body));
        let rest = &page.body[at + start.len()..];
        rest[..rest.find("</p>").unwrap()]
            .replace("&quot;", "\"")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
    }

    /// Panics unless the status is `status`.
    #[track_caller]
    pub(crate) fn expect(self, status: StatusCode) -> Self {
        assert_eq!(self.status, status, "{}", self.body);
        self
    }
}

/// Sends requests to the dashboard's router as a browser would: `Host:
/// 127.0.0.1`, the session cookie the dashboard last gave it, an `Origin`
/// on every POST; and headers of its own (a cookie, `Authorization`).
#[derive(Debug, Clone)]
pub(crate) struct Browser {
    pub router: Router,
    pub headers: Vec<(String, String)>,
    /// The session cookie (`emq_session=…`), as the last answer set it.
    pub jar: Arc<Mutex<Option<String>>>,
    /// The `Origin` of its POSTs (none when `None`).
    pub origin: Option<String>,
    /// The client address the server sees (none: not told).
    pub client: Option<std::net::SocketAddr>,
}

impl Browser {
    /// Adds a header to every request (a `host`, `cookie` or `origin` given
    /// here replaces the browser's own).
    pub(crate) fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// The same browser with its POSTs from `origin` (none: no `Origin`).
    pub(crate) fn with_origin(mut self, origin: Option<&str>) -> Self {
        self.origin = origin.map(str::to_string);
        self
    }

    /// The same browser, seen by the server as coming from `addr`.
    pub(crate) fn with_address(mut self, addr: &str) -> Self {
        self.client = Some(addr.parse().unwrap());
        self
    }

    /// Another browser of the same dashboard: its own session, no headers.
    pub(crate) fn stranger(&self) -> Browser {
        Browser {
            router: self.router.clone(),
            headers: Vec::new(),
            jar: Arc::default(),
            origin: Some(SERVED.to_string()),
            client: None,
        }
    }

    /// The session cookie the browser holds (`emq_session=…`).
    pub(crate) fn cookie(&self) -> Option<String> {
        self.jar.lock().unwrap().clone()
    }

    fn has(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    async fn send(&self, mut request: Request<Body>) -> Page {
        if !self.has("host") {
            request
                .headers_mut()
                .insert(header::HOST, "127.0.0.1".parse().unwrap());
        }
        if let Some(cookie) = self.cookie().filter(|_| !self.has("cookie")) {
            request
                .headers_mut()
                .insert(header::COOKIE, cookie.parse().unwrap());
        }
        let posts = request.method() == "POST" && !self.has("origin");
        if let Some(origin) = self.origin.as_ref().filter(|_| posts) {
            request
                .headers_mut()
                .insert(header::ORIGIN, origin.parse().unwrap());
        }
        if let Some(client) = self.client {
            request
                .extensions_mut()
                .insert(axum::extract::ConnectInfo(client));
        }
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        for set in headers.get_all(header::SET_COOKIE) {
            let pair = set.to_str().unwrap().split(';').next().unwrap().to_string();
            if let Some(("emq_session", value)) = pair.split_once('=') {
                *self.jar.lock().unwrap() = (!value.is_empty()).then_some(pair.clone());
            }
        }
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body = String::from_utf8_lossy(&bytes).into_owned();
        if let Some(tag) = repeated_attribute(&body) {
            panic!("an element repeats an attribute: {tag}");
        }
        Page {
            status,
            headers,
            body,
            via: self.clone(),
        }
    }

    fn request(&self, method: &str, path: &str) -> axum::http::request::Builder {
        let mut request = Request::builder().method(method).uri(path);
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        request
    }

    /// `GET path`.
    pub(crate) async fn get(&self, path: &str) -> Page {
        self.send(self.request("GET", path).body(Body::empty()).unwrap())
            .await
    }

    /// `POST path` with `fields` form-encoded, as given (no CSRF token
    /// added).
    pub(crate) async fn post_raw(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        let body = fields
            .iter()
            .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
            .collect::<Vec<_>>()
            .join("&");
        self.send(
            self.request("POST", path)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .body(Body::from(body))
                .unwrap(),
        )
        .await
    }

    /// `POST path` with `fields` and the CSRF token of this browser's
    /// session (read from the login form, which every session can see).
    pub(crate) async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        let csrf = self.get("/login").await.expect(StatusCode::OK).csrf();
        let mut all = vec![("_csrf", csrf.as_str())];
        all.extend_from_slice(fields);
        self.post_raw(path, &all).await
    }
}

/// The first start tag of `html` that gives an attribute twice (a browser
/// keeps only the first: `class="num" class="state-dead"` loses a class).
/// maud escapes quotes in values, so attributes split cleanly on `"`.
pub(crate) fn repeated_attribute(html: &str) -> Option<String> {
    for tag in html.split('<').skip(1) {
        let Some(end) = tag.find('>') else { continue };
        let tag = &tag[..end];
        if tag.starts_with(['/', '!']) {
            continue;
        }
        let mut seen = Vec::new();
        // Between quoted values: ` name=`, and bare names (`defer`).
        for (i, part) in tag.split('"').enumerate() {
            if i % 2 == 1 {
                continue;
            }
            let words = part.split_whitespace().skip(usize::from(i == 0));
            for word in words {
                let name = word.trim_end_matches('=').trim_end_matches('/');
                if name.is_empty() {
                    continue;
                }
                if seen.contains(&name) {
                    return Some(tag.to_string());
                }
                seen.push(name);
            }
        }
    }
    None
}

/// Percent-encodes a form value.
pub(crate) fn enc(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
