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
//! Slots are shared a batch at a time, as they come back: the slots one
//! batch of a lane's outcomes frees, or the free slots the dispatcher
//! took from the pool. By weight, stride scheduling: the batch goes to the
//! lane that wants slots and got the fewest over its weight (its pass),
//! except that the lane whose outcomes freed it keeps it while it is
//! within a batch of that lane, so most batches ride with the completions
//! that freed them (`ride.rs`: one command, not two). In strict order the
//! batch goes to the first lane that wants slots. A batch not kept is
//! handed to its lane's mailbox, whose claim loop claims for it; a batch
//! no lane wants goes back to the pool, where the dispatcher waits for a
//! lane to want it. So a queue that is empty, paused, rate limited or at
//! its cap gives its turns to the others without a claim, and gets them
//! back when its claim loop claims again (woken by its signal set, its
//! rate window's end, room under its cap), level with the others.
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

/// Which lanes want slots, and whose turn the next slots are.
pub(crate) struct Share {
    order: Order,
    /// Whether each lane's claim loop claims now.
    wants: Vec<AtomicBool>,
    /// Each lane's pass: the slots it got over its weight.
    passes: Mutex<Vec<f64>>,
    mailboxes: Vec<UnboundedSender<Vec<OwnedSemaphorePermit>>>,
    /// A lane began to want slots.
    wanted: Notify,
}

impl Share {
    /// The share of `lanes` lanes in `order`, and each lane's mailbox.
    /// Every lane wants slots from the start, as its claim loop starts by
    /// claiming: the first slots go by turn whichever lane starts first.
    pub(crate) fn new(order: Order, lanes: usize) -> (Self, Vec<Mailbox>) {
        let (mailboxes, received): (Vec<_>, Vec<_>) =
            (0..lanes).map(|_| unbounded_channel()).unzip();
        let share = Self {
            order,
            wants: (0..lanes).map(|_| AtomicBool::new(true)).collect(),
            passes: Mutex::new(vec![0.0; lanes]),
            mailboxes,
            wanted: Notify::new(),
        };
        (share, received)
    }

    /// Lane `lane`'s claim loop claims now (`true`) or waits. A lane that
    /// comes back starts level with the lanes that kept claiming: the
    /// turns it let go while it waited are not owed to it.
    pub(crate) fn set_wants(&self, lane: usize, wants: bool) {
        let before = self.wants[lane].swap(wants, Ordering::SeqCst);
        if wants && !before {
            let wanting = self.wanting();
            let mut passes = self.passes();
            catch_up(&mut passes, &wanting, lane);
            drop(passes);
            self.wanted.notify_one();
        }
    }

    fn wanting(&self) -> Vec<bool> {
        self.wants
            .iter()
            .map(|wants| wants.load(Ordering::SeqCst))
            .collect()
    }

    fn passes(&self) -> std::sync::MutexGuard<'_, Vec<f64>> {
        self.passes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The lane whose turn `slots` slots freed by lane `own` (if any) are,
    /// among the lanes that want slots; `None` when none does.
    fn turn(&self, own: Option<usize>, slots: usize) -> Option<usize> {
        let wanting = self.wanting();
        turn(&self.order, &wanting, &mut self.passes(), own, slots)
    }

    /// Shares `slots` freed by lane `own`'s outcomes: answers them when
    /// they are its turn (they ride with its completions), else hands them
    /// to the lane whose turn they are, or lets them go back to the pool.
    pub(crate) fn split(
        &self,
        own: usize,
        slots: Vec<OwnedSemaphorePermit>,
    ) -> Vec<OwnedSemaphorePermit> {
        if slots.is_empty() {
            return slots;
        }
        match self.turn(Some(own), slots.len()) {
            Some(lane) if lane == own => slots,
            Some(lane) => {
                // A lane whose loop stopped drops them: back to the pool.
                let _ = self.mailboxes[lane].send(slots);
                Vec::new()
            }
            None => Vec::new(),
        }
    }

