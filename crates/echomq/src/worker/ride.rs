//! Claims that ride with completions: one command per cycle.
//!
//! A finished handler's slot travels with its outcome to the writer. While
//! the claim loop is claiming (not idle, not waiting out a rate window, not
//! stopped), the writer turns the slots of the outcomes it sends into a
//! claim for as many jobs, carried by the same call as the completions
//! (`COMPLETE.BULK … CLAIM worker lease_ms n`) or, when the batch holds
//! no completion, sent last in the same pipeline as a plain `CLAIM`. The
//! server completes first, so the claim gets the room the completions
//! free under a cap. What the claim answered goes back to the claim loop
//! with the slots, which runs the jobs as it runs its own claims'. While
//! rides are closed, the writer lets the slots go, and the claim loop
//! claims for them itself. On a queue with the `flows` mark, rides stay
//! open while the loop is idle: a completion may unblock the queue's next
//! jobs (a chain's next step), and its tail claims them in the same call.
//!
//! While the queue, or a group of it, has a cap on active jobs (its meta's
//! `concurrency`, or `group_flow`), the slots of the jobs claimed
//! ahead are parked as they come back (jobs waiting ahead would take room
//! under the cap another worker could run in), and go back into use once
//! the cap is gone. Without a cap, the slots beyond what the handlers'
//! pace asks to hold ahead (`ahead.rs`) are parked the same way, and go
//! back into use as the handlers get quicker.

use super::ahead::{Ahead, average};
use super::share::Share;
use crate::claim_batch::ClaimBatch;
use crate::error::Result;
use crate::queue::{claim_call, lease_ms};
use crate::transport::dispatch::Call;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// What a ride's claim answered, and the slots it was sent for.
pub(crate) struct Ride<T> {
    /// The claim's jobs and flow-control wait, or why it failed.
    pub claimed: Result<ClaimBatch<T>>,
    /// The slots it asked jobs for; the ones left over free when dropped.
    pub slots: Vec<OwnedSemaphorePermit>,
}

/// Whether claims ride now, how a ride's claim reads, and where its
/// answer goes; and the slots of the jobs claimed ahead, parked while the
/// queue or a group of it has a cap on active jobs.
pub(crate) struct Rides<T> {
    open: AtomicBool,
    worker: String,
    lease: Duration,
    answers: UnboundedSender<Ride<T>>,
    /// How many slots are for jobs claimed ahead.
    ahead: Ahead,
    /// The running average of handler times, ns (0: none yet): how many
    /// of the ahead slots are in use ([`Self::wanted`]).
    run_ns: AtomicU64,
    /// Whether the queue or a group of it has a cap on active jobs (its
    /// meta's `concurrency`, or `group_flow`): jobs waiting ahead would
    /// take the cap's room.
    capped: AtomicBool,
    /// Whether the queue has the `flows` mark: a completion may unblock
    /// jobs of the queue (docs/protocol.md, "Deciding a job that has
    /// dependents"), so claims ride with completions while the loop is
    /// idle too.
    flows: AtomicBool,
    /// Slots kept out of use: the ahead ones not wanted, all of them
    /// while the queue has a cap.
    parked: Mutex<Vec<OwnedSemaphorePermit>>,
    /// The worker is stopping: nothing is parked any more.
    stopping: AtomicBool,
    /// In a worker over many queues, this lane's place and the share of
    /// the slots among the lanes (`share.rs`); `None` over one queue.
    pub(crate) lane: Option<(usize, Arc<Share>)>,
}

