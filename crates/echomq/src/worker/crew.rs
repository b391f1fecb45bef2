//! What a started worker runs with ([`Crew`]), and its start: the
//! outcome writer, the wake-up listener, the cancel listener, the
//! heartbeat, the stalled sweep and the repeat scheduler, each a task of
//! its own beside the claim loop.

use super::ahead::Ahead;
use super::control::Registry;
use super::execute::Handler;
use super::failure::Failure;
use super::options::{Counters, Options};
use super::ride::{Ride, Rides};
use super::run::Worker;
use super::share::Lane;
use super::signal::Wakeups;
use super::watch::{heartbeat, listen_for_cancels, sweep_stalled, watch_marks};
use super::writer::{Outcome, Progress, write_outcomes};
use crate::queue::Queue;
use crate::repeat::RepeatScheduler;
use echomq_protocol::backoff::Backoff;
use serde::de::DeserializeOwned;
use std::sync::Arc;
use tokio::runtime::RuntimeFlavor;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The parts of a started worker the claim loop, each job's task and the
/// shutdown share.
pub(super) struct Crew<T> {
    pub(super) queue: Queue<T>,
    pub(super) handler: Handler<T>,
    pub(super) options: Options,
    /// Cancelled to stop claiming (a shutdown, or a failure).
    pub(super) stop: CancellationToken,
    /// Cancelled to stop the tasks beside the claim loop, once the jobs
    /// held are done.
    pub(super) listener_stop: CancellationToken,
    pub(super) counters: Arc<Counters>,
    pub(super) failure: Failure,
    /// A slot is a job held: running or claimed ahead.
    pub(super) slots: Arc<Semaphore>,
    /// A permit per handler running at once.
    pub(super) running: Arc<Semaphore>,
    /// A place per outcome handed to the writer and not yet written.
    pub(super) unwritten: Arc<Semaphore>,
    pub(super) progress: Arc<Progress>,
    pub(super) rides: Arc<Rides<T>>,
    pub(super) wakeups: Wakeups,
    pub(super) backoff: Arc<Backoff>,
    pub(super) registry: Registry,
    /// Tells the repeat scheduler an occurrence started, when the worker
    /// runs one.
    pub(super) repeats: Option<Arc<Notify>>,
    /// The queue without its payload type, as each job's task holds it.
    pub(super) erased: Queue<()>,
    /// Whether the tokio runtime runs on one thread.
    pub(super) one_thread: bool,
    /// The lane this crew runs in a worker over many queues; `None` for
    /// a worker over one queue.
    pub(super) lane: Option<Lane>,
}

/// The outcome writer's task and the channel to it.
pub(super) struct ToWriter {
    pub(super) outcomes: UnboundedSender<Outcome>,
    pub(super) task: JoinHandle<()>,
}

impl ToWriter {
    /// Closes the channel and waits until the writer wrote every outcome
    /// handed to it.
    pub(super) async fn finish(self) {
        drop(self.outcomes);
        let _ = self.task.await;
    }
}

