//! [`Dashboard`]: how the dashboard is set up, and its router: the pages,
//! actions and live updates it serves, over the state in `state.rs`.

use crate::host::{Allowed, HostError, Hosts};
use crate::session::Sessions;
use crate::state::{App, Shared};
use crate::throttle::LoginThrottle;
use crate::tokens::Tokens;
use crate::{actions, api, assets, auth, feed, headers, limits, live, pages};
use axum::Router;
use axum::routing::{get, post};
use echomq::Connector;
use std::net::SocketAddr;
use std::sync::Arc;

/// A dashboard of one connector's queues, and how it is served.
#[derive(Debug, Clone)]
pub struct Dashboard {
    connector: Connector,
    read_only: bool,
    tokens: Option<Tokens>,
    base: String,
    /// The listening port, once known: loopback names are served on it.
    port: Option<u16>,
    /// Hosts served besides the loopback names.
    hosts: Vec<Allowed>,
    secure_cookies: bool,
    live_viewers: usize,
    max_body: usize,
    body_wait: std::time::Duration,
    pages: bool,
    claim_sweep: std::time::Duration,
}

/// A base URL that is not `http://host[:port][/path]` or
/// `https://host[:port][/path]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("base URL {0:?}: expected http:// or https:// then a host, optionally a port and a path")]
pub struct BaseUrlError(pub String);

/// A base path that is not `/` followed by path segments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "base path {0:?}: expected / followed by segments of letters, digits, '-', '_' or '.', with no trailing /"
)]
pub struct BasePathError(pub String);

impl Dashboard {
    /// The dashboard of `connector`'s queues: writable, no token, at `/`.
    pub fn new(connector: Connector) -> Self {
        Self {
            connector,
            read_only: false,
            tokens: None,
            base: String::new(),
            port: None,
            hosts: Vec::new(),
            secure_cookies: false,
            live_viewers: live::DEFAULT_LIVE_VIEWERS,
            max_body: crate::API_BODY_MOST,
            body_wait: crate::BODY_WAIT,
            pages: true,
            claim_sweep: echomq::CLAIM_SWEEP_INTERVAL,
        }
    }

    /// The address the router is served on: the loopback names
    /// (`127.0.0.1`, `localhost`, `[::1]`) are then served on its port
    /// alone, and the address itself when it is not unspecified
    /// (`0.0.0.0` names no host). Without it, the loopback names are
    /// served on any port.
    pub fn listening_on(mut self, addr: SocketAddr) -> Self {
        self.port = Some(addr.port());
        self.hosts.extend(Allowed::listening(addr));
        self
    }

    /// Serves requests that name `host` too (`ops.example.com`, any port;
    /// `ops.example.com:8443`, that port): every other `Host` but the
    /// loopback names answers 421, against DNS rebinding.
    pub fn allow_host(mut self, host: &str) -> Result<Self, HostError> {
        self.hosts.push(Allowed::parse(host)?);
        Ok(self)
    }

