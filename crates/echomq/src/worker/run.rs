//! The claim loop, the job tasks and graceful shutdown.

use super::context::{JobContext, JobError};
use super::options::{Counters, Options, WorkerStats};
use super::writer::{Outcome, Verdict, write_outcomes};
use crate::error::Result;
use crate::job::{Claimed, FailAction};
use crate::link::Link;
use crate::queue::{Queue, fail_call};
use futures_util::FutureExt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

type HandlerFuture = Pin<Box<dyn Future<Output = Result<Vec<u8>, JobError>> + Send>>;
type Handler<T> = Arc<dyn Fn(JobContext<T>) -> HandlerFuture + Send + Sync>;

/// A worker over one queue: claims jobs and runs `handler` on each.
///
/// The handler is an async function of a [`JobContext`] returning
/// `Ok(result)` (any `Serialize` value, stored as the job's result),
/// [`JobError::Retryable`] (retried after `retry_delay` while attempts
/// remain) or [`JobError::Permanent`] (dead-lettered now). A handler that
/// panics counts as a retryable failure. A payload that does not decode as
/// `T` dead-letters the job with the decode error.
pub struct Worker<T> {
    queue: Queue<T>,
    handler: Handler<T>,
    options: Options,
}

impl<T> Worker<T>
where
    T: DeserializeOwned + Send + 'static,
{
    /// A worker running `handler` for each job of `queue`.
    pub fn new<F, Fut, R>(queue: Queue<T>, handler: F) -> Self
    where
        F: Fn(JobContext<T>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, JobError>> + Send + 'static,
        R: Serialize,
    {
        let handler: Handler<T> = Arc::new(move |ctx| {
            let run = handler(ctx);
            Box::pin(async move {
                let result = run.await?;
                serde_json::to_vec(&result)
                    .map_err(|err| JobError::permanent(format!("result does not encode as JSON: {err}")))
            })
        });
        Self {
            queue,
            handler,
            options: Options::new(),
        }
    }

    /// Jobs run at once (default 10).
    pub fn concurrency(mut self, concurrency: usize) -> Self {
        self.options.concurrency = concurrency.max(1);
        self
    }

    /// Lease of each claim (default 30 s): past it, the stalled sweep may
    /// take the job back.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.options.lease = lease.max(Duration::from_millis(1));
        self
    }

    /// Delay before a retryable failure is retried (default 1 s).
    pub fn retry_delay(mut self, delay: Duration) -> Self {
        self.options.retry_delay = delay;
        self
    }

    /// Longest idle wait on the signal key before claiming again (default 5 s).
    pub fn idle_wait(mut self, wait: Duration) -> Self {
        self.options.idle_wait = wait.max(Duration::from_millis(10));
        self
    }

    /// The worker's name, stored in each claimed job's `worker` field
    /// (default `host:pid:n`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.options.name = name.into();
        self
    }

    /// Starts the worker on the current tokio runtime.
    pub fn start(self) -> WorkerHandle {
        let stop = CancellationToken::new();
        let counters = Arc::new(Counters::default());
        let deadline = Arc::new(Mutex::new(Duration::from_secs(30)));
        let run = self.run(stop.clone(), counters.clone(), deadline.clone());
        WorkerHandle {
            stop,
            counters,
            deadline,
            task: tokio::spawn(run),
        }
    }

    async fn run(self, stop: CancellationToken, counters: Arc<Counters>, deadline: Arc<Mutex<Duration>>) {
        let slots = Arc::new(Semaphore::new(self.options.concurrency));
        let (outcomes, written) = mpsc::unbounded_channel();
        let writer = tokio::spawn(write_outcomes(self.queue.clone(), written, counters.clone()));
        let mut tasks = JoinSet::new();
        let mut signal: Option<Link> = None;
        let mut pause = Duration::from_millis(50);

        while !stop.is_cancelled() {
            let first = tokio::select! {
                permit = slots.clone().acquire_owned() => permit.expect("semaphore is never closed"),
                _ = stop.cancelled() => break,
            };
            let mut permits = vec![first];
            while let Ok(permit) = slots.clone().try_acquire_owned() {
                permits.push(permit);
            }
            let claimed = self.queue.claim(&self.options.name, self.options.lease, permits.len()).await;
            let jobs = match claimed {
                Ok(jobs) => {
                    pause = Duration::from_millis(50);
                    jobs
                }
                Err(err) => {
                    tracing::warn!(queue = %self.queue.name(), error = %err, "claim failed; retrying");
                    signal = None;
                    tokio::select! { _ = tokio::time::sleep(pause) => {}, _ = stop.cancelled() => {} }
                    pause = (pause * 2).min(Duration::from_secs(5));
                    continue;
                }
            };
            if jobs.is_empty() {
                drop(permits);
                tokio::select! {
                    woke = self.wait_for_signal(&mut signal) => if let Err(err) = woke {
                        tracing::warn!(queue = %self.queue.name(), error = %err, "waiting on the signal key failed");
                        signal = None;
                        tokio::select! { _ = tokio::time::sleep(pause) => {}, _ = stop.cancelled() => {} }
                    },
                    _ = stop.cancelled() => break,
                }
                continue;
            }
            Counters::add(&counters.claimed, jobs.len() as u64);
            for (job, permit) in jobs.into_iter().zip(permits) {
                let handler = self.handler.clone();
                let outcomes = outcomes.clone();
                let retry_delay = self.options.retry_delay;
                let span = tracing::info_span!("job", queue = %self.queue.name(), id = %job.id, attempt = job.attempt());
                tasks.spawn(
                    async move {
                        let (id, token) = (job.id.clone(), job.token);
                        let verdict = run_job(job, handler, retry_delay).await;
                        // The writer only stops after this loop ends, so the send cannot fail while jobs run.
                        let _ = outcomes.send(Outcome { id, token, verdict, _slot: permit });
                    }
                    .instrument(span),
                );
            }
            while tasks.try_join_next().is_some() {}
        }

        let grace = *deadline.lock().expect("deadline lock");
        let all = self.options.concurrency as u32;
        if tokio::time::timeout(grace, slots.acquire_many(all)).await.is_err() {
            tracing::warn!(queue = %self.queue.name(), running = tasks.len(),
                "shutdown deadline passed; abandoning running jobs to the stalled sweep");
            tasks.abort_all();
        }
        drop(outcomes);
        while tasks.join_next().await.is_some() {}
        let _ = writer.await;
    }

    /// Blocks on the signal set until a wake-up marker or `idle_wait`.
    async fn wait_for_signal(&self, link: &mut Option<Link>) -> Result<()> {
        if link.is_none() {
            *link = Some(self.queue.connector().dedicated_link().await?);
        }
        let conn = link.as_mut().expect("link was just set");
        redis::cmd("BZPOPMIN")
            .arg(self.queue.keys().signal())
            .arg(self.options.idle_wait.as_secs_f64())
            .query_async::<redis::Value>(conn)
            .await?;
        Ok(())
    }
}

