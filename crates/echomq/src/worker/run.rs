//! The claim loop and graceful shutdown.

use super::context::{JobContext, JobError};
use super::control::{CancelReason, JobControl, Registry};
use super::execute::{Handler, run_job};
use super::failure::Failure;
use super::options::{Counters, Options, WorkerStats};
use super::ride::{Ride, Rides};
use super::signal::Wakeups;
use super::telemetry::{JobOutcome, WorkerMetrics};
use super::watch::{heartbeat, listen_for_cancels, sweep_stalled, watch_cap};
use super::writer::{Outcome, Progress, Verdict, write_outcomes};
use crate::JobId;
use crate::claim_batch::{ClaimBatch, Withheld};
use crate::error::Result;
use crate::queue::{Queue, requeue_call};
use crate::repeat::RepeatScheduler;
use echomq_protocol::backoff::Backoff;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::runtime::RuntimeFlavor;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// How long handlers told to stop at shutdown get to return.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// A worker over one queue: claims jobs and runs `handler` on each.
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
/// [`Admin::set_concurrency`](crate::Admin::set_concurrency)) a claim
/// hands out what they let out and says how long to wait for more: the
/// worker then sleeps exactly until the window reopens or the hold ends,
/// or, while the cap is full, waits on the queue's signal set for a job to
/// leave `active`. It never polls.
///
/// The default retry curve is [`Backoff::default`]: exponential from 1 s,
/// factor 2, capped at 1 h, full jitter; with the default 3 attempts a job
/// is retried twice.
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
                serde_json::to_vec(&result).map_err(|err| {
                    JobError::permanent(format!("result does not encode as JSON: {err}"))
                })
            })
        });
        Self {
            queue,
            handler,
            options: Options::new(),
        }
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
    /// ([`Admin::set_concurrency`](crate::Admin::set_concurrency),
    /// [`Group::set_concurrency`](crate::Group::set_concurrency)) the
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

    /// Whether this worker also runs a [`RepeatScheduler`] for its queue
    /// (default yes). Any number may run; each occurrence is enqueued once.
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
        let metrics = WorkerMetrics::new(self.queue.name().as_str());
        let counters = Arc::new(Counters::new(metrics));
        let deadline = Arc::new(Mutex::new(Duration::from_secs(30)));
        let failure = Failure::new(stop.clone());
        let run = self.run(
            stop.clone(),
            counters.clone(),
            deadline.clone(),
            failure.clone(),
        );
        WorkerHandle {
            stop,
            counters,
            deadline,
            failure,
            task: tokio::spawn(run),
        }
    }

    async fn run(
        mut self,
        stop: CancellationToken,
        counters: Arc<Counters>,
        deadline: Arc<Mutex<Duration>>,
        failure: Failure,
    ) {
        // A connection of its own: its claims and outcomes never wait behind
        // what the rest of the process pipelined on the connector (a bulk
        // enqueue), nor that behind them. Without one it shares the
        // connector's, which reconnects by itself.
        match self.queue.connector().own_connection().await {
            Ok(connector) => self.queue = self.queue.through(connector),
            Err(err) => {
                tracing::warn!(queue = %self.queue.name(), error = %err,
                    "could not open the worker's own connection; sharing the connector's");
            }
        }
        // A slot is a job held: running or claimed ahead.
        let slots = Arc::new(Semaphore::new(self.options.held()));
        let running = Arc::new(Semaphore::new(self.options.concurrency));
        let unwritten = Arc::new(Semaphore::new(self.options.held()));
        let (outcomes, written) = mpsc::unbounded_channel();
        let progress = Arc::new(Progress::new());
        let (rides, mut ridden) =
            Rides::new(&self.options.name, self.options.lease, self.options.ahead());
        let rides = Arc::new(rides);
        let writer = tokio::spawn(write_outcomes(
            self.queue.clone(),
            written,
            counters.clone(),
            progress.clone(),
            rides.clone(),
            self.options.held(),
        ));
        let listener_stop = stop.child_token();
        let wakeups = Wakeups::start(
            self.queue.clone(),
            self.options.idle_wait,
            listener_stop.clone(),
            failure.clone(),
        );
        let backoff = Arc::new(self.options.backoff.clone());
        let registry = Registry::default();
        let catch_up = Arc::new(Notify::new());
        tokio::spawn(listen_for_cancels(
            self.queue.clone(),
            registry.clone(),
            catch_up.clone(),
            listener_stop.clone(),
        ));
        tokio::spawn(heartbeat(
            self.queue.clone(),
            registry.clone(),
            self.options.lease,
            rides.clone(),
            catch_up,
            listener_stop.clone(),
        ));
        // Under a cap on active jobs the worker claims nothing ahead: its
        // ahead slots are parked from the start (and as they come back
        // once the heartbeat sees a cap set later).
        watch_cap(&self.queue, &rides).await;
        rides.park_free(&slots);
        tokio::spawn(sweep_stalled(
            self.queue.clone(),
            self.options.name.clone(),
            self.options.stalled_interval,
            self.options.max_stalls,
            listener_stop.clone(),
            failure.clone(),
        ));
        let erased: Queue<()> = self.queue.typed();
        let repeats = self.options.repeats.then(|| {
            let scheduler = RepeatScheduler::new(&self.queue);
            let nudge = scheduler.nudger();
            let (stop, failure) = (listener_stop.clone(), failure.clone());
            tokio::spawn(async move {
                if let Some(err) = scheduler.serve(stop).await {
                    let _ = failure.ends(err);
                }
            });
            nudge
        });
        let one_thread =
            tokio::runtime::Handle::current().runtime_flavor() == RuntimeFlavor::CurrentThread;
        let mut tasks = JoinSet::new();
        let mut pause = Duration::from_millis(50);
        let mut capped = false;
        let mut state = Claiming::Now;

        loop {
            rides.set_open(state.rides());
            wakeups
                .idle
                .send_if_modified(|idle| std::mem::replace(idle, state.idle()) != state.idle());
            let next = tokio::select! {
                biased;
                _ = stop.cancelled() => Next::Stop,
                Some(ride) = ridden.recv() => Next::Claimed(ride.claimed, ride.slots),
                _ = self.until_ready(&state, &wakeups, &progress, &stop, &failure), if state.waits() => Next::Ready,
                permits = free_slots(&slots, &stop), if state == Claiming::Now => match permits {
                    Some(permits) => Next::Own(permits),
                    None => Next::Stop,
                },
            };
            let (claimed, permits) = match next {
                Next::Stop => break,
                Next::Ready => {
                    state = Claiming::Now;
                    continue;
                }
                Next::Claimed(claimed, permits) => (claimed, permits),
                Next::Own(mut permits) => {
                    // The ahead slots not wanted (all of them under a cap)
                    // are parked, not claimed for.
                    rides.balance(&mut permits);
                    if permits.is_empty() {
                        continue;
                    }
                    if capped && !after_own_outcomes(&progress, &stop).await {
                        break;
                    }
                    let claimed = self
                        .queue
                        .claim_with_wait(&self.options.name, self.options.lease, permits.len())
                        .await;
                    (claimed, permits)
                }
            };
            let asked = permits.len();
            let ClaimBatch { jobs, withheld } = match claimed {
                Ok(batch) => {
                    pause = Duration::from_millis(50);
                    batch
                }
                Err(err) => {
                    let Err(err) = failure.ends(err) else { break };
                    tracing::warn!(queue = %self.queue.name(), error = %err, "claim failed; retrying");
                    state = Claiming::After(tokio::time::Instant::now() + pause);
                    pause = (pause * 2).min(Duration::from_secs(5));
                    continue;
                }
            };
            // The cap binds from the claim it withheld jobs for room until
            // one that got fewer than it asked for without it (the queue ran
            // short, or the cap is gone).
            capped = match withheld {
                Some(Withheld::CapFull) => true,
                None if jobs.len() < asked => false,
                _ => capped,
            };
            state = match withheld {
                // The window reopens, or the hold ends, then: nothing to ask before.
                Some(Withheld::For(wait)) => Claiming::After(tokio::time::Instant::now() + wait),
                Some(Withheld::CapFull) => Claiming::CapFull,
                None if jobs.is_empty() => Claiming::Idle,
                None => Claiming::Now,
            };
            if jobs.is_empty() {
                continue;
            }
            Counters::add(&counters.claimed, jobs.len() as u64);
            counters.metrics.started.increment(jobs.len() as u64);
            counters.metrics.claim_batch_size.record(jobs.len() as f64);
            if let Some(nudge) = &repeats
                && jobs
                    .iter()
                    .any(|job| job.id.as_str().starts_with("repeat:"))
            {
                // An occurrence started: schedule the next one now.
                nudge.notify_one();
            }
            for (job, permit) in jobs.into_iter().zip(permits) {
                let (handler, outcomes, backoff) =
                    (self.handler.clone(), outcomes.clone(), backoff.clone());
                let (registry, queue, unwritten, progress, counters) = (
                    registry.clone(),
                    erased.clone(),
                    unwritten.clone(),
                    progress.clone(),
                    counters.clone(),
                );
                let (running, stop, rides) = (running.clone(), stop.clone(), rides.clone());
                let control = Arc::new(JobControl::new(job.id.clone(), job.token));
                registry.insert(control.clone());
                let span = tracing::info_span!("job", queue = %self.queue.name(), id = %job.id, attempt = job.attempt());
                tasks.spawn(
                    async move {
                        let (id, token) = (job.id.clone(), job.token);
                        let handler_duration = &counters.metrics.handler_duration;
                        // A job claimed ahead waits for a handler to
                        // return; once the worker stops, it never starts.
                        let started = tokio::select! {
                            biased;
                            _ = stop.cancelled() => None,
                            run = running.acquire_owned() => Some(run.expect("semaphore is never closed")),
                        };
                        let verdict = match started {
                            Some(_run) => {
                                // The handler's time goes to the metrics and
                                // sets how many jobs are held ahead.
                                let ran = |run: Duration| {
                                    handler_duration.record(run);
                                    rides.ran(run);
                                };
                                run_job(job, handler, &backoff, control, queue, ran).await
                            }
                            None => Verdict::Call(requeue_call(&id)),
                        };
                        registry.remove(&id);
                        // The handler is done: its slot goes with the
                        // outcome, once it has a place in the writer's
                        // queue, for the next claim to ride with it.
                        let place = unwritten
                            .acquire_owned()
                            .await
                            .expect("semaphore is never closed");
                        let outcome = Outcome {
                            id,
                            token,
                            verdict,
                            _place: place,
                            slot: Some(permit),
                        };
                        progress.hand(&outcomes, outcome);
                    }
                    .instrument(span),
                );
            }
            while tasks.try_join_next().is_some() {}
            // On a one-thread runtime, the jobs just started run before the
            // next claim is taken in: the writer then sends their outcomes
            // before the next half batch's jobs run, and the two halves
            // stay apart on the wire (see `writer::batch_max`). Threads of
            // their own already keep them apart; a yield there only delays.
            if one_thread {
                tokio::task::yield_now().await;
            }
        }

        // No claim rides from here; one already sent is released.
        rides.set_open(false);
        rides.stop_parking();
        wakeups.idle.send_replace(false);
        let grace = *deadline.lock().expect("deadline lock");
        let all = self.options.held() as u32;
        let finished = tokio::time::timeout(grace, async {
            let mut all = std::pin::pin!(slots.acquire_many(all));
            loop {
                tokio::select! {
                    _ = &mut all => break,
                    Some(ride) = ridden.recv() => self.release_ride(ride, &counters).await,
                }
            }
        })
        .await;
        if finished.is_err() {
            self.release_unfinished(&registry, &slots, tasks, &counters)
                .await;
        }
        listener_stop.cancel();
        drop(outcomes);
        let _ = writer.await;
        while let Ok(ride) = ridden.try_recv() {
            self.release_ride(ride, &counters).await;
        }
    }

    /// Past the shutdown deadline: tell every running handler to stop, give
    /// them a moment to return (their jobs go back to pending), then abort
    /// the rest and send their jobs back to pending too — none is left to
    /// stall.
    async fn release_unfinished(
        &self,
        registry: &Registry,
        slots: &Arc<Semaphore>,
        mut tasks: JoinSet<()>,
        counters: &Counters,
    ) {
        let running = registry.all();
        tracing::warn!(queue = %self.queue.name(), running = running.len(),
            "shutdown deadline passed; cancelling running jobs and releasing them to pending");
        for control in &running {
            control.fire(CancelReason::Shutdown);
        }
        let all = self.options.held() as u32;
        if tokio::time::timeout(SHUTDOWN_GRACE, slots.acquire_many(all))
            .await
            .is_err()
        {
            tasks.abort_all();
        }
        while tasks.join_next().await.is_some() {}
        let abandoned: Vec<JobId> = registry
            .all()
            .iter()
            .map(|control| control.id.clone())
            .collect();
        self.release(&abandoned, counters, "abandoned jobs").await;
    }

    /// Sends `jobs` back to pending (`REQUEUE`), counted released; `what`
    /// names them in the log.
    async fn release(&self, jobs: &[JobId], counters: &Counters, what: &str) {
        if jobs.is_empty() {
            return;
        }
        let calls: Vec<_> = jobs.iter().map(requeue_call).collect();
        match self.queue.call_many(&calls).await {
            Ok(replies) => {
                let released = replies.iter().filter(|reply| reply.is_ok()).count();
                counters.finish(JobOutcome::Released, released as u64);
                tracing::info!(queue = %self.queue.name(), released, "released {what} to pending");
            }
            Err(err) => tracing::error!(queue = %self.queue.name(), error = %err,
                "could not release {what}; the stalled sweep will recover them"),
        }
    }

    /// Waits until the worker may claim again: idle, for a wake-up or
    /// the earliest scheduled run-at; after a rate window or an error,
    /// for its end; under a full cap, for its own next write or another
    /// worker's wake-up.
    async fn until_ready(
        &self,
        state: &Claiming,
        wakeups: &Wakeups,
        progress: &Progress,
        stop: &CancellationToken,
        failure: &Failure,
    ) {
        match state {
            Claiming::Now => {}
            Claiming::Idle => self.wait_for_work(wakeups, stop, failure).await,
            Claiming::After(deadline) => tokio::time::sleep_until(*deadline).await,
            // A job leaving `active` makes room. This worker's own next
            // write does (its completions carry a claim, or the loop claims
            // right after it), and so does another worker's, which signals
            // the queue.
            Claiming::CapFull => {
                tokio::select! {
                    _ = progress.written() => {}
                    _ = wakeups.wake.notified() => {}
                }
            }
        }
    }

    /// Idle: wait for a wake-up marker, the earliest scheduled run-at
    /// (timed locally from the server's clock), or stop.
    async fn wait_for_work(&self, wakeups: &Wakeups, stop: &CancellationToken, failure: &Failure) {
        let due_in = match self.queue.next_due().await {
            // One ms past the run-at: CLAIM promotes scores <= its own now, in
            // whole ms, so waking on the dot could find the job not yet due.
            Ok((now, Some(due))) => Some(Duration::from_millis(due.saturating_sub(now) + 1)),
            Ok((_, None)) => None,
            Err(err) => match failure.ends(err) {
                Ok(()) => return,
                Err(err) => {
                    tracing::warn!(queue = %self.queue.name(), error = %err, "reading the schedule failed");
                    Some(Duration::from_millis(100))
                }
            },
        };
        let due = async {
            match due_in {
                Some(wait) => tokio::time::sleep(wait).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = wakeups.wake.notified() => {}
            _ = due => {}
            _ = stop.cancelled() => {}
        }
    }

    /// A ride answered after the worker stopped claiming: its jobs go
    /// straight back to pending (`REQUEUE`), none run.
    async fn release_ride(&self, ride: Ride<T>, counters: &Counters) {
        let Ok(batch) = ride.claimed else { return };
        let jobs: Vec<JobId> = batch.jobs.into_iter().map(|job| job.id).collect();
        self.release(&jobs, counters, "jobs claimed as the worker stopped")
            .await;
    }
}

