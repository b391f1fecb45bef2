//! Waits registered at their enqueue (`NewJob::awaited`): the enqueue
//! says `WAITED`, so the server marks the job as it creates it, and the
//! wait needs no `OUTCOME` read (docs/protocol.md, "Marked at the
//! enqueue").
//!
//! Before the enqueue is sent, [`EarlyWaits::begin`] waits until the
//! queue's subscription is open and notes its epoch and how many messages
//! the listener had received. Once the reply names the jobs, each wait is
//! registered ([`EarlyWaits::register`]). An outcome decided after the
//! enqueue was published to that subscription; if it arrived before its
//! wait was registered, the listener kept it ([`Early::keep`]: it keeps
//! the messages no wait claims while an enqueue is in flight, at most
//! [`KEPT`]). A wait is trusted to the channel only when the subscription
//! never closed in between (same epoch) and no message received since the
//! send was dropped from what was kept; otherwise, and for a job the
//! enqueue did not create (it was not marked), the listener reads the job
//! as for any wait.

use super::{Decided, Delivery, QueueWaits, Subscription, Ticket, TicketKey};
use crate::error::Result;
use crate::transport::connector::Connector;
use echomq_protocol::{JobId, Keyspace};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::oneshot;

/// Most messages kept for waits not yet registered.
const KEPT: usize = 10_000;

/// The channel's history as the waits registered at their enqueue see it.
#[derive(Default)]
pub(super) struct Early {
    /// Enqueues with waits between [`EarlyWaits::begin`] and their end.
    in_flight: usize,
    /// Whether the subscription is open.
    open: bool,
    /// Changes each time the subscription opens or closes.
    epoch: u64,
    /// Messages received on the channel so far.
    received: u64,
    /// The latest message (by its number) dropped from `kept`.
    dropped: u64,
    /// Messages no wait claimed while an enqueue was in flight, by job id:
    /// the message's number and the outcome.
    kept: HashMap<String, (u64, Decided)>,
    /// `kept`'s ids, oldest first.
    order: VecDeque<(u64, String)>,
}

impl Early {
    /// Counts one more message received; returns its number.
    pub(super) fn received(&mut self) -> u64 {
        self.received += 1;
        self.received
    }

    /// Keeps message `seq`, `id`'s outcome, that no wait claimed: only
    /// while an enqueue with waits is in flight, dropping the oldest past
    /// [`KEPT`].
    pub(super) fn keep(&mut self, seq: u64, id: String, decided: Decided) {
        if self.in_flight == 0 {
            return;
        }
        if self.order.len() == KEPT
            && let Some((oldest, old)) = self.order.pop_front()
        {
            self.dropped = oldest;
            if self.kept.get(&old).is_some_and(|(kept, _)| *kept == oldest) {
                self.kept.remove(&old);
            }
        }
        self.order.push_back((seq, id.clone()));
        self.kept.insert(id, (seq, decided));
    }

    /// The subscription opened or closed: what was kept belongs to the
    /// one before.
    pub(super) fn new_epoch(&mut self, open: bool) {
        self.open = open;
        self.epoch += 1;
        self.kept.clear();
        self.order.clear();
    }

    /// No wait registered, none about to be.
    pub(super) fn idle(&self) -> bool {
        self.in_flight == 0
    }
}

impl super::Waiting {
    /// No wait open, none about to register.
    pub(super) fn idle(&self) -> bool {
        self.by_id.is_empty() && self.early.idle()
    }
}

/// An enqueue whose jobs' waits register as its replies come: begun before
/// it is sent, ended when dropped.
pub(crate) struct EarlyWaits {
    waits: Arc<QueueWaits>,
    /// The epoch of the subscription open before the send.
    epoch: u64,
    /// Messages received before the send.
    received: u64,
}

impl EarlyWaits {
    /// Waits until the subscription of `keys`' queue is open (starting its
    /// listener), and notes where it stands. The server's ACL refusing the
    /// channel is [`crate::Error::NotPermitted`].
    pub(crate) async fn begin(connector: &Connector, keys: &Keyspace) -> Result<Self> {
        let waits = {
            let mut queues = connector.outcome_channels().queues();
            let waits = connector.queue_waits(&mut queues, keys);
            waits.waiting().early.in_flight += 1;
            waits
        };
        // From here on, dropping `begun` ends the enqueue's flight.
        let mut begun = Self {
            waits,
            epoch: 0,
            received: 0,
        };
        loop {
            begun.waits.open(connector.user()).await?;
            let seen = {
                let waiting = begun.waits.waiting();
                let early = &waiting.early;
                early.open.then_some((early.epoch, early.received))
            };
            if let Some((epoch, received)) = seen {
                (begun.epoch, begun.received) = (epoch, received);
                return Ok(begun);
            }
            // Closing as we looked: wait for the state to say so, then
            // for the next opening.
            let mut state = begun.waits.subscription.subscribe();
            let _ = state.wait_for(|state| *state != Subscription::Open).await;
        }
    }

    /// Registers a wait on `id`, which the enqueue `created` (marked) or
    /// not: trusted to the channel when it can be, else read by the
    /// listener. An outcome kept for it is handed at once.
    pub(crate) fn register(&self, id: &JobId) -> (Arc<QueueWaits>, Ticket) {
        self.register_as(id, true)
    }

