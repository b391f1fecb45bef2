//! The worker runtime: batch claims up to free slots, one task per job,
//! outcomes written back in pipelines, idle waits on the signal key.
//!
//! A [`Worker`] claims `COUNT n` jobs where `n` is its free slots, runs the
//! handler for each under a `tracing` span (queue, id, attempt), and hands
//! each outcome to a writer task that sends every outcome ready at that
//! moment in one pipeline. A slot frees once its outcome is written. When a
//! claim comes back empty the worker blocks on the queue's signal set
//! (`BZPOPMIN` on a connection of its own) until an enqueue wakes it, so an
//! idle worker costs the server one claim per `idle_wait`, not a poll loop.

mod context;
mod options;
mod run;
mod writer;

pub use context::{JobContext, JobError};
pub use options::WorkerStats;
pub use run::{Worker, WorkerHandle};