impl<T> Rides<T> {
    /// Closed rides for `worker` claiming under `lease`, `ahead.most` of
    /// whose slots are for jobs claimed ahead (`ahead.least` of them in use
    /// until handlers are timed), and the receiver of their answers (the
    /// claim loop's).
    pub(crate) fn new(
        worker: &str,
        lease: Duration,
        ahead: Ahead,
    ) -> (Self, UnboundedReceiver<Ride<T>>) {
        let (answers, received) = unbounded_channel();
        let rides = Self {
            open: AtomicBool::new(false),
            worker: worker.to_string(),
            lease,
            answers,
            ahead,
            run_ns: AtomicU64::new(0),
            capped: AtomicBool::new(false),
            flows: AtomicBool::new(false),
            parked: Mutex::new(Vec::new()),
            stopping: AtomicBool::new(false),
            lane: None,
        };
        (rides, received)
    }

    /// Whether the queue has the `flows` mark.
    pub(crate) fn set_flows(&self, flows: bool) {
        self.flows.store(flows, Ordering::SeqCst);
    }

    /// Whether claims ride while the claim loop is idle: the queue has the
    /// `flows` mark, so a completion may unblock its next jobs, which its
    /// `CLAIM` tail then takes in the same call.
    pub(crate) fn ride_while_idle(&self) -> bool {
        self.flows.load(Ordering::SeqCst)
    }

    /// Whether the queue has a cap on active jobs. Without one, the parked
    /// slots the handlers' pace wants go back into use.
    pub(crate) fn set_capped(&self, capped: bool) {
        self.capped.store(capped, Ordering::SeqCst);
        if !capped {
            let keep = self.to_park();
            self.parked().truncate(keep);
        }
    }

    /// How many slots to keep parked: the ahead ones not wanted, all of
    /// them while the queue has a cap.
    fn to_park(&self) -> usize {
        if self.capped.load(Ordering::SeqCst) {
            self.ahead.most
        } else {
            self.ahead.most - self.wanted()
        }
    }

    /// How many ahead slots the handlers' pace asks for: `ahead.least`
    /// until a handler is timed.
    fn wanted(&self) -> usize {
        match self.run_ns.load(Ordering::Relaxed) {
            0 => self.ahead.least,
            ns => self.ahead.wanted(Duration::from_nanos(ns)),
        }
    }

    /// A handler took `run`: the number held ahead follows the running
    /// average. The slots wanted now go back into use with the next batch
    /// of slots the worker frees (they ride with its claim); the slots no
    /// longer wanted are parked as they come back.
    pub(crate) fn ran(&self, run: Duration) {
        if !self.ahead.adapts() {
            return;
        }
        let before = self.run_ns.load(Ordering::Relaxed);
        let known = (before > 0).then(|| Duration::from_nanos(before));
        let now = average(known, run);
        let ns = u64::try_from(now.as_nanos()).unwrap_or(u64::MAX).max(1);
        self.run_ns.store(ns, Ordering::Relaxed);
    }

    /// Parks the slots not to be claimed for from the worker's free ones
    /// (at start, before its first claim asks for them).
    pub(crate) fn park_free(&self, slots: &Arc<Semaphore>) {
        let mut free: Vec<OwnedSemaphorePermit> =
            std::iter::from_fn(|| slots.clone().try_acquire_owned().ok())
                .take(self.to_park())
                .collect();
        self.balance(&mut free);
    }

    /// Parks what it can of `slots` until [`Self::to_park`] are parked, or
    /// adds to them the parked ones beyond it.
    pub(crate) fn balance(&self, slots: &mut Vec<OwnedSemaphorePermit>) {
        if self.stopping.load(Ordering::SeqCst) {
            return;
        }
        let keep = self.to_park();
        let mut parked = self.parked();
        while parked.len() < keep {
            let Some(slot) = slots.pop() else { break };
            parked.push(slot);
        }
        while parked.len() > keep {
            slots.extend(parked.pop());
        }
    }

    /// The worker is stopping: the parked slots are let go (its shutdown
    /// waits for every slot) and none is parked again.
    pub(crate) fn stop_parking(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        self.parked().clear();
    }

