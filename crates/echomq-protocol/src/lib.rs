//! EchoMQ's shared primitives: the pieces every other crate agrees on.
//!
//! This crate does no I/O. The client (`echomq`), the native module and the
//! CLI all build on it, so a name, a key or a reply code means the same thing
//! everywhere.
//!
//! # Layout
//!
//! - [`name`]: queue names and job ids, validated before any key is built.
//! - [`keyspace`]: every key of a queue, one function per key. Nothing else in
//!   the workspace formats a key.
//! - [`state`]: [`JobState`], the six states a job can be in.
//! - [`field`]: the job hash's field names, in the order `GET` returns them.
//! - [`dedup`]: [`DedupMode`] and the rule of a deduplication key.
//! - [`transition`]: [`Transition`] and the registry of controls: one row per
//!   control (scope, library functions, keys, effect, script, native
//!   command, arguments, replies, refusals, events).
//! - [`control`]: the shape of a registry row ([`Control`], [`Command`]).
//! - [`reply`]: the error codes of `docs/protocol.md` parsed into [`Refusal`], and
//!   [`Refused`], which names the job, the transition and what was found.
//! - [`metrics`]: the metrics each queue keeps on the server: outcomes,
//!   histogram bins, windows and their settings.
//! - [`trace`]: the rule of a job's W3C `traceparent`.
//! - [`arg`]: argument rules shared by every wire (integer ranges, option words).
//! - [`backoff`]: [`Backoff`], retry delay curves (fixed, linear, exponential,
//!   custom) with [`Jitter`]; the host computes `RETRY_IN` from them.
//! - [`cadence`]: [`Cadence`] and [`Schedule`], repeat cadences on the host
//!   clock (`every`, cron + IANA time zone) and their stored text (feature
//!   `cadence`, on by default).

pub mod arg;
pub mod backoff;
#[cfg(feature = "cadence")]
pub mod cadence;
pub mod control;
pub mod dedup;
pub mod field;
pub mod keyspace;
pub mod metrics;
pub mod name;
pub mod reply;
pub mod state;
pub mod time_limit;
pub mod trace;
pub mod transition;

pub use backoff::{Backoff, Jitter};
#[cfg(feature = "cadence")]
pub use cadence::{Cadence, CadenceError, Schedule};
pub use control::{Command, Control, Form, Scope};
pub use dedup::DedupMode;
pub use keyspace::{Keyspace, QueueKey};
pub use name::{GroupName, JobId, NameError, QueueName};
pub use reply::{Refusal, Refused};
pub use state::JobState;
pub use transition::Transition;
