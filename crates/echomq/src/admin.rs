//! [`Admin`]: the verbs over a whole queue.

use crate::error::{Error, Result};
use crate::job::Counts;
use crate::jobs::IfActive;
use crate::queue::{Queue, server_ms};
use crate::transport::decode;
use crate::transport::dispatch::Call;
use echomq_protocol::{Keyspace, QueueKey, Transition};
use std::fmt;

/// Jobs one `DRAIN` or `OBLITERATE` call deletes at most: each call is one
/// short script run (a few ms), so the server keeps answering everyone else.
/// Public for tests only (hidden from the docs; `lib.rs`).
pub const DELETE_CHUNK: u64 = 250;

/// A key of a queue holding another type of value than the queue keeps
/// there (what a `WRONGTYPE` reply met): shown as `emq:{b}:pending holds a
/// string, expected a zset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrongType {
    /// The key's name.
    pub key: String,
    /// The type it holds, as `TYPE` names it.
    pub found: String,
    /// The type the queue keeps there.
    pub expected: &'static str,
}

impl fmt::Display for WrongType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let WrongType {
            key,
            found,
            expected,
        } = self;
        write!(f, "{key} holds a {found}, expected a {expected}")
    }
}

/// Which jobs [`Admin::drain`] deletes: always the pending ones, and the
/// scheduled and the blocked ones when asked. Running and finished jobs
/// are never drained.
///
/// ```
/// use echomq::DrainScope;
/// let everything_waiting = DrainScope::PENDING.and_scheduled().and_blocked();
/// assert_eq!(everything_waiting, DrainScope::WAITING);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DrainScope {
    scheduled: bool,
    blocked: bool,
}

impl DrainScope {
    /// Every pending job.
    pub const PENDING: DrainScope = DrainScope {
        scheduled: false,
        blocked: false,
    };
    /// Every pending and every scheduled job.
    pub const PENDING_AND_SCHEDULED: DrainScope = DrainScope::PENDING.and_scheduled();
    /// Every job that waits: pending, scheduled and blocked (waiting for
    /// its dependencies).
    pub const WAITING: DrainScope = DrainScope::PENDING.and_scheduled().and_blocked();

    /// The scheduled jobs too.
    pub const fn and_scheduled(self) -> DrainScope {
        DrainScope {
            scheduled: true,
            ..self
        }
    }

    /// The blocked jobs too (a drained blocked job is deleted undecided:
    /// its waiter hears `removed`).
    pub const fn and_blocked(self) -> DrainScope {
        DrainScope {
            blocked: true,
            ..self
        }
    }
}

/// Queue-wide verbs: `queue.admin()`.
#[derive(Debug)]
pub struct Admin<T> {
    pub(crate) queue: Queue<T>,
}

impl<T> Queue<T> {
    /// The queue-wide verbs of this queue.
    pub fn admin(&self) -> Admin<T> {
        Admin {
            queue: self.clone(),
        }
    }
}

impl<T> Admin<T> {
    /// Claims hand out nothing until [`Admin::resume`]; running jobs run on.
    pub async fn pause(&self) -> Result<()> {
        decode::ok(
            Transition::Pause,
            self.queue.call(Call::new(Transition::Pause, None)).await?,
        )
    }

    /// Claims hand out jobs again; idle workers wake at once.
    pub async fn resume(&self) -> Result<()> {
        decode::ok(
            Transition::Resume,
            self.queue.call(Call::new(Transition::Resume, None)).await?,
        )
    }

    /// Deletes every pending job (and every scheduled or blocked one, as
    /// `scope` says), in chunks of 250 jobs; running and finished jobs are
    /// left alone. Returns how many were deleted.
    pub async fn drain(&self, scope: DrainScope) -> Result<u64> {
        let mut total = 0;
        loop {
            let mut call = Call::new(Transition::Drain, None)
                .arg("COUNT")
                .int(DELETE_CHUNK);
            if scope.scheduled {
                call = call.arg("SCHEDULED");
            }
            if scope.blocked {
                call = call.arg("BLOCKED");
            }
            let deleted = decode::int(Transition::Drain, self.queue.call(call).await?)?;
            total += deleted;
            if deleted == 0 {
                // Drained jobs with dependents left their resolutions.
                if total > 0 {
                    self.queue.relay_quietly().await;
                }
                return Ok(total);
            }
        }
    }

    /// Deletes the whole queue — every job, log and key — in chunks of
    /// 250 jobs, so no single server command runs long. Refused
    /// with `NOTPAUSED` on a running queue, and with `BADSTATE active`
    /// while jobs are active under [`IfActive::Refuse`] ([`IfActive::Force`]
    /// tells their holders to stop). Also drops the queue from the registry.
    pub async fn obliterate(&self, active: IfActive) -> Result<()> {
        self.obliterate_with(active, |_| {}).await
    }

