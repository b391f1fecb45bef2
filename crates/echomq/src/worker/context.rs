//! What a handler gets, and what it may answer.

use super::control::{CancelReason, JobControl};
use crate::error::{Error, Result as EmqResult};
use crate::job::Extended;
use crate::queue::Queue;
use echomq_protocol::{JobId, Refusal};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The job in hand, given to the handler.
pub struct JobContext<T> {
    /// The job's id.
    pub id: JobId,
    /// The decoded payload.
    pub payload: T,
    /// This attempt's number, from 1 (failures so far + 1).
    pub attempt: u64,
    /// Attempts allowed in all.
    pub max_attempts: u64,
    /// The fencing token of this claim.
    pub token: u64,
    /// The W3C trace context the job was enqueued with.
    pub(crate) traceparent: Option<String>,
    /// How long the run may last.
    pub(crate) time_limit: Option<Duration>,
    pub(crate) control: Arc<JobControl>,
    pub(crate) queue: Queue<()>,
}

impl<T: fmt::Debug> fmt::Debug for JobContext<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobContext")
            .field("id", &self.id)
            .field("payload", &self.payload)
            .field("attempt", &self.attempt)
            .field("max_attempts", &self.max_attempts)
            .field("token", &self.token)
            .field("traceparent", &self.traceparent)
            .field("cancel_reason", &self.cancel_reason())
            .finish()
    }
}

impl<T> JobContext<T> {
    /// The queue the job was claimed from (for a worker over many
    /// queues, [`Worker::over`](crate::Worker::over), which of them).
    pub fn queue(&self) -> &crate::QueueName {
        self.queue.name()
    }

    /// The W3C trace context the job was enqueued with
    /// ([`NewJob::traceparent`](crate::NewJob::traceparent), or recorded
    /// by [`Queue::enqueue`](crate::Queue::enqueue) with the `otel`
    /// feature), if it has one: to continue the trace by hand. With the
    /// `otel` feature the handler already runs in the attempt's span,
    /// which continues it.
    pub fn traceparent(&self) -> Option<&str> {
        self.traceparent.as_deref()
    }

    /// How long this run may last from its claim
    /// ([`NewJob::time_limit`](crate::NewJob::time_limit)), if the job has
    /// a limit: the token fires at it ([`CancelReason::TimeLimit`]).
    pub fn time_limit(&self) -> Option<Duration> {
        self.time_limit
    }

    /// Whether this is the last attempt the job has.
    pub fn is_last_attempt(&self) -> bool {
        self.attempt >= self.max_attempts
    }

    /// The outcome that sends this job back to the schedule set for
    /// `delay` (server clock): not a failure, no attempt used. Return it
    /// from the handler: `return ctx.delay(Duration::from_secs(30));`. The
    /// runtime sends `DELAY` fenced by this claim's token.
    pub fn delay<R>(&self, delay: Duration) -> Result<R, JobError> {
        Err(JobError::Delay(delay))
    }

