//! The worker's metrics, through the [`metrics`] facade: the worker only
//! calls the facade, the application installs a recorder (an exporter).
//! Without one every update is the facade's no-op.
//!
//! Every metric carries the label [`QUEUE`] (the queue's name). Each
//! worker registers its handles once, when it starts
//! ([`Worker::start`](crate::Worker::start)), with the recorder in force
//! then, and updates them without allocating: install the recorder before
//! starting workers.
//!
//! | name | type | labels | unit |
//! | --- | --- | --- | --- |
//! | [`JOBS_STARTED`] | counter | `queue` | jobs |
//! | [`JOBS_FINISHED`] | counter | `queue`, `outcome` ([`JobOutcome`]) | jobs |
//! | [`HANDLER_DURATION`] | histogram | `queue` | seconds |
//! | [`CLAIM_BATCH_SIZE`] | histogram | `queue` | jobs |
//! | [`OUTCOME_WRITE_DURATION`] | histogram | `queue` | seconds |
//!
//! Every started job ends in exactly one `outcome`, so the sum of
//! [`JOBS_FINISHED`] over `outcome` trails [`JOBS_STARTED`] by the jobs in
//! flight (a job a shutdown left to the stalled sweep, its handler aborted
//! and no outcome written, ends in none).

use metrics::{Counter, Histogram, Unit, counter, describe_counter, describe_histogram, histogram};

/// Counter: jobs claimed and handed to a handler task (one per attempt).
pub const JOBS_STARTED: &str = "emq_worker_jobs_started_total";
/// Counter: attempts that ended, by [`OUTCOME`] (see [`JobOutcome`]).
pub const JOBS_FINISHED: &str = "emq_worker_jobs_finished_total";
/// Histogram: how long each handler ran, in seconds, a panic included
/// (one sample per handler run; a payload that does not decode runs none).
pub const HANDLER_DURATION: &str = "emq_worker_handler_duration_seconds";
/// Histogram: jobs per claim that returned jobs (a claim that returned
/// none, idle or held back by flow control, is not recorded).
pub const CLAIM_BATCH_SIZE: &str = "emq_worker_claim_batch_size";
/// Histogram: the round trip of each pipeline of outcomes the writer sends
/// (`COMPLETE`, `COMPLETE.BULK`, `FAIL`, `DELAY`, `REQUEUE`), in seconds;
/// a batch sent again after a transient failure adds one sample per send.
pub const OUTCOME_WRITE_DURATION: &str = "emq_worker_outcome_write_seconds";

/// Label on every metric: the queue's name.
pub const QUEUE: &str = "queue";
/// Label on [`JOBS_FINISHED`]: how the attempt ended ([`JobOutcome::label`]).
pub const OUTCOME: &str = "outcome";

/// How an attempt ended, as the worker learned it: the value of the
/// [`OUTCOME`] label of [`JOBS_FINISHED`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobOutcome {
    /// `completed`: the completion was written.
    Completed,
    /// `retried`: the handler failed and `FAIL` answered `retry`: the job
    /// runs again after its backoff delay.
    Retried,
    /// `dead`: `FAIL` answered `dead` (a permanent error, the last attempt
    /// failed, or the payload did not decode).
    Dead,
    /// `cancelled`: `FAIL` answered `cancelled` (a requested cancellation).
    Cancelled,
    /// `delayed`: the handler sent the job back to the schedule set.
    Delayed,
    /// `rate_limited`: `FAIL` answered `rate_limited`: back to pending, the
    /// queue held.
    RateLimited,
    /// `released`: sent back to pending (`REQUEUE`) by a shutdown past its
    /// deadline.
    Released,
    /// `lease_lost`: the worker lost the job's lease: its outcome write was
    /// refused (`NOTACTIVE`), or a lease checkpoint found the lease voided
    /// and nothing was written.
    LeaseLost,
    /// `write_failed`: the outcome could not be written (the stalled sweep
    /// recovers the job).
    WriteFailed,
    /// `blocked`: the handler waits for the children it spawned
    /// (`JobContext::spawn_and_wait`): the job runs again once they ended.
    Blocked,
}

