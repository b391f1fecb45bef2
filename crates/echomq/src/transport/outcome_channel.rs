//! The outcome channel: one sharded subscription per connector and queue
//! that delivers the outcome of every job a caller waits for
//! (docs/protocol.md, "Outcome waits").
//!
//! A wait registers its job id here and waits for its ticket. The
//! listener reads the jobs: once its subscription is open, it sends
//! `OUTCOME.BULK` for the ids registered since its last read (a thousand
//! waits begun together cost one call), so a job decided before answers
//! in the reply and one decided after is published on the channel, and
//! the listener hands the message to every wait on that id. Each time the
//! subscription opens (again) it reads every id still waited for, before
//! it trusts the channel: what was published while it was away is read
//! back from the jobs. A job read as absent may have been decided and
//! trimmed after the subscription opened: the messages published before
//! the read are handed out first (a `PING` on the subscription), and only
//! the waits still open then answer `Removed`. The listener ends once no
//! wait has been open for [`IDLE`], and the next wait starts another.

use crate::error::{Error, Result};
use crate::transport::connector::Connector;
use crate::transport::decode;
use crate::transport::dispatch::Call;
use crate::transport::shard_subscription::ShardSubscription;
use early::Early;
pub(crate) use early::EarlyWaits;
use echomq_protocol::{JobId, JobState, Keyspace, Transition};
use redis::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, oneshot, watch};
use tokio::time::Instant;

mod early;

/// How long a listener with no open wait keeps its subscription.
const IDLE: Duration = Duration::from_secs(30);
/// The longest pause between two attempts to subscribe.
const MAX_RETRY_PAUSE: Duration = Duration::from_secs(5);
/// Most ids in one `OUTCOME.BULK` (or one pipeline of `OUTCOME`s).
const READ_CHUNK: usize = 1000;
/// How often a listener behind Sentinel asks the sentinels whether the
/// server it subscribed on is still the primary: a failover that demotes
/// it leaves the subscription open on a server where nothing is published
/// any more. The sentinels answer; the servers pay nothing.
const PRIMARY_CHECK: Duration = Duration::from_secs(1);

/// A decided job's outcome, as the channel or `OUTCOME` tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decided {
    /// Completed, with its stored result (empty when none).
    Completed(Vec<u8>),
    /// Dead: the last error and the failures it took.
    Dead { error: String, failures: u64 },
    /// Cancelled.
    Cancelled,
    /// Gone: removed, drained, obliterated, trimmed, or never enqueued.
    Removed,
}

/// What `OUTCOME` answered: a decided job, or the state of one that is not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reading {
    /// Decided (or gone).
    Decided(Decided),
    /// Not yet: scheduled, pending or active, and now marked waited for.
    Unfinished(JobState),
}

/// The call that reads `id`'s outcome and marks it waited for.
pub(crate) fn outcome_call(id: &JobId) -> Call {
    Call::new(Transition::Outcome, Some(id)).arg(id.as_str())
}

/// Decodes `OUTCOME`'s reply: nil, or an array of the exact length its
/// first word says.
pub(crate) fn reading(reply: Value) -> Result<Reading> {
    const T: Transition = Transition::Outcome;
    if reply == Value::Nil {
        return Ok(Reading::Decided(Decided::Removed));
    }
    let detail = format!("{reply:?}");
    let short = || Error::UnexpectedReply {
        transition: T,
        detail: detail.clone(),
    };
    let mut items = decode::array(T, reply)?.into_iter();
    let state = decode::text(T, items.next().ok_or_else(short)?)?;
    let read = match state.as_str() {
        "completed" => Reading::Decided(Decided::Completed(decode::bytes(
            T,
            items.next().ok_or_else(short)?,
        )?)),
        "dead" => Reading::Decided(Decided::Dead {
            error: decode::text(T, items.next().ok_or_else(short)?)?,
            failures: decode::int(T, items.next().ok_or_else(short)?)?,
        }),
        "cancelled" => Reading::Decided(Decided::Cancelled),
        other => Reading::Unfinished(other.parse().map_err(|_| short())?),
    };
    if items.next().is_some() {
        return Err(short());
    }
    Ok(read)
}

