//! LIFO (docs/protocol.md, "Time limits, start-by deadlines, LIFO and
//! retention by age"): a LIFO job enters pending at the front of its
//! priority band, and the queue's `lifo` mark.

use super::Store;
use super::pending::lifo_score;
use crate::server::args::Opt;
use crate::server::store::fifo::by_fifo;
use echomq_protocol::QueueKey;
use valkey_module::ValkeyError;

/// `LIFO`, the flag ENQUEUE and SCHEDULE share: the job enters pending at
/// the front of its priority.
pub(crate) const LIFO: (&str, Opt) = ("LIFO", Opt::Flag);

impl Store<'_> {
    /// Marks the queue `lifo` once (`HSETNX meta lifo 1`): a job of it was
    /// enqueued with `LIFO`.
    pub(crate) fn mark_lifo(&self) -> Result<(), ValkeyError> {
        let meta = self.key(QueueKey::Meta);
        if self.hget(meta, b"lifo")?.is_none() {
            self.hset(meta, &[b"lifo", b"1"])?;
        }
        Ok(())
    }

    /// Whether job `id` is a LIFO job (its `lifo` is 1): read only on a
    /// queue with the `lifo` mark.
    pub(crate) fn is_lifo(&self, id: &[u8]) -> Result<bool, ValkeyError> {
        Ok(self.hget(&self.job_key(id), b"lifo")?.as_deref() == Some(b"1"))
    }

    /// Job `id` (a LIFO job) enters pending at the front of its priority
    /// band (`push_lifo`): at the head of `fifo` when [`by_fifo`], else
    /// scored [`lifo_score`] with a fresh `lifo_seq` (`HINCRBY meta
    /// lifo_seq 1`), and its group's lane.
    pub(crate) fn push_lifo(
        &self,
        groups_on: bool,
        id: &[u8],
        priority: i64,
        group: Option<&[u8]>,
        now: u64,
    ) -> Result<(), ValkeyError> {
        if by_fifo(groups_on, priority, group) {
            let fifo = self.key(QueueKey::Fifo);
            return self.write_changing(&[fifo], "LPUSH", &[fifo, id]);
        }
        let meta = self.key(QueueKey::Meta);
        let lifo_seq = match self.hget(meta, b"lifo_seq")? {
            None => 1,
            Some(value) => std::str::from_utf8(&value)
                .ok()
                .and_then(|text| text.parse::<i64>().ok())
                .and_then(|seq| seq.checked_add(1))
                .ok_or_else(|| crate::server::args::refuse("ERR hash value is not an integer"))?,
        };
        self.hset(meta, &[b"lifo_seq", lifo_seq.to_string().as_bytes()])?;
        self.enter_pending(groups_on, id, lifo_score(priority, lifo_seq), group, now)
    }
}
