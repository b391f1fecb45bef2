//! The dashboard's handler tests: its router driven one request at a time
//! (no browser, no socket) against real servers, on wire 4 and, with the
//! module loaded, wire 6.

#![allow(dead_code)]

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use echomq::{Connector, Queue, Wire};
use echomq_dashboard::Dashboard;
use echomq_testkit::{ServerBinary, TestServer, module_path};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

/// A real server and a connector to it on one wire.
pub struct Site {
    pub server: TestServer,
    pub wire: Wire,
    pub connector: Connector,
}

impl Site {
    /// A server on `wire` (the module loaded for wire 6).
    pub async fn start(wire: Wire) -> Self {
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
    pub fn queue(&self, name: &str) -> Queue<Value> {
        self.connector.queue(name).unwrap()
    }

    /// A browser of the dashboard of this site, as `dashboard` sets it up.
    pub fn browse(&self, dashboard: impl FnOnce(Dashboard) -> Dashboard) -> Browser {
        Browser {
            router: dashboard(Dashboard::new(self.connector.clone())).router(),
            headers: Vec::new(),
        }
    }

    /// A browser of the default dashboard (writable, no token, at `/`).
    pub fn dashboard(&self) -> Browser {
        self.browse(|d| d)
    }
}

/// Runs `test` once on wire 4 and once on wire 6, each on a fresh server.
pub async fn on_both_wires<F, Fut>(test: F)
where
    F: Fn(Site) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for wire in [Wire::Script, Wire::Native] {
        test(Site::start(wire).await).await;
    }
}

/// One answer: status, headers, body as text.
#[derive(Debug)]
pub struct Page {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: String,
}

impl Page {
    /// The page's CSRF token (the value of its first `_csrf` field).
    pub fn csrf(&self) -> String {
        let at = self
            .body
            .find(r#"name="_csrf" value=""#)
            .unwrap_or_else(|| panic!("no CSRF field in:\n{}", self.body));
        let rest = &self.body[at + r#"name="_csrf" value=""#.len()..];
        rest[..rest.find('"').unwrap()].to_string()
    }

    /// Where a redirect goes.
    pub fn location(&self) -> &str {
        self.headers
            .get(header::LOCATION)
            .unwrap_or_else(|| panic!("no Location ({}): {}", self.status, self.body))
            .to_str()
            .unwrap()
    }

    /// Panics unless the status is `status`.
    #[track_caller]
    pub fn expect(self, status: StatusCode) -> Self {
        assert_eq!(self.status, status, "{}", self.body);
        self
    }
}

/// Sends requests to the dashboard's router, with headers of its own
/// (a cookie, `Authorization`).
pub struct Browser {
    pub router: Router,
    pub headers: Vec<(String, String)>,
}

impl Browser {
    /// Adds a header to every request.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    async fn send(&self, request: Request<Body>) -> Page {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        let body = String::from_utf8_lossy(&bytes).into_owned();
        if let Some(tag) = repeated_attribute(&body) {
            panic!("an element repeats an attribute: {tag}");
        }
        Page {
            status,
            headers,
            body,
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
    pub async fn get(&self, path: &str) -> Page {
        self.send(self.request("GET", path).body(Body::empty()).unwrap())
            .await
    }

    /// `POST path` with `fields` form-encoded, as given (no CSRF token
    /// added).
    pub async fn post_raw(&self, path: &str, fields: &[(&str, &str)]) -> Page {
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

    /// `POST path` with `fields` and the CSRF token of the login form.
    pub async fn post(&self, path: &str, fields: &[(&str, &str)]) -> Page {
        let csrf = self.get("/login").await.expect(StatusCode::OK).csrf();
        let mut all = vec![("_csrf", csrf.as_str())];
        all.extend_from_slice(fields);
        self.post_raw(path, &all).await
    }
}

/// The first start tag of `html` that gives an attribute twice (a browser
/// keeps only the first: `class="num" class="state-dead"` loses a class).
/// maud escapes quotes in values, so attributes split cleanly on `"`.
pub fn repeated_attribute(html: &str) -> Option<String> {
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
pub fn enc(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
