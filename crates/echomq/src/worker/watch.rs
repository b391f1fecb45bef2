//! The worker's watch over its running jobs: the cancel channel, the
//! heartbeat (one pipelined round trip of `EXTEND`s for every running job at
//! a third of the lease, and one more each time the channel's subscription
//! opens, for what was published while it was not), and the stalled sweep
//! (one worker per interval across all hosts, by a `SET NX PX` guard).

use super::control::{CancelReason, Registry};
use super::failure::Failure;
use super::ride::Rides;
use crate::acl;
use crate::error::Error;
use crate::queue::{Queue, decode_extended, extend_call};
use crate::transport::shard_subscription::ShardSubscription;
use echomq_protocol::Refusal;
use echomq_protocol::backoff::Backoff;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The fields of the queue's meta hash the worker follows
/// (docs/protocol.md, "Keyspace"): the two that say it has a cap on active
/// jobs, `concurrency`, the queue's (absent or 0: none), and `group_flow`,
/// 1 once a group had a cap or a limit; then `flows`, 1 once a flow's job
/// was added.
const MARKS: [&str; 3] = ["concurrency", "group_flow", "flows"];

/// The longest pause between two attempts to subscribe.
const MAX_RETRY_PAUSE: Duration = Duration::from_secs(5);

/// Fires the token of every running job whose id is published on the
/// queue's cancel channel; reconnects when the subscription drops. Each
/// time a subscription opens it asks the heartbeat for a checkpoint at once
/// (`catch_up`): a cancellation published before it opened, while a job
/// ran, reaches that job's handler then, not a third of a lease later.
pub(crate) async fn listen_for_cancels<T>(
    queue: Queue<T>,
    registry: Registry,
    catch_up: Arc<Notify>,
    stop: CancellationToken,
) {
    let channel = queue.keys().cancel_channel();
    // A channel the server's ACL refuses is said once: the worker runs on,
    // its cancellations carried by the lease checkpoints, and the
    // subscription is tried again now and then in case the ACL changes.
    let mut refused_said = false;
    let tls = queue.connector().subscription_tls();
    let mut pause = Duration::from_millis(50);
    loop {
        let open = async {
            // Asked each time: behind Sentinel the primary may have moved.
            let servers = queue.connector().node_addresses().await;
            ShardSubscription::open(&servers, &channel, tls.clone()).await
        };
        let opened = tokio::select! {
            opened = open => opened,
            _ = stop.cancelled() => return,
        };
        let mut subscription = match opened {
            Ok(subscription) => subscription,
            Err(err) => {
                let acl = acl::Target {
                    channel: Some(&channel),
                    ..queue.acl()
                };
                match acl.subscription_refusal(&err) {
                    Some(refused) => {
                        if !refused_said {
                            tracing::warn!(queue = %queue.name(), error = %refused,
                                "no cancel subscription: cancellations reach running handlers at their lease checkpoints only");
                            refused_said = true;
                        }
                        pause = MAX_RETRY_PAUSE;
                    }
                    None => {
                        tracing::warn!(queue = %queue.name(), error = %err, "cancel subscription failed; retrying")
                    }
                }
                tokio::select! { _ = tokio::time::sleep(pause) => {}, _ = stop.cancelled() => return }
                pause = (pause * 2).min(MAX_RETRY_PAUSE);
                continue;
            }
        };
        pause = Duration::from_millis(50);
        catch_up.notify_one();
        loop {
            let next = tokio::select! {
                next = subscription.next_id() => next,
                _ = stop.cancelled() => return,
            };
            match next {
                Ok(id) => {
                    if let Some(control) = registry.get(&id) {
                        control.fire(CancelReason::Requested);
                    }
                }
                Err(err) => {
                    tracing::warn!(queue = %queue.name(), error = %err,
                        "cancel subscription dropped; lease checkpoints carry cancellations until it is back");
                    break;
                }
            }
        }
    }
}