    /// Hands `slots` to the lane whose turn they are; answers them back
    /// when no lane wants them.
    fn hand_out(&self, slots: Vec<OwnedSemaphorePermit>) -> Vec<OwnedSemaphorePermit> {
        match self.turn(None, slots.len()) {
            Some(lane) => {
                let _ = self.mailboxes[lane].send(slots);
                Vec::new()
            }
            None => slots,
        }
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

/// How many batches ahead of the lane with the lowest pass the lane that
/// freed a batch may be and still keep it: more keep more batches riding
/// with the completions that freed them (fewer plain claims), fewer keep
/// the slots closer to the weights.
const KEPT_BATCHES: f64 = 3.0;

/// Whose turn `slots` slots are, among the `wanting` lanes in `order`;
/// `passes` are the lanes' passes (slots got over weight), `own` the lane
/// that freed them, if one did.
///
/// Strict: the first lane that wants slots. By weight: stride scheduling,
/// a batch at a time: the lane with the lowest pass gets the batch and its
/// pass grows by the batch over its weight, so over many batches each
/// lane's slots follow its weight. The lane that freed the batch keeps it
/// while it is no more than [`KEPT_BATCHES`] batches of slots ahead of
/// the lowest, so that most batches ride with the completions that freed
/// them (one command, not two); a lane is then at most one batch more
/// ahead of its share.
fn turn(
    order: &Order,
    wanting: &[bool],
    passes: &mut [f64],
    own: Option<usize>,
    slots: usize,
) -> Option<usize> {
    let weights = match order {
        Order::Strict => return wanting.iter().position(|wants| *wants),
        Order::Weights(weights) => weights,
    };
    let lowest = (0..wanting.len())
        .filter(|lane| wanting[*lane])
        .min_by(|a, b| passes[*a].total_cmp(&passes[*b]))?;
    let batch = slots as f64;
    let ahead = |lane: usize| (passes[lane] - passes[lowest]) * weights[lane] as f64;
    let lane = match own {
        Some(own) if wanting[own] && ahead(own) <= KEPT_BATCHES * batch => own,
        _ => lowest,
    };
    passes[lane] += batch / weights[lane] as f64;
    Some(lane)
}

/// Lane `lane` wants slots again: its pass starts no lower than the
/// lowest of the other lanes that want slots.
fn catch_up(passes: &mut [f64], wanting: &[bool], lane: usize) {
    let lowest = (0..wanting.len())
        .filter(|other| *other != lane && wanting[*other])
        .map(|other| passes[other])
        .min_by(f64::total_cmp);
    if let Some(lowest) = lowest {
        passes[lane] = passes[lane].max(lowest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slots each lane got from `batches` batches of `slots`, each freed
    /// by the lane whose turn the one before was (as rides are).
    fn weighted(weights: &[u64], wanting: &[bool], slots: usize, batches: usize) -> Vec<usize> {
        let order = Order::Weights(weights.to_vec());
        let mut passes = vec![0.0; weights.len()];
        let mut got = vec![0; weights.len()];
        let mut own = None;
        for _ in 0..batches {
            own = turn(&order, wanting, &mut passes, own, slots);
            if let Some(lane) = own {
                got[lane] += slots;
            }
        }
        got
    }

    fn within(got: &[usize], expected: &[usize], slack: usize) {
        for (got, expected) in got.iter().zip(expected) {
            assert!(got.abs_diff(*expected) <= slack, "{got:?} vs {expected:?}");
        }
    }

    #[test]
    fn turns_follow_the_weights_within_a_few_batches() {
        within(
            &weighted(&[5, 2, 1], &[true; 3], 1, 8000),
            &[5000, 2000, 1000],
            3,
        );
        within(
            &weighted(&[5, 2, 1], &[true; 3], 8, 1250),
            &[6250, 2500, 1250],
            24,
        );
    }

    #[test]
    fn the_lane_that_freed_a_batch_keeps_it_while_within_the_kept_batches() {
        let order = Order::Weights(vec![1, 1]);
        let mut passes = vec![0.0, 0.0];
        for _ in 0..=KEPT_BATCHES as usize {
            assert_eq!(turn(&order, &[true; 2], &mut passes, Some(1), 4), Some(1));
        }
        assert_eq!(turn(&order, &[true; 2], &mut passes, Some(1), 4), Some(0));
    }

    #[test]
    fn a_lane_that_wants_nothing_gives_its_turns_to_the_others() {
        within(
            &weighted(&[5, 2, 1], &[false, true, true], 3, 300),
            &[0, 600, 300],
            6,
        );
        assert_eq!(weighted(&[5, 2, 1], &[false; 3], 3, 10), [0, 0, 0]);
    }

    #[test]
    fn a_lane_back_from_waiting_is_not_owed_the_turns_it_let_go() {
        let mut passes = vec![0.0, 900.0, 1000.0];
        catch_up(&mut passes, &[true, true, true], 0);
        assert_eq!(passes[0], 900.0);
        catch_up(&mut passes, &[true, false, false], 1);
        assert_eq!(passes[1], 900.0);
    }

    #[test]
    fn strict_order_gives_every_slot_to_the_first_lane_that_wants_one() {
        let mut passes = vec![0.0; 3];
        let mut strict = |wanting: &[bool]| turn(&Order::Strict, wanting, &mut passes, Some(2), 4);
        assert_eq!(strict(&[true, true, true]), Some(0));
        assert_eq!(strict(&[false, true, true]), Some(1));
        assert_eq!(strict(&[false, false, true]), Some(2));
        assert_eq!(strict(&[false; 3]), None);
    }
}
