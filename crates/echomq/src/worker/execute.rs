//! Running the handler on one claimed job and turning what it answered
//! into the transition that records it.

use super::context::{JobContext, JobError};
use super::writer::Verdict;
use crate::job::{Claimed, FailAction};
use crate::queue::{delay_call, fail_call};
use echomq_protocol::backoff::Backoff;
use futures_util::FutureExt;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;

pub(crate) type HandlerFuture = Pin<Box<dyn Future<Output = Result<Vec<u8>, JobError>> + Send>>;
pub(crate) type Handler<T> = Arc<dyn Fn(JobContext<T>) -> HandlerFuture + Send + Sync>;

/// Runs `handler` on `job`: `Ok` completes, `Retryable` retries after the
/// backoff curve's delay for this failure count, `Permanent` dead-letters,
/// `Delay` reschedules without a failure, a panic is a retryable failure,
/// and a payload that does not decode dead-letters the job.
pub(crate) async fn run_job<T: DeserializeOwned>(
    job: Claimed<T>,
    handler: Handler<T>,
    backoff: &Backoff,
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
    };
    match AssertUnwindSafe(handler(context)).catch_unwind().await {
        Ok(Ok(result)) => Verdict::Complete(result),
        Ok(Err(JobError::Retryable(message))) => retry(&message),
        Ok(Err(JobError::Permanent(message))) => fail(&message, FailAction::Dead),
        Ok(Err(JobError::Delay(delay))) => Verdict::Call(delay_call(&job.id, job.token, delay)),
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            retry(&format!("handler panicked: {message}"))
        }
    }
}