    /// The URL browsers reach the dashboard at, behind a reverse proxy
    /// (`https://ops.example.com/emq`): its host is served, and an
    /// `https` URL makes the session cookie `Secure`. The path is not
    /// the base path: set that with [`Dashboard::base_path`] if the proxy
    /// keeps it.
    pub fn base_url(mut self, url: &str) -> Result<Self, BaseUrlError> {
        let wrong = || BaseUrlError(url.to_string());
        let uri: axum::http::Uri = url.parse().map_err(|_| wrong())?;
        let secure = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(wrong()),
        };
        let authority = uri.authority().ok_or_else(wrong)?;
        if authority.as_str().contains('@') {
            return Err(wrong());
        }
        self.hosts
            .push(Allowed::parse(authority.as_str()).map_err(|_| wrong())?);
        self.secure_cookies |= secure;
        Ok(self)
    }

    /// Shows everything and refuses every action (403, and no buttons).
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Requires `token` on every request, an operator of every queue
    /// named `token` ([`Tokens::single`]): a login form starts a session
    /// with it, scripts send `Authorization: Bearer <token>`. An empty
    /// token is none.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        let token = token.into();
        self.tokens = (!token.is_empty()).then(|| Tokens::single(&token));
        self
    }

    /// Requires one of `tokens` on every request (a tokens file,
    /// [`Tokens::load`]): each request may see only its token's queues and
    /// do only what its role may; the sign-in form takes the same tokens.
    pub fn tokens(mut self, tokens: Tokens) -> Self {
        self.tokens = Some(tokens);
        self
    }

    /// Serves live updates to at most `viewers` pages at once (default
    /// [`DEFAULT_LIVE_VIEWERS`](crate::DEFAULT_LIVE_VIEWERS)); the next
    /// live stream is answered 503 and its page works on without live
    /// updates. 0 turns live updates off. However many there are, all
    /// viewers share one reader of events (one Valkey connection; one per
    /// watched queue on a cluster) and one render per part and change.
    pub fn live_viewers(mut self, viewers: usize) -> Self {
        self.live_viewers = viewers;
        self
    }

    /// Refuses an API request whose body is over `bytes` (413; default
    /// [`API_BODY_MOST`](crate::API_BODY_MOST), 1 MiB). The pages' forms
    /// keep [`BODY_MOST`](crate::BODY_MOST).
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// Answers 408 to a request whose body has not arrived whole within
    /// `wait` (default [`BODY_WAIT`](crate::BODY_WAIT), 10 s), the pages'
    /// forms and the API's bodies alike.
    pub fn body_wait(mut self, wait: std::time::Duration) -> Self {
        self.body_wait = wait;
        self
    }

    /// Whether to serve the pages (default true); without them, the
    /// router serves the API at `/api/v1` and `/metrics` alone.
    pub fn pages(mut self, pages: bool) -> Self {
        self.pages = pages;
        self
    }

    /// Serves every page under `path` (such as `/emq`), for mounting the
    /// router next to others; `/` is the root.
    pub fn base_path(mut self, path: impl Into<String>) -> Result<Self, BasePathError> {
        let path = path.into();
        if path == "/" {
            self.base = String::new();
            return Ok(self);
        }
        let segments_ok = path.strip_prefix('/').is_some_and(|rest| {
            rest.split('/').all(|segment| {
                !segment.is_empty()
                    && segment
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            })
        });
        if !segments_ok {
            return Err(BasePathError(path));
        }
        self.base = path;
        Ok(self)
    }

    /// How often the API's claims run each queue's stalled sweep
    /// (default [`echomq::CLAIM_SWEEP_INTERVAL`], as a worker's
    /// `stalled_interval`): workers over HTTP run none of their own, so a
    /// lease that runs out is swept by the claims.
    pub fn claim_sweep_every(mut self, interval: std::time::Duration) -> Self {
        self.claim_sweep = interval;
        self
    }

    /// The router: pages, actions, live updates, assets, `/metrics`, and
    /// the HTTP API at `/api/v1` (docs/http.md).
    pub fn router(self) -> Router {
        let hosts = Hosts {
            loopback: Allowed::loopback(self.port),
            named: self.hosts,
        };
        let app = App(Arc::new(Shared {
            live: live::Live::new(self.connector.clone(), self.live_viewers),
            connector: self.connector,
            read_only: self.read_only,
            tokens: self.tokens,
            base: self.base.clone(),
            hosts,
            sessions: Sessions::default(),
            throttle: LoginThrottle::default(),
            secure_cookies: self.secure_cookies,
            max_body: self.max_body,
            body_wait: self.body_wait,
            claim_waits: echomq::ClaimWaits::with(echomq::CLAIM_WAIT_SAFETY_NET, self.claim_sweep),
        }));
        let api = api::router(app.clone());
        let routes = match self.pages {
            true => Self::page_routes(Router::new()),
            false => Router::new(),
        }
        .route("/metrics", get(pages::metrics::scrape))
        .fallback(pages::not_found)
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            auth::admit,
        ))
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            limits::read_body,
        ))
        .with_state(app)
        // After the pages' layers: the API admits its own requests.
        .nest(api::PREFIX, api);
        let secure = axum::middleware::from_fn(headers::secure);
        if self.base.is_empty() {
            return routes.layer(secure);
        }
        // `/emq/` goes to `/emq`, the queues page.
        let home = self.base.clone();
        Router::new()
            .nest(&self.base, routes)
            .route(
                &format!("{}/", self.base),
                get(move || async move { axum::response::Redirect::permanent(&home) }),
            )
            .layer(secure)
    }

    /// The pages, actions, live updates and assets.
    fn page_routes(routes: Router<App>) -> Router<App> {
        routes
            .route("/", get(pages::queues::page))
            .route("/queues/{queue}", get(pages::queue::page))
            .route("/queues/{queue}/jobs/{id}", get(pages::job::page))
            .route("/controls", get(pages::controls::page))
            .route("/live/queues", get(feed::queues))
            .route("/live/queues/{queue}", get(feed::queue))
            .route("/login", get(auth::login_form).post(auth::login))
            .route("/logout", post(auth::logout))
            .route("/assets/{file}", get(assets::serve))
            .route("/queues/{queue}/act/{action}", post(actions::queue))
            .route("/queues/{queue}/jobs/{id}/act/{action}", post(actions::job))
    }
}