/// Where the claim loop stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Claiming {
    /// Claiming: for free slots, and by rides with the completions.
    Now,
    /// The last claim found nothing: waiting for work.
    Idle,
    /// Waiting until then: a rate window reopens, a hold ends, or a
    /// failed claim's pause.
    After(tokio::time::Instant),
    /// The cap on active jobs is full: rides go on (the completions free
    /// room first), the loop waits for room.
    CapFull,
}

impl Claiming {
    /// Whether claims ride with completions.
    fn rides(self) -> bool {
        matches!(self, Claiming::Now | Claiming::CapFull)
    }

    /// Whether the loop waits before it claims for free slots.
    fn waits(self) -> bool {
        self != Claiming::Now
    }

    /// Whether the worker waits on the queue's signal set.
    fn idle(self) -> bool {
        matches!(self, Claiming::Idle | Claiming::CapFull)
    }
}

/// What the claim loop does next.
enum Next<T> {
    /// Stop claiming.
    Stop,
    /// The wait is over: claim.
    Ready,
    /// Claim for these free slots.
    Own(Vec<OwnedSemaphorePermit>),
    /// A ride's claim answered, for these slots.
    Claimed(Result<ClaimBatch<T>>, Vec<OwnedSemaphorePermit>),
}

/// Waits for at least one free slot and takes every free one; `None` once
/// `stop` is cancelled.
async fn free_slots(
    slots: &Arc<Semaphore>,
    stop: &CancellationToken,
) -> Option<Vec<OwnedSemaphorePermit>> {
    // A stop wins over a slot that frees at the same moment: a worker
    // told to stop claims nothing more.
    let first = tokio::select! {
        biased;
        _ = stop.cancelled() => return None,
        permit = slots.clone().acquire_owned() => permit.expect("semaphore is never closed"),
    };
    let mut permits = vec![first];
    while let Ok(permit) = slots.clone().try_acquire_owned() {
        permits.push(permit);
    }
    Some(permits)
}

