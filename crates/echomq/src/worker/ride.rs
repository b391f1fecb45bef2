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
//! claims for them itself.
//!
//! While the queue, or a group of it, has a cap on active jobs (its meta's
//! `concurrency`, or `group_flow`), the slots of the jobs claimed
//! ahead are parked as they come back (jobs waiting ahead would take room
//! under the cap another worker could run in), and go back into use once
//! the cap is gone.

use crate::dispatch::Call;
use crate::error::Result;
use crate::flow::ClaimBatch;
use crate::queue::{claim_call, lease_ms};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
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
    ahead: usize,
    /// Whether the queue or a group of it has a cap on active jobs (its
    /// meta's `concurrency`, or `group_flow`): jobs waiting ahead would
    /// take the cap's room.
    capped: AtomicBool,
    /// Slots kept out of use while the queue has a cap, up to `ahead`.
    parked: Mutex<Vec<OwnedSemaphorePermit>>,
    /// The worker is stopping: nothing is parked any more.
    stopping: AtomicBool,
}

impl<T> Rides<T> {
    /// Closed rides for `worker` claiming under `lease`, `ahead` of whose
    /// slots are for jobs claimed ahead, and the receiver of their answers
    /// (the claim loop's).
    pub(crate) fn new(
        worker: &str,
        lease: Duration,
        ahead: usize,
    ) -> (Self, UnboundedReceiver<Ride<T>>) {
        let (answers, received) = unbounded_channel();
        let rides = Self {
            open: AtomicBool::new(false),
            worker: worker.to_string(),
            lease,
            answers,
            ahead,
            capped: AtomicBool::new(false),
            parked: Mutex::new(Vec::new()),
            stopping: AtomicBool::new(false),
        };
        (rides, received)
    }

    /// Whether the queue has a cap on active jobs. Without one, the parked
    /// slots go back into use.
    pub(crate) fn set_capped(&self, capped: bool) {
        self.capped.store(capped, Ordering::SeqCst);
        if !capped {
            self.parked().clear();
        }
    }

    /// While the queue has a cap, parks the ahead slots from the worker's
    /// free ones (at start, before its first claim asks for them).
    pub(crate) fn park_free(&self, slots: &Arc<Semaphore>) {
        if !self.capped.load(Ordering::SeqCst) {
            return;
        }
        let mut free: Vec<OwnedSemaphorePermit> =
            std::iter::from_fn(|| slots.clone().try_acquire_owned().ok())
                .take(self.ahead)
                .collect();
        self.park(&mut free);
    }

    /// Parks what it can of `slots` while the queue has a cap (until the
    /// ahead slots are all parked); the rest is left in `slots`.
    pub(crate) fn park(&self, slots: &mut Vec<OwnedSemaphorePermit>) {
        if !self.capped.load(Ordering::SeqCst) || self.stopping.load(Ordering::SeqCst) {
            return;
        }
        let mut parked = self.parked();
        while parked.len() < self.ahead {
            let Some(slot) = slots.pop() else { break };
            parked.push(slot);
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

    /// The slots a writer's batch freed, first parked while the queue has
    /// a cap, then kept for a ride while rides are open; otherwise let go
    /// (the claim loop claims for them).
    pub(crate) fn take(&self, mut slots: Vec<OwnedSemaphorePermit>) -> Vec<OwnedSemaphorePermit> {
        self.park(&mut slots);
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
