//! One claimed job's task: it waits for a free handler, runs the job (or,
//! once the worker stopped, sends it back to pending unrun), and hands
//! the outcome with the job's slot to the writer.

use super::control::{JobControl, Registry};
use super::crew::Crew;
use super::execute::{Handler, run_job};
use super::options::Counters;
use super::ride::Rides;
use super::writer::{Outcome, Progress, Verdict};
use crate::JobId;
use crate::job::Claimed;
use crate::queue::{Queue, requeue_call};
use echomq_protocol::backoff::Backoff;
use serde::de::DeserializeOwned;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// The crew's parts a job's task holds.
pub(super) struct JobTask<T> {
    handler: Handler<T>,
    outcomes: UnboundedSender<Outcome>,
    backoff: Arc<Backoff>,
    registry: Registry,
    queue: Queue<()>,
    unwritten: Arc<Semaphore>,
    progress: Arc<Progress>,
    counters: Arc<Counters>,
    running: Arc<Semaphore>,
    stop: CancellationToken,
    rides: Arc<Rides<T>>,
}

impl<T> JobTask<T>
where
    T: DeserializeOwned + Send + 'static,
{
    /// A task over `crew`'s parts, handing its outcome on `outcomes`.
    pub(super) fn new(crew: &Crew<T>, outcomes: &UnboundedSender<Outcome>) -> Self {
        Self {
            handler: crew.handler.clone(),
            outcomes: outcomes.clone(),
            backoff: crew.backoff.clone(),
            registry: crew.registry.clone(),
            queue: crew.erased.clone(),
            unwritten: crew.unwritten.clone(),
            progress: crew.progress.clone(),
            counters: crew.counters.clone(),
            running: crew.running.clone(),
            stop: crew.stop.clone(),
            rides: crew.rides.clone(),
        }
    }

    /// Runs `job` under `control` and hands its outcome, with `slot`, to
    /// the writer.
    pub(super) async fn run(
        self,
        job: Claimed<T>,
        control: Arc<JobControl>,
        slot: OwnedSemaphorePermit,
    ) {
        let (id, token) = (job.id.clone(), job.token);
        // A job claimed ahead waits for a handler to return; once the
        // worker stops, it never starts.
        let verdict = match self.free_handler().await {
            Some(_run) => self.run_handler(job, control).await,
            None => Verdict::Call(requeue_call(&id)),
        };
        self.registry.remove(&id);
        self.hand_outcome(id, token, verdict, slot).await;
    }

    /// A handler's permit once one is free; `None` once the worker stops.
    async fn free_handler(&self) -> Option<OwnedSemaphorePermit> {
        tokio::select! {
            biased;
            _ = self.stop.cancelled() => None,
            run = self.running.clone().acquire_owned() => Some(run.expect("semaphore is never closed")),
        }
    }

    /// Runs the handler on `job`. Its time goes to the metrics and sets
    /// how many jobs are held ahead.
    async fn run_handler(&self, job: Claimed<T>, control: Arc<JobControl>) -> Verdict {
        let handler_duration = &self.counters.metrics.handler_duration;
        let ran = |run: Duration| {
            handler_duration.record(run);
            self.rides.ran(run);
        };
        let (handler, queue) = (self.handler.clone(), self.queue.clone());
        run_job(job, handler, &self.backoff, control, queue, ran).await
    }

    /// The handler is done: its slot goes with the outcome, once it has a
    /// place in the writer's queue, for the next claim to ride with it.
    async fn hand_outcome(
        &self,
        id: JobId,
        token: u64,
        verdict: Verdict,
        slot: OwnedSemaphorePermit,
    ) {
        let place = self
            .unwritten
            .clone()
            .acquire_owned()
            .await
            .expect("semaphore is never closed");
        let outcome = Outcome {
            id,
            token,
            verdict,
            _place: place,
            slot: Some(slot),
        };
        self.progress.hand(&self.outcomes, outcome);
    }
}
