//! Repeating jobs: definitions in the queue's repeat hash, and the
//! scheduler that keeps the next occurrence of each one scheduled.
//!
//! A definition is a [`Repeat`] (every N, or cron in a time zone, with an
//! optional start, end and number of times) plus a payload, stored under a key in
//! `<base>:repeat`. The [`RepeatScheduler`] — run by every [`crate::Worker`]
//! and runnable alone — keeps each definition's next occurrence on the
//! schedule set with `SCHEDULE` under the id `repeat:<key>:<run_at_ms>`.
//! The id is a function of the definition and the instant, so any number of
//! schedulers on any hosts enqueue each occurrence once: the second
//! `SCHEDULE` of an id finds it taken and changes nothing.
//!
//! Occurrences are computed on the host clock (the cadence is the host's
//! business); a scheduler that was not running when an occurrence passed
//! does not catch it up, as cron would not.

use crate::error::{Error, Result};
use crate::job::{NewJob, RunAt};
use crate::queue::Queue;
use crate::transport::decode;
use crate::transport::dispatch::Call;
use echomq_protocol::cadence::{Cadence, Schedule};
use echomq_protocol::name::{MAX_REPEAT_KEY, is_repeat_key};
use echomq_protocol::{JobId, Transition};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

/// When a repeating job fires.
///
/// ```
/// use echomq::Repeat;
/// use std::time::Duration;
/// let every = Repeat::every(Duration::from_secs(60)).times(10);
/// let cron = Repeat::cron("0 */5 * * * *").unwrap().tz("Europe/Berlin").unwrap();
/// # let _ = (every, cron);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeat {
    schedule: Schedule,
}

impl Repeat {
    /// Every `interval`, counted from now (or from [`Repeat::start`]).
    pub fn every(interval: Duration) -> Self {
        let cadence = Cadence::Every {
            interval_ms: (interval.as_millis() as u64).max(1),
            anchor_ms: unix_ms(SystemTime::now()),
        };
        Self {
            schedule: Schedule::new(cadence),
        }
    }

    /// A cron expression (5 fields, or 6 with seconds first), in UTC until
    /// [`Repeat::tz`] names a zone.
    pub fn cron(expression: &str) -> Result<Self> {
        let cadence = Cadence::cron(expression, "UTC").map_err(bad_repeat)?;
        Ok(Self {
            schedule: Schedule::new(cadence),
        })
    }

    /// The IANA time zone of a cron cadence (`Europe/Berlin`); refused for
    /// an `every` cadence.
    pub fn tz(mut self, timezone: &str) -> Result<Self> {
        let Cadence::Cron { expression, .. } = &self.schedule.cadence else {
            return Err(Error::BadArgument {
                name: "tz",
                reason: "a time zone applies to a cron cadence, not to every(..)".into(),
            });
        };
        self.schedule.cadence = Cadence::cron(expression, timezone).map_err(bad_repeat)?;
        Ok(self)
    }

    /// No occurrence before `start` (an `every` cadence counts from it).
    pub fn start(mut self, start: SystemTime) -> Self {
        let start = unix_ms(start);
        if let Cadence::Every { anchor_ms, .. } = &mut self.schedule.cadence {
            *anchor_ms = start;
        }
        self.schedule.start_ms = Some(start);
        self
    }

    /// No occurrence after `end`.
    pub fn end(mut self, end: SystemTime) -> Self {
        self.schedule.end_ms = Some(unix_ms(end));
        self
    }

    /// At most `times` occurrences in all.
    pub fn times(mut self, times: u64) -> Self {
        self.schedule.limit = Some(times);
        self
    }

    /// The schedule this builds.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }
}

fn bad_repeat(err: echomq_protocol::cadence::CadenceError) -> Error {
    Error::BadArgument {
        name: "repeat",
        reason: err.to_string(),
    }
}

pub(crate) fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
}

/// A stored repeat definition.
#[derive(Debug, Clone, PartialEq)]
pub struct RepeatDefinition {
    /// Its key in the repeat hash.
    pub key: String,
    /// When it fires.
    pub schedule: Schedule,
    /// The payload of every occurrence (JSON).
    pub payload: serde_json::Value,
    /// Priority of every occurrence.
    pub priority: u8,
    /// Attempts of every occurrence.
    pub attempts: u64,
    /// When the definition was stored (unix ms): occurrences are counted
    /// for [`Repeat::times`] from here, or from the start.
    pub created_ms: u64,
}

