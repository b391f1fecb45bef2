//! The fifo (`docs/protocol.md`, "The fifo"): on a queue without groups the
//! pending jobs of priority 0 wait in the list `<base>:fifo`, the others in
//! the sorted set `pending`; together they are the pending set, in claim
//! order `fifo`'s head first. What every command that moves jobs in or out
//! of pending, or counts them, shares: the twins of `by_fifo`
//! (`scripts/include/promote.lua`), `pending_count` (`pending.lua`), the
//! fifo halves of `leave_pending` and `mark_groups` (`groups.lua`) and the
//! claim's head of pending (`claim.lua`).
//! (`Store::expect_types` checks `fifo` with `pending`.)

use crate::server::key::Bound;
use crate::server::store::{Store, score};
use echomq_protocol::QueueKey;
use valkey_module::ValkeyError;

/// Whether a job of `priority` and `group` enters pending by `fifo`
/// (`by_fifo`): on a queue without groups, a job of priority 0 (a grouped
/// job is on a queue with groups).
pub(crate) fn by_fifo(groups_on: bool, priority: i64, group: Option<&[u8]>) -> bool {
    !groups_on && group.is_none() && priority == 0
}

impl Store<'_> {
    /// How many jobs are pending: both keys (`pending_count`, `ZCARD` +
    /// `LLEN`).
    pub(crate) fn pending_count(&self) -> Result<i64, ValkeyError> {
        Ok(self.zcard(self.key(QueueKey::Pending))? + self.llen(self.key(QueueKey::Fifo))?)
    }

    /// Takes the seqs of `n` jobs entering `pending` in one `INCRBY` (none
    /// when `n` is 0: a batch all of whose jobs enter `fifo` takes no seq).
    /// Returns the counter before, so the i-th of them (from 1) takes it
    /// plus i.
    pub(crate) fn take_seqs(&self, n: usize) -> Result<i64, ValkeyError> {
        if n == 0 {
            return Ok(0);
        }
        let n = n as i64;
        Ok(self.incr_by(self.key(QueueKey::Seq), n)? - n)
    }

    /// Jobs entering pending by `fifo`, in order, at its tail (`RPUSH`).
    pub(crate) fn push_fifo(&self, ids: &[&[u8]]) -> Result<(), ValkeyError> {
        self.rpush(self.key(QueueKey::Fifo), ids)
    }

    /// The first `take` pending jobs in claim order, and how many of them
    /// are `fifo`'s: its first `take`, then, when it has fewer, the lowest
    /// of `pending` for the rest (what a claim on a queue without groups
    /// and DRAIN take).
    pub(crate) fn pending_head(&self, take: u64) -> Result<(Vec<Vec<u8>>, usize), ValkeyError> {
        let mut head = self.lrange(self.key(QueueKey::Fifo), take)?;
        let from_fifo = head.len();
        let rest = take.saturating_sub(from_fifo as u64);
        if rest > 0 {
            let pending = self.key(QueueKey::Pending);
            head.extend(self.zrange(pending, Bound::LOWEST, Bound::HIGHEST, rest)?);
        }
        Ok((head, from_fifo))
    }

    /// Takes a head [`Store::pending_head`] read out of the pending set:
    /// `LPOP fifo` its first `from_fifo`, then the rest out of `pending`
    /// (`ZPOPMIN`, as one `ZREM` of the ids read).
    pub(crate) fn pop_pending_head(
        &self,
        head: &[Vec<u8>],
        from_fifo: usize,
    ) -> Result<(), ValkeyError> {
        self.lpop(self.key(QueueKey::Fifo), from_fifo)?;
        let rest: Vec<&[u8]> = head[from_fifo..].iter().map(Vec::as_slice).collect();
        self.zrem(self.key(QueueKey::Pending), &rest)?;
        Ok(())
    }

    /// Job `id` leaves the pending set other than by a claim: out of
    /// `pending` (`ZREM`), and when it was not there, out of `fifo` (`LREM
    /// … 1`).
    pub(crate) fn remove_pending(&self, id: &[u8]) -> Result<(), ValkeyError> {
        if self.zrem(self.key(QueueKey::Pending), &[id])? == 0 {
            self.lrem_first(self.key(QueueKey::Fifo), id)?;
        }
        Ok(())
    }

    /// The first grouped job's move (`mark_groups`): a queue with groups
    /// keeps no fifo, so its jobs join priority 0's band of `pending`, from
    /// its head, the i-th (from 1) scored seq_before + i (one `INCRBY` for
    /// them all), and `fifo` goes.
    pub(crate) fn fifo_into_pending(&self) -> Result<(), ValkeyError> {
        let fifo = self.key(QueueKey::Fifo);
        let ids = self.lrange(fifo, u64::MAX)?;
        if ids.is_empty() {
            return Ok(());
        }
        let first = self.take_seqs(ids.len())?;
        let scored: Vec<(i64, &[u8])> = ids
            .iter()
            .zip(1..)
            .map(|(id, i)| (score(0, first + i), id.as_slice()))
            .collect();
        self.zadd(self.key(QueueKey::Pending), &scored)?;
        self.del(&[fifo]);
        Ok(())
    }
}