    /// [`EarlyWaits::register`] for a job the enqueue did not create.
    pub(crate) fn register_read(&self, id: &JobId) -> (Arc<QueueWaits>, Ticket) {
        self.register_as(id, false)
    }

    fn register_as(&self, id: &JobId, created: bool) -> (Arc<QueueWaits>, Ticket) {
        let waits = &self.waits;
        let mut waiting = waits.waiting();
        let early = &mut waiting.early;
        let kept = early
            .kept
            .remove(id.as_str())
            .filter(|(seq, _)| *seq > self.received);
        let trusted = created && early.epoch == self.epoch && early.dropped <= self.received;
        if let Some((_, decided)) = kept {
            drop(waiting);
            let ticket = waits.tickets.fetch_add(1, Ordering::Relaxed);
            let (sender, outcome) = oneshot::channel();
            let _ = sender.send(Delivery::Decided(decided));
            let key = TicketKey {
                id: id.as_str().to_string(),
                ticket,
            };
            return (waits.clone(), Ticket { key, outcome });
        }
        drop(waiting);
        (waits.clone(), waits.register(id, trusted))
    }
}

impl Drop for EarlyWaits {
    fn drop(&mut self) {
        let mut waiting = self.waits.waiting();
        let early = &mut waiting.early;
        early.in_flight -= 1;
        if early.in_flight == 0 {
            early.kept.clear();
            early.order.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use echomq_protocol::QueueName;

    /// A queue's waits whose subscription is open, and an enqueue begun on
    /// it after `before` messages.
    fn begun(before: u64) -> EarlyWaits {
        let keys = Keyspace::new("emq", &QueueName::new("q").unwrap()).unwrap();
        let waits = Arc::new(QueueWaits::new(keys));
        waits.subscribed(true);
        for n in 0..before {
            waits.deliver_message(format!("old{n}"), Decided::Cancelled);
        }
        let mut waiting = waits.waiting();
        waiting.early.in_flight += 1;
        let (epoch, received) = (waiting.early.epoch, waiting.early.received);
        drop(waiting);
        EarlyWaits {
            waits,
            epoch,
            received,
        }
    }

    fn id(text: &str) -> JobId {
        JobId::new(text).unwrap()
    }

    /// What the wait of `ticket` was handed so far, if anything.
    fn handed(ticket: Ticket) -> Option<Delivery> {
        ticket.split().1.try_recv().ok()
    }

    /// Whether the listener will read `id` for its waits.
    fn read_by_the_listener(early: &EarlyWaits, id: &str) -> bool {
        early.waits.take_fresh().iter().any(|fresh| fresh == id)
    }

    #[test]
    fn an_outcome_that_came_before_its_wait_registered_is_handed_at_once() {
        let early = begun(2);
        early
            .waits
            .deliver_message("a".into(), Decided::Completed(b"7".to_vec()));
        let (_, ticket) = early.register(&id("a"));
        assert!(matches!(
            handed(ticket),
            Some(Delivery::Decided(Decided::Completed(result))) if result == b"7"
        ));
        assert!(!read_by_the_listener(&early, "a"));
    }

    #[test]
    fn a_created_job_s_wait_is_trusted_to_the_channel() {
        let early = begun(0);
        let (_, ticket) = early.register(&id("a"));
        assert!(handed(ticket).is_none(), "nothing yet");
        assert!(!read_by_the_listener(&early, "a"), "no read");
        early.waits.deliver_message("a".into(), Decided::Cancelled);
        assert!(early.waits.waiting().by_id.is_empty(), "handed and gone");
    }

    #[test]
    fn a_job_the_enqueue_did_not_create_is_read() {
        let early = begun(0);
        early.register_read(&id("a"));
        assert!(read_by_the_listener(&early, "a"));
    }

    #[test]
    fn a_message_kept_before_the_send_is_not_taken_for_the_job() {
        let older = begun(0);
        // Another enqueue in flight keeps an outcome of an earlier `a`.
        older.waits.deliver_message("a".into(), Decided::Removed);
        let early = EarlyWaits {
            waits: older.waits.clone(),
            epoch: older.epoch,
            received: older.waits.waiting().early.received,
        };
        early.waits.waiting().early.in_flight += 1;
        let (_, ticket) = early.register(&id("a"));
        assert!(handed(ticket).is_none());
    }

    #[test]
    fn a_wait_whose_subscription_closed_since_the_send_is_read() {
        let early = begun(0);
        early.waits.subscribed(false);
        early.waits.subscribed(true);
        early.register(&id("a"));
        assert!(read_by_the_listener(&early, "a"));
    }

    #[test]
    fn a_wait_after_kept_messages_were_dropped_is_read() {
        let early = begun(0);
        for n in 0..=KEPT {
            early
                .waits
                .deliver_message(format!("other{n}"), Decided::Cancelled);
        }
        assert_eq!(early.waits.waiting().early.kept.len(), KEPT);
        early.register(&id("a"));
        assert!(read_by_the_listener(&early, "a"));
    }

    #[test]
    fn messages_are_kept_only_while_an_enqueue_is_in_flight() {
        let early = begun(0);
        let waits = early.waits.clone();
        drop(early);
        waits.deliver_message("a".into(), Decided::Cancelled);
        assert!(waits.waiting().early.kept.is_empty());
        assert!(waits.waiting().idle());
    }
}
