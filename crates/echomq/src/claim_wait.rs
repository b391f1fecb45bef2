//! Claims that wait for work ([`ClaimWaits`]): what a long-polled claim
//! (the HTTP API's `wait_ms`) needs, without polling the server.
//!
//! However many callers wait on one queue, they share one listener: a
//! task with one connection of its own blocked on the queue's signal set
//! (`BZPOPMIN`, as an idle worker's listener in `worker/signal.rs`), timed
//! locally for the earliest scheduled run-at (`Queue::next_due`). Each
//! wake-up lets one waiter claim (a `tokio::sync::Notify` permit), as one
//! marker wakes one idle worker: a claim that hands out a full batch and
//! leaves work behind sets the marker again, which wakes the next. A
//! marker popped when nobody waits any more goes back on the set for
//! another idle worker. The listener ends, and its connection closes,
//! once nobody has waited on the queue for a while.
//!
//! Remote workers run no stalled sweep of their own, so a claim here runs
//! the queue's ([`Queue::sweep_if_due`], its guard shared with every
//! worker) at most once per stalled interval from this process: a lease
//! that runs out is swept as for any worker.
//!
//! Here, in the library, rather than in the server that serves the API:
//! the signal set and its markers are a detail of the wires that only the
//! library writes and reads.

use crate::error::Result;
use crate::job::Claimed;
use crate::queue::Queue;
use crate::transport::link::Link;
use crate::worker::signal::{pop_marker, put_back};
use crate::{ClaimBatch, Withheld};
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

/// How long a listener blocks at most before it wakes a waiter anyway:
/// the safety net for a marker lost to a crash, as a worker's `idle_wait`.
pub const CLAIM_WAIT_SAFETY_NET: Duration = Duration::from_secs(5);

/// How often a process's claims run the stalled sweep by default, as a
/// worker's `stalled_interval`.
pub const CLAIM_SWEEP_INTERVAL: Duration = Duration::from_secs(30);

/// The sweeper's name in the sweep guard.
const SWEEPER: &str = "claim-waits";
/// Stalls a job survives before the sweep dead-letters it, as a worker's
/// default `max_stalls`.
const MAX_STALLS: u64 = 1;

/// The waits of long-polled claims, by queue: one listener (one
/// connection) per queue with waiters, however many wait. Cloning shares
/// them.
#[derive(Debug, Clone)]
pub struct ClaimWaits {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// The queues with a listener, by base key.
    queues: Mutex<HashMap<String, Arc<Waiters>>>,
    /// At most this long between two wake-ups while anyone waits.
    safety_net: Duration,
    /// When this process's claims last ran each queue's stalled sweep.
    swept: Mutex<HashMap<String, Instant>>,
    /// How often they run it.
    sweep_every: Duration,
}

/// One queue's waiters.
#[derive(Debug)]
struct Waiters {
    /// One permit per wake-up.
    wake: Notify,
    /// How many wait now.
    count: watch::Sender<usize>,
}

impl Default for ClaimWaits {
    fn default() -> Self {
        Self::new()
    }
}

impl ClaimWaits {
    /// No waits yet; listeners block at most [`CLAIM_WAIT_SAFETY_NET`],
    /// claims sweep every [`CLAIM_SWEEP_INTERVAL`].
    pub fn new() -> Self {
        Self::with(CLAIM_WAIT_SAFETY_NET, CLAIM_SWEEP_INTERVAL)
    }

    /// No waits yet; listeners block at most `safety_net` (at least 10 ms)
    /// before they wake a waiter anyway; claims run a queue's stalled
    /// sweep at most once per `sweep_every` (at least 1 ms).
    pub fn with(safety_net: Duration, sweep_every: Duration) -> Self {
        Self {
            shared: Arc::new(Shared {
                queues: Mutex::default(),
                safety_net: safety_net.max(Duration::from_millis(10)),
                swept: Mutex::default(),
                sweep_every: sweep_every.max(Duration::from_millis(1)),
            }),
        }
    }

    /// Claims up to `count` jobs of `queue` for `worker` under `lease`
    /// ([`Queue::claim_with_wait`]); when none is pending, waits up to
    /// `wait` for a wake-up (an enqueue, a retry, a job falling due, room
    /// under the cap, a rate window reopening) and claims again. Empty
    /// when `wait` ran out first. A zero `wait` claims once.
    pub async fn claim<T: DeserializeOwned>(
        &self,
        queue: &Queue<T>,
        worker: &str,
        lease: Duration,
        count: usize,
        wait: Duration,
    ) -> Result<Vec<Claimed<T>>> {
        let deadline = Instant::now() + wait;
        // A sweep that fails (the server's ACL refuses its guard, say) is
        // no reason to refuse the claim: the next interval tries again.
        if let Err(err) = self.sweep_if_due(queue).await {
            tracing::warn!(queue = %queue.name(), error = %err, "the stalled sweep failed");
        }
        let waiting = (!wait.is_zero()).then(|| self.enter(queue));
        loop {
            // Waiting for a permit before claiming: a wake-up between an
            // empty claim and the wait is kept for it, not missed.
            let woken = waiting.as_ref().map(|w| w.waiters.wake.notified());
            let mut woken = std::pin::pin!(woken);
            if let Some(woken) = woken.as_mut().as_pin_mut() {
                woken.enable();
            }
            // Boxed: the claim's future is deep, and this one waits around it.
            let ClaimBatch { jobs, withheld } =
                Box::pin(queue.claim_with_wait(worker, lease, count)).await?;
            let Some(woken) = woken.as_pin_mut() else {
                return Ok(jobs);
            };
            if !jobs.is_empty() {
                return Ok(jobs);
            }
            // A rate window reopens, or a hold ends, at a known time.
            let until = match withheld {
                Some(Withheld::For(pause)) => deadline.min(Instant::now() + pause),
                _ => deadline,
            };
            tokio::select! {
                _ = woken => {}
                _ = tokio::time::sleep_until(until) => if until == deadline {
                    return Ok(jobs);
                },
            }
        }
    }

