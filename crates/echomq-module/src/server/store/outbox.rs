//! Flows' outbox (docs/protocol.md, "Deciding a job that has dependents";
//! `scripts/include/outbox.lua`): the one place a command that decides or
//! deletes a job writes its resolution for the dependents not told yet,
//! and the flow keys that go with a deleted job. Nothing here runs on a
//! queue without the `flows` mark.

use super::{Settings, Store, number};
use crate::server::key::Kind;
use crate::server::store::Reply;
use echomq_protocol::QueueKey;
use echomq_protocol::arg::{FLOW_ERROR_MAX, FLOW_RESULT_MAX};
use echomq_protocol::keyspace::{DEPENDENTS_INFIX, DEPS_INFIX, RESOLUTION_INFIX};
use valkey_module::ValkeyError;

/// A resolution a decision must write (`outbox.due`): the dependents not
/// told yet, the job's ref (`-` when none) and flow (empty when none), and
/// its dependents hash as read before the command's first write.
pub(crate) struct Due {
    left: i64,
    reference: Vec<u8>,
    flow: Vec<u8>,
    fields: Vec<Reply>,
}

impl Due {
    /// The resolution's text (`outbox.text`): the outcome `word`, the
    /// ref, then `tail` when some.
    pub(crate) fn text(&self, word: &[u8], tail: Option<&[u8]>) -> Vec<u8> {
        let mut text = [word, b" ", &self.reference].concat();
        if let Some(tail) = tail {
            text.push(b' ');
            text.extend_from_slice(tail);
        }
        text
    }

    /// One dependent fewer to tell: COMPLETE told one of its own queue.
    pub(crate) fn tell_one(&mut self) {
        self.left -= 1;
    }

    /// The dependents hash as read before the command's first write,
    /// field and value by turns (`due.fields`), taken: a job completed
    /// twice in one batch takes its edges from this read both times, as
    /// the script does.
    pub(crate) fn take_fields(&mut self) -> Vec<Reply> {
        std::mem::take(&mut self.fields)
    }

    /// A resolution already written, `left` of its dependents still to
    /// tell and its dependents hash read as `fields`: FLOW.SETTLE goes on
    /// with it (its text is read whole, so the ref and flow are not
    /// needed).
    pub(crate) fn written(left: i64, fields: Vec<Reply>) -> Self {
        Self {
            left,
            reference: Vec::new(),
            flow: Vec::new(),
            fields,
        }
    }

    /// The dependents still to tell.
    pub(crate) fn left(&self) -> i64 {
        self.left
    }
}

/// What follows the ref in a `completed` text (`outbox.completed_tail`):
/// the result's size, then the result itself when at most
/// FLOW_RESULT_MAX bytes (empty otherwise).
pub(crate) fn completed_tail(result: &[u8]) -> Vec<u8> {
    let mut tail = result.len().to_string().into_bytes();
    tail.push(b' ');
    if result.len() as u64 <= FLOW_RESULT_MAX {
        tail.extend_from_slice(result);
    }
    tail
}

/// What follows the ref in a `dead` text (`outbox.dead_tail`): the
/// failures, then the first FLOW_ERROR_MAX bytes of the error.
pub(crate) fn dead_tail(failures: i64, message: &[u8]) -> Vec<u8> {
    let mut tail = failures.to_string().into_bytes();
    tail.push(b' ');
    tail.extend_from_slice(&message[..message.len().min(FLOW_ERROR_MAX as usize)]);
    tail
}

