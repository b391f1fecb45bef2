//! The claim loop: one round per claim answered (a ride's, or its own for
//! free slots), following what flow control said, starting a task per job
//! claimed.

use super::control::JobControl;
use super::crew::{Crew, ToWriter};
use super::job_task::JobTask;
use super::options::Counters;
use super::ride::Ride;
use super::share::Mailbox;
use super::waiting::{Claiming, IdleDue, after_own_outcomes, free_slots};
use crate::claim_batch::{ClaimBatch, Withheld};
use crate::error::Result;
use crate::job::Claimed;
use serde::de::DeserializeOwned;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinSet;
use tracing::Instrument;

/// The first pause after a failed claim; it doubles up to
/// [`MAX_PAUSE`] while claims keep failing.
const FIRST_PAUSE: Duration = Duration::from_millis(50);
const MAX_PAUSE: Duration = Duration::from_secs(5);

/// A claim's answer and the slots it was for.
type Answer<T> = (Result<ClaimBatch<T>>, Vec<OwnedSemaphorePermit>);

/// A started worker's claim loop, and its jobs' tasks.
pub(super) struct ClaimLoop<T> {
    pub(super) crew: Crew<T>,
    /// The answers of the claims that rode with completions.
    pub(super) ridden: UnboundedReceiver<Ride<T>>,
    pub(super) writer: ToWriter,
    pub(super) tasks: JoinSet<()>,
    /// The pause after the next failed claim.
    pause: Duration,
    /// Whether the cap on active jobs binds: from the claim it withheld
    /// jobs for room until one that got fewer than it asked for without
    /// it (the queue ran short, or the cap is gone).
    capped: bool,
    state: Claiming,
    /// The idle spell's earliest scheduled run-at, once read.
    idle_due: IdleDue,
    /// In a lane of a worker over many queues, the slots handed to it to
    /// claim for (`share.rs`); `None` over one queue, whose loop takes
    /// the free slots itself.
    pub(super) mailbox: Option<Mailbox>,
}

/// What the claim loop does next.
enum Next<T> {
    /// Stop claiming.
    Stop,
    /// The wait is over: claim.
    Ready,
    /// Claim for these free slots.
    Own(Vec<OwnedSemaphorePermit>),
    /// Slots handed to a lane that no longer claims: let go, go on.
    Again,
    /// A ride's claim answered, for these slots.
    Claimed(Result<ClaimBatch<T>>, Vec<OwnedSemaphorePermit>),
}

