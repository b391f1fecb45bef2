//! Real Valkey/Redis servers on loopback for EchoMQ's tests (dev-only).
//!
//! No mocks: every test talks to a real `valkey-server` (or `redis-server`)
//! child process, started on a free 127.0.0.1 port in its own temporary
//! directory and stopped with `SHUTDOWN NOSAVE` when its handle drops.
//!
//! ```no_run
//! # async fn demo() {
//! use echomq_testkit::TestServer;
//!
//! let server = TestServer::start(); // Valkey, or Redis with EMQ_TEST_SERVER=redis
//! let mut con = server.connection().await;
//! let pong: String = redis::cmd("PING").query_async(&mut con).await.unwrap();
//! assert_eq!(pong, "PONG");
//! # }
//! ```
//!
//! # Layout
//!
//! - `server` — [`TestServer`]: one server (Valkey, Redis, or a given
//!   [`ServerBinary`], optionally with modules loaded), built on
//!   [`echomq_server::ServerProcess`].
//! - `cluster` — [`TestCluster`]: `n` masters forming a cluster, slots split
//!   evenly, formed with `CLUSTER ADDSLOTSRANGE` / `CLUSTER MEET` (no
//!   `redis-cli` needed).
//! - `proxy` — [`EndpointProxy`]: a TCP forwarder whose target can be
//!   switched, as a failover endpoint is.
//! - `sentinel` — [`TestSentinel`]: a primary, its replica and a sentinel.
//! - `sentinel_group` — [`TestSentinelGroup`]: a primary, two replicas and
//!   three sentinels, every server with an AOF; its primary can be killed
//!   and the killed server restarted, for failover chaos runs.
//! - `transport` — [`TlsServer`]: a server speaking TLS, with
//!   [`TestCertificates`] made for the test; and
//!   [`TestServer::with_unix_socket`].
//! - `wait` — [`wait_for`] (async), [`wait_until`] (blocking) and [`Wait`]:
//!   the one bounded wait every test and this crate use, never a bare
//!   sleep.
//! - [`case`] (crate `echomq-testkit-macros`): `#[case]`, a case of a
//!   suite parameterised by wire, registered once.
//!
//! # Finding the binaries
//!
//! [`TestServer::valkey`] uses [`ServerBinary::locate`]: `$EMQ_VALKEY_SERVER`,
//! `valkey-server` on `PATH`, `target/valkey/valkey-server` (what
//! `scripts/valkey` fetches), then `redis-server` on `PATH`. So
//! `EMQ_VALKEY_SERVER=$(scripts/valkey) cargo test` pins Valkey.
//! [`TestServer::redis`] uses `$EMQ_REDIS_SERVER`, then `redis-server` on
//! `PATH`. [`TestServer::start`] is the suite's default: Redis when
//! `EMQ_TEST_SERVER=redis`, else Valkey.

pub mod acl;
mod cluster;
mod deadline_invariant;
mod flow_invariant;
mod group_invariant;
pub mod invariant;
mod lifo_invariant;
mod outbox_invariant;
mod proxy;
mod sentinel;
mod sentinel_group;
mod sentinel_process;
mod server;
pub mod socket;
mod transport;
mod wait;

pub use cluster::TestCluster;
pub use echomq_server::{ServerBinary, ServerKind};
pub use echomq_testkit_macros::case;
/// The distributed slices `#[case]` registers its cases in.
pub use linkme;
pub use proxy::EndpointProxy;
pub use sentinel::{SENTINEL_SERVICE, TestSentinel};
pub use sentinel_group::TestSentinelGroup;
pub use server::TestServer;
pub use transport::{ClientAuth, TestCertificates, TlsServer};
pub use wait::{Condition, EVERY, Wait, wait_for, wait_until};

/// Environment variable choosing the suite's default server for
/// [`TestServer::start`]: `redis`, or `valkey` (the default when unset).
pub const TEST_SERVER_ENV: &str = "EMQ_TEST_SERVER";

/// The built EchoMQ module: `$EMQ_MODULE` when set, else
/// `target/debug/libechomq_module.so` of this workspace. Panics, saying how
/// to build it, when it is missing (a test cannot build it itself: `cargo
/// test` holds the build lock).
pub fn module_path() -> std::path::PathBuf {
    let path = std::env::var_os("EMQ_MODULE").map_or_else(
        || {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/debug/libechomq_module.so")
        },
        std::path::PathBuf::from,
    );
    assert!(
        path.is_file(),
        "the EchoMQ module is not built at {}: run `cargo build -p echomq-module` first \
         (scripts/test does), or point EMQ_MODULE at libechomq_module.so",
        path.display()
    );
    path
}