impl Store<'_> {
    /// `<base>:deps:<id>`.
    pub(crate) fn deps_key(&self, id: &[u8]) -> Vec<u8> {
        [self.base(), DEPS_INFIX.as_bytes(), id].concat()
    }

    /// `<base>:dependents:<id>`.
    pub(crate) fn dependents_key(&self, id: &[u8]) -> Vec<u8> {
        [self.base(), DEPENDENTS_INFIX.as_bytes(), id].concat()
    }

    /// `<base>:resolution:<id>`.
    pub(crate) fn resolution_key(&self, id: &[u8]) -> Vec<u8> {
        [self.base(), RESOLUTION_INFIX.as_bytes(), id].concat()
    }

    /// On a queue with the flows mark, the outbox's type, before a
    /// deciding command's first write (`outbox.open`).
    pub(crate) fn open_outbox(&self, conf: &Settings) -> Result<(), ValkeyError> {
        if conf.flows {
            self.expect_types(&[(QueueKey::Resolutions, Kind::Zset)])?;
        }
        Ok(())
    }

    /// Job `id`'s resolution with `left` of its dependents still to tell
    /// (`outbox.acknowledged`; FLOW.ACK, FLOW.SETTLE): `left` written (with
    /// FLOW.SETTLE's `cursor` when given), or at 0 the resolution and its
    /// member of `resolutions` deleted, and `dependents:<id>` with them
    /// when the job hash is gone or holds no `dependents` (a new job took
    /// the id).
    pub(crate) fn acknowledged(
        &self,
        id: &[u8],
        left: i64,
        cursor: Option<&[u8]>,
    ) -> Result<(), ValkeyError> {
        let resolution = self.resolution_key(id);
        if left > 0 {
            let left = left.to_string();
            return match cursor {
                Some(cursor) => {
                    self.hset(&resolution, &[b"left", left.as_bytes(), b"cursor", cursor])
                }
                None => self.hset(&resolution, &[b"left", left.as_bytes()]),
            };
        }
        self.del(&[&resolution]);
        self.zrem(self.key(QueueKey::Resolutions), &[id])?;
        let dependents = self.hget(&self.job_key(id), b"dependents")?;
        if number(dependents.as_deref()).is_none_or(|n| n < 1) {
            self.del(&[&self.dependents_key(id)]);
        }
        Ok(())
    }

    /// Whether `id` is in the outbox.
    pub(crate) fn in_outbox(&self, id: &[u8]) -> Result<bool, ValkeyError> {
        Ok(self
            .zscore(self.key(QueueKey::Resolutions), &self.text(id))?
            .is_some())
    }

    /// Whether `key` is absent or a hash: refused WRONGTYPE otherwise,
    /// unless `lenient` (after the command's first write), false then.
    fn hash_or_absent(&self, key: &[u8], lenient: bool) -> Result<bool, ValkeyError> {
        if lenient {
            return Ok(self.absent_or(key, Kind::Hash));
        }
        self.expect_type_of(key, Kind::Hash)?;
        Ok(true)
    }

    /// What deciding or deleting job `id`, whose `dependents` field read
    /// `dependents`, must write (`outbox.due`), read before the command's
    /// first write (with `lenient`, after it: a key of another type then
    /// writes nothing): none unless the queue has flows, the job has
    /// dependents not told yet and is not in `resolutions`.
    pub(crate) fn resolution_due(
        &self,
        flows: bool,
        id: &[u8],
        dependents: Option<&[u8]>,
        lenient: bool,
    ) -> Result<Option<Due>, ValkeyError> {
        if !flows || number(dependents).is_none_or(|n| n < 1) || self.in_outbox(id)? {
            return Ok(None);
        }
        let told = self.dependents_key(id);
        if !self.hash_or_absent(&told, lenient)?
            || !self.hash_or_absent(&self.resolution_key(id), lenient)?
        {
            return Ok(None);
        }
        let fields = self.hgetall(&told)?;
        let left = fields
            .chunks(2)
            .filter(|pair| matches!(pair, [_, Reply::Bytes(value)] if value == b"0"))
            .count() as i64;
        if left == 0 {
            return Ok(None);
        }
        let [reference, flow] = self.hmget_n(&self.job_key(id), [b"ref", b"flow"])?;
        Ok(Some(Due {
            left,
            reference: reference.unwrap_or_else(|| b"-".to_vec()),
            flow: flow.unwrap_or_default(),
            fields,
        }))
    }

    /// Writes the resolution `due` of job `id` (`outbox.write`): its text,
    /// the outcome `word`, the ref, then `tail` when some, into
    /// `resolution:<id>`, and the id into the outbox scored `now`. Whether
    /// it wrote (the caller answers `relay_<word>`): not without a due, or
    /// with none of its dependents left to tell (COMPLETE told its own
    /// queue's).
    pub(crate) fn write_resolution(
        &self,
        id: &[u8],
        due: Option<&Due>,
        word: &[u8],
        tail: Option<&[u8]>,
        now: u64,
    ) -> Result<bool, ValkeyError> {
        let Some(due) = due.filter(|due| due.left > 0) else {
            return Ok(false);
        };
        let text = due.text(word, tail);
        let left = due.left.to_string();
        self.hset(
            &self.resolution_key(id),
            &[b"text", &text, b"flow", &due.flow, b"left", left.as_bytes()],
        )?;
        self.zadd(self.key(QueueKey::Resolutions), &[(now as i64, id)])?;
        Ok(true)
    }

    /// The flow keys of jobs `ids` about to be deleted, on a queue with
    /// flows, after any resolution was written (`outbox.forget`): each
    /// one's `deps:<id>`, and its `dependents:<id>` unless it is in
    /// `resolutions`.
    pub(crate) fn forget_flow_keys(&self, flows: bool, ids: &[Vec<u8>]) -> Result<(), ValkeyError> {
        let doomed = self.flow_keys_of(flows, ids)?;
        let doomed: Vec<&[u8]> = doomed.iter().map(Vec::as_slice).collect();
        self.del(&doomed);
        Ok(())
    }

    /// The keys [`Store::forget_flow_keys`] deletes, for a caller that
    /// deletes them with others (retention's one `DEL`).
    pub(crate) fn flow_keys_of(
        &self,
        flows: bool,
        ids: &[Vec<u8>],
    ) -> Result<Vec<Vec<u8>>, ValkeyError> {
        let mut doomed = Vec::new();
        if !flows {
            return Ok(doomed);
        }
        doomed.reserve(ids.len() * 2);
        for id in ids {
            doomed.push(self.deps_key(id));
            if !self.in_outbox(id)? {
                doomed.push(self.dependents_key(id));
            }
        }
        Ok(doomed)
    }

    /// The resolution `removed` of each of `ids`, undecided jobs about to
    /// be deleted (DRAIN, OBLITERATE), then their flow keys
    /// (`outbox.removed`); a key of another type writes nothing.
    pub(crate) fn resolve_removed(
        &self,
        flows: bool,
        ids: &[Vec<u8>],
        now: u64,
    ) -> Result<(), ValkeyError> {
        if !flows {
            return Ok(());
        }
        for id in ids {
            if let Ok(dependents) = self.hget(&self.job_key(id), b"dependents") {
                let due = self.resolution_due(flows, id, dependents.as_deref(), true)?;
                self.write_resolution(id, due.as_ref(), b"removed", None, now)?;
            }
        }
        self.forget_flow_keys(flows, ids)
    }
}
