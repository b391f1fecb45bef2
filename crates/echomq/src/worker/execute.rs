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
use std::time::Duration;

pub(crate) type HandlerFuture = Pin<Box<dyn Future<Output = Result<Vec<u8>, JobError>> + Send>>;
pub(crate) type Handler<T> = Arc<dyn Fn(JobContext<T>) -> HandlerFuture + Send + Sync>;

/// Runs `handler` on `job` and decides what to write:
/// - `Ok` completes (even after a cancellation request: a handler may
///   finish what it started);
/// - after a lost lease, nothing;
/// - after a shutdown past the deadline, any error requeues the job;
/// - at the job's time limit the token fires (a timer from the start of
///   the run), and any error fails the attempt with `time limit <d>
///   exceeded`, retried after the backoff's delay;
/// - `Cancelled`, or any error after a requested cancellation, cancels it
///   (no failure counted);
/// - `Retryable` (and a panic) retries after the backoff curve's delay for
///   this failure count, `Permanent` dead-letters, `Delay` reschedules
///   without a failure, `RateLimited` sends the job back to pending
///   without a failure and holds the queue, `Waiting` (the job blocked on
///   the children it spawned) writes nothing, and a payload that does not
///   decode dead-letters.
///
/// How long the handler ran (a panic included) goes to `ran`.
///
/// With the `otel` feature, a job that carries a traceparent runs in the
/// attempt's span (`emq process <queue>`), the handler with that span's
/// context as the current one; the span's status is Error when the
/// attempt failed.
pub(crate) async fn run_job<T: DeserializeOwned>(
    job: Claimed<T>,
    handler: Handler<T>,
    backoff: &Backoff,
    control: Arc<JobControl>,
    queue: Queue<()>,
    ran: impl FnOnce(Duration),
) -> Verdict {
    #[cfg(feature = "otel")]
    if let Some(span) = crate::otel::AttemptSpan::start(queue.name().as_str(), &job) {
        use opentelemetry::trace::FutureExt as _;
        let (verdict, failure) = attempt(job, handler, backoff, control, queue, ran)
            .with_context(span.context())
            .await;
        span.end(failure.as_deref());
        return verdict;
    }
    attempt(job, handler, backoff, control, queue, ran).await.0
}

/// Fires `control`'s token with [`CancelReason::TimeLimit`] once `limit`
/// has passed; aborted when the handler returns first.
fn time_limit_timer(limit: Duration, control: Arc<JobControl>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        tokio::select! {
            _ = tokio::time::sleep(limit) => control.fire(CancelReason::TimeLimit),
            _ = control.cancel.cancelled() => {}
        }
    })
}

/// The attempt [`run_job`] runs: the verdict, and the failure's message
/// when the attempt failed (the handler's error or panic, a payload that
/// does not decode).
async fn attempt<T: DeserializeOwned>(
    job: Claimed<T>,
    handler: Handler<T>,
    backoff: &Backoff,
    control: Arc<JobControl>,
    queue: Queue<()>,
    ran: impl FnOnce(Duration),
) -> (Verdict, Option<String>) {
    let fail =
        |message: &str, action| Verdict::Call(fail_call(&job.id, job.token, message, action));
    let retry = |message: &str| fail(message, FailAction::Retry(backoff.delay(job.failures + 1)));
    let payload = match job.payload() {
        Ok(payload) => payload,
        Err(err) => {
            let message = format!("payload does not decode: {err}");
            return (fail(&message, FailAction::Dead), Some(message));
        }
    };
    let context = JobContext {
        id: job.id.clone(),
        payload,
        attempt: job.attempt(),
        max_attempts: job.max_attempts,
        token: job.token,
        traceparent: job.traceparent.clone(),
        time_limit: job.time_limit,
        control: control.clone(),
        queue,
    };
    let started = std::time::Instant::now();
    let timer = job
        .time_limit
        .map(|limit| time_limit_timer(limit, control.clone()));
    let outcome = AssertUnwindSafe(handler(context)).catch_unwind().await;
    if let Some(timer) = timer {
        timer.abort();
    }
    ran(started.elapsed());
    // FLOW.WAIT blocked the job: its token is void (a lease checkpoint
    // since may have found it so), and there is nothing to write.
    if let Ok(Err(JobError::Waiting)) = outcome {
        return (Verdict::Parked, None);
    }
    if control.lease_lost() {
        return (Verdict::Nothing, None);
    }
    let error = match outcome {
        Ok(Ok(result)) => return (Verdict::Complete(result), None),
        Ok(Err(JobError::Delay(delay))) => {
            return (Verdict::Call(delay_call(&job.id, job.token, delay)), None);
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
    let verdict = match (control.reason(), &error) {
        (Some(CancelReason::Shutdown), _) => Verdict::Call(requeue_call(&job.id)),
        (Some(CancelReason::TimeLimit), _) => {
            let limit = job.time_limit.unwrap_or_default().as_millis() as u64;
            let message = echomq_protocol::time_limit::exceeded(limit);
            let verdict = retry(&message);
            return (verdict, Some(message));
        }
        (Some(CancelReason::Requested), error) | (None, error @ JobError::Cancelled) => {
            fail(error.message(), FailAction::Cancelled)
        }
        (_, JobError::Permanent(message)) => fail(message, FailAction::Dead),
        (_, error @ JobError::RateLimited(retry_after)) => {
            fail(error.message(), FailAction::RateLimited(*retry_after))
        }
        (_, error) => retry(error.message()),
    };
    // A failure is what the handler answered as one (or a panic), unless
    // the job was cancelled; a rate limit or a shutdown is not one either.
    let failed = control.reason().is_none()
        && matches!(error, JobError::Retryable(_) | JobError::Permanent(_));
    (verdict, failed.then(|| error.message().to_string()))
}
