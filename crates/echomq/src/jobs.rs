//! [`Jobs`]: the verbs that reach into one job's row, from any process.

use crate::error::{Error, Result};
use crate::job::{JobRecord, RunAt};
use crate::queue::{Queue, requeue_call, server_ms};
use crate::transport::decode;
use crate::transport::dispatch::Call;
use echomq_protocol::{JobId, JobState, Transition};
use std::time::SystemTime;

/// What `CANCEL` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The job was waiting (pending, scheduled or blocked) and is now
    /// cancelled.
    Cancelled,
    /// The job is running: its holder was asked to stop (the cancel flag is
    /// set and its id published on the queue's cancel channel).
    Requested,
}

/// What a deleting verb does with an active job ([`Jobs::remove`],
/// [`Admin::obliterate`](crate::Admin::obliterate)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfActive {
    /// Refuse with `BADSTATE active`, deleting nothing.
    Refuse,
    /// Delete anyway (`FORCE`): the job's lease is voided and its holder
    /// told to stop (its id published on the queue's cancel channel).
    Force,
}

impl IfActive {
    /// The protocol's option word: `FORCE`, or none.
    pub(crate) fn word(self) -> Option<&'static str> {
        match self {
            IfActive::Refuse => None,
            IfActive::Force => Some("FORCE"),
        }
    }
}

/// Per-job verbs of a queue: `queue.jobs()`.
#[derive(Debug)]
pub struct Jobs<T> {
    pub(crate) queue: Queue<T>,
}

impl<T> Queue<T> {
    /// The per-job verbs of this queue.
    pub fn jobs(&self) -> Jobs<T> {
        Jobs {
            queue: self.clone(),
        }
    }
}

impl<T> Jobs<T> {
    /// Reads one job; `None` when absent.
    pub async fn get(&self, id: &JobId) -> Result<Option<JobRecord>> {
        let call = Call::new(Transition::Get, Some(id)).arg(id.as_str());
        let reply = self.queue.call(call).await?;
        if reply == redis::Value::Nil {
            return Ok(None);
        }
        JobRecord::from_fields(decode::flat_map(Transition::Get, reply)?).map(Some)
    }

    /// Cancels a job: a waiting one at once, a running one by asking its
    /// holder to stop (it lands in `cancelled` when its handler gives up; a
    /// handler that ignores the request and completes is allowed to).
    /// `BADSTATE` for a finished job, `NOJOB` for none.
    pub async fn cancel(&self, id: &JobId) -> Result<CancelOutcome> {
        let call = Call::new(Transition::Cancel, Some(id)).arg(id.as_str());
        match decode::text(Transition::Cancel, self.queue.call(call).await?)?.as_str() {
            "cancelled" => Ok(CancelOutcome::Cancelled),
            "relay_cancelled" => {
                // The job had dependents: its resolution waits in the
                // outbox for the relay (see `outbox.rs`).
                self.queue.note_relay(id);
                self.queue.relay_noted().await;
                Ok(CancelOutcome::Cancelled)
            }
            "requested" => Ok(CancelOutcome::Requested),
            other => Err(Error::UnexpectedReply {
                transition: Transition::Cancel,
                detail: other.to_string(),
            }),
        }
    }

    /// Sends a scheduled or active job back to pending now. An active job's
    /// lease is voided: its holder's token stops fencing and the holder is
    /// told to stop. `BADSTATE` otherwise, `NOJOB` for none.
    pub async fn requeue(&self, id: &JobId) -> Result<()> {
        decode::ok(
            Transition::Requeue,
            self.queue.call(requeue_call(id)).await?,
        )
    }

    /// Moves a scheduled job's run-at (the caller's clock). `BADSTATE` for
    /// a job in any other state, `NOJOB` for none.
    pub async fn reschedule(&self, id: &JobId, at: SystemTime) -> Result<()> {
        let RunAt::At(ms) = RunAt::at(at) else {
            unreachable!("RunAt::at is absolute")
        };
        let call = Call::new(Transition::Reschedule, Some(id))
            .arg(id.as_str())
            .int(ms);
        decode::ok(Transition::Reschedule, self.queue.call(call).await?)
    }

    /// Deletes a job and its logs: `true` when it existed. An active job is
    /// refused (`BADSTATE active`) with [`IfActive::Refuse`]; with
    /// [`IfActive::Force`] its lease is voided and its holder told to stop.
    pub async fn remove(&self, id: &JobId, active: IfActive) -> Result<bool> {
        let mut call = Call::new(Transition::Remove, Some(id)).arg(id.as_str());
        if let Some(word) = active.word() {
            call = call.arg(word);
        }
        let removed = decode::int(Transition::Remove, self.queue.call(call).await?)? == 1;
        if removed {
            // An undecided job with dependents left its resolution.
            self.queue.relay_quietly().await;
        }
        Ok(removed)
    }

