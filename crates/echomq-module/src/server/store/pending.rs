//! Moves into the pending set shared by several families: the pending
//! score, the worker's wake-up signal, promotion of due scheduled jobs
//! (`due_ids`, `promote`) and the check before a move back to pending
//! (`pending_again`).

use super::{Store, number, wrongtype};
use crate::server::args::{bad_state, job_state, refuse};
use crate::server::key::{Bound, Kind, Str};
use crate::server::store::fifo::by_fifo;
use echomq_protocol::arg::{LIFO_HALF, pending_score};
use echomq_protocol::{JobState, QueueKey};
use valkey_module::ValkeyError;

/// The pending score of a job that is not LIFO: priority·2^44 + 2^43 +
/// (seq mod 2^43).
pub(crate) fn score(priority: i64, seq: i64) -> i64 {
    let seq = seq.rem_euclid(LIFO_HALF as i64);
    match u8::try_from(priority) {
        Ok(priority) => pending_score(priority, seq as u64) as i64,
        Err(_) => priority * (1 << 44) + LIFO_HALF as i64 + seq,
    }
}

/// The pending score of a LIFO job: priority·2^44 + 2^43 − 1 − (lifo_seq
/// mod 2^43).
pub(crate) fn lifo_score(priority: i64, lifo_seq: i64) -> i64 {
    let lifo_seq = lifo_seq.rem_euclid(LIFO_HALF as i64);
    match u8::try_from(priority) {
        Ok(priority) => echomq_protocol::arg::lifo_score(priority, lifo_seq as u64) as i64,
        Err(_) => priority * (1 << 44) + LIFO_HALF as i64 - 1 - lifo_seq,
    }
}

impl Store<'_> {
    /// Wakes an idle worker: a marker on the signal set, scored by when work
    /// is due (`signal`).
    pub(crate) fn signal(&self, due_ms: u64) -> Result<(), ValkeyError> {
        let signal = self.key(QueueKey::Signal);
        let wake = Str::name(b"wake");
        self.with(signal, true, |h| {
            h.zset_add(&[(due_ms as f64, &wake)], true)?;
            Ok(())
        })
        .map_err(wrongtype)
    }

    /// Deletes the wake-up marker when it is due by `now`: the work it was
    /// set for is claimed (the end of CLAIM on a queue with flows).
    pub(crate) fn unsignal_due(&self, now: u64) -> Result<(), ValkeyError> {
        let signal = self.key(QueueKey::Signal);
        let wake = Str::name(b"wake");
        if self
            .zscore(signal, &wake)?
            .is_some_and(|at| at <= now as f64)
        {
            self.zrem(signal, &[b"wake"])?;
        }
        Ok(())
    }

    /// The due scheduled jobs (score <= now), oldest first, at most `limit`
    /// (`due_ids`).
    pub(crate) fn due_ids(&self, now: u64, limit: u64) -> Result<Vec<Vec<u8>>, ValkeyError> {
        let schedule = self.key(QueueKey::Schedule);
        self.zrange(schedule, Bound::LOWEST, Bound::upto(now as f64), limit)
    }

    /// Moves `due` (from [`Store::due_ids`], with each one's priority and
    /// group read before the command's first write) to pending
    /// (`promote`), in order: a job [`by_fifo`] to the tail of `fifo`, the
    /// others with seqs taken in one INCRBY for the batch, the i-th of
    /// them taking seq first + i as one INCR per job would. On a queue with
    /// groups each job enters pending (and its lane) in turn, as the
    /// script's loop does; a LIFO job (on a queue with the `lifo` mark)
    /// enters at the front of its band ([`Store::push_lifo`]). Returns how
    /// many moved.
    pub(crate) fn promote(
        &self,
        conf: (i64, bool, bool),
        due: &[Vec<u8>],
        jobs: &[(i64, Option<Vec<u8>>)],
        now: u64,
    ) -> Result<usize, ValkeyError> {
        let (events_max, groups_on, lifo_on) = conf;
        if due.is_empty() {
            return Ok(0);
        }
        let queued = |(priority, group): &(i64, Option<Vec<u8>>)| {
            by_fifo(groups_on, *priority, group.as_deref())
        };
        // On a queue with the `lifo` mark, which jobs are LIFO: they take
        // no seq (push_lifo).
        let lifo = due
            .iter()
            .map(|id| Ok(lifo_on && self.is_lifo(id)?))
            .collect::<Result<Vec<bool>, ValkeyError>>()?;
        let sequenced = jobs
            .iter()
            .zip(&lifo)
            .filter(|(job, lifo)| !(**lifo || queued(job)))
            .count();
        let mut seq = self.take_seqs(sequenced)?;
        let (mut scored, mut fifo) = (Vec::with_capacity(due.len()), Vec::new());
        for ((id, job), lifo) in due.iter().zip(jobs).zip(lifo) {
            let (priority, group) = job;
            if lifo {
                self.push_lifo(groups_on, id, *priority, group.as_deref(), now)?;
            } else if queued(job) {
                fifo.push(id.as_slice());
            } else {
                seq += 1;
                let score = score(*priority, seq);
                if groups_on {
                    self.enter_pending(true, id, score, group.as_deref(), now)?;
                } else {
                    scored.push((score, id.as_slice()));
                }
            }
            self.hset(&self.job_key(id), &[b"state", b"pending"])?;
            self.emit(events_max, &[b"event", b"promoted", b"id", id])?;
        }
        self.push_fifo(&fifo)?;
        self.zadd(self.key(QueueKey::Pending), &scored)?;
        let due_ids: Vec<&[u8]> = due.iter().map(Vec::as_slice).collect();
        self.zrem(self.key(QueueKey::Schedule), &due_ids)?;
        Ok(due.len())
    }

    /// The first half of a move back to pending (REQUEUE, REPROCESS): the
    /// job's state must be one of `allowed` (`NOJOB` when absent,
    /// `BADSTATE` otherwise), then the types of what the move writes are
    /// checked (on a queue with groups, the group keys and the job's
    /// group's). Returns the job key, the state it leaves, its priority
    /// and its group.
    #[allow(clippy::type_complexity)]
    pub(crate) fn pending_again(
        &self,
        (groups_on, timed): (bool, bool),
        id: &[u8],
        allowed: &[JobState],
    ) -> Result<(Vec<u8>, JobState, i64, Option<Vec<u8>>), ValkeyError> {
        let key = self.job_key(id);
        let [state, priority, group] = self.hmget_n(&key, [b"state", b"priority", b"group"])?;
        let Some(state) = state else {
            return Err(refuse("NOJOB"));
        };
        let Some(from) = job_state(&state).filter(|found| allowed.contains(found)) else {
            return Err(bad_state(&state));
        };
        self.expect_types(&[
            (QueueKey::Seq, Kind::String),
            (QueueKey::Pending, Kind::Zset),
            (QueueKey::Events, Kind::Stream),
            (QueueKey::Signal, Kind::Zset),
        ])?;
        self.expect_deadlines_type(timed)?;
        let group = group.filter(|_| groups_on);
        self.read_group(groups_on, true, group.as_deref())?;
        Ok((key, from, number(priority.as_deref()).unwrap_or(0), group))
    }
}
