//! The worker: its settings, its start, and its handle. What runs once
//! it started is in `crew.rs` (the tasks beside the claim loop),
//! `claim_loop.rs`, `job_task.rs` and `shutdown.rs`.

use super::claim_loop::ClaimLoop;
use super::context::{JobContext, JobError};
use super::crew::Crew;
use super::execute::Handler;
use super::failure::Failure;
use super::options::{Counters, Options, WorkerStats};
use super::share::{Lane, Mailbox, Order, Share, dispatch};
use super::telemetry::WorkerMetrics;
use crate::error::{Error, Result};
use crate::queue::Queue;
use echomq_protocol::backoff::Backoff;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// A worker over one queue, or over several ([`Worker::over`]): claims
/// jobs and runs `handler` on each.
///
/// The handler is an async function of a [`JobContext`] returning
/// `Ok(result)` (any `Serialize` value, stored as the job's result),
/// [`JobError::Retryable`] (retried after the backoff curve's delay while
/// attempts remain, then dead-lettered), [`JobError::Permanent`]
/// (dead-lettered now), [`JobError::Delay`] (back to the schedule set, not
/// a failure) or [`JobError::RateLimited`] (back to pending, not a
/// failure, and the whole queue held). A handler that panics counts as a
/// retryable failure. A payload that does not decode as `T` dead-letters
/// the job.
///
/// Under the queue's flow control (a rate limit, a cap on active jobs:
/// [`Admin::set_rate_limit`](crate::Admin::set_rate_limit),
/// [`Admin::set_concurrency_cap`](crate::Admin::set_concurrency_cap)) a claim
/// hands out what they let out and says how long to wait for more: the
/// worker then sleeps exactly until the window reopens or the hold ends,
/// or, while the cap is full, waits on the queue's signal set for a job to
/// leave `active`. It never polls.
///
/// The default retry curve is [`Backoff::default`]: exponential from 1 s,
/// factor 2, capped at 1 h, full jitter; with the default 3 attempts a job
/// is retried twice.
///
/// A worker over several queues has one concurrency and one budget of
/// jobs held, shared among its queues by weight
/// ([`Worker::weights`], evenly by default) or in strict order
/// ([`Worker::strict`]); each queue's pause, rate limit, caps and groups
/// hold as for a worker over that queue alone, and a queue with nothing
/// to claim gives its turns to the others. See `docs/worker.md`, "One
/// worker over many queues".
pub struct Worker<T> {
    /// The (first) queue.
    pub(super) queue: Queue<T>,
    /// The queues after the first, for a worker over several.
    pub(super) others: Vec<Queue<T>>,
    /// How claims are shared among the queues; `None`: evenly.
    pub(super) order: Option<Order>,
    pub(super) handler: Handler<T>,
    pub(super) options: Options,
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
                serde_json::to_vec(&result).map_err(|err| {
                    JobError::permanent(format!("result does not encode as JSON: {err}"))
                })
            })
        });
        Self {
            queue,
            others: Vec::new(),
            order: None,
            handler,
            options: Options::new(),
        }
    }

    /// A worker running `handler` for each job of `queues`, with one
    /// concurrency and one budget of jobs held for all of them: its claims
    /// go to the queues evenly, or by [`Worker::weights`], or in
    /// [`Worker::strict`] order. The handler tells the queues apart by
    /// [`JobContext::queue`]. Over one queue it is [`Worker::new`].
    ///
    /// Refused ([`Error::BadArgument`]): an empty list, a queue listed
    /// twice.
    pub fn over<F, Fut, R>(queues: impl IntoIterator<Item = Queue<T>>, handler: F) -> Result<Self>
    where
        F: Fn(JobContext<T>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, JobError>> + Send + 'static,
        R: Serialize,
    {
        let mut queues = queues.into_iter();
        let Some(first) = queues.next() else {
            return Err(bad("queues", "a worker needs at least one queue".into()));
        };
        let mut worker = Self::new(first, handler);
        for queue in queues {
            if worker
                .queues()
                .any(|seen| seen.keys().meta() == queue.keys().meta())
            {
                let reason = format!("queue {} is listed twice", queue.name());
                return Err(bad("queues", reason));
            }
            worker.others.push(queue);
        }
        Ok(worker)
    }

    /// Shares the claims among the queues by `weights`, one per queue in
    /// their order: while every queue has jobs, a queue of weight 5 gets 5
    /// claims for each claim of a queue of weight 1 (a smooth weighted
    /// round robin, one turn per job claimed). A queue with nothing to
    /// claim (empty, paused, rate limited, at its cap) gives its turns to
    /// the others.
    ///
    /// Refused ([`Error::BadArgument`]): not one weight per queue, a
    /// weight of 0, weights on a worker in strict order.
    pub fn weights(mut self, weights: impl IntoIterator<Item = u64>) -> Result<Self> {
        let weights: Vec<u64> = weights.into_iter().collect();
        let queues = self.queues().count();
        if self.order == Some(Order::Strict) {
            return Err(bad("weights", STRICT_AND_WEIGHTS.into()));
        }
        if weights.len() != queues {
            let reason = format!(
                "{} weights for {queues} queues: give one per queue",
                weights.len()
            );
            return Err(bad("weights", reason));
        }
        if let Some(zero) = weights.iter().position(|weight| *weight == 0) {
            let name = self
                .queues()
                .nth(zero)
                .expect("one weight per queue")
                .name();
            let reason = format!("queue {name} has weight 0: a weight is 1 or more");
            return Err(bad("weights", reason));
        }
        self.order = Some(Order::Weights(weights));
        Ok(self)
    }

    /// Claims from the queues in their order: from a queue only while
    /// every queue before it has nothing to claim (empty, paused, rate
    /// limited, at its cap). Refused ([`Error::BadArgument`]) on a worker
    /// given weights.
    pub fn strict(mut self) -> Result<Self> {
        if matches!(self.order, Some(Order::Weights(_))) {
            return Err(bad("strict", STRICT_AND_WEIGHTS.into()));
        }
        self.order = Some(Order::Strict);
        Ok(self)
    }

    /// The worker's queues, in their order.
    fn queues(&self) -> impl Iterator<Item = &Queue<T>> {
        std::iter::once(&self.queue).chain(&self.others)
    }

    /// Handlers run at once (default 10). A finished handler's slot goes
    /// with its outcome to the writer, whose completions carry the claim
    /// for it (one command per cycle; see `docs/worker.md`).
    pub fn concurrency(mut self, concurrency: usize) -> Self {
        self.options.concurrency = concurrency.max(1);
        self
    }

    /// Jobs kept claimed ahead of the running ones (default: as many as
    /// the concurrency, one batch, and more while the handlers are quick:
    /// up to 16, as many as they get through in about a millisecond; see
    /// `docs/worker.md`). A job claimed ahead starts the moment
    /// a handler returns, with no round trip, while the last outcomes and
    /// the next claim are on their way: the server never waits on the
    /// worker. It is `active` under its lease from its claim (the
    /// heartbeat extends it, the stalled sweep recovers it), and released
    /// to pending at shutdown without running. While the queue, or a
    /// group of it, has a cap on active jobs
    /// ([`Admin::set_concurrency_cap`](crate::Admin::set_concurrency_cap),
    /// [`Group::set_concurrency_cap`](crate::Group::set_concurrency_cap)) the
    /// worker claims nothing ahead: it reads the caps at start and at
    /// every heartbeat. Handlers that run long keep jobs waiting that
    /// another worker could have taken: give such a worker
    /// `claim_ahead(0)`.
    pub fn claim_ahead(mut self, jobs: usize) -> Self {
        self.options.claim_ahead = Some(jobs);
        self
    }

    /// Lease of each claim (default 30 s): past it, the stalled sweep may
    /// take the job back.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.options.lease = lease.max(Duration::from_millis(1));
        self
    }

    /// The retry curve: the delay before the next attempt, computed from
    /// the job's failure count (default [`Backoff::default`]).
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.options.backoff = backoff;
        self
    }

    /// A fixed delay before every retry: shorthand for
    /// `backoff(Backoff::fixed(delay))`.
    pub fn retry_delay(self, delay: Duration) -> Self {
        self.backoff(Backoff::fixed(delay))
    }

    /// Longest idle wait on the signal key before claiming again (default 5 s).
    pub fn idle_wait(mut self, wait: Duration) -> Self {
        self.options.idle_wait = wait.max(Duration::from_millis(10));
        self
    }

    /// How often the stalled sweep runs (default 30 s); one worker per
    /// interval across all hosts does it.
    pub fn stalled_interval(mut self, interval: Duration) -> Self {
        self.options.stalled_interval = interval.max(Duration::from_millis(10));
        self
    }

    /// Stalls a job may have before the sweep dead-letters it instead of
    /// recovering it (default 1).
    pub fn max_stalls(mut self, max_stalls: u64) -> Self {
        self.options.max_stalls = max_stalls;
        self
    }

    /// Whether this worker also runs a
    /// [`RepeatScheduler`](crate::RepeatScheduler) for its queue (default
    /// yes). Any number may run; each occurrence is enqueued once.
    pub fn schedule_repeats(mut self, repeats: bool) -> Self {
        self.options.repeats = repeats;
        self
    }

    /// The worker's name, stored in each claimed job's `worker` field
    /// (default `host:pid:n`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.options.name = name.into();
        self
    }

    /// Starts the worker on the current tokio runtime. Its metrics
    /// ([`worker_metrics`](crate::worker_metrics)) are registered now, with
    /// the recorder in force on this thread.
    pub fn start(self) -> WorkerHandle {
        let stop = CancellationToken::new();
        let counters: Vec<Arc<Counters>> = self
            .queues()
            .map(|queue| Arc::new(Counters::new(WorkerMetrics::new(queue.name().as_str()))))
            .collect();
        let deadline = Arc::new(Mutex::new(Duration::from_secs(30)));
        let failure = Failure::new(stop.clone());
        let task = if self.others.is_empty() {
            let run = self.run(
                None,
                stop.clone(),
                counters[0].clone(),
                deadline.clone(),
                failure.clone(),
            );
            tokio::spawn(run)
        } else {
            let run = self.run_lanes(
                stop.clone(),
                counters.clone(),
                deadline.clone(),
                failure.clone(),
            );
            tokio::spawn(run)
        };
        WorkerHandle {
            stop,
            counters,
            deadline,
            failure,
            task,
        }
    }

    /// The worker's task (or, over many queues, a lane's): on a
    /// connection of its own, start the tasks beside the claim loop, claim
    /// until told to stop, then shut down.
    async fn run(
        mut self,
        lane: Option<(Lane, Mailbox)>,
        stop: CancellationToken,
        counters: Arc<Counters>,
        deadline: Arc<Mutex<Duration>>,
        failure: Failure,
    ) {
        self.use_own_connection().await;
        let (lane, mailbox) = lane.unzip();
        let (crew, ridden, writer) = Crew::start(self, lane, stop, counters, failure).await;
        let mut claims = ClaimLoop::new(crew, ridden, writer, mailbox);
        claims.claim_until_stopped().await;
        claims.shut_down(&deadline).await;
    }

    /// A worker over many queues: one lane per queue, each run as a worker
    /// over that queue alone, sharing the worker's slots and handlers'
    /// permits, which the dispatcher hands to the lanes by turn
    /// (`share.rs`). Holds the concurrency and as many jobs ahead
    /// (`claim_ahead`, by default one batch): a lane parks none.
    async fn run_lanes(
        self,
        stop: CancellationToken,
        counters: Vec<Arc<Counters>>,
        deadline: Arc<Mutex<Duration>>,
        failure: Failure,
    ) {
        let Worker {
            queue,
            others,
            order,
            handler,
            mut options,
        } = self;
        let queues: Vec<Queue<T>> = std::iter::once(queue).chain(others).collect();
        let order = order.unwrap_or_else(|| Order::Weights(vec![1; queues.len()]));
        options.claim_ahead = Some(options.claim_ahead.unwrap_or(options.concurrency));
        let slots = Arc::new(Semaphore::new(options.held()));
        let running = Arc::new(Semaphore::new(options.concurrency));
        let (share, mailboxes) = Share::new(order, queues.len());
        let share = Arc::new(share);
        tokio::spawn(dispatch(share.clone(), slots.clone(), stop.clone()));
        let mut lanes = tokio::task::JoinSet::new();
        let each = queues.into_iter().zip(mailboxes).zip(counters);
        for (index, ((queue, mailbox), counters)) in each.enumerate() {
            let lane = Lane {
                index,
                share: share.clone(),
                slots: slots.clone(),
                running: running.clone(),
            };
            let worker = Worker {
                queue,
                others: Vec::new(),
                order: None,
                handler: handler.clone(),
                options: options.clone(),
            };
            lanes.spawn(worker.run(
                Some((lane, mailbox)),
                stop.clone(),
                counters,
                deadline.clone(),
                failure.clone(),
            ));
        }
        while lanes.join_next().await.is_some() {}
    }

    /// A connection of its own: its claims and outcomes never wait behind
    /// what the rest of the process pipelined on the connector (a bulk
    /// enqueue), nor that behind them. Without one it shares the
    /// connector's, which reconnects by itself.
    async fn use_own_connection(&mut self) {
        match self.queue.connector().own_connection().await {
            Ok(connector) => self.queue = self.queue.through(connector),
            Err(err) => {
                tracing::warn!(queue = %self.queue.name(), error = %err,
                    "could not open the worker's own connection; sharing the connector's");
            }
        }
    }
}