    /// The job's cancellation token: it fires when someone cancels the job
    /// (from any process), when its lease is lost, when the run reaches the
    /// job's time limit, or when the worker shuts down past its deadline. Cancellation is cooperative: a handler that
    /// stops should return [`JobError::Cancelled`] (any error it returns
    /// after a requested cancellation counts as one); a handler that
    /// ignores the token and completes is allowed to complete.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.control.cancel
    }

    /// Waits until the job's cancellation token fires.
    pub async fn cancelled(&self) {
        self.control.cancel.cancelled().await
    }

    /// Whether the job's cancellation token has fired.
    pub fn is_cancelled(&self) -> bool {
        self.control.cancel.is_cancelled()
    }

    /// Why the token fired, if it did.
    pub fn cancel_reason(&self) -> Option<CancelReason> {
        self.control.reason()
    }

    /// Writes this job's progress (any JSON value), fenced by the claim's
    /// token: `NOTACTIVE` once the lease was lost.
    pub async fn progress(&self, value: &impl serde::Serialize) -> EmqResult<()> {
        self.queue
            .jobs()
            .progress(&self.id, self.token, value)
            .await
    }

    /// Appends a line to this job's log (the newest 1000 are kept).
    pub async fn log(&self, line: &str) -> EmqResult<u64> {
        self.queue.jobs().log(&self.id, line).await
    }

    /// A lease checkpoint: the lease runs `lease` from now (server clock).
    /// The runtime also checkpoints every running job at a third of the
    /// worker's lease, so call this only to change the lease. When the
    /// lease was already lost this answers `NOTACTIVE` and fires the token
    /// with [`CancelReason::LeaseLost`]; past the job's time limit it
    /// answers `TIMELIMIT` and fires it with [`CancelReason::TimeLimit`]
    /// (the lease never runs past the limit); a requested cancellation
    /// fires it with [`CancelReason::Requested`].
    pub async fn extend(&self, lease: Duration) -> EmqResult<Extended> {
        match self.queue.extend(&self.id, self.token, lease).await {
            Ok(extended) => {
                if extended.cancel_requested {
                    self.control.fire(CancelReason::Requested);
                }
                Ok(extended)
            }
            Err(Error::Refused(refused)) if refused.reason == Refusal::NotActive => {
                self.control.fire(CancelReason::LeaseLost);
                Err(Error::Refused(refused))
            }
            Err(Error::Refused(refused)) if refused.reason == Refusal::TimeLimit => {
                self.control.fire(CancelReason::TimeLimit);
                Err(Error::Refused(refused))
            }
            Err(err) => Err(err),
        }
    }
}

/// A handler's failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobError {
    /// Worth another attempt: the job is retried while attempts remain.
    Retryable(String),
    /// Retrying will not help: the job is dead-lettered now.
    Permanent(String),
    /// Not a failure: send the job back to the schedule set for this long
    /// (see [`JobContext::delay`]).
    Delay(Duration),
    /// The handler stopped because its job was cancelled: the job lands in
    /// `cancelled` without counting a failure (or back in pending when the
    /// worker is shutting down).
    Cancelled,
    /// The handler met a rate limit (a 429): see [`JobError::rate_limited`].
    RateLimited(Duration),
    /// Not a failure: the job waits for the children it spawned
    /// ([`JobContext::spawn_and_wait`]) and runs again once they ended.
    /// The worker writes nothing more for this run.
    Waiting,
}

impl JobError {
    /// A retryable failure with this message.
    pub fn retry(message: impl fmt::Display) -> Self {
        JobError::Retryable(message.to_string())
    }

    /// A permanent failure with this message.
    pub fn permanent(message: impl fmt::Display) -> Self {
        JobError::Permanent(message.to_string())
    }

    /// The job met a rate limit (a partner's 429, with its `Retry-After`):
    /// it goes back to pending without counting a failure or an attempt,
    /// and the whole queue is held for `retry_after` — no claim, by any
    /// worker, hands out a job before it ends (a longer hold already set
    /// stays). The job runs again once the hold is over.
    ///
    /// ```
    /// use echomq::JobError;
    /// use std::time::Duration;
    /// let error = JobError::rate_limited(Duration::from_secs(30));
    /// assert_eq!(error.message(), "rate limited");
    /// ```
    pub fn rate_limited(retry_after: Duration) -> Self {
        JobError::RateLimited(retry_after)
    }

    /// The message stored in the job's `error` field.
    pub fn message(&self) -> &str {
        match self {
            JobError::Retryable(message) | JobError::Permanent(message) => message,
            JobError::Delay(_) | JobError::Waiting => "",
            JobError::Cancelled => "cancelled",
            JobError::RateLimited(_) => "rate limited",
        }
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobError::Retryable(message) => write!(f, "retryable: {message}"),
            JobError::Permanent(message) => write!(f, "permanent: {message}"),
            JobError::Delay(delay) => write!(f, "delayed by {delay:?}"),
            JobError::Cancelled => f.write_str("cancelled"),
            JobError::Waiting => f.write_str("waiting for the jobs it spawned"),
            JobError::RateLimited(retry_after) => {
                write!(f, "rate limited; retry after {retry_after:?}")
            }
        }
    }
}

impl std::error::Error for JobError {}
