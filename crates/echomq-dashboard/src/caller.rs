//! Who sent the request being served ([`Caller`]): how it proved it may
//! be served, the grant it carries, its browser session, its address. The
//! caller rides in a task-local while its handler runs (`auth::admit` sets
//! it), so the page shell draws its forms with the session's CSRF token
//! ([`csrf`]) and only what its grant allows ([`with_grant`]) without
//! every handler passing it down. It imports only the session and the
//! grant: the page shell (`layout.rs`), `permit.rs` and the checks that
//! set it (`auth.rs`) import it.

use crate::grant::Grant;
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
    /// What it may do: its token's grant (an operator of every queue, or a
    /// reader when read-only, without tokens); `None` for the login form
    /// and the assets, served to anyone.
    pub(crate) grant: Option<Grant>,
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

/// `f` of the running request's grant (`None` when there is none, or no
/// request is running).
pub(crate) fn with_grant<R>(f: impl FnOnce(Option<&Grant>) -> R) -> R {
    let mut f = Some(f);
    let answer = CALLER.try_with(|caller| (f.take().expect("called once"))(caller.grant.as_ref()));
    match answer {
        Ok(answer) => answer,
        Err(_) => (f.take().expect("not called"))(None),
    }
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