/// Runs the handler on one claimed job and returns what to record.
async fn run_job<T: DeserializeOwned>(job: Claimed<T>, handler: Handler<T>, retry_delay: Duration) -> Verdict {
    let fail = |message: &str, action| Verdict::Fail(fail_call(&job.id, job.token, message, action));
    let payload = match job.payload() {
        Ok(payload) => payload,
        Err(err) => {
            return fail(&format!("payload does not decode: {err}"), FailAction::Dead);
        }
    };
    let context = JobContext {
        id: job.id.clone(),
        payload,
        attempt: job.attempt(),
        max_attempts: job.max_attempts,
        token: job.token,
    };
    let outcome = AssertUnwindSafe(handler(context)).catch_unwind().await;
    match outcome {
        Ok(Ok(result)) => Verdict::Complete(result),
        Ok(Err(JobError::Retryable(message))) => fail(&message, FailAction::Retry(retry_delay)),
        Ok(Err(JobError::Permanent(message))) => fail(&message, FailAction::Dead),
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            fail(&format!("handler panicked: {message}"), FailAction::Retry(retry_delay))
        }
    }
}

/// A running worker.
pub struct WorkerHandle {
    stop: CancellationToken,
    counters: Arc<Counters>,
    deadline: Arc<Mutex<Duration>>,
    task: tokio::task::JoinHandle<()>,
}

impl WorkerHandle {
    /// What the worker has done so far.
    pub fn stats(&self) -> WorkerStats {
        self.counters.snapshot()
    }

    /// Graceful shutdown: stop claiming, let running jobs finish and their
    /// outcomes be written for up to `deadline`, then abandon the rest (the
    /// stalled sweep recovers them). Returns the final counters.
    pub async fn shutdown(self, deadline: Duration) -> WorkerStats {
        *self.deadline.lock().expect("deadline lock") = deadline;
        self.stop.cancel();
        if let Err(err) = self.task.await {
            tracing::error!(error = %err, "worker task ended abnormally");
        }
        self.counters.snapshot()
    }
}
