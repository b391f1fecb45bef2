//! Spawning a private `valkey-server` (or `redis-server`) child process on
//! loopback: the embedded default behind `emq server` / `emq demo`, the
//! servers the testkit starts, and those of the example programs.
//!
//! A crate of its own so that the client library a program adds to its
//! `Cargo.toml` (`echomq`) carries no process launcher. Everything here is
//! synchronous and uses only the standard library: the readiness probe and
//! `SHUTDOWN` speak hand-written RESP over a
//! [`TcpStream`](std::net::TcpStream).
//!
//! ```no_run
//! use echomq_server::{ServerBinary, ServerConfig, ServerProcess};
//!
//! let binary = ServerBinary::locate()?;
//! let mut server = ServerProcess::spawn(&binary, &ServerConfig::new("/tmp/emq-data"))?;
//! println!("listening on {}", server.url());
//! server.shutdown(false)?;
//! # Ok::<(), echomq_server::ServerError>(())
//! ```
//!
//! # Layout
//!
//! - `binary` — [`ServerBinary`] and [`ServerKind`]: which binary to run
//!   (`$EMQ_VALKEY_SERVER`, `PATH`, what `scripts/valkey` fetched) and
//!   what its `--version` says it is.
//! - `config` — [`ServerConfig`]: directory, port, AOF, modules, preload;
//!   [`LOG_FILE`], where the child writes.
//! - `process` — [`ServerProcess`]: the running child; spawn, probe,
//!   shutdown, the tail of its log. Public because `emq` and the testkit
//!   hold one.
//! - `allocator` — the jemalloc preload for binaries built with libc's
//!   malloc ([`ServerBinary::jemalloc_preload`]).
//! - `module_file` — [`built_module`]: the EchoMQ module embedded servers
//!   load when it was built.
//! - `port` — [`free_loopback_port`], never the same port twice in a
//!   process (the testkit's clusters and sentinels pick their own).
//! - `resp` — the few RESP commands the launcher sends itself (private).
//! - `error` — [`ServerError`]: each message says what to do about it.

mod allocator;
mod binary;
mod config;
mod error;
mod module_file;
mod port;
mod process;
mod resp;

pub use allocator::{JEMALLOC_ENV, JEMALLOC_PATHS};
pub use binary::{REDIS_SERVER_ENV, ServerBinary, ServerKind, VALKEY_SERVER_ENV};
pub use config::{LOG_FILE, ServerConfig};
pub use error::ServerError;
pub use module_file::{MODULE_ENV, built_module};
pub use port::free_loopback_port;
pub use process::ServerProcess;
