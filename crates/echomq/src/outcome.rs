//! Waiting for a job's outcome (docs/protocol.md, "Outcome waits";
//! docs/outcomes.md): [`Queue::outcome`] for one job, [`Queue::outcomes`]
//! for many, and [`Jobs::outcome_now`], the `OUTCOME` call under them.
//!
//! A wait never polls: it registers with the connector's listener of the
//! queue's outcome channel (`transport/outcome_channel.rs`), waits for the
//! subscription to be open, and sends `OUTCOME`, which answers a job
//! already decided and marks one that is not, whose outcome the server
//! then publishes.

use crate::error::{Error, Result};
use crate::jobs::Jobs;
use crate::queue::Queue;
use crate::transport::outcome_channel::{
    Decided, Delivery, QueueWaits, Reading, Ticket, outcome_call, reading,
};
use echomq_protocol::{JobId, JobState};
use futures_util::stream::{FuturesUnordered, Stream};
use serde::de::DeserializeOwned;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The pause before `OUTCOME` goes again after the connection failed under
/// it; it doubles each time, up to [`MAX_RESEND_PAUSE`].
const FIRST_RESEND_PAUSE: Duration = Duration::from_millis(50);
/// The longest pause between two sends of one wait's `OUTCOME`.
const MAX_RESEND_PAUSE: Duration = Duration::from_secs(1);

/// How a job ended, as a wait returns it.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<R = serde_json::Value> {
    /// Completed, with its result decoded to `R` (`None` when it stored
    /// none).
    Completed {
        /// The handler's result.
        result: Option<R>,
    },
    /// Dead: out of attempts, dead-lettered by its handler, or stalled too
    /// often.
    Dead {
        /// The last error.
        error: String,
        /// The attempts it failed.
        attempts: u64,
    },
    /// Cancelled.
    Cancelled,
    /// The job does not exist (any more): removed, drained, obliterated,
    /// trimmed by retention before the wait began, or never enqueued.
    Removed,
}

impl<R: DeserializeOwned> Outcome<R> {
    fn from_decided(decided: Decided) -> Result<Self> {
        Ok(match decided {
            Decided::Completed(result) if result.is_empty() => Outcome::Completed { result: None },
            Decided::Completed(result) => Outcome::Completed {
                result: Some(serde_json::from_slice(&result).map_err(Error::JobResult)?),
            },
            Decided::Dead { error, failures } => Outcome::Dead {
                error,
                attempts: failures,
            },
            Decided::Cancelled => Outcome::Cancelled,
            Decided::Removed => Outcome::Removed,
        })
    }
}

/// A job's outcome as `OUTCOME` answered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutcomeNow {
    /// Completed: its stored result, raw (empty when it stored none).
    Completed {
        /// The result bytes (the Rust client writes JSON).
        result: Vec<u8>,
    },
    /// Dead: its last error and the failures it took.
    Dead {
        /// The last error's text.
        error: String,
        /// Its failures.
        failures: u64,
    },
    /// Cancelled.
    Cancelled,
    /// Not finished yet (scheduled, pending or active); the call marked it
    /// waited for, so its outcome will be published.
    Unfinished {
        /// The state it is in.
        state: JobState,
    },
    /// No such job: removed, drained, obliterated, trimmed by retention, or
    /// never enqueued.
    Absent,
}

impl From<Reading> for OutcomeNow {
    fn from(reading: Reading) -> Self {
        match reading {
            Reading::Unfinished(state) => OutcomeNow::Unfinished { state },
            Reading::Decided(Decided::Completed(result)) => OutcomeNow::Completed { result },
            Reading::Decided(Decided::Dead { error, failures }) => {
                OutcomeNow::Dead { error, failures }
            }
            Reading::Decided(Decided::Cancelled) => OutcomeNow::Cancelled,
            Reading::Decided(Decided::Removed) => OutcomeNow::Absent,
        }
    }
}

impl<T> Jobs<T> {
    /// Reads a job's outcome now: a finished job's outcome, writing nothing;
    /// an unfinished job (and its queue) is marked waited for. What
    /// [`Queue::outcome`] sends; hidden: a caller wants the wait.
    #[doc(hidden)]
    pub async fn outcome_now(&self, id: &JobId) -> Result<OutcomeNow> {
        Ok(reading(self.queue.call(outcome_call(id)).await?)?.into())
    }
}