    /// Sends a completed, dead or cancelled job back to pending, its
    /// failures, stalls, error, result and progress cleared. `BADSTATE`
    /// otherwise, `NOJOB` for none.
    pub async fn reprocess(&self, id: &JobId) -> Result<()> {
        let call = Call::new(Transition::Reprocess, Some(id)).arg(id.as_str());
        decode::ok(Transition::Reprocess, self.queue.call(call).await?)
    }

    /// Replaces a job's payload (raw bytes; this client writes JSON).
    /// `NOJOB` for none.
    pub async fn update_raw(&self, id: &JobId, payload: Vec<u8>) -> Result<()> {
        let call = Call::new(Transition::Update, Some(id))
            .arg(id.as_str())
            .arg(payload);
        decode::ok(Transition::Update, self.queue.call(call).await?)
    }

    /// Writes the holder's progress (JSON), fenced by its token:
    /// `NOTACTIVE` unless the caller holds the job. Handlers use
    /// [`crate::JobContext::progress`].
    pub async fn progress(
        &self,
        id: &JobId,
        token: u64,
        value: &impl serde::Serialize,
    ) -> Result<()> {
        let call = Call::new(Transition::Progress, Some(id))
            .arg(id.as_str())
            .int(token)
            .arg(serde_json::to_vec(value)?);
        decode::ok(Transition::Progress, self.queue.call(call).await?)
    }

    /// Appends a line to a job's log, keeping the newest [`LOG_KEEP`];
    /// returns the log's length. `NOJOB` for none.
    pub async fn log(&self, id: &JobId, line: &str) -> Result<u64> {
        let call = Call::new(Transition::Log, Some(id))
            .arg(id.as_str())
            .arg(line)
            .arg("KEEP")
            .int(LOG_KEEP);
        decode::int(Transition::Log, self.queue.call(call).await?)
    }

    /// The newest `count` lines of a job's log, oldest first; bytes that
    /// are not UTF-8 written `\xNN`, as in a [`JobRecord`].
    pub async fn logs(&self, id: &JobId, count: u64) -> Result<Vec<String>> {
        if count == 0 {
            return Ok(Vec::new());
        }
        let lines: Vec<Vec<u8>> = self
            .queue
            .query(
                redis::cmd("LRANGE")
                    .arg(self.queue.keys().logs(id))
                    .arg(-(count.min(i64::MAX as u64) as i64))
                    .arg(-1),
            )
            .await?;
        Ok(lines.into_iter().map(decode::escaped).collect())
    }

    /// One page of the jobs in `state`: `offset` jobs skipped, at most
    /// `limit` returned (a `limit` of 0 reads as 1), in the state's order
    /// (pending: claim order, `fifo` from its head then `pending` by
    /// score; scheduled: run-at; active: lease deadline; finished: oldest
    /// first). Also returns how many jobs the state holds.
    pub async fn list(
        &self,
        state: JobState,
        offset: u64,
        limit: u64,
    ) -> Result<(Vec<JobRecord>, u64)> {
        let (first, last) = span(offset, limit.max(1));
        let (ids, total) = if state == JobState::Pending {
            self.pending_page(first, last).await?
        } else {
            let set = self.queue.keys().state_set(state);
            self.queue
                .query_pipe(
                    redis::pipe()
                        .cmd("ZRANGE")
                        .arg(&set)
                        .arg(first)
                        .arg(last)
                        .cmd("ZCARD")
                        .arg(&set),
                )
                .await?
        };
        let ids = ids
            .into_iter()
            .map(JobId::new)
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let records = self.records(&ids).await?;
        Ok((records, total))
    }

    /// The ids of the pending jobs at claim-order positions `first` to
    /// `last` (inclusive), and how many jobs are pending: one pipeline
    /// reads `fifo`'s part of the page with its length and `pending`'s
    /// size (`LRANGE`, `LLEN`, `ZCARD`), then, when the list did not fill
    /// the page and `pending` has members, one `ZRANGE` reads the rest —
    /// from `pending`'s head when the page began in `fifo`, else from the
    /// page's position less `fifo`'s length. Jobs that move between the
    /// two round trips may shift the page by as many places.
    async fn pending_page(&self, first: i64, last: i64) -> Result<(Vec<String>, u64)> {
        let keys = self.queue.keys();
        let (mut ids, listed, scored): (Vec<String>, u64, u64) = self
            .queue
            .query_pipe(
                redis::pipe()
                    .cmd("LRANGE")
                    .arg(keys.fifo())
                    .arg(first)
                    .arg(last)
                    .cmd("LLEN")
                    .arg(keys.fifo())
                    .cmd("ZCARD")
                    .arg(keys.pending()),
            )
            .await?;
        let missing = ((last - first + 1) as u64).saturating_sub(ids.len() as u64);
        if missing > 0 && scored > 0 {
            let from = if ids.is_empty() {
                (first as u64).saturating_sub(listed)
            } else {
                0
            };
            let (from, to) = span(from, missing);
            let rest: Vec<String> = self
                .queue
                .query(redis::cmd("ZRANGE").arg(keys.pending()).arg(from).arg(to))
                .await?;
            ids.extend(rest);
        }
        Ok((ids, listed + scored))
    }
}