impl<T> Crew<T>
where
    T: DeserializeOwned + Send + 'static,
{
    /// Starts the tasks beside the claim loop for `worker`, in `lane` of
    /// a worker over many queues (or `None`). Answers the crew, the
    /// receiver of the rides' claims, and the writer.
    pub(super) async fn start(
        worker: Worker<T>,
        lane: Option<Lane>,
        stop: CancellationToken,
        counters: Arc<Counters>,
        failure: Failure,
    ) -> (Self, UnboundedReceiver<Ride<T>>, ToWriter) {
        let Worker {
            queue,
            handler,
            options,
            ..
        } = worker;
        let held = options.held();
        let progress = Arc::new(Progress::new());
        // A lane parks no slot: the slots are the whole worker's.
        let ahead = match &lane {
            None => options.ahead(),
            Some(_) => Ahead::fixed(options.concurrency, 0),
        };
        let (mut rides, ridden) = Rides::new(&options.name, options.lease, ahead);
        rides.lane = lane.as_ref().map(|lane| (lane.index, lane.share.clone()));
        let rides = Arc::new(rides);
        let writer = spawn_writer(&queue, &counters, &progress, &rides, held);
        let listener_stop = stop.child_token();
        let wakeups = Wakeups::start(
            queue.clone(),
            options.idle_wait,
            listener_stop.clone(),
            failure.clone(),
        );
        let (slots, running) = match &lane {
            None => (
                Arc::new(Semaphore::new(held)),
                Arc::new(Semaphore::new(options.concurrency)),
            ),
            Some(lane) => (lane.slots.clone(), lane.running.clone()),
        };
        let mut crew = Self {
            slots,
            running,
            unwritten: Arc::new(Semaphore::new(held)),
            backoff: Arc::new(options.backoff.clone()),
            registry: Registry::default(),
            erased: queue.typed(),
            repeats: None,
            one_thread: runs_on_one_thread(),
            queue,
            handler,
            options,
            stop,
            listener_stop,
            counters,
            failure,
            progress,
            rides,
            wakeups,
            lane,
        };
        crew.spawn_lease_keepers();
        crew.park_ahead_slots_under_a_cap().await;
        crew.spawn_stalled_sweep();
        crew.repeats = crew.spawn_repeat_scheduler();
        (crew, ridden, writer)
    }

    /// The cancel listener (fires a running job's token) and the
    /// heartbeat (extends the leases of the jobs held); the listener tells
    /// the heartbeat to catch up after it missed messages.
    fn spawn_lease_keepers(&self) {
        let catch_up = Arc::new(Notify::new());
        tokio::spawn(listen_for_cancels(
            self.queue.clone(),
            self.registry.clone(),
            catch_up.clone(),
            self.listener_stop.clone(),
        ));
        tokio::spawn(heartbeat(
            self.queue.clone(),
            self.registry.clone(),
            self.options.lease,
            self.rides.clone(),
            catch_up,
            self.listener_stop.clone(),
        ));
    }

    /// Under a cap on active jobs the worker claims nothing ahead: its
    /// ahead slots are parked from the start (and as they come back once
    /// the heartbeat sees a cap set later).
    async fn park_ahead_slots_under_a_cap(&self) {
        watch_marks(&self.queue, &self.rides).await;
        self.rides.park_free(&self.slots);
    }

    /// The stalled sweep: one worker per interval, across all hosts, takes
    /// back the jobs whose lease ran out.
    fn spawn_stalled_sweep(&self) {
        tokio::spawn(sweep_stalled(
            self.queue.clone(),
            self.options.name.clone(),
            (self.options.stalled_interval, self.options.max_stalls),
            self.backoff.clone(),
            self.listener_stop.clone(),
            self.failure.clone(),
        ));
    }

    /// The repeat scheduler, unless the worker was told not to run one;
    /// answers its nudge. An error that ends it ends the worker.
    fn spawn_repeat_scheduler(&self) -> Option<Arc<Notify>> {
        self.options.repeats.then(|| {
            let scheduler = RepeatScheduler::new(&self.queue);
            let nudge = scheduler.nudger();
            let (stop, failure) = (self.listener_stop.clone(), self.failure.clone());
            tokio::spawn(async move {
                if let Some(err) = scheduler.serve(stop).await {
                    let _ = failure.ends(err);
                }
            });
            nudge
        })
    }
}

/// The writer: sends the outcomes handed to it in pipelines, each with
/// the claim for the slots they free riding along.
fn spawn_writer<T>(
    queue: &Queue<T>,
    counters: &Arc<Counters>,
    progress: &Arc<Progress>,
    rides: &Arc<Rides<T>>,
    held: usize,
) -> ToWriter
where
    T: DeserializeOwned + Send + 'static,
{
    let (outcomes, written) = mpsc::unbounded_channel();
    let task = tokio::spawn(write_outcomes(
        queue.clone(),
        written,
        counters.clone(),
        progress.clone(),
        rides.clone(),
        held,
    ));
    ToWriter { outcomes, task }
}

fn runs_on_one_thread() -> bool {
    tokio::runtime::Handle::current().runtime_flavor() == RuntimeFlavor::CurrentThread
}
