//! The worker runtime: batch claims up to free slots, one task per job,
//! outcomes written back in pipelines, idle waits on the signal key.
//!
//! A [`Worker`] claims `COUNT n` jobs where `n` is its free slots, runs the
//! handler for each under a `tracing` span (queue, id, attempt), and hands
//! each outcome to a writer task that sends every outcome ready at that
//! moment in one pipeline; the slots those outcomes free ride with them as
//! the claim of the next batch (`COMPLETE.BULK … CLAIM`, `ride.rs`). When a
//! claim comes back empty the worker is idle: a listener blocks on the
//! queue's signal set (`BZPOPMIN`, a connection of its own) until an enqueue
//! wakes it, and a local timer, set from the server's clock, wakes it when
//! the earliest scheduled job falls due. An idle worker sends nothing else.
//! When flow control withheld jobs from a claim (`CLAIM`'s `wait_ms`), the
//! worker sleeps exactly until the rate limit's window reopens or the
//! queue's hold ends, or waits on the signal set while the cap on active
//! jobs is full.
//!
//! A worker over several queues ([`Worker::over`]) runs all of this once
//! per queue, a lane each, sharing one concurrency and one budget of jobs
//! held, which `share.rs` hands to the lanes by weight or in strict order.

mod ahead;
mod claim_loop;
mod context;
mod control;
mod crew;
mod execute;
mod failure;
mod job_task;
mod options;
mod ride;
mod run;
mod share;
mod shutdown;
pub(crate) mod signal;
pub mod telemetry;
mod waiting;
mod watch;
mod writer;

pub use context::{JobContext, JobError};
pub use control::CancelReason;
pub use options::WorkerStats;
pub use run::{Worker, WorkerHandle};