    fn parked(&self) -> std::sync::MutexGuard<'_, Vec<OwnedSemaphorePermit>> {
        self.parked
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Opens or closes rides (the claim loop: open while it claims).
    pub(crate) fn set_open(&self, open: bool) {
        self.open.store(open, Ordering::SeqCst);
    }

    /// The slots a writer's batch freed, first balanced with the parked
    /// ones (see [`Self::balance`]), then kept for a ride while rides are
    /// open; otherwise let go (the claim loop claims for them). In a lane
    /// of a worker over many queues, kept are the lane's turns among them
    /// (`Share::split`).
    pub(crate) fn take(&self, mut slots: Vec<OwnedSemaphorePermit>) -> Vec<OwnedSemaphorePermit> {
        self.balance(&mut slots);
        if let Some((lane, share)) = &self.lane {
            return share.split(*lane, slots);
        }
        if self.open.load(Ordering::SeqCst) {
            slots
        } else {
            Vec::new()
        }
    }

    /// The CLAIM tail of `COMPLETE.BULK` for `count` jobs.
    pub(crate) fn tail(&self, count: usize) -> [Vec<u8>; 4] {
        [
            b"CLAIM".to_vec(),
            self.worker.as_bytes().to_vec(),
            lease_ms(self.lease).to_string().into_bytes(),
            count.to_string().into_bytes(),
        ]
    }

    /// A plain CLAIM for `count` jobs, for a batch with no completion.
    pub(crate) fn call(&self, count: usize) -> Call {
        claim_call(&self.worker, self.lease, count)
    }

    /// Hands a ride's answer to the claim loop. The loop keeps its
    /// receiver until the writer has stopped, so this cannot fail while
    /// the writer runs.
    pub(crate) fn answer(&self, ride: Ride<T>) {
        let _ = self.answers.send(ride);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELD: usize = 1 + crate::worker::ahead::QUICK_AHEAD_MAX;

    /// A worker at concurrency 1 with the default range ahead, its slots
    /// and its free slots' permits once the unwanted ahead ones are parked.
    fn worker_at_1() -> (Rides<()>, Arc<Semaphore>) {
        let slots = Arc::new(Semaphore::new(HELD));
        let (rides, _answers) = Rides::new("w", Duration::from_secs(30), Ahead::quick(1));
        rides.park_free(&slots);
        (rides, slots)
    }

    fn one(slots: &Arc<Semaphore>) -> Vec<OwnedSemaphorePermit> {
        vec![slots.clone().try_acquire_owned().expect("a free slot")]
    }

    #[test]
    fn until_a_handler_is_timed_one_job_is_held_ahead() {
        let (_rides, slots) = worker_at_1();
        assert_eq!(slots.available_permits(), 2);
    }

    #[test]
    fn quick_handlers_bring_the_parked_slots_into_the_next_claim() {
        let (rides, slots) = worker_at_1();
        rides.ran(Duration::from_micros(5));
        let mut freed = one(&slots);
        rides.balance(&mut freed);
        assert_eq!(freed.len(), HELD - 1);
    }

    #[test]
    fn slow_handlers_park_the_slots_again_as_they_come_back() {
        let (rides, slots) = worker_at_1();
        rides.ran(Duration::from_micros(5));
        let mut freed = one(&slots);
        rides.balance(&mut freed);
        for _ in 0..64 {
            rides.ran(Duration::from_millis(10));
        }
        rides.balance(&mut freed);
        assert_eq!(freed.len(), 1);
        assert_eq!(rides.parked().len(), HELD - 2);
    }

    #[test]
    fn under_a_cap_every_ahead_slot_is_parked_whatever_the_pace() {
        let (rides, slots) = worker_at_1();
        rides.ran(Duration::from_micros(5));
        rides.set_capped(true);
        let mut freed = one(&slots);
        freed.extend(one(&slots));
        rides.balance(&mut freed);
        assert_eq!(freed.len(), 1);
        rides.set_capped(false);
        assert_eq!(rides.parked().len(), 0);
    }
}
