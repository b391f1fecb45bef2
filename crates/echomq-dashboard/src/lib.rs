//! EchoMQ's dashboard: every queue, job and control of the control plane
//! on a web page, live, and the HTTP API any language enqueues, waits
//! and reads through (`/api/v1`, docs/http.md), as one [`axum::Router`] —
//! what `emq serve` (and its synonym `emq dashboard`) serves, and what a
//! program mounts in its own axum app.
//!
//! ```no_run
//! # async fn serve(connector: echomq::Connector) -> std::io::Result<()> {
//! // All of it, writable, no token, at the root:
//! let app = echomq_dashboard::router(connector.clone());
//! // Or read-only, behind a token, under /emq in a larger app:
//! let app = axum::Router::new().merge(
//!     echomq_dashboard::Dashboard::new(connector)
//!         .read_only(true)
//!         .token("s3cret")
//!         .base_path("/emq")
//!         .expect("a base path of the form /name")
//!         .router(),
//! );
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:7070").await?;
//! axum::serve(listener, app).await
//! # }
//! ```
//!
//! Pages are rendered on the server (maud) with htmx and its server-sent
//! events extension vendored into the binary: no build step, no CDN. Every
//! action is a POST carrying its session's CSRF token from an origin the
//! dashboard serves; a read-only dashboard draws no buttons and answers
//! every action 403; with tokens (one, or a tokens file: [`tokens`]),
//! every request without one answers 401 (a login form starts a signed-in
//! session, scripts send `Authorization: Bearer`), and each token's grant
//! ([`grant`]) decides which queues its pages show and which actions it
//! may run. Only the loopback names, and the hosts it is
//! told of, are served (421 otherwise). [`serve`] adds header, idle and
//! connection limits. The Prometheus text of every queue is served at
//! `/metrics` (`echomq::prometheus`). docs/dashboard.md, "Security", says
//! what each defence stops. Live updates cost the same however many pages
//! watch: one reader of events for all of them (one connection; one per
//! watched queue on a cluster), one read per part and change, and at most
//! [`Dashboard::live_viewers`] live pages at once.
//!
//! The API at `/api/v1` takes JSON with bearer tokens and no cookies: a
//! body that is not `application/json` answers 415, a foreign `Origin`
//! 403, a body over [`Dashboard::max_body`] 413; its OpenAPI 3.1 document
//! is generated from its handlers (`GET /api/v1/openapi.json`).
//! [`Dashboard::pages`]`(false)` serves the API and `/metrics` alone.
//!
//! # Layout
//!
//! - `dashboard.rs`: [`Dashboard`], the builder, and its router.
//! - `state.rs`: the state every handler shares.
//! - `auth.rs`, `caller.rs`, `session.rs`, `throttle.rs`, `host.rs`: who
//!   may be served (Host, Origin, token, session, CSRF, sign-in throttle)
//!   and who is calling; `tokens.rs` and `grant.rs` the tokens and what
//!   each may do, `permit.rs` what the calling grant may see and do here.
//! - `headers.rs`, `limits.rs`, `serve.rs`: security headers, body limits,
//!   connection limits.
//! - `pages/`, `actions/`: what is shown, what is done; both draw or run
//!   the table of actions (`action_map.rs`) and select jobs in the same
//!   words (`selection.rs`).
//! - `live/`, `feed/`: what updates live — `live/` the list of watched
//!   parts (`hub.rs` reads the events, `part.rs` keeps each part's
//!   reading for its viewers), `feed/` reads and draws them for each
//!   viewer; `overview.rs` the queues overview both pages and feeds read.
//! - `layout.rs`, `chart.rs`, `assets.rs`, `error.rs`: how it is drawn.
//! - `api/`: the HTTP API at `/api/v1` (docs/http.md), JSON only, beside
//!   the pages in the same router: `api/mod.rs` its table of endpoints
//!   (each registered in the router and the OpenAPI document at once),
//!   `access.rs` who may call and the one permission check (`permit`,
//!   over `grant.rs`), `error.rs` the error shape, `json.rs` strict JSON
//!   bodies, `model.rs` the answers' shapes, `doc.rs` the OpenAPI
//!   document, one file per group of endpoints (`read.rs`, …). It imports
//!   the state, the Host check (`auth.rs`) and `grant.rs`; nothing of the
//!   dashboard imports it but `dashboard.rs`.
//!
//! Imports run one way, with no cycle: `dashboard.rs` imports everything;
//! `feed/` imports pages; pages and actions import neither each other nor
//! `feed/`; all of these import the drawing (`layout.rs`, `error.rs`) and
//! `state.rs`, which imports only what it holds (`live/`, `host.rs`,
//! `session.rs`, `throttle.rs`, `tokens.rs`), none of which imports a
//! page, an action, the drawing or the state. `permit.rs` imports the
//! state, the caller and the table of actions; pages and actions import
//! it.

// The live queues table's future (every queue read at once) is deep.
#![recursion_limit = "256"]

mod action_map;
mod actions;
mod api;
mod assets;
mod auth;
mod caller;
mod chart;
mod dashboard;
mod error;
mod feed;
pub mod grant;
mod headers;
mod host;
mod layout;
mod limits;
mod live;
mod overview;
mod pages;
mod permit;
mod selection;
mod serve;
mod session;
mod state;
mod throttle;
pub mod tokens;

pub use dashboard::{BasePathError, BaseUrlError, Dashboard};
pub use host::HostError;
pub use limits::{API_BODY_MOST, BODY_MOST, BODY_WAIT, DRAIN_MOST};
pub use live::DEFAULT_LIVE_VIEWERS;
pub use serve::{ConnectionLimits, serve};

/// `GET /metrics` alone: the Prometheus text of every queue under
/// `connector`'s prefix, read on each scrape (what `emq metrics --listen`
/// serves; the dashboard serves it too).
pub fn metrics_router(connector: echomq::Connector) -> axum::Router {
    axum::Router::new()
        .route("/metrics", axum::routing::get(pages::metrics::scrape_alone))
        .with_state(connector)
}

/// The dashboard of `connector`'s queues at the root of the router:
/// writable, no token. [`Dashboard`] sets the rest.
pub fn router(connector: echomq::Connector) -> axum::Router {
    Dashboard::new(connector).router()
}

/// The guide's examples compile (docs/dashboard.md).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/dashboard.md")]
pub struct DashboardGuide;