    /// [`Admin::obliterate`], reporting the job hashes left after each chunk.
    pub async fn obliterate_with(
        &self,
        active: IfActive,
        mut progress: impl FnMut(u64),
    ) -> Result<()> {
        loop {
            let mut call = Call::new(Transition::Obliterate, None)
                .arg("COUNT")
                .int(DELETE_CHUNK);
            if let Some(word) = active.word() {
                call = call.arg(word);
            }
            let left = decode::int(Transition::Obliterate, self.queue.call(call).await?)?;
            progress(left);
            if left == 0 {
                break;
            }
        }
        // The hand-off the queue's undecided jobs left outlives it.
        self.queue.relay_quietly().await;
        let registry = Keyspace::registry(self.queue.connector().prefix())?;
        let removed = self
            .queue
            .query::<()>(
                redis::cmd("SREM")
                    .arg(&registry)
                    .arg(self.queue.name().as_str()),
            )
            .await;
        match removed {
            // A user limited to its queue's keys never wrote the registry.
            Err(Error::NotPermitted { .. }) => {
                tracing::debug!(queue = %self.queue.name(), "the registry of queues is not this user's to write: left as it is");
                Ok(())
            }
            other => other,
        }
    }

    /// The size of each state set, and whether the queue is paused.
    pub async fn counts(&self) -> Result<Counts> {
        let reply = self.queue.call(Call::new(Transition::Counts, None)).await?;
        let map = decode::flat_map(Transition::Counts, reply)?;
        let get = |name: &str| -> Result<u64> {
            map.get(name)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| Error::UnexpectedReply {
                    transition: Transition::Counts,
                    detail: format!("no {name}"),
                })
        };
        Ok(Counts {
            scheduled: get("scheduled")?,
            pending: get("pending")?,
            active: get("active")?,
            completed: get("completed")?,
            dead: get("dead")?,
            cancelled: get("cancelled")?,
            blocked: get("blocked")?,
            paused: get("paused")? == 1,
        })
    }

    /// The queue's fixed keys that hold another type of value than the
    /// queue keeps there, in [`QueueKey::ALL`] order; empty when each is of
    /// its type or absent. One `TYPE` per key, in one round trip: what to
    /// look at when a call fails with `WRONGTYPE` ([`Error::is_wrong_type`]).
    ///
    /// [`Error::is_wrong_type`]: crate::Error::is_wrong_type
    pub async fn wrong_types(&self) -> Result<Vec<WrongType>> {
        let keys = self.queue.keys();
        let typed: Vec<(String, &'static str)> = QueueKey::ALL
            .iter()
            .filter_map(|key| Some((keys.key(*key), key.value_type()?)))
            .collect();
        let mut pipe = redis::pipe();
        for (key, _) in &typed {
            pipe.cmd("TYPE").arg(key);
        }
        let found: Vec<String> = self.queue.query_pipe(&pipe).await?;
        Ok(typed
            .into_iter()
            .zip(found)
            .filter(|((_, expected), found)| found != "none" && found != expected)
            .map(|((key, expected), found)| WrongType {
                key,
                found,
                expected,
            })
            .collect())
    }

    /// How many deduplication keys the queue holds now: the entries of
    /// `<base>:dedup_owner` less the throttle keys of `<base>:dedup` whose
    /// time is up by the server's clock (expired entries not yet removed do
    /// not count).
    pub async fn dedup_keys_held(&self) -> Result<u64> {
        let now = server_ms(self.queue.query(&redis::cmd("TIME")).await?);
        let keys = self.queue.keys();
        let (owned, expired): (u64, u64) = self
            .queue
            .query_pipe(
                redis::pipe()
                    .cmd("HLEN")
                    .arg(keys.dedup_owner())
                    .cmd("ZCOUNT")
                    .arg(keys.dedup())
                    .arg("-inf")
                    .arg(now),
            )
            .await?;
        Ok(owned.saturating_sub(expired))
    }

    /// Age of the oldest pending job, in ms by the server's clock (`None`
    /// when nothing is pending). Pending order is the claim order —
    /// `fifo` (priority 0 on a queue without groups) from its head, then
    /// `pending` by priority then arrival — so this reads its head: `fifo`'s
    /// first job, else `pending`'s, both read in one round trip with the
    /// clock.
    pub async fn oldest_pending_age(&self) -> Result<Option<u64>> {
        let keys = self.queue.keys();
        let (time, first, scored): ((u64, u64), Option<String>, Vec<String>) = self
            .queue
            .query_pipe(
                redis::pipe()
                    .cmd("TIME")
                    .cmd("LINDEX")
                    .arg(keys.fifo())
                    .arg(0)
                    .cmd("ZRANGE")
                    .arg(keys.pending())
                    .arg(0)
                    .arg(0),
            )
            .await?;
        let head = first.or_else(|| scored.into_iter().next());
        let Some(id) = head else {
            return Ok(None);
        };
        let now = server_ms(time);
        let record = self
            .queue
            .jobs()
            .get(&echomq_protocol::JobId::new(id)?)
            .await?;
        Ok(record
            .map(|record| now.saturating_sub(record.run_at.or(record.created_at).unwrap_or(now))))
    }
}