/// Weights and strict order exclude each other.
const STRICT_AND_WEIGHTS: &str =
    "weights and strict order exclude each other: give one or the other";

fn bad(name: &'static str, reason: String) -> Error {
    Error::BadArgument { name, reason }
}

/// A running worker.
pub struct WorkerHandle {
    stop: CancellationToken,
    /// One per queue.
    counters: Vec<Arc<Counters>>,
    deadline: Arc<Mutex<Duration>>,
    failure: Failure,
    task: tokio::task::JoinHandle<()>,
}

impl WorkerHandle {
    /// What the worker has done so far (over many queues: on all of them).
    pub fn stats(&self) -> WorkerStats {
        sum(&self.counters)
    }

    /// The error that stopped the worker by itself, if one did: the
    /// server's ACL refused its user the queue's keys or a command it
    /// needs ([`Error::NotPermitted`](crate::Error::NotPermitted)),
    /// which no retry mends. Its running jobs were finished or released
    /// as in [`WorkerHandle::shutdown`].
    pub fn failure(&self) -> Option<Arc<crate::Error>> {
        self.failure.error()
    }

    /// Resolves once the worker stopped claiming: after
    /// [`WorkerHandle::shutdown`] began, or by itself with a
    /// [`WorkerHandle::failure`].
    pub async fn stopped(&self) {
        self.stop.cancelled().await;
    }

