//! The state every handler shares ([`App`]): the dashboard's settings,
//! its connection, its tokens, its sessions and its live updates. Pages, actions and
//! live updates read it; it imports none of them (the router that wires
//! them to it is `dashboard.rs`).

use crate::host::Hosts;
use crate::live;
use crate::session::Sessions;
use crate::throttle::LoginThrottle;
use crate::tokens::Tokens;
use echomq::Connector;
use std::sync::Arc;

/// What every handler shares.
#[derive(Debug, Clone)]
pub(crate) struct App(pub(crate) Arc<Shared>);

/// The dashboard's settings and its connection.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) connector: Connector,
    pub(crate) read_only: bool,
    /// The tokens it accepts, each with its grant; `None`: every request
    /// is served as an operator (a reader when read-only).
    pub(crate) tokens: Option<Tokens>,
    /// The base path, "" at the root.
    pub(crate) base: String,
    /// The hosts served (421 for any other).
    pub(crate) hosts: Hosts,
    /// Every browser's session.
    pub(crate) sessions: Sessions,
    /// Wrong tokens at sign-in, per client address.
    pub(crate) throttle: LoginThrottle,
    /// Whether the session cookie is `Secure` (an `https` base URL).
    pub(crate) secure_cookies: bool,
    /// The largest body an API request may send (413 otherwise).
    pub(crate) max_body: usize,
    /// The longest a request's body may take to arrive (408 otherwise).
    pub(crate) body_wait: std::time::Duration,
    /// Live updates: their readers, parts and viewers.
    pub(crate) live: live::Live,
    /// The API's long-polled claims: one listener per queue.
    pub(crate) claim_waits: echomq::ClaimWaits,
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
