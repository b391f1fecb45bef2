//! Running the handler on one claimed job and turning what it answered
//! into the transition that records it.

use super::context::{JobContext, JobError};
use super::control::{CancelReason, JobControl};
use super::writer::Verdict;
use crate::job::{Claimed, FailAction};
use crate::queue::{Queue, delay_call, fail_call, requeue_call};
use echomq_protocol::backoff::Backoff;
use futures_util::FutureExt;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

pub(crate) type HandlerFuture = Pin<Box<dyn Future<Output = Result<Vec<u8>, JobError>> + Send>>;
pub(crate) type Handler<T> = Arc<dyn Fn(JobContext<T>) -> HandlerFuture + Send + Sync>;

/// Runs `handler` on `job` and decides what to write:
/// - `Ok` completes (even after a cancellation request: a handler may
///   finish what it started);
/// - after a lost lease, nothing;
/// - after a shutdown past the deadline, any error requeues the job;
/// - `Cancelled`, or any error after a requested cancellation, cancels it
///   (no failure counted);
/// - `Retryable` (and a panic) retries after the backoff curve's delay for
///   this failure count, `Permanent` dead-letters, `Delay` reschedules
///   without a failure, `RateLimited` sends the job back to pending
///   without a failure and holds the queue, and a payload that does not
///   decode dead-letters.
pub(crate) async fn run_job<T: DeserializeOwned>(
    job: Claimed<T>,
    handler: Handler<T>,
    backoff: &Backoff,
    control: Arc<JobControl>,
    queue: Queue<()>,
) -> Verdict {
    let fail =
        |message: &str, action| Verdict::Call(fail_call(&job.id, job.token, message, action));
    let retry = |message: &str| fail(message, FailAction::Retry(backoff.delay(job.failures + 1)));
    let payload = match job.payload() {
        Ok(payload) => payload,
        Err(err) => return fail(&format!("payload does not decode: {err}"), FailAction::Dead),
    };
    let context = JobContext {
        id: job.id.clone(),
        payload,
        attempt: job.attempt(),
        max_attempts: job.max_attempts,
        token: job.token,
        traceparent: job.traceparent.clone(),
        control: control.clone(),
        queue,
    };
    let outcome = AssertUnwindSafe(handler(context)).catch_unwind().await;
    if control.lease_lost() {
        return Verdict::Nothing;
    }
    let error = match outcome {
        Ok(Ok(result)) => return Verdict::Complete(result),
        Ok(Err(JobError::Delay(delay))) => {
            return Verdict::Call(delay_call(&job.id, job.token, delay));
        }
        Ok(Err(error)) => error,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            JobError::retry(format!("handler panicked: {message}"))
        }
    };
    match (control.reason(), error) {
        (Some(CancelReason::Shutdown), _) => Verdict::Call(requeue_call(&job.id)),
        (Some(CancelReason::Requested), error) | (None, error @ JobError::Cancelled) => {
            fail(error.message(), FailAction::Cancelled)
        }
        (_, JobError::Permanent(message)) => fail(&message, FailAction::Dead),
        (_, error @ JobError::RateLimited(retry_after)) => {
            fail(error.message(), FailAction::RateLimited(retry_after))
        }
        (_, error) => retry(error.message()),
    }
}
