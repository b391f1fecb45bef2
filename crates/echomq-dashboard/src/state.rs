//! [`Dashboard`]: how the dashboard is set up, and the state every
//! handler shares.

use crate::{actions, assets, auth, live, pages};
use axum::Router;
use axum::routing::{get, post};
use echomq::Connector;
use std::sync::Arc;

/// A dashboard of one connector's queues, and how it is served.
#[derive(Debug, Clone)]
pub struct Dashboard {
    connector: Connector,
    read_only: bool,
    token: Option<String>,
    base: String,
    live_viewers: usize,
}

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
            token: None,
            base: String::new(),
            live_viewers: live::DEFAULT_LIVE_VIEWERS,
        }
    }

    /// Shows everything and refuses every action (403, and no buttons).
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Requires `token` on every request: a login form sets it as a cookie,
    /// scripts send `Authorization: Bearer <token>`. An empty token is none.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        let token = token.into();
        self.token = (!token.is_empty()).then_some(token);
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

    /// The router: pages, actions, live updates, assets and `/metrics`.
    pub fn router(self) -> Router {
        let app = App(Arc::new(Shared {
            live: live::Live::new(self.connector.clone(), self.live_viewers),
            connector: self.connector,
            read_only: self.read_only,
            token: self.token,
            csrf: auth::new_secret(),
            base: self.base.clone(),
        }));
        let routes = Router::new()
            .route("/", get(pages::queues::page))
            .route("/queues/{queue}", get(pages::queue::page))
            .route("/queues/{queue}/jobs/{id}", get(pages::job::page))
            .route("/controls", get(pages::controls::page))
            .route("/metrics", get(pages::metrics::scrape))
            .route("/live/queues", get(live::queues))
            .route("/live/queues/{queue}", get(live::queue))
            .route("/login", get(auth::login_form).post(auth::login))
            .route("/logout", post(auth::logout))
            .route("/assets/{file}", get(assets::serve))
            .route("/queues/{queue}/act/{action}", post(actions::queue))
            .route("/queues/{queue}/jobs/{id}/act/{action}", post(actions::job))
            .fallback(pages::not_found)
            .layer(axum::middleware::from_fn_with_state(
                app.clone(),
                auth::require_token,
            ))
            .with_state(app);
        if self.base.is_empty() {
            return routes;
        }
        // `/emq/` goes to `/emq`, the queues page.
        let home = self.base.clone();
        Router::new().nest(&self.base, routes).route(
            &format!("{}/", self.base),
            get(move || async move { axum::response::Redirect::permanent(&home) }),
        )
    }
}

/// What every handler shares.
#[derive(Debug, Clone)]
pub(crate) struct App(pub(crate) Arc<Shared>);

/// The dashboard's settings and its connection.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) connector: Connector,
    pub(crate) read_only: bool,
    pub(crate) token: Option<String>,
    /// This process's CSRF token, in every form and checked on every POST.
    pub(crate) csrf: String,
    /// The base path, "" at the root.
    pub(crate) base: String,
    /// Live updates: their readers, parts and viewers.
    pub(crate) live: live::Live,
}

impl std::ops::Deref for App {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl Shared {
    /// `path` (which starts with `/`) under the base path; `/` is the base
    /// path itself.
    pub(crate) fn href(&self, path: &str) -> String {
        if path == "/" && !self.base.is_empty() {
            return self.base.clone();
        }
        format!("{}{path}", self.base)
    }
}