/// The inclusive index range of `count` (≥ 1) entries from `offset`, as
/// the range arguments of `ZRANGE` and `LRANGE` (signed; clamped there).
fn span(offset: u64, count: u64) -> (i64, i64) {
    let index = |n: u64| n.min(i64::MAX as u64) as i64;
    (
        index(offset),
        index(offset.saturating_add(count.saturating_sub(1))),
    )
}

impl<T> Jobs<T> {
    /// The rows of `ids`, in order, in one pipeline of `GET`s; a job gone
    /// since its id was read is left out.
    pub(crate) async fn records(&self, ids: &[JobId]) -> Result<Vec<JobRecord>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let calls: Vec<Call> = ids
            .iter()
            .map(|id| Call::new(Transition::Get, Some(id)).arg(id.as_str()))
            .collect();
        let mut records = Vec::with_capacity(calls.len());
        for reply in self.queue.call_many(&calls).await? {
            let reply = reply?;
            if reply != redis::Value::Nil {
                records.push(JobRecord::from_fields(decode::flat_map(
                    Transition::Get,
                    reply,
                )?)?);
            }
        }
        Ok(records)
    }
}

/// Who holds a deduplication key, and until when (`Jobs::dedup_hold`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DedupHold {
    /// The job holding the key.
    pub owner: JobId,
    /// Until when it holds (ms, server clock); `None` until its job
    /// releases it (a simple or debounce key).
    pub until: Option<u64>,
}

impl<T> Jobs<T> {
    /// The job holding deduplication key `key`, `None` when the key is not
    /// held (never taken, released, or a throttle key whose time is up).
    /// A key that breaks the rule is [`Error::BadArgument`].
    pub async fn dedup_owner(&self, key: &str) -> Result<Option<JobId>> {
        let call = dedup_call(Transition::DedupOwner, key)?;
        match self.queue.call(call).await? {
            redis::Value::Nil => Ok(None),
            reply => Ok(Some(JobId::new(decode::text(
                Transition::DedupOwner,
                reply,
            )?)?)),
        }
    }

    /// Frees deduplication key `key` whatever its mode, so the next enqueue
    /// with it creates a job: `true` when it was held, `false` when not.
    pub async fn release_dedup(&self, key: &str) -> Result<bool> {
        let call = dedup_call(Transition::DedupRelease, key)?;
        let released = decode::int(Transition::DedupRelease, self.queue.call(call).await?)?;
        Ok(released == 1)
    }

    /// The holder of `key` and until when it holds, read in one round trip
    /// with the server's clock (a throttle key's score in `<base>:dedup`);
    /// `None` when the key is not held.
    pub async fn dedup_hold(&self, key: &str) -> Result<Option<DedupHold>> {
        echomq_protocol::dedup::check_key(key).map_err(|reason| Error::BadArgument {
            name: "dedup",
            reason,
        })?;
        let keys = self.queue.keys();
        let (time, score, owner): ((u64, u64), Option<f64>, Option<String>) = self
            .queue
            .query_pipe(
                redis::pipe()
                    .cmd("TIME")
                    .cmd("ZSCORE")
                    .arg(keys.dedup())
                    .arg(key)
                    .cmd("HGET")
                    .arg(keys.dedup_owner())
                    .arg(key),
            )
            .await?;
        let now = server_ms(time);
        match (owner, score) {
            (Some(_), Some(score)) if score <= now as f64 => Ok(None),
            (Some(owner), score) => Ok(Some(DedupHold {
                owner: JobId::new(owner)?,
                until: score.map(|score| score as u64),
            })),
            (None, _) => Ok(None),
        }
    }
}

/// DEDUP.OWNER or DEDUP.RELEASE of `key`, the key checked first.
fn dedup_call(transition: Transition, key: &str) -> Result<Call> {
    echomq_protocol::dedup::check_key(key).map_err(|reason| Error::BadArgument {
        name: "dedup",
        reason,
    })?;
    Ok(Call::new(transition, None).arg(key))
}

impl<T: serde::Serialize> Jobs<T> {
    /// Replaces a job's payload. `NOJOB` for none.
    pub async fn update(&self, id: &JobId, payload: &T) -> Result<()> {
        self.update_raw(id, serde_json::to_vec(payload)?).await
    }
}

/// Log lines kept per job (the newest).
pub const LOG_KEEP: u64 = echomq_protocol::arg::DEFAULT_LOG_KEEP;
