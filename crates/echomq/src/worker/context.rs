//! What a handler gets, and what it may answer.

use echomq_protocol::JobId;
use std::fmt;

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
}

/// A handler's failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobError {
    /// Worth another attempt: the job is retried while attempts remain.
    Retryable(String),
    /// Retrying will not help: the job is dead-lettered now.
    Permanent(String),
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

    /// The message stored in the job's `error` field.
    pub fn message(&self) -> &str {
        match self {
            JobError::Retryable(message) | JobError::Permanent(message) => message,
        }
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobError::Retryable(message) => write!(f, "retryable: {message}"),
            JobError::Permanent(message) => write!(f, "permanent: {message}"),
        }
    }
}

impl std::error::Error for JobError {}
