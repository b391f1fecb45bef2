//! EchoMQ: a job queue for Rust programs, backed by Valkey (or Redis ≥ 7.0).
//!
//! Enqueue, claim, complete is the spine; every move of a job is one atomic
//! transition over a keyspace the queue owns (see `docs/protocol.md`).
//!
//! # Layout
//!
//! - [`Connector`]: the connection (one server or a cluster), key prefix and
//!   [`Wire`]. Wire 4 runs the Lua scripts under `scripts/` as the
//!   functions of one library (`FCALL`; by `EVALSHA` where the library may
//!   not be loaded); wire 6 sends the native module's `EMQ.*` commands.
//! - [`Queue`]: the spine — [`Queue::enqueue`], [`Queue::enqueue_bulk`],
//!   [`Queue::claim`], [`Queue::complete`], [`Queue::fail`] — and reads.
//! - [`Repeat`] and [`RepeatScheduler`]: jobs on a cadence (every N, or
//!   cron in a time zone), each occurrence enqueued once by any number of
//!   schedulers.
//! - [`Jobs`] (`queue.jobs()`): verbs on one job's row — get, cancel,
//!   requeue, reschedule, remove, reprocess, update, log, list, and
//!   search ([`Jobs::search`]: by id prefix, payload or error text, a
//!   bounded walk with a cursor).
//!   [`Admin`] (`queue.admin()`): verbs on the whole queue — counts,
//!   pause, resume, drain, obliterate, and flow control: a rate limit
//!   ([`RateLimit`]) and a cap on active jobs ([`ConcurrencyCap`]) across
//!   every worker, and retention: how many finished jobs each set keeps
//!   and for how long ([`Retention`], [`RetentionChange`]).
//! - [`Worker`]: the runtime that claims in batches, runs an async handler
//!   per job and writes outcomes back in pipelines; it emits
//!   [`worker_metrics`] through the `metrics` facade.
//! - Listing: [`Connector::queues`] finds every queue of a prefix (the
//!   registry and a bounded walk of the keyspace); [`Connector::read_queues`]
//!   reads each, naming one that cannot be read ([`Unreadable`]) while the
//!   others show.
//! - Observability: each queue's metrics kept by the server
//!   ([`Queue::metrics`], [`QueueMetrics`]) and their Prometheus text
//!   format ([`prometheus`]).
//! - [`Error`]: refusals name the job, the transition and the state found.
//! - `src/transport/`: the plumbing under all of the above — the
//!   connection (reconnecting, Sentinel, TLS), the check of the server at
//!   connect, sending a call over either wire and reading its reply, the
//!   worker's cancel subscription. Private; the rooms import it, never the
//!   other way.
//!
//! # The `redis` crate
//!
//! The client talks through the `redis` crate, and two public items carry
//! its types: [`Error::Redis`] holds a [`redis::RedisError`] (the server's
//! reply or the connection's failure: its kind, code and detail), and
//! [`TlsOptions::certificates`] answers `redis::TlsCertificates` for a
//! connection of your own. The crate is re-exported as [`echomq::redis`](redis)
//! rather than wrapped: a wrapper would either hide what callers inspect
//! (`err.kind()`, `err.code()`, `is_connection_dropped()`) or copy the
//! `redis` API item by item, and through the re-export a caller names the
//! very version echomq links (its own `redis` dependency of another
//! version would be a different type, and `matches!` on it would not
//! compile). The cost: a major version of `redis` is a breaking change of
//! echomq, said in the changelog.
//!
//! # Features
//!
//! - `otel`: OpenTelemetry traces across the queue. [`Queue::enqueue`]
//!   records the current trace context on the job ([`NewJob::traceparent`]
//!   sets one by hand, with or without the feature), and a [`Worker`] runs
//!   each attempt of such a job in a span that continues it, with the
//!   handler inside (`docs/observability.md`). Off, none of that
//!   code is compiled and nothing more is read or written.
//!
//! # Example
//!
//! ```no_run
//! use echomq::{Connector, JobContext, JobError, Worker};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Email { to: String }
//!
//! # async fn run() -> echomq::Result<()> {
//! let emq = Connector::connect("redis://127.0.0.1:6379").await?;
//! let mail = emq.queue::<Email>("mail")?;
//! mail.enqueue(Email { to: "ada@example.com".into() }).await?;
//!
//! let worker = Worker::new(mail, |job: JobContext<Email>| async move {
//!     println!("sending to {}", job.payload.to);
//!     Ok::<_, JobError>(())
//! })
//! .concurrency(16)
//! .start();
//! worker.shutdown(std::time::Duration::from_secs(10)).await;
//! # Ok(()) }
//! ```