/// Reads a message of the channel: `<id> completed <result>`, `<id> dead
/// <failures> <error>`, `<id> cancelled` or `<id> removed`. `None` for
/// anything else (a later server's message this client does not know).
pub(crate) fn message(bytes: &[u8]) -> Option<(String, Decided)> {
    let mut parts = bytes.splitn(3, |b| *b == b' ');
    let id = std::str::from_utf8(parts.next()?).ok()?.to_string();
    let kind = parts.next()?;
    let rest = parts.next();
    let decided = match (kind, rest) {
        (b"completed", rest) => Decided::Completed(rest.unwrap_or_default().to_vec()),
        (b"dead", Some(rest)) => {
            let mut rest = rest.splitn(2, |b| *b == b' ');
            let failures = std::str::from_utf8(rest.next()?).ok()?.parse().ok()?;
            let error = String::from_utf8_lossy(rest.next().unwrap_or_default()).into_owned();
            Decided::Dead { error, failures }
        }
        (b"cancelled", None) => Decided::Cancelled,
        (b"removed", None) => Decided::Removed,
        _ => return None,
    };
    Some((id, decided))
}

/// Where the subscription stands, for a wait that needs it open.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Subscription {
    /// Not open yet (or opening again).
    Opening,
    /// Open: the channel can be trusted for what is decided from now on.
    Open,
    /// The server's ACL refuses the channel to the user.
    Refused(String),
}

/// Which wait a ticket is: its job id and its number.
pub(crate) struct TicketKey {
    id: String,
    ticket: u64,
}

/// One wait's place: which wait it is, and where its outcome arrives.
pub(crate) struct Ticket {
    key: TicketKey,
    /// Receives the job's outcome from the channel or a read.
    outcome: oneshot::Receiver<Delivery>,
}

impl Ticket {
    /// Which wait it is.
    pub(crate) fn key(&self) -> &TicketKey {
        &self.key
    }

    /// Which wait it is, and where its outcome arrives.
    pub(crate) fn split(self) -> (TicketKey, oneshot::Receiver<Delivery>) {
        (self.key, self.outcome)
    }
}

/// What the listener hands a wait.
#[derive(Debug, Clone)]
pub(crate) enum Delivery {
    /// The job's outcome.
    Decided(Decided),
    /// The listener's read of the job was refused (a key of the wrong
    /// type, the ACL): the wait sends `OUTCOME` itself, to get its own
    /// error.
    ReadYourself,
}

/// The waits open on one queue, and what the waits registered at their
/// enqueue need of the channel.
#[derive(Default)]
struct Waiting {
    /// By job id: each wait's ticket number and where its outcome goes.
    by_id: HashMap<String, Vec<(u64, oneshot::Sender<Delivery>)>>,
    /// The channel's history as the waits registered at their enqueue
    /// see it.
    early: Early,
}

/// The waits open on one queue of one connector, and its subscription.
pub(crate) struct QueueWaits {
    keys: Keyspace,
    waiting: Mutex<Waiting>,
    tickets: AtomicU64,
    /// Ids registered since the listener last read them, and its wake-up.
    fresh: Mutex<Vec<String>>,
    fresh_added: Notify,
    subscription: watch::Sender<Subscription>,
}