    /// Graceful shutdown: stop claiming, let running handlers finish for up
    /// to `deadline`; then fire the running jobs' tokens
    /// ([`CancelReason::Shutdown`](crate::CancelReason::Shutdown)), give
    /// their handlers a second to return, and release every unfinished job back to pending
    /// (`REQUEUE`), none left to stall. Every outcome a handler returned is
    /// written before this returns. Returns the final counters.
    pub async fn shutdown(self, deadline: Duration) -> WorkerStats {
        *self.deadline.lock().expect("deadline lock") = deadline;
        self.stop.cancel();
        if let Err(err) = self.task.await {
            tracing::error!(error = %err, "worker task ended abnormally");
        }
        sum(&self.counters)
    }
}

fn sum(counters: &[Arc<Counters>]) -> WorkerStats {
    counters
        .iter()
        .map(|counters| counters.snapshot())
        .fold(WorkerStats::default(), WorkerStats::plus)
}

#[cfg(test)]
mod tests {
    use crate::{Connector, JobContext, JobError, Worker};
    use echomq_testkit::{TestServer, wait_for};
    use redis::Value;
    use std::time::Duration;

    /// Whether some client of the server at `url` is blocked in `command`.
    async fn blocked_in(url: &str, command: &str) -> bool {
        let client = redis::Client::open(url).unwrap();
        let mut admin = client.get_multiplexed_async_connection().await.unwrap();
        let list: String = redis::cmd("CLIENT")
            .arg("LIST")
            .query_async(&mut admin)
            .await
            .unwrap();
        list.lines()
            .any(|line| line.contains(&format!("cmd={command}")) && line.contains("flags=b"))
    }