/// While the queue's cap on active jobs binds, this worker's finished jobs
/// still count as active until their outcomes are on the server, and a
/// claim that reaches the server before them is refused for the room they
/// take (and then waits for a wake-up). So a capped worker sends its claim
/// only once the outcomes of its free slots are on the connection: the
/// server runs them first, and the claim gets the room they free, in the
/// same round trip. False once `stop` is cancelled.
async fn after_own_outcomes(progress: &Progress, stop: &CancellationToken) -> bool {
    tokio::select! {
        biased;
        _ = stop.cancelled() => false,
        _ = progress.all_sent() => true,
    }
}

/// A running worker.
pub struct WorkerHandle {
    stop: CancellationToken,
    counters: Arc<Counters>,
    deadline: Arc<Mutex<Duration>>,
    failure: Failure,
    task: tokio::task::JoinHandle<()>,
}

impl WorkerHandle {
    /// What the worker has done so far.
    pub fn stats(&self) -> WorkerStats {
        self.counters.snapshot()
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
    /// ([`CancelReason::Shutdown`]), give their handlers a second to
    /// return, and release every unfinished job back to pending
    /// (`REQUEUE`), none left to stall. Every outcome a handler returned is
    /// written before this returns. Returns the final counters.
    pub async fn shutdown(self, deadline: Duration) -> WorkerStats {
        *self.deadline.lock().expect("deadline lock") = deadline;
        self.stop.cancel();
        if let Err(err) = self.task.await {
            tracing::error!(error = %err, "worker task ended abnormally");
        }
        self.counters.snapshot()
    }
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
            || async { jobs.counts().await.unwrap().completed == 1 },
        )
        .await;
        worker.shutdown(Duration::from_secs(5)).await;
    }
}