pub mod acl;
mod admin;
mod awaited;
mod claim_batch;
mod claim_wait;
mod deadlines;
pub mod duration;
mod error;
mod event_fields;
mod events;
mod flow;
mod flows;
mod groups;
mod job;
mod jobs;
mod lifo;
mod listing;
mod merged_events;
#[cfg(feature = "otel")]
mod otel;
mod outbox;
mod outcome;
pub mod prometheus;
mod queue;
mod queue_metrics;
mod registry;
mod repeat;
mod retention;
mod scripts;
mod search;
mod transport;
mod worker;

pub use acl::Denied;
pub use admin::{Admin, DrainScope, WrongType};
pub use claim_batch::{ClaimBatch, Withheld};
pub use claim_wait::{CLAIM_SWEEP_INTERVAL, CLAIM_WAIT_SAFETY_NET, ClaimWaits};
pub use echomq_protocol as protocol;
pub use echomq_protocol::backoff::{Backoff, Jitter};
pub use echomq_protocol::{DedupMode, JobId, JobState, QueueName, Refusal, Refused, Transition};
pub use error::{Error, Result};
pub use events::{Event, EventKind, Events, EventsFrom};
pub use flow::{ConcurrencyCap, RateLimit};
pub use flows::{
    CheckedUp, Dependency, DependencyOutcome, Dependent, Direction, DocumentAfter, DocumentError,
    DocumentJob, EdgeState, FLOW_GRAPH_EDGES_READ, FLOW_GRAPH_NODES_MAX, Flow, FlowDocument,
    FlowGraph, GraphEdge, GraphNode, JobRef, OutsideJob, PlacedJob, Policy, Relayed, Submitted,
};
pub use groups::{Group, GroupCounts};
pub use job::{
    Claimed, Counts, EnqueueOutcome, Enqueued, Extended, FailAction, FailOutcome, JobRecord,
    NewJob, QueueSettings, Swept,
};
pub use jobs::{CancelOutcome, DedupHold, IfActive, Jobs, LOG_KEEP};
pub use listing::{Problem, Unreadable};
pub use merged_events::MergedEvents;
pub use outcome::Outcome;
pub use queue::Queue;
pub use queue_metrics::{Histogram, MetricsRange, MetricsSettings, MetricsWindow, QueueMetrics};
pub use redis;
pub use repeat::{Repeat, RepeatAdded, RepeatDefinition, RepeatScheduler};
pub use retention::{Retention, RetentionChange};
pub use search::{JobMatch, SEARCH_BATCH, SearchPage};
pub use transport::connector::{Connector, ConnectorBuilder};
pub use transport::discovery::{QUEUE_SCAN_COUNT, QUEUE_SCAN_INTERVAL};
pub use transport::dispatch::Wire;
pub use transport::durability::{DEFAULT_WAIT, Durability};
pub use transport::tls::TlsOptions;
pub use worker::telemetry as worker_metrics;
pub use worker::{CancelReason, JobContext, JobError, Worker, WorkerHandle, WorkerStats};

// For tests only, not part of the API (hidden from the docs): what
// `Jobs::outcome_now` answers (the call under `Queue::outcome`), the Lua source the client loads for a transition (the
// crate's argument tests and the module's differential tests run it), and
// the sizes tests count against (jobs per DRAIN / OBLITERATE call, windows
// per metrics read).
#[doc(hidden)]
pub use admin::DELETE_CHUNK;
#[doc(hidden)]
pub use outcome::OutcomeNow;
#[doc(hidden)]
pub use queue_metrics::MAX_WINDOWS;
#[doc(hidden)]
pub use scripts::script_source;