    #[tokio::test]
    async fn a_worker_claims_and_completes_while_its_connectors_connection_is_blocked() {
        let server = TestServer::start();
        let url = server.url();
        let connector = Connector::connect(url.as_str()).await.unwrap();
        let queue = connector.queue::<u32>("own-connection").unwrap();

        // `WAIT 1 0` waits for a replica the server does not have: for ever.
        // Everything sent on the connector's shared connection after it waits too.
        let mut shared = connector.link().clone();
        tokio::spawn(async move {
            let _ = redis::cmd("WAIT")
                .arg(1)
                .arg(0)
                .query_async::<Value>(&mut shared)
                .await;
        });
        wait_for("WAIT to block", Duration::from_secs(10), || {
            blocked_in(&url, "wait")
        })
        .await;

        let producer = Connector::connect(url.as_str()).await.unwrap();
        let jobs = producer.queue::<u32>("own-connection").unwrap();
        jobs.enqueue(7).await.unwrap();
        let (done, mut ran) = tokio::sync::mpsc::unbounded_channel();
        let worker = Worker::new(queue, move |job: JobContext<u32>| {
            let _ = done.send(job.payload);
            std::future::ready(Ok::<_, JobError>(()))
        })
        .start();
        let payload = tokio::time::timeout(Duration::from_secs(10), ran.recv())
            .await
            .expect("the worker claimed nothing while the connector's connection was blocked");
        assert_eq!(payload, Some(7));
        wait_for(
            "the completion to be written",
            Duration::from_secs(10),
            || async { jobs.admin().counts().await.unwrap().completed == 1 },
        )
        .await;
        worker.shutdown(Duration::from_secs(5)).await;
    }
}