impl JobOutcome {
    /// Every outcome, in declaration order.
    pub const ALL: [JobOutcome; 10] = [
        JobOutcome::Completed,
        JobOutcome::Retried,
        JobOutcome::Dead,
        JobOutcome::Cancelled,
        JobOutcome::Delayed,
        JobOutcome::RateLimited,
        JobOutcome::Released,
        JobOutcome::LeaseLost,
        JobOutcome::WriteFailed,
        JobOutcome::Blocked,
    ];

    /// The value of the [`OUTCOME`] label.
    pub const fn label(self) -> &'static str {
        match self {
            JobOutcome::Completed => "completed",
            JobOutcome::Retried => "retried",
            JobOutcome::Dead => "dead",
            JobOutcome::Cancelled => "cancelled",
            JobOutcome::Delayed => "delayed",
            JobOutcome::RateLimited => "rate_limited",
            JobOutcome::Released => "released",
            JobOutcome::LeaseLost => "lease_lost",
            JobOutcome::WriteFailed => "write_failed",
            JobOutcome::Blocked => "blocked",
        }
    }

    /// Its place in [`JobOutcome::ALL`].
    const fn index(self) -> usize {
        self as usize
    }
}

/// Describes every metric (help text and unit) to the recorder in force.
/// Each worker does at its start; an application that installs its
/// recorder after starting workers may call it then.
pub fn describe() {
    describe_counter!(
        JOBS_STARTED,
        Unit::Count,
        "Jobs an EchoMQ worker claimed and started (one per attempt)."
    );
    describe_counter!(
        JOBS_FINISHED,
        Unit::Count,
        "Attempts an EchoMQ worker finished, by outcome."
    );
    describe_histogram!(
        HANDLER_DURATION,
        Unit::Seconds,
        "How long each job handler ran."
    );
    describe_histogram!(
        CLAIM_BATCH_SIZE,
        Unit::Count,
        "Jobs per claim that returned jobs."
    );
    describe_histogram!(
        OUTCOME_WRITE_DURATION,
        Unit::Seconds,
        "Round trip of each pipeline of job outcomes a worker writes."
    );
}

/// One worker's handles, registered once with its queue's label.
pub(crate) struct WorkerMetrics {
    pub started: Counter,
    finished: [Counter; JobOutcome::ALL.len()],
    pub handler_duration: Histogram,
    pub claim_batch_size: Histogram,
    pub outcome_write: Histogram,
}

impl WorkerMetrics {
    /// Describes the metrics and registers the handles of `queue`'s worker.
    pub(crate) fn new(queue: &str) -> Self {
        describe();
        let queue = queue.to_owned();
        Self {
            started: counter!(JOBS_STARTED, QUEUE => queue.clone()),
            finished: JobOutcome::ALL.map(|outcome| {
                counter!(JOBS_FINISHED, QUEUE => queue.clone(), OUTCOME => outcome.label())
            }),
            handler_duration: histogram!(HANDLER_DURATION, QUEUE => queue.clone()),
            claim_batch_size: histogram!(CLAIM_BATCH_SIZE, QUEUE => queue.clone()),
            outcome_write: histogram!(OUTCOME_WRITE_DURATION, QUEUE => queue),
        }
    }

    /// Counts `n` attempts that ended in `outcome`.
    pub(crate) fn finished(&self, outcome: JobOutcome, n: u64) {
        self.finished[outcome.index()].increment(n);
    }
}

#[cfg(test)]
mod tests {
    use super::JobOutcome;

    #[test]
    fn every_outcome_sits_at_its_index_under_its_own_label() {
        let mut labels = std::collections::HashSet::new();
        for (i, outcome) in JobOutcome::ALL.into_iter().enumerate() {
            assert_eq!(outcome.index(), i);
            assert!(labels.insert(outcome.label()), "{outcome:?} shares a label");
        }
    }
}
