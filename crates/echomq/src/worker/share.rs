//! One worker over many queues: how its slots are shared among its lanes.
//!
//! A worker over several queues runs one lane per queue: a claim loop,
//! outcome writer, wake-up listener, cancel listener, heartbeat, stalled
//! sweep and repeat scheduler, each as a worker over that queue alone
//! would run them. The lanes share the worker's slots (the jobs held:
//! running and claimed ahead) and its handlers' permits (the concurrency),
//! and a [`Share`] decides which lane each free slot goes to.
//!
//! A lane wants slots while its claim loop claims (not idle, not waiting
//! out a rate window or a hold, not waiting for room under a full cap).
//! Each free slot goes to one of the lanes that want one, by a smooth
//! weighted round robin over their weights (the nginx one: every lane
//! gains its weight, the one ahead takes the turn and loses the total), or,
//! in strict order, to the first that wants one. The slots a lane's batch
//! of outcomes frees are shared the same way as they come back: the lane's
//! own turns ride with its completions (`ride.rs`), the others' go to
//! their lanes' mailboxes; the slots nobody wants go back to the pool,
//! where the dispatcher waits for a lane to want them. So a queue that is
//! empty, paused, rate limited or at its cap gives its turns to the others
//! without a claim, and gets them back when its claim loop claims again
//! (woken by its signal set, its rate window's end, room under its cap).
//!
//! A worker over one queue has no lanes and no share: it is the worker
//! over one queue, on the same code path.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

/// How a worker over many queues shares its claims among them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Order {
    /// By weight, one per queue, in the queues' order (all 1: evenly).
    Weights(Vec<u64>),
    /// A queue only when every queue before it has nothing to claim.
    Strict,
}

/// The slots a lane is handed, to claim for.
pub(crate) type Mailbox = UnboundedReceiver<Vec<OwnedSemaphorePermit>>;

/// Which lanes want slots, and whose turn the next slot is.
pub(crate) struct Share {
    order: Order,
    /// Whether each lane's claim loop claims now.
    wants: Vec<AtomicBool>,
    /// Each lane's running total of the round robin.
    current: Mutex<Vec<i64>>,
    mailboxes: Vec<UnboundedSender<Vec<OwnedSemaphorePermit>>>,
    /// A lane began to want slots.
    wanted: Notify,
}

impl Share {
    /// The share of `lanes` lanes in `order`, and each lane's mailbox.
    pub(crate) fn new(order: Order, lanes: usize) -> (Self, Vec<Mailbox>) {
        let (mailboxes, received): (Vec<_>, Vec<_>) =
            (0..lanes).map(|_| unbounded_channel()).unzip();
        let share = Self {
            order,
            wants: (0..lanes).map(|_| AtomicBool::new(false)).collect(),
            current: Mutex::new(vec![0; lanes]),
            mailboxes,
            wanted: Notify::new(),
        };
        (share, received)
    }

    /// Lane `lane`'s claim loop claims now (`true`) or waits.
    pub(crate) fn set_wants(&self, lane: usize, wants: bool) {
        let before = self.wants[lane].swap(wants, Ordering::SeqCst);
        if wants && !before {
            self.wanted.notify_one();
        }
    }

    /// How many of `slots` slots each lane gets, among the lanes that want
    /// them (all zero when none does).
    pub(crate) fn turns(&self, slots: usize) -> Vec<usize> {
        let wanting: Vec<bool> = self
            .wants
            .iter()
            .map(|wants| wants.load(Ordering::SeqCst))
            .collect();
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        turns(&self.order, &wanting, &mut current, slots)
    }

    /// Shares `slots` freed by lane `own`'s outcomes: answers its own
    /// turns (they ride with its completions), hands the others' to their
    /// mailboxes, and lets the rest go back to the pool.
    pub(crate) fn split(
        &self,
        own: usize,
        mut slots: Vec<OwnedSemaphorePermit>,
    ) -> Vec<OwnedSemaphorePermit> {
        let turns = self.turns(slots.len());
        let mut kept = Vec::new();
        for (lane, count) in turns.into_iter().enumerate() {
            let part: Vec<_> = slots.drain(slots.len() - count..).collect();
            if lane == own {
                kept = part;
            } else if !part.is_empty() {
                // A lane whose loop stopped drops them: back to the pool.
                let _ = self.mailboxes[lane].send(part);
            }
        }
        kept
    }

    /// Hands `slots` out by turn to the lanes that want them; answers them
    /// back when none does.
    fn hand_out(&self, mut slots: Vec<OwnedSemaphorePermit>) -> Vec<OwnedSemaphorePermit> {
        let turns = self.turns(slots.len());
        if turns.iter().all(|count| *count == 0) {
            return slots;
        }
        for (lane, count) in turns.into_iter().enumerate() {
            if count > 0 {
                let part: Vec<_> = slots.drain(slots.len() - count..).collect();
                let _ = self.mailboxes[lane].send(part);
            }
        }
        slots
    }
}