impl<T> ClaimLoop<T>
where
    T: DeserializeOwned + Send + 'static,
{
    /// The loop over a started `crew`, claiming now; `mailbox` is the
    /// lane's in a worker over many queues.
    pub(super) fn new(
        crew: Crew<T>,
        ridden: UnboundedReceiver<Ride<T>>,
        writer: ToWriter,
        mailbox: Option<Mailbox>,
    ) -> Self {
        Self {
            mailbox,
            crew,
            ridden,
            writer,
            tasks: JoinSet::new(),
            pause: FIRST_PAUSE,
            capped: false,
            state: Claiming::Now,
            idle_due: IdleDue::Unread,
        }
    }

    /// Claims and starts jobs until the worker stops (told to, or by
    /// itself on a failure).
    pub(super) async fn claim_until_stopped(&mut self) {
        while self.round().await.is_continue() {}
    }

    /// One round: wait for a claim's answer (or claim for free slots),
    /// then start its jobs. Breaks once the worker stops.
    async fn round(&mut self) -> ControlFlow<()> {
        self.announce_state();
        let idle = self.state == Claiming::Idle && self.crew.rides.ride_while_idle();
        let (claimed, slots, ridden) = match self.next().await {
            Next::Stop => return ControlFlow::Break(()),
            Next::Again => return ControlFlow::Continue(()),
            Next::Ready => {
                self.state = Claiming::Now;
                self.idle_due = IdleDue::Unread;
                return ControlFlow::Continue(());
            }
            Next::Claimed(claimed, slots) => (claimed, slots, true),
            Next::Own(slots) => match self.claim_for_free_slots(slots).await? {
                Some((claimed, slots)) => (claimed, slots, false),
                None => return ControlFlow::Continue(()),
            },
        };
        let asked = slots.len();
        let Some(ClaimBatch { jobs, withheld }) = self.take_batch(claimed)? else {
            return ControlFlow::Continue(());
        };
        self.follow_flow_control(withheld, jobs.len(), asked);
        self.stay_idle_after_a_ride(idle && ridden);
        if !jobs.is_empty() {
            self.count_claimed(&jobs);
            self.nudge_repeats(&jobs);
            for (job, slot) in jobs.into_iter().zip(slots) {
                self.start_job(job, slot);
            }
            self.let_started_jobs_run().await;
        }
        ControlFlow::Continue(())
    }

    /// After a ride's answer while idle on a queue with flows (rides are
    /// open then: `Claiming::rides`), what this worker's own completions
    /// unblocked and claimed in their call: the queue had nothing more at
    /// the last claim, so the loop stays idle (its free slots wait for a
    /// wake-up, not a claim that would find nothing), and its idle spell
    /// keeps the schedule it read. Any other answer ends the spell.
    fn stay_idle_after_a_ride(&mut self, ridden_while_idle: bool) {
        if ridden_while_idle && self.state == Claiming::Now {
            self.state = Claiming::Idle;
        }
        if !(ridden_while_idle && self.state == Claiming::Idle) {
            self.idle_due = IdleDue::Unread;
        }
    }

    /// Tells the rides and the wake-up listener where the loop stands.
    fn announce_state(&self) {
        let state = self.state;
        let rides = &self.crew.rides;
        rides.set_open(state.rides(rides.ride_while_idle()));
        self.crew
            .wakeups
            .idle
            .send_if_modified(|idle| std::mem::replace(idle, state.idle()) != state.idle());
        if let Some(lane) = &self.crew.lane {
            lane.set_wants(state == Claiming::Now);
        }
    }

    /// Waits for what comes first: a stop, a ride's answer, the end of
    /// the wait, or free slots to claim for.
    async fn next(&mut self) -> Next<T> {
        let crew = &self.crew;
        let state = self.state;
        let idle_due = &mut self.idle_due;
        let takes_free_slots = state == Claiming::Now && self.mailbox.is_none();
        tokio::select! {
            biased;
            _ = crew.stop.cancelled() => Next::Stop,
            Some(ride) = self.ridden.recv() => Next::Claimed(ride.claimed, ride.slots),
            _ = crew.until_ready(&state, idle_due), if state.waits() => Next::Ready,
            permits = free_slots(&crew.slots, &crew.stop), if takes_free_slots => match permits {
                Some(permits) => Next::Own(permits),
                None => Next::Stop,
            },
            Some(permits) = handed(&mut self.mailbox) => match state {
                Claiming::Now => Next::Own(permits),
                _ => Next::Again,
            },
        }
    }

    /// Claims for `slots`, less the ahead slots not wanted (all of them
    /// under a cap), which are parked, not claimed for. `None`: no slot
    /// is left to claim for.
    async fn claim_for_free_slots(
        &self,
        mut slots: Vec<OwnedSemaphorePermit>,
    ) -> ControlFlow<(), Option<Answer<T>>> {
        let crew = &self.crew;
        crew.rides.balance(&mut slots);
        if slots.is_empty() {
            return ControlFlow::Continue(None);
        }
        if self.capped && !after_own_outcomes(&crew.progress, &crew.stop).await {
            return ControlFlow::Break(());
        }
        let claimed = crew
            .queue
            .claim_with_wait(&crew.options.name, crew.options.lease, slots.len())
            .await;
        ControlFlow::Continue(Some((claimed, slots)))
    }

    /// The batch a claim answered. A failed claim is retried after a
    /// pause (`None`), unless its error ends the worker.
    fn take_batch(
        &mut self,
        claimed: Result<ClaimBatch<T>>,
    ) -> ControlFlow<(), Option<ClaimBatch<T>>> {
        match claimed {
            Ok(batch) => {
                self.pause = FIRST_PAUSE;
                ControlFlow::Continue(Some(batch))
            }
            Err(err) => {
                let Err(err) = self.crew.failure.ends(err) else {
                    return ControlFlow::Break(());
                };
                tracing::warn!(queue = %self.crew.queue.name(), error = %err, "claim failed; retrying");
                self.state = Claiming::After(tokio::time::Instant::now() + self.pause);
                self.pause = (self.pause * 2).min(MAX_PAUSE);
                ControlFlow::Continue(None)
            }
        }
    }

    /// Where a claim of `asked` jobs that got `got` leaves the loop:
    /// whether the cap binds, and when to claim next.
    fn follow_flow_control(&mut self, withheld: Option<Withheld>, got: usize, asked: usize) {
        self.capped = match withheld {
            Some(Withheld::CapFull) => true,
            None if got < asked => false,
            _ => self.capped,
        };
        self.state = match withheld {
            // The window reopens, or the hold ends, then: nothing to ask before.
            Some(Withheld::For(wait)) => Claiming::After(tokio::time::Instant::now() + wait),
            Some(Withheld::CapFull) => Claiming::CapFull,
            None if got == 0 => Claiming::Idle,
            None => Claiming::Now,
        };
    }

    fn count_claimed(&self, jobs: &[Claimed<T>]) {
        let counters = &self.crew.counters;
        Counters::add(&counters.claimed, jobs.len() as u64);
        counters.metrics.started.increment(jobs.len() as u64);
        counters.metrics.claim_batch_size.record(jobs.len() as f64);
    }

    /// An occurrence of a repeat started: the scheduler schedules the
    /// next one now.
    fn nudge_repeats(&self, jobs: &[Claimed<T>]) {
        if let Some(nudge) = &self.crew.repeats
            && jobs
                .iter()
                .any(|job| job.id.as_str().starts_with("repeat:"))
        {
            nudge.notify_one();
        }
    }

    /// Starts `job`'s task, in its `job` span, holding `slot`.
    fn start_job(&mut self, job: Claimed<T>, slot: OwnedSemaphorePermit) {
        let task = JobTask::new(&self.crew, &self.writer.outcomes);
        let control = Arc::new(JobControl::new(job.id.clone(), job.token));
        self.crew.registry.insert(control.clone());
        let span = tracing::info_span!("job", queue = %self.crew.queue.name(), id = %job.id, attempt = job.attempt());
        self.tasks
            .spawn(task.run(job, control, slot).instrument(span));
    }

    /// Reaps the finished tasks. On a one-thread runtime, the jobs just
    /// started run before the next claim is taken in: the writer then
    /// sends their outcomes before the next half batch's jobs run, and the
    /// two halves stay apart on the wire (see `writer::batch_max`).
    /// Threads of their own already keep them apart; a yield there only
    /// delays.
    async fn let_started_jobs_run(&mut self) {
        while self.tasks.try_join_next().is_some() {}
        if self.crew.one_thread {
            tokio::task::yield_now().await;
        }
    }
}

/// The next slots handed to a lane; never, over one queue.
async fn handed(mailbox: &mut Option<Mailbox>) -> Option<Vec<OwnedSemaphorePermit>> {
    match mailbox {
        Some(mailbox) => mailbox.recv().await,
        None => std::future::pending().await,
    }
}
