//! What a handler gets, and what it may answer.

use echomq_protocol::JobId;
use std::fmt;
use std::time::Duration;

/// The job in hand, given to the handler.
#[derive(Debug)]
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
}

impl<T> JobContext<T> {
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

    /// The message stored in the job's `error` field (empty for a delay).
    pub fn message(&self) -> &str {
        match self {
            JobError::Retryable(message) | JobError::Permanent(message) => message,
            JobError::Delay(_) => "",
        }
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobError::Retryable(message) => write!(f, "retryable: {message}"),
            JobError::Permanent(message) => write!(f, "permanent: {message}"),
            JobError::Delay(delay) => write!(f, "delayed by {delay:?}"),
        }
    }
}

impl std::error::Error for JobError {}