/// The JSON stored in the repeat hash.
#[derive(Serialize, Deserialize)]
struct Stored {
    schedule: String,
    payload: serde_json::Value,
    priority: u8,
    attempts: u64,
    created_ms: u64,
}

impl RepeatDefinition {
    fn encode(&self) -> Result<String> {
        Ok(serde_json::to_string(&Stored {
            schedule: self.schedule.encode(),
            payload: self.payload.clone(),
            priority: self.priority,
            attempts: self.attempts,
            created_ms: self.created_ms,
        })?)
    }

    fn decode(key: String, text: &str) -> Result<Self> {
        let stored: Stored = serde_json::from_str(text)?;
        Ok(Self {
            key,
            schedule: Schedule::decode(&stored.schedule).map_err(bad_repeat)?,
            payload: stored.payload,
            priority: stored.priority,
            attempts: stored.attempts,
            created_ms: stored.created_ms,
        })
    }

    /// The id of the occurrence at `run_at_ms`: `repeat:<key>:<run_at_ms>`.
    pub fn occurrence_id(&self, run_at_ms: u64) -> Result<JobId> {
        Ok(JobId::new(format!("repeat:{}:{run_at_ms}", self.key))?)
    }

    /// The first occurrence strictly after `after_ms`, honouring start,
    /// end and times (occurrences are counted from the start, or from when
    /// the definition was stored).
    pub fn next_after(&self, after_ms: u64) -> Option<u64> {
        let next = self.schedule.next_after(after_ms, 0)?;
        match self.schedule.limit {
            Some(limit) if self.occurrences_before(next, limit) >= limit => None,
            _ => Some(next),
        }
    }

    /// Occurrences are those strictly after this instant: the start minus
    /// one (the start itself may fire), or the moment the definition was
    /// stored (an `every` cadence first fires one interval later).
    pub fn origin(&self) -> u64 {
        self.schedule
            .start_ms
            .map_or(self.created_ms, |start| start.saturating_sub(1))
    }

    /// The definition's first occurrence.
    pub fn first(&self) -> Option<u64> {
        self.next_after(self.origin())
    }

    /// How many occurrences fall after the origin and before `at`, counting
    /// no further than `cap`.
    fn occurrences_before(&self, at: u64, cap: u64) -> u64 {
        let Some(first) = self.schedule.next_after(self.origin(), 0) else {
            return 0;
        };
        if let Cadence::Every { interval_ms, .. } = self.schedule.cadence {
            // Grid points in [first, at): arithmetic, however many there are.
            return at.saturating_sub(first).div_ceil(interval_ms).min(cap);
        }
        let mut count = 0;
        let mut cursor = self.origin();
        while count < cap {
            match self.schedule.next_after(cursor, 0) {
                Some(next) if next < at => {
                    count += 1;
                    cursor = next;
                }
                _ => break,
            }
        }
        count
    }
}

fn check_key(key: &str) -> Result<()> {
    JobId::new(format!("repeat:{key}:0"))?;
    if !is_repeat_key(key.as_bytes()) {
        return Err(Error::BadArgument {
            name: "repeat key",
            reason: format!(
                "{key:?}: a repeat key is a job-id-like name of 1–{MAX_REPEAT_KEY} bytes without ':'"
            ),
        });
    }
    Ok(())
}

/// What [`Queue::repeat`] stored, and the definition it replaced.
#[derive(Debug, Clone, PartialEq)]
pub struct RepeatAdded {
    /// The definition now stored under the key.
    pub definition: RepeatDefinition,
    /// The definition the key held before (its cadence, payload, …), whose
    /// scheduled occurrence was removed; `None` for a new key.
    pub replaced: Option<RepeatDefinition>,
}

impl<T: Serialize> Queue<T> {
    /// Stores (or replaces) the repeat definition `key`: `payload` enqueued
    /// on `repeat`'s cadence. Its first occurrence is scheduled at once;
    /// a [`RepeatScheduler`] (every worker runs one) keeps the next one
    /// scheduled.
    ///
    /// One step on the server (`REPEAT.ADD`, docs/protocol.md): storing
    /// the definition, deleting the key's old scheduled occurrence and
    /// scheduling the new first one happen at once, so no crash and no
    /// racing call leaves two scheduled occurrences, or one of a
    /// definition the key no longer holds. The old definition comes back
    /// in [`RepeatAdded::replaced`]. An old occurrence already pending (it
    /// was due) or running is left alone, as [`Queue::unrepeat`] leaves it.
    /// A first occurrence already past runs once, at once; the passed ones
    /// after it are not caught up.
    pub async fn repeat(&self, key: &str, repeat: Repeat, payload: &T) -> Result<RepeatAdded> {
        self.repeat_with(key, repeat, NewJob::new(payload)).await
    }