impl<T> Queue<T> {
    /// Waits at most `timeout` for job `id` to be decided, and returns how
    /// it ended, its result decoded to `R`: at once for a job already
    /// decided, [`Outcome::Removed`] for one that does not exist.
    /// [`Error::Timeout`] when the time runs out first; the job runs on,
    /// and a later wait picks it up.
    ///
    /// The wait costs the server nothing while it lasts: every wait of a
    /// connector on one queue shares one subscription. It misses no
    /// outcome: not one decided before it began, nor one decided while the
    /// connection was down, whatever the events stream keeps.
    pub async fn outcome<R: DeserializeOwned>(
        &self,
        id: &JobId,
        timeout: Duration,
    ) -> Result<Outcome<R>> {
        let deadline = Instant::now() + timeout;
        let (waits, ticket) = self.connector().wait_for_outcome(self.keys(), id, false);
        let decided = self.wait(id, &waits, ticket, deadline, timeout).await?;
        Outcome::from_decided(decided)
    }

    /// Waits at most `timeout` for each of `ids`, and yields each one's
    /// outcome as it is decided (those already decided first), as
    /// [`Queue::outcome`] would return it; the ids still undecided at the
    /// end yield [`Error::Timeout`]. Collect the stream for all of them at
    /// the end.
    pub fn outcomes<R: DeserializeOwned>(
        &self,
        ids: impl IntoIterator<Item = JobId>,
        timeout: Duration,
    ) -> impl Stream<Item = (JobId, Result<Outcome<R>>)> + '_ {
        let deadline = Instant::now() + timeout;
        let waits: FuturesUnordered<_> = ids
            .into_iter()
            .map(|id| async move {
                let (waits, ticket) = self.connector().wait_for_outcome(self.keys(), &id, false);
                let decided = self.wait(&id, &waits, ticket, deadline, timeout).await;
                (id, decided.and_then(Outcome::from_decided))
            })
            .collect();
        waits
    }

    /// Waits at most `timeout` on `ticket`, a wait on `id` registered with
    /// `waits` (at the job's enqueue: [`crate::NewJob::awaited`]), as
    /// [`Queue::outcome`] would.
    pub(crate) async fn outcome_of_ticket<R: DeserializeOwned>(
        &self,
        id: &JobId,
        waits: &Arc<QueueWaits>,
        ticket: Ticket,
        timeout: Duration,
    ) -> Result<Outcome<R>> {
        let deadline = Instant::now() + timeout;
        let decided = self.wait(id, waits, ticket, deadline, timeout).await?;
        Outcome::from_decided(decided)
    }

    /// The wait of `ticket`, until `deadline`: the subscription open, then
    /// what the listener hands it (its read of the job, or the channel).
    async fn wait(
        &self,
        id: &JobId,
        waits: &Arc<QueueWaits>,
        ticket: Ticket,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<Decided> {
        let (mut key, mut outcome) = ticket.split();
        let mut waits = waits.clone();
        let waited = async {
            loop {
                waits.open(self.connector().user()).await?;
                match outcome.await {
                    Ok(Delivery::Decided(decided)) => return Ok(decided),
                    // The listener's read was refused: this wait's own
                    // OUTCOME gets its own answer or error. Boxed: its
                    // call's future nested in this one overflows the
                    // compiler's layout depth in release builds.
                    Ok(Delivery::ReadYourself) => match Box::pin(self.read_yourself(id)).await? {
                        Reading::Decided(decided) => return Ok(decided),
                        // Marked now, with the subscription open: its
                        // outcome comes on the channel.
                        Reading::Unfinished(_) => {
                            let (again, ticket) =
                                self.connector().wait_for_outcome(self.keys(), id, true);
                            (waits, (key, outcome)) = (again, ticket.split());
                        }
                    },
                    // A listener drops a ticket only after handing it.
                    Err(_) => return Err(Error::UnexpectedEvent("outcome listener ended".into())),
                }
            }
        };
        let decided = tokio::time::timeout_at(deadline, waited).await;
        if !matches!(decided, Ok(Ok(_))) {
            waits.forget_key(&key);
        }
        decided.unwrap_or_else(|_| {
            Err(Error::Timeout {
                job: id.clone(),
                waited: timeout,
            })
        })
    }

    /// `OUTCOME` of `id` sent by the wait itself, again while the
    /// connection fails under it (a restart, a cut): it only reads and
    /// marks.
    async fn read_yourself(&self, id: &JobId) -> Result<Reading> {
        let mut pause = FIRST_RESEND_PAUSE;
        loop {
            match self.call(outcome_call(id)).await {
                Err(err) if err.is_transient() => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(MAX_RESEND_PAUSE);
                }
                reply => return reading(reply?),
            }
        }
    }
}

/// `docs/outcomes.md`, whose example compiles as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/outcomes.md")]
pub struct OutcomesGuide;