impl QueueWaits {
    fn new(keys: Keyspace) -> Self {
        Self {
            keys,
            waiting: Mutex::new(Waiting::default()),
            tickets: AtomicU64::new(0),
            fresh: Mutex::new(Vec::new()),
            fresh_added: Notify::new(),
            subscription: watch::Sender::new(Subscription::Opening),
        }
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Registers a wait on `id`; unless `read`, the listener reads the
    /// job for it (the wait reads it itself).
    fn register(&self, id: &JobId, read: bool) -> Ticket {
        let ticket = self.tickets.fetch_add(1, Ordering::Relaxed);
        let (sender, outcome) = oneshot::channel();
        self.waiting()
            .by_id
            .entry(id.as_str().to_string())
            .or_default()
            .push((ticket, sender));
        if !read {
            self.fresh
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push(id.as_str().to_string());
            self.fresh_added.notify_one();
        }
        Ticket {
            key: TicketKey {
                id: id.as_str().to_string(),
                ticket,
            },
            outcome,
        }
    }

    /// Drops a wait that ended by itself (an error, a timeout).
    pub(crate) fn forget_key(&self, key: &TicketKey) {
        let mut waiting = self.waiting();
        if let Some(waits) = waiting.by_id.get_mut(&key.id) {
            waits.retain(|(t, _)| *t != key.ticket);
            if waits.is_empty() {
                waiting.by_id.remove(&key.id);
            }
        }
    }

    /// Hands `decided` to every wait on `id`.
    fn deliver(&self, id: &str, decided: &Decided) {
        self.hand(id, &Delivery::Decided(decided.clone()));
    }

    /// Hands `delivery` to every wait on `id`.
    fn hand(&self, id: &str, delivery: &Delivery) {
        let waits = self.waiting().by_id.remove(id).unwrap_or_default();
        send_all(waits, delivery);
    }

    /// Hands a message of the channel to every wait on its job; one that
    /// no wait is registered for yet is kept for a wait registered at its
    /// enqueue ([`Early::keep`]).
    fn deliver_message(&self, id: String, decided: Decided) {
        let mut waiting = self.waiting();
        let seq = waiting.early.received();
        match waiting.by_id.remove(&id) {
            Some(waits) => {
                drop(waiting);
                send_all(waits, &Delivery::Decided(decided));
            }
            None => waiting.early.keep(seq, id, decided),
        }
    }

    /// The ids registered since the last call.
    fn take_fresh(&self) -> Vec<String> {
        std::mem::take(&mut *self.fresh.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Waits until the subscription is open: from then on, what is decided
    /// reaches this queue's waits. The server's ACL refusing the channel to
    /// `user` is [`Error::NotPermitted`], naming it.
    pub(crate) async fn open(&self, user: &str) -> Result<()> {
        let mut state = self.subscription.subscribe();
        let state = match state
            .wait_for(|state| *state != Subscription::Opening)
            .await
        {
            Ok(state) => state.clone(),
            // The sender lives in `self`: it cannot be gone while we wait.
            Err(_) => Subscription::Opening,
        };
        match state {
            Subscription::Refused(why) => {
                let channel = self.keys.outcome_channel();
                let target = refusal_target(user, &self.keys, &channel);
                Err(target
                    .subscription_refusal(&std::io::Error::other(why.clone()))
                    .unwrap_or(Error::UnexpectedEvent(why)))
            }
            _ => Ok(()),
        }
    }

    fn ids(&self) -> Vec<String> {
        self.waiting().by_id.keys().cloned().collect()
    }

    /// The subscription opened (`true`) or closed: a new epoch either way,
    /// then the state the waits see.
    fn subscribed(&self, open: bool) {
        self.waiting().early.new_epoch(open);
        let state = if open {
            Subscription::Open
        } else {
            Subscription::Opening
        };
        self.subscription.send_replace(state);
    }
}

/// Hands `delivery` to each of `waits`.
fn send_all(waits: Vec<(u64, oneshot::Sender<Delivery>)>, delivery: &Delivery) {
    for (_, sender) in waits {
        let _ = sender.send(delivery.clone());
    }
}

/// The listeners of one connector, one per queue with open waits.
#[derive(Default)]
pub(crate) struct OutcomeChannels {
    queues: Mutex<HashMap<String, Arc<QueueWaits>>>,
}

impl OutcomeChannels {
    fn queues(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<QueueWaits>>> {
        self.queues
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Connector {
    /// Registers a wait for `id`'s outcome on the queue of `keys`, starting
    /// the queue's listener if none runs. The wait is registered under the
    /// same lock a listener ending for idleness takes, so it never joins
    /// one that is ending.
    /// Unless `read`, the listener reads the job for the wait (a wait
    /// that read the job itself and found it unfinished passes `true`).
    pub(crate) fn wait_for_outcome(
        &self,
        keys: &Keyspace,
        id: &JobId,
        read: bool,
    ) -> (Arc<QueueWaits>, Ticket) {
        let mut queues = self.outcome_channels().queues();
        let waits = self.queue_waits(&mut queues, keys);
        let ticket = waits.register(id, read);
        (waits, ticket)
    }

    /// The waits of the queue of `keys`, its listener started if none
    /// runs. The caller holds `queues` until its wait is registered.
    fn queue_waits(
        &self,
        queues: &mut HashMap<String, Arc<QueueWaits>>,
        keys: &Keyspace,
    ) -> Arc<QueueWaits> {
        queues
            .entry(keys.base().to_string())
            .or_insert_with(|| {
                let waits = Arc::new(QueueWaits::new(keys.clone()));
                tokio::spawn(listen(self.clone(), waits.clone()));
                waits
            })
            .clone()
    }
}

/// Keeps the subscription of `waits`' queue open while it has waits, reads
/// back the jobs each time it opens, and hands each message to its waits.
async fn listen(connector: Connector, waits: Arc<QueueWaits>) {
    let channel = waits.keys.outcome_channel();
    let tls = connector.subscription_tls();
    let mut pause = Duration::from_millis(50);
    loop {
        if ended_for_idleness(&connector, &waits) {
            return;
        }
        let servers = connector.node_addresses().await;
        let mut subscription = match ShardSubscription::open(&servers, &channel, tls.clone()).await
        {
            Ok(subscription) => subscription,
            Err(err) => {
                let target = refusal_target(connector.user(), &waits.keys, &channel);
                match target.subscription_refusal(&err) {
                    Some(_) => {
                        waits
                            .subscription
                            .send_replace(Subscription::Refused(err.to_string()));
                        pause = MAX_RETRY_PAUSE;
                    }
                    None => tracing::warn!(queue = %waits.keys.queue(), error = %err,
                        "outcome subscription failed; retrying"),
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(MAX_RETRY_PAUSE);
                continue;
            }
        };
        pause = Duration::from_millis(50);
        waits.subscribed(true);
        // Every id still waited for, those registered meanwhile among them.
        waits.take_fresh();
        let ids = waits.ids();
        if let Err(err) = read(&connector, &waits, &mut subscription, ids).await {
            tracing::warn!(queue = %waits.keys.queue(), error = %err,
                "reading back the outcomes waited for failed; subscribing again");
            waits.subscribed(false);
            continue;
        }
        let subscribed: Vec<String> = servers.iter().map(|s| s.addr().to_string()).collect();
        let tick = if connector.behind_sentinel() {
            PRIMARY_CHECK
        } else {
            IDLE
        };
        let (mut quiet, mut checked) = (Duration::ZERO, Instant::now());
        loop {
            // Only the wait for bytes is timed: a message is read whole.
            let next = tokio::select! {
                readable = tokio::time::timeout(tick, subscription.readable()) => readable,
                () = waits.fresh_added.notified() => {
                    quiet = Duration::ZERO;
                    let ids = waits.take_fresh();
                    if let Err(err) = read(&connector, &waits, &mut subscription, ids).await {
                        tracing::warn!(queue = %waits.keys.queue(), error = %err,
                            "reading the outcomes waited for failed; subscribing again");
                        break;
                    }
                    continue;
                }
            };
            let next = match next {
                Ok(Ok(())) => Ok(subscription.next_message().await),
                Ok(Err(err)) => Ok(Err(err)),
                Err(quiet) => Err(quiet),
            };
            match next {
                Ok(Ok(bytes)) => {
                    quiet = Duration::ZERO;
                    if let Some((id, decided)) = message(&bytes) {
                        waits.deliver_message(id, decided);
                    }
                }
                Ok(Err(err)) => {
                    tracing::warn!(queue = %waits.keys.queue(), error = %err,
                        "outcome subscription dropped; subscribing again");
                    break;
                }
                Err(_quiet) => {
                    quiet += tick;
                    if quiet >= IDLE && ended_for_idleness(&connector, &waits) {
                        return;
                    }
                }
            }
            if tick == PRIMARY_CHECK && checked.elapsed() >= PRIMARY_CHECK {
                checked = Instant::now();
                if connector.primary_moved(&subscribed).await {
                    tracing::warn!(queue = %waits.keys.queue(),
                        "the primary moved (Sentinel); subscribing again on the new one");
                    break;
                }
            }
        }
        waits.subscribed(false);
    }
}

/// The subscription of `user` to the outcome channel of `keys`, for
/// [`Error::NotPermitted`].
fn refusal_target<'a>(
    user: &'a str,
    keys: &'a Keyspace,
    channel: &'a str,
) -> crate::acl::Target<'a> {
    crate::acl::Target {
        user,
        key: keys.base(),
        channel: Some(channel),
        queue: Some(keys.queue().as_str()),
    }
}

/// Ends the listener of `waits` when it has no open wait: removes it from
/// the connector under the lock a new wait registers under. `true` when
/// it ended.
fn ended_for_idleness(connector: &Connector, waits: &Arc<QueueWaits>) -> bool {
    let mut queues = connector.outcome_channels().queues();
    if !waits.waiting().idle() {
        return false;
    }
    let base = waits.keys.base();
    if queues
        .get(base)
        .is_some_and(|listed| Arc::ptr_eq(listed, waits))
    {
        queues.remove(base);
    }
    true
}

/// Reads the jobs of `ids` (`OUTCOME.BULK`, a thousand at a time) and
/// hands the decided ones their outcome; an unfinished job is marked
/// waited for, and its outcome comes on the channel. A job found absent
/// may have been decided and trimmed after `subscription` opened, its
/// outcome published on it: the messages published before the reads are
/// handed out first, and only the waits still open then answer `Removed`.
/// A job whose read is refused hands its waits [`Delivery::ReadYourself`];
/// a connection that fails is the error.
async fn read(
    connector: &Connector,
    waits: &QueueWaits,
    subscription: &mut ShardSubscription,
    ids: Vec<String>,
) -> Result<()> {
    let mut absent = Vec::new();
    for chunk in ids.chunks(READ_CHUNK) {
        for (id, read) in read_chunk(connector, &waits.keys, chunk).await? {
            match read {
                Ok(Reading::Decided(Decided::Removed)) => absent.push(id),
                Ok(Reading::Decided(decided)) => waits.deliver(&id, &decided),
                Ok(Reading::Unfinished(_)) => {}
                Err(err) if err.is_transient() => return Err(err),
                Err(_) => waits.hand(&id, &Delivery::ReadYourself),
            }
        }
    }
    if absent.is_empty() {
        return Ok(());
    }
    let published = subscription.messages_before_now().await;
    for bytes in published.map_err(redis::RedisError::from)? {
        if let Some((id, decided)) = message(&bytes) {
            waits.deliver_message(id, decided);
        }
    }
    for id in absent {
        waits.deliver(&id, &Decided::Removed);
    }
    Ok(())
}

/// `OUTCOME` of each id of `chunk`: one `OUTCOME.BULK` where the wire has
/// it, and pipelined single calls where it does not or where the bulk
/// call was refused (each id then gets its own answer).
async fn read_chunk(
    connector: &Connector,
    keys: &Keyspace,
    chunk: &[String],
) -> Result<Vec<(String, Result<Reading>)>> {
    // Ids were checked when their waits registered.
    let ids: Vec<JobId> = chunk
        .iter()
        .filter_map(|id| JobId::new(id.as_str()).ok())
        .collect();
    let names = || ids.iter().map(|id| id.as_str().to_string());
    if connector.has_bulk(Transition::Outcome) {
        let call = ids
            .iter()
            .fold(Call::new(Transition::Outcome, None).bulk(), |call, id| {
                call.arg(id.as_str())
            });
        match connector.call(keys, &call).await {
            Ok(reply) => {
                let replies = decode::array(Transition::Outcome, reply)?;
                if replies.len() != ids.len() {
                    return Err(Error::UnexpectedReply {
                        transition: Transition::Outcome,
                        detail: format!("{} replies to {} ids", replies.len(), ids.len()),
                    });
                }
                return Ok(names().zip(replies.into_iter().map(reading)).collect());
            }
            Err(err) if err.is_transient() => return Err(err),
            Err(_) => {}
        }
    }
    let calls: Vec<Call> = ids.iter().map(outcome_call).collect();
    let replies = connector.call_many(keys, &calls).await?;
    Ok(names()
        .zip(replies.into_iter().map(|reply| reading(reply?)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_message_reads_as_its_outcome() {
        assert_eq!(
            message(b"a1 completed {\"x\": 1}"),
            Some(("a1".into(), Decided::Completed(b"{\"x\": 1}".to_vec())))
        );
        assert_eq!(
            message(b"a1 completed "),
            Some(("a1".into(), Decided::Completed(Vec::new())))
        );
        assert_eq!(
            message(b"a1 dead 3 boom: it broke"),
            Some((
                "a1".into(),
                Decided::Dead {
                    error: "boom: it broke".into(),
                    failures: 3
                }
            ))
        );
        assert_eq!(
            message(b"a1 cancelled"),
            Some(("a1".into(), Decided::Cancelled))
        );
        assert_eq!(
            message(b"a1 removed"),
            Some(("a1".into(), Decided::Removed))
        );
    }

    #[test]
    fn a_message_this_client_does_not_know_is_left_alone() {
        for bytes in [
            &b"a1 promoted"[..],
            b"a1",
            b"a1 dead x err",
            b"a1 cancelled now",
        ] {
            assert_eq!(message(bytes), None, "{:?}", String::from_utf8_lossy(bytes));
        }
    }
}