    /// [`Queue::repeat`] with priority and attempts taken from `job`.
    pub async fn repeat_with(
        &self,
        key: &str,
        repeat: Repeat,
        job: NewJob<&T>,
    ) -> Result<RepeatAdded> {
        check_key(key)?;
        let definition = RepeatDefinition {
            key: key.to_string(),
            schedule: repeat.schedule,
            payload: serde_json::to_value(job.payload)?,
            priority: job.priority,
            attempts: job.attempts,
            created_ms: unix_ms(SystemTime::now()),
        };
        let mut call = Call::new(Transition::RepeatAdd, None)
            .arg(key)
            .arg(definition.encode()?)
            .arg(serde_json::to_vec(&definition.payload)?);
        if let Some(first) = definition.first() {
            call = call.arg("FIRST").int(first);
        }
        let call = call
            .arg("PRIORITY")
            .int(u64::from(definition.priority))
            .arg("ATTEMPTS")
            .int(definition.attempts);
        let reply = decode::array(Transition::RepeatAdd, self.call(call).await?)?;
        let replaced = match reply.into_iter().next() {
            Some(redis::Value::Nil) => None,
            Some(value) => {
                let text = decode::text(Transition::RepeatAdd, value)?;
                Some(RepeatDefinition::decode(key.to_string(), &text)?)
            }
            None => {
                return Err(decode::unexpected(
                    Transition::RepeatAdd,
                    &redis::Value::Nil,
                ));
            }
        };
        Ok(RepeatAdded {
            definition,
            replaced,
        })
    }
}

impl<T> Queue<T> {
    /// Every repeat definition of the queue, by key.
    pub async fn repeats(&self) -> Result<Vec<RepeatDefinition>> {
        let stored: HashMap<String, String> = self
            .query(redis::cmd("HGETALL").arg(self.keys().repeat()))
            .await?;
        let mut definitions = stored
            .into_iter()
            .map(|(key, text)| RepeatDefinition::decode(key, &text))
            .collect::<Result<Vec<_>>>()?;
        definitions.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(definitions)
    }

    /// Removes the repeat definition `key` and its scheduled occurrences;
    /// `false` when there was none. Occurrences already pending or running
    /// are left alone.
    pub async fn unrepeat(&self, key: &str) -> Result<bool> {
        check_key(key)?;
        let removed: u64 = self
            .query(redis::cmd("HDEL").arg(self.keys().repeat()).arg(key))
            .await?;
        self.remove_scheduled_occurrences(key).await?;
        Ok(removed == 1)
    }

    /// Removes every occurrence of the repeat `key` on the schedule set.
    async fn remove_scheduled_occurrences(&self, key: &str) -> Result<()> {
        let prefix = format!("repeat:{key}:");
        let mut cursor: u64 = 0;
        loop {
            let (next, batch): (u64, Vec<String>) = self
                .query(
                    redis::cmd("ZSCAN")
                        .arg(self.keys().schedule())
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(format!("{prefix}*"))
                        .arg("COUNT")
                        .arg(1000),
                )
                .await?;
            // MATCH is a glob: a key holding `*` or `?` matches others' ids.
            let ours = batch.iter().step_by(2).filter(|member| {
                member
                    .strip_prefix(&prefix)
                    .is_some_and(|at| at.bytes().all(|b| b.is_ascii_digit()))
            });
            for member in ours {
                self.jobs()
                    .remove(&JobId::new(member.clone())?, crate::IfActive::Refuse)
                    .await?;
            }
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }
}

/// Schedules every occurrence of `definition` after `from_ms` up to and
/// including the first one in the future; returns that one (None when the
/// definition has no more occurrences).
async fn schedule_next(
    queue: &Queue<serde_json::Value>,
    definition: &RepeatDefinition,
    from_ms: u64,
) -> Result<Option<u64>> {
    let now = unix_ms(SystemTime::now());
    let mut cursor = from_ms;
    // Bounded: a scheduler that fell far behind skips to the present.
    for _ in 0..100 {
        let Some(next) = definition.next_after(cursor) else {
            return Ok(None);
        };
        let mut job = NewJob::new(definition.payload.clone())
            .priority(definition.priority)
            .attempts(definition.attempts);
        job.id = Some(definition.occurrence_id(next)?);
        job.run_at = Some(RunAt::At(next));
        job.repeat = Some(definition.key.clone());
        queue.enqueue(job).await?;
        if next > now {
            return Ok(Some(next));
        }
        cursor = next;
    }
    Ok(definition.next_after(now))
}

/// Keeps the next occurrence of every repeat definition of a queue on the
/// schedule set. Every [`crate::Worker`] runs one; run one alone with
/// [`RepeatScheduler::start`].
pub struct RepeatScheduler {
    queue: Queue<serde_json::Value>,
    refresh: Duration,
    nudge: std::sync::Arc<tokio::sync::Notify>,
}

impl RepeatScheduler {
    /// A scheduler for `queue`'s definitions.
    pub fn new<T>(queue: &Queue<T>) -> Self {
        Self {
            queue: queue.typed(),
            refresh: Duration::from_secs(5),
            nudge: Default::default(),
        }
    }

