//! How the claim loop waits before it claims: where it stands
//! ([`Claiming`]), for work when idle, for a rate window or a pause, for
//! room under a full cap, and for free slots.

use super::crew::Crew;
use super::writer::Progress;
use crate::error::Result;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

/// When an idle spell's earliest scheduled run-at falls due.
#[derive(Default)]
pub(super) enum IdleDue {
    /// Not read yet this spell.
    #[default]
    Unread,
    /// Being read, by a task of its own: the read outlives a round that
    /// ends before its answer (a ride's claim answered first, on a queue
    /// with flows), and the next round awaits the same read. A spell
    /// reads the schedule once, not once a ride. A spell that ends first,
    /// or a worker that stops, aborts it.
    Reading(AbortOnDropHandle<Result<(u64, Option<u64>)>>),
    /// Read: when it falls due, `None` when nothing is scheduled.
    Read(Option<Instant>),
}

/// Where the claim loop stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Claiming {
    /// Claiming: for free slots, and by rides with the completions.
    Now,
    /// The last claim found nothing: waiting for work (on a queue with
    /// flows, while claims ride with completions).
    Idle,
    /// Waiting until then: a rate window reopens, a hold ends, or a
    /// failed claim's pause.
    After(tokio::time::Instant),
    /// The cap on active jobs is full: rides go on (the completions free
    /// room first), the loop waits for room.
    CapFull,
}

impl Claiming {
    /// Whether claims ride with completions; `while_idle` too when idle
    /// (a queue with flows: a completion may unblock the next jobs).
    pub(super) fn rides(self, while_idle: bool) -> bool {
        matches!(self, Claiming::Now | Claiming::CapFull) || (while_idle && self == Claiming::Idle)
    }

    /// Whether the loop waits before it claims for free slots.
    pub(super) fn waits(self) -> bool {
        self != Claiming::Now
    }

    /// Whether the worker waits on the queue's signal set.
    pub(super) fn idle(self) -> bool {
        matches!(self, Claiming::Idle | Claiming::CapFull)
    }
}

impl<T: 'static> Crew<T> {
    /// Waits until the worker may claim again: idle, for a wake-up or
    /// the earliest scheduled run-at; after a rate window or an error,
    /// for its end; under a full cap, for its own next write or another
    /// worker's wake-up.
    pub(super) async fn until_ready(&self, state: &Claiming, idle_due: &mut IdleDue) {
        match state {
            Claiming::Now => {}
            Claiming::Idle => self.wait_for_work(idle_due).await,
            Claiming::After(deadline) => tokio::time::sleep_until(*deadline).await,
            // A job leaving `active` makes room. This worker's own next
            // write does (its completions carry a claim, or the loop claims
            // right after it), and so does another worker's, which signals
            // the queue.
            Claiming::CapFull => {
                tokio::select! {
                    _ = self.progress.written() => {}
                    _ = self.wakeups.wake.notified() => {}
                }
            }
        }
    }

    /// Idle: wait for a wake-up marker, the earliest scheduled run-at
    /// (timed locally from the server's clock), or stop. The run-at is
    /// read once an idle spell (`idle_due`, which the claim loop clears
    /// when it leaves idle): a job scheduled meanwhile sets the marker,
    /// which ends the spell.
    async fn wait_for_work(&self, idle_due: &mut IdleDue) {
        let due_at = loop {
            match idle_due {
                IdleDue::Read(due_at) => break *due_at,
                IdleDue::Unread => {
                    let queue = self.queue.clone();
                    *idle_due =
                        IdleDue::Reading(AbortOnDropHandle::new(tokio::spawn(async move {
                            queue.next_due().await
                        })));
                }
                IdleDue::Reading(read) => {
                    let failed = |error: &dyn std::fmt::Display| {
                        tracing::warn!(queue = %self.queue.name(), %error, "reading the schedule failed");
                        // Read again once this wait is over (it ends the
                        // spell).
                        Some(Instant::now() + Duration::from_millis(100))
                    };
                    let due_at = match read.await {
                        // One ms past the run-at: CLAIM promotes scores <=
                        // its own now, in whole ms, so waking on the dot
                        // could find the job not yet due.
                        Ok(Ok((now, due))) => due.map(|due| {
                            Instant::now() + Duration::from_millis(due.saturating_sub(now) + 1)
                        }),
                        Ok(Err(err)) => match self.failure.ends(err) {
                            Ok(()) => return,
                            Err(err) => failed(&err),
                        },
                        Err(err) => failed(&err),
                    };
                    *idle_due = IdleDue::Read(due_at);
                }
            }
        };
        let due = async {
            match due_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = self.wakeups.wake.notified() => {}
            _ = due => {}
            _ = self.stop.cancelled() => {}
        }
    }
}

/// Waits for at least one free slot and takes every free one; `None` once
/// `stop` is cancelled.
pub(super) async fn free_slots(
    slots: &Arc<Semaphore>,
    stop: &CancellationToken,
) -> Option<Vec<OwnedSemaphorePermit>> {
    // A stop wins over a slot that frees at the same moment: a worker
    // told to stop claims nothing more.
    let first = tokio::select! {
        biased;
        _ = stop.cancelled() => return None,
        permit = slots.clone().acquire_owned() => permit.expect("semaphore is never closed"),
    };
    let mut permits = vec![first];
    while let Ok(permit) = slots.clone().try_acquire_owned() {
        permits.push(permit);
    }
    Some(permits)
}

/// While the queue's cap on active jobs binds, this worker's finished jobs
/// still count as active until their outcomes are on the server, and a
/// claim that reaches the server before them is refused for the room they
/// take (and then waits for a wake-up). So a capped worker sends its claim
/// only once the outcomes of its free slots are on the connection: the
/// server runs them first, and the claim gets the room they free, in the
/// same round trip. False once `stop` is cancelled.
///
/// At a durability level above memory the outcomes go out on connections
/// of their own (`WaitLinks` in `connector.rs`), so the claim can reach
/// the server first: it is then refused for the room, and waits for the
/// writer's next notice (`Progress::written`) as any refused claim does.
pub(super) async fn after_own_outcomes(progress: &Progress, stop: &CancellationToken) -> bool {
    tokio::select! {
        biased;
        _ = stop.cancelled() => false,
        _ = progress.all_sent() => true,
    }
}