    /// The queue's stalled sweep, when this process has not tried it for
    /// `sweep_every` (the guard on the server keeps it to one sweep per
    /// interval across processes and workers).
    async fn sweep_if_due<T>(&self, queue: &Queue<T>) -> Result<()> {
        let every = self.shared.sweep_every;
        {
            let now = Instant::now();
            let mut swept = self.shared.swept.lock().expect("never poisoned");
            let last = swept.entry(queue.keys().base().to_string());
            match last {
                std::collections::hash_map::Entry::Occupied(mut at) => {
                    if now.duration_since(*at.get()) < every {
                        return Ok(());
                    }
                    at.insert(now);
                }
                std::collections::hash_map::Entry::Vacant(at) => {
                    at.insert(now);
                }
            }
        }
        Box::pin(queue.sweep_if_due(SWEEPER, every, MAX_STALLS)).await?;
        Ok(())
    }

    /// How many claims wait on `queue` now.
    pub fn waiting<T>(&self, queue: &Queue<T>) -> usize {
        let queues = self.shared.queues.lock().expect("never poisoned");
        queues
            .get(queue.keys().base())
            .map_or(0, |waiters| *waiters.count.borrow())
    }

    /// Counts one more waiter on `queue`, starting its listener if it has
    /// none; the guard counts it out.
    fn enter<T>(&self, queue: &Queue<T>) -> Waiting {
        let base = queue.keys().base().to_string();
        let mut queues = self.shared.queues.lock().expect("never poisoned");
        let waiters = queues.entry(base.clone()).or_insert_with(|| {
            let waiters = Arc::new(Waiters {
                wake: Notify::new(),
                count: watch::channel(0).0,
            });
            let listener = listen(
                self.shared.clone(),
                base,
                queue.typed::<()>(),
                waiters.clone(),
            );
            tokio::spawn(listener);
            waiters
        });
        // Counted under the lock: a listener leaving checks the count
        // under it too, so it never leaves a waiter without a listener.
        waiters.count.send_modify(|count| *count += 1);
        Waiting {
            waiters: waiters.clone(),
        }
    }
}

/// A waiter, counted while it waits.
struct Waiting {
    waiters: Arc<Waiters>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.waiters.count.send_modify(|count| *count -= 1);
    }
}

/// The listener of one queue: while anyone waits, blocks on the signal
/// set until the earliest run-at (at most the safety net) and wakes one
/// waiter per marker or timeout; leaves once nobody waited for a safety
/// net's time.
async fn listen(shared: Arc<Shared>, base: String, queue: Queue<()>, waiters: Arc<Waiters>) {
    let mut link: Option<Link> = None;
    let mut pause = Duration::from_millis(50);
    let mut count = waiters.count.subscribe();
    loop {
        let anyone = tokio::time::timeout(shared.safety_net, count.wait_for(|n| *n > 0))
            .await
            .is_ok();
        if !anyone {
            let mut queues = shared.queues.lock().expect("never poisoned");
            if *waiters.count.borrow() == 0 {
                queues.remove(&base);
                return;
            }
            continue;
        }
        match wait_once(&queue, &mut link, shared.safety_net).await {
            Ok(Some(due)) if *waiters.count.borrow() == 0 => {
                // Nobody waits any more: the marker is another's.
                if let Err(err) = put_back(&queue, due).await {
                    tracing::warn!(queue = %queue.name(), error = %err, "could not put a wake-up marker back");
                }
            }
            Ok(_) => {
                pause = Duration::from_millis(50);
                waiters.wake.notify_one();
            }
            Err(err) => {
                tracing::warn!(queue = %queue.name(), error = %err, "waiting on the signal key failed; reconnecting");
                link = None;
                waiters.wake.notify_one();
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// Blocks for a marker until the earliest run-at (one ms past it: a claim
/// promotes scores up to its own now, in whole ms), at most `most`:
/// `Some(due)` for a marker popped, `None` when the time ran out.
async fn wait_once(
    queue: &Queue<()>,
    link: &mut Option<Link>,
    most: Duration,
) -> Result<Option<f64>> {
    let block = match queue.next_due().await? {
        (now, Some(due)) => most.min(Duration::from_millis(due.saturating_sub(now) + 1)),
        (_, None) => most,
    };
    pop_marker(queue, link, block).await
}