    /// A handle that makes the scheduler look again now (a worker nudges it
    /// when it claims an occurrence, so the next one is scheduled at once).
    pub(crate) fn nudger(&self) -> std::sync::Arc<tokio::sync::Notify> {
        self.nudge.clone()
    }

    /// How often definitions are re-read (default 5 s): how soon a
    /// definition stored elsewhere is noticed. A known definition's next
    /// occurrence is scheduled when the previous one falls due, whatever
    /// this is.
    pub fn refresh(mut self, refresh: Duration) -> Self {
        self.refresh = refresh.max(Duration::from_millis(10));
        self
    }

    /// Runs until `stop` is cancelled, or until the server's ACL refuses
    /// its user the queue ([`Error::NotPermitted`], logged), which no retry
    /// mends.
    pub async fn run(self, stop: CancellationToken) {
        let queue = self.queue.name().clone();
        if let Some(err) = self.serve(stop).await {
            tracing::error!(%queue, error = %err, "the repeat scheduler stops: the server's ACL refuses it the queue");
        }
    }

    /// [`RepeatScheduler::run`], returning the refusal that stopped it.
    pub(crate) async fn serve(self, stop: CancellationToken) -> Option<Error> {
        let mut scheduled: HashMap<String, u64> = HashMap::new();
        while !stop.is_cancelled() {
            let mut wake = self.refresh;
            match self.tick(&mut scheduled).await {
                Ok(Some(next)) => {
                    let until =
                        Duration::from_millis(next.saturating_sub(unix_ms(SystemTime::now())));
                    wake = wake.min(until);
                }
                Ok(None) => {}
                Err(err @ Error::NotPermitted { .. }) => return Some(err),
                Err(err) => {
                    tracing::warn!(queue = %self.queue.name(), error = %err, "repeat scheduler tick failed")
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(wake) => {}
                _ = self.nudge.notified() => {}
                _ = stop.cancelled() => {}
            }
        }
        None
    }

    /// Starts the scheduler on the current runtime; cancel the token to stop it.
    pub fn start(self) -> CancellationToken {
        let stop = CancellationToken::new();
        tokio::spawn(self.run(stop.clone()));
        stop
    }

    /// One pass over the definitions: schedules what is missing; returns
    /// the earliest future occurrence scheduled.
    async fn tick(&self, scheduled: &mut HashMap<String, u64>) -> Result<Option<u64>> {
        let definitions = self.queue.repeats().await?;
        scheduled.retain(|key, _| definitions.iter().any(|d| d.key == *key));
        let now = unix_ms(SystemTime::now());
        let mut earliest: Option<u64> = None;
        for definition in &definitions {
            let from = match scheduled.get(&definition.key) {
                Some(&last) if last > now => {
                    earliest = Some(earliest.map_or(last, |e| e.min(last)));
                    continue;
                }
                Some(&last) => last,
                None => now,
            };
            if let Some(next) = schedule_next(&self.queue, definition, from).await? {
                scheduled.insert(definition.key.clone(), next);
                earliest = Some(earliest.map_or(next, |e| e.min(next)));
            }
        }
        Ok(earliest)
    }
}