/// Extends the lease of every running job every `lease / 3`, and at once
/// when `catch_up` is notified; a checkpoint that answers `NOTACTIVE` fires
/// the job's token with `LeaseLost`, one that carries the cancel flag fires
/// it with `Requested`.
pub(crate) async fn heartbeat<T>(
    queue: Queue<T>,
    registry: Registry,
    lease: Duration,
    rides: Arc<Rides<T>>,
    catch_up: Arc<Notify>,
    stop: CancellationToken,
) {
    let every = (lease / 3).max(Duration::from_millis(5));
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = catch_up.notified() => {}
            _ = stop.cancelled() => return,
        }
        let running = registry.all();
        if running.is_empty() {
            continue;
        }
        // An idle worker sends nothing; a busy one reads the marks too.
        watch_marks(&queue, &rides).await;
        let calls: Vec<_> = running
            .iter()
            .map(|job| extend_call(&job.id, job.token, lease))
            .collect();
        let replies = match queue.call_many(&calls).await {
            Ok(replies) => replies,
            Err(err) => {
                tracing::warn!(queue = %queue.name(), error = %err, "heartbeat failed; retrying at the next beat");
                continue;
            }
        };
        for (job, reply) in running.iter().zip(replies) {
            match reply.and_then(decode_extended) {
                Ok(extended) if extended.cancel_requested => job.fire(CancelReason::Requested),
                Ok(_) => {}
                Err(Error::Refused(refused)) if refused.reason == Refusal::NotActive => {
                    tracing::warn!(id = %job.id, "lease lost: the job was taken back; its handler is told to stop");
                    job.fire(CancelReason::LeaseLost);
                }
                Err(Error::Refused(refused)) if refused.reason == Refusal::TimeLimit => {
                    tracing::warn!(id = %job.id, "time limit reached; its handler is told to stop");
                    job.fire(CancelReason::TimeLimit);
                }
                Err(err) => {
                    tracing::warn!(id = %job.id, error = %err, "heartbeat of one job failed")
                }
            }
        }
    }
}

/// How many of the backoff's delays the sweep sends for the jobs it fails
/// at their time limit: after the 1st to this many failures, the last
/// repeating.
pub(crate) const SWEPT_DELAYS: u64 = 25;

/// Runs `STALLED.CHECK` every `interval`, but only where this worker wins
/// the interval's guard, so one sweep runs per interval across all hosts.
/// A job it fails at its time limit retries after `backoff`'s delay for
/// its failures, without jitter.
pub(crate) async fn sweep_stalled<T>(
    queue: Queue<T>,
    name: String,
    (interval, max_stalls): (Duration, u64),
    backoff: Arc<Backoff>,
    stop: CancellationToken,
    failure: Failure,
) {
    let retry_in: Vec<Duration> = (1..=SWEPT_DELAYS).map(|n| backoff.ceiling(n)).collect();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = stop.cancelled() => return,
        }
        match queue
            .sweep_guarded(&name, interval, max_stalls, &retry_in)
            .await
        {
            Ok(Some(swept)) => {
                if swept.recovered + swept.dead + swept.timed_out + swept.expired > 0 {
                    tracing::info!(queue = %queue.name(), recovered = swept.recovered, dead = swept.dead, timed_out = swept.timed_out, expired = swept.expired, "stalled sweep")
                }
                // On a queue that uses flows: the sweep's own decisions,
                // any resolution no relay delivered (a worker that died
                // between its decision and its relay), and the check-ups
                // due (an edge a lost write or a dead submit left).
                queue.sweep_flows().await;
            }
            Ok(None) => {}
            Err(err) => match failure.ends(err) {
                Ok(()) => return,
                Err(err) => {
                    tracing::warn!(queue = %queue.name(), error = %err, "stalled sweep failed")
                }
            },
        }
    }
}

/// Reads whether the queue, or a group of it, may have a cap on active
/// jobs (its meta's `concurrency` and `group_flow`) and whether it has
/// flows (`flows`), and tells the rides; a read that fails changes
/// nothing.
pub(crate) async fn watch_marks<T>(queue: &Queue<T>, rides: &Rides<T>) {
    let read: crate::Result<Vec<Option<u64>>> = queue
        .query(redis::cmd("HMGET").arg(queue.keys().meta()).arg(&MARKS[..]))
        .await;
    match read {
        Ok(marks) => {
            rides.set_capped(marks.iter().take(2).any(|cap| cap.unwrap_or(0) > 0));
            rides.set_flows(marks.get(2).copied().flatten() == Some(1));
        }
        Err(err) => {
            tracing::debug!(queue = %queue.name(), error = %err, "could not read the queue's cap")
        }
    }
}