/// What a lane of a worker over many queues shares with the others.
#[derive(Clone)]
pub(crate) struct Lane {
    /// The lane's place in the worker's queues.
    pub index: usize,
    pub share: std::sync::Arc<Share>,
    /// The worker's slots: the jobs held, running or claimed ahead.
    pub slots: std::sync::Arc<Semaphore>,
    /// The worker's handlers' permits: its concurrency.
    pub running: std::sync::Arc<Semaphore>,
}

impl Lane {
    /// The lane's claim loop claims now (`true`) or waits.
    pub(crate) fn set_wants(&self, wants: bool) {
        self.share.set_wants(self.index, wants);
    }
}

/// The dispatcher: takes every free slot of the pool and hands it to the
/// lanes that want one, waiting for one to want them when none does.
/// Ends, letting go of what it holds, once `stop` is cancelled.
pub(crate) async fn dispatch(
    share: std::sync::Arc<Share>,
    slots: std::sync::Arc<Semaphore>,
    stop: CancellationToken,
) {
    while let Some(mut free) = super::waiting::free_slots(&slots, &stop).await {
        loop {
            free = share.hand_out(free);
            if free.is_empty() {
                break;
            }
            tokio::select! {
                biased;
                _ = stop.cancelled() => return,
                _ = share.wanted.notified() => {}
            }
        }
    }
}

/// The turns of `slots` slots among the `wanting` lanes in `order`, with
/// `current` the round robin's running totals.
fn turns(order: &Order, wanting: &[bool], current: &mut [i64], slots: usize) -> Vec<usize> {
    let mut counts = vec![0; wanting.len()];
    match order {
        Order::Strict => {
            if let Some(first) = wanting.iter().position(|wants| *wants) {
                counts[first] = slots;
            }
        }
        Order::Weights(weights) => {
            let total: i64 = wanting
                .iter()
                .zip(weights)
                .filter(|(wants, _)| **wants)
                .map(|(_, weight)| *weight as i64)
                .sum();
            if total == 0 {
                return counts;
            }
            for _ in 0..slots {
                let mut best: Option<usize> = None;
                for (lane, weight) in weights.iter().enumerate() {
                    if !wanting[lane] {
                        continue;
                    }
                    current[lane] += *weight as i64;
                    if best.is_none_or(|b| current[lane] > current[b]) {
                        best = Some(lane);
                    }
                }
                let best = best.expect("a lane wants slots");
                current[best] -= total;
                counts[best] += 1;
            }
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weighted(weights: &[u64], wanting: &[bool], slots: usize, rounds: usize) -> Vec<usize> {
        let order = Order::Weights(weights.to_vec());
        let mut current = vec![0; weights.len()];
        let mut all = vec![0; weights.len()];
        for _ in 0..rounds {
            let counts = turns(&order, wanting, &mut current, slots);
            for (sum, count) in all.iter_mut().zip(counts) {
                *sum += count;
            }
        }
        all
    }

    #[test]
    fn turns_follow_the_weights_exactly_over_whole_cycles() {
        assert_eq!(weighted(&[5, 2, 1], &[true; 3], 1, 800), [500, 200, 100]);
        assert_eq!(weighted(&[5, 2, 1], &[true; 3], 7, 800), [3500, 1400, 700]);
    }

    #[test]
    fn the_smooth_round_robin_interleaves_the_turns() {
        let order = Order::Weights(vec![5, 1, 1]);
        let mut current = vec![0; 3];
        let picks: Vec<usize> = (0..7)
            .map(|_| {
                let counts = turns(&order, &[true; 3], &mut current, 1);
                counts.iter().position(|c| *c == 1).unwrap()
            })
            .collect();
        assert_eq!(picks, [0, 0, 1, 0, 2, 0, 0]);
    }

    #[test]
    fn a_lane_that_wants_nothing_gives_its_turns_to_the_others() {
        assert_eq!(
            weighted(&[5, 2, 1], &[false, true, true], 3, 100),
            [0, 200, 100]
        );
        assert_eq!(weighted(&[5, 2, 1], &[false; 3], 3, 10), [0, 0, 0]);
    }

    #[test]
    fn strict_order_gives_every_slot_to_the_first_lane_that_wants_one() {
        let mut current = vec![0; 3];
        let strict =
            |wanting: &[bool], current: &mut Vec<i64>| turns(&Order::Strict, wanting, current, 4);
        assert_eq!(strict(&[true, true, true], &mut current), [4, 0, 0]);
        assert_eq!(strict(&[false, true, true], &mut current), [0, 4, 0]);
        assert_eq!(strict(&[false, false, true], &mut current), [0, 0, 4]);
        assert_eq!(strict(&[false; 3], &mut current), [0, 0, 0]);
    }
}
