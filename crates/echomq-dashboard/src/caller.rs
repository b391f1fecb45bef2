//! Who sent the request being served ([`Caller`]): how it proved it may
//! be served, its browser session, its address. The caller rides in a
//! task-local while its handler runs (`auth::admit` sets it), so the page
//! shell draws its forms with the session's CSRF token ([`csrf`]) without
//! every handler passing it down. It imports only the session: the page
//! shell (`layout.rs`) and the checks that set it (`auth.rs`) both import
//! it.

use crate::session::Current;
use std::net::IpAddr;

/// The form field, and the header for scripts, that carry the CSRF token.
pub(crate) const CSRF_FIELD: &str = "_csrf";

/// How a request proved it may be served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Proof {
    /// No token is set, or the path is open (login form, assets).
    Open,
    /// A signed-in session's cookie (a browser: its POSTs need the CSRF
    /// token).
    Session,
    /// `Authorization: Bearer` (a script: no CSRF token needed, a browser
    /// never sends this header by itself).
    Bearer,
}

/// Who sent the request.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub(crate) proof: Proof,
    /// The browser's session (none for a script or an asset).
    pub(crate) session: Option<Current>,
    /// The client's address, when the server said it.
    pub(crate) client: Option<IpAddr>,
}

tokio::task_local! {
    /// The caller of the request whose handler is running.
    static CALLER: Caller;
}

/// The CSRF token of the running request's session ("" without one).
pub(crate) fn csrf() -> String {
    CALLER
        .try_with(|caller| caller.session.as_ref().map(|s| s.csrf.clone()))
        .ok()
        .flatten()
        .unwrap_or_default()
}

/// The running request's caller, when a request is running.
pub(crate) fn current() -> Option<Caller> {
    CALLER.try_with(Caller::clone).ok()
}

/// Runs `future` as `caller`'s (a request's handler, from `auth::admit`;
/// a live stream's renders, polled after its handler returned).
pub(crate) async fn as_caller<F: std::future::Future>(caller: Caller, future: F) -> F::Output {
    CALLER.scope(caller, future).await
}
