//! The check-up's two commands once their arguments are checked
//! (docs/protocol.md, "The check-up"; `scripts/flow_link.lua` and
//! `scripts/flow_checkup.lua`): FLOW.LINK on a dependency's queue, and
//! FLOW.CHECKUP on a dependent's.

use super::outbox::{completed_tail, dead_tail};
use super::{Reply, Store, number};
use crate::server::args::refuse;
use crate::server::key::{Bound, Kind};
use crate::server::reply::bulk;
use echomq_protocol::QueueKey;
use echomq_protocol::arg::MAX_INT;
use valkey_module::{ValkeyError, ValkeyValue};

/// What FLOW.LINK answers: `[waiting]`, or `[decided, text]`.
pub(crate) enum Linked {
    Waiting,
    Decided(Vec<u8>),
}

impl Linked {
    /// The reply.
    pub(crate) fn reply(self) -> ValkeyValue {
        match self {
            Linked::Waiting => ValkeyValue::Array(vec![bulk("waiting")]),
            Linked::Decided(text) => ValkeyValue::Array(vec![bulk("decided"), bulk(text)]),
        }
    }
}

impl Store<'_> {
    /// FLOW.LINK of job `id` with the dependents' fields `fields`
    /// (`<queue> <id>`), at `now`.
    pub(crate) fn link(
        &self,
        id: &[u8],
        fields: &[Vec<u8>],
        now: u64,
    ) -> Result<Linked, ValkeyError> {
        let conf = self.settings()?;
        let (key, told) = (self.job_key(id), self.dependents_key(id));
        let resolution = self.resolution_key(id);
        self.expect_types(&[
            (QueueKey::Events, Kind::Stream),
            (QueueKey::Resolutions, Kind::Zset),
        ])?;
        self.expect_type_of(&key, Kind::Hash)?;
        self.expect_type_of(&told, Kind::Hash)?;
        self.expect_type_of(&resolution, Kind::Hash)?;
        let queued = self.in_outbox(id)?;
        let exists = self.exists(&key);
        if !exists && !queued {
            return Err(refuse("NOJOB"));
        }

        if !conf.flows {
            self.hset(self.key(QueueKey::Meta), &[b"flows", b"1"])?;
        }
        let (mut added, mut turned) = (0i64, 0i64);
        for field in fields {
            let value = self.hget(&told, field)?;
            if value.as_deref() == Some(b"0") {
                continue;
            }
            self.hset_data(&told, &[field, b"0"])?;
            turned += 1;
            if value.is_none() {
                added += 1;
                self.emit(
                    conf.events_max,
                    &[b"event", b"linked", b"id", id, b"dependent", field],
                )?;
            }
        }
        let [state, dependents, finished_at] = if exists {
            self.hmget_n(&key, [b"state", b"dependents", b"finished_at"])?
        } else {
            [None, None, None]
        };
        if added > 0 && exists {
            let raised = number(dependents.as_deref()).unwrap_or(0) + added;
            self.hset(&key, &[b"dependents", raised.to_string().as_bytes()])?;
        }

        if queued {
            if turned > 0 {
                let left = number(self.hget(&resolution, b"left")?.as_deref()).unwrap_or(0);
                let left = (left + turned).to_string();
                self.hset(&resolution, &[b"left", left.as_bytes()])?;
            }
            let text = self.hget(&resolution, b"text")?.unwrap_or_default();
            return Ok(Linked::Decided(text));
        }
        let state = state.unwrap_or_default();
        let word: &[u8] = match state.as_slice() {
            b"completed" | b"dead" | b"cancelled" => &state,
            _ => return Ok(Linked::Waiting),
        };
        let due = self.resolution_due(true, id, Some(b"1"), false)?;
        let [result, failures, error] = self.hmget_n(&key, [b"result", b"failures", b"error"])?;
        let tail = match word {
            b"completed" => Some(completed_tail(&result.unwrap_or_default())),
            b"dead" => Some(dead_tail(
                number(failures.as_deref()).unwrap_or(0),
                &error.unwrap_or_default(),
            )),
            _ => None,
        };
        let at = number(finished_at.as_deref()).map_or(now, |at| at as u64);
        self.write_resolution(id, due.as_ref(), word, tail.as_deref(), at)?;
        let text = self.hget(&resolution, b"text")?.unwrap_or_default();
        Ok(Linked::Decided(text))
    }

    /// FLOW.CHECKUP: the due blocked jobs with their `wait` edges, while
    /// the edges listed stay within `count` (the first job whatever its
    /// count), each one listed scored `now + again` (at most MAX_INT).
    pub(crate) fn checkup(
        &self,
        count: u64,
        again: u64,
        now: u64,
    ) -> Result<ValkeyValue, ValkeyError> {
        let blocked = self.key(QueueKey::Blocked);
        self.expect_type_of(blocked, Kind::Zset)?;
        let due = self.zrange(blocked, Bound::LOWEST, Bound::upto(now as f64), count)?;
        let score = now.saturating_add(again).min(MAX_INT) as i64;
        let (mut reply, mut scored, mut listed) = (Vec::new(), Vec::new(), 0u64);
        for id in &due {
            let deps = self.deps_key(id);
            self.expect_type_of(&deps, Kind::Hash)?;
            let mut edges = Vec::new();
            let fields = self.hgetall(&deps)?;
            for pair in fields.chunks(2) {
                let [Reply::Bytes(field), Reply::Bytes(value)] = pair else {
                    continue;
                };
                let space = field.iter().position(|b| *b == b' ');
                if let (b"wait", Some(space)) = (value.as_slice(), space) {
                    edges.push(bulk(&field[..space]));
                    edges.push(bulk(&field[space + 1..]));
                }
            }
            let n = edges.len() as u64 / 2;
            if !reply.is_empty() && listed + n > count {
                break;
            }
            listed += n;
            reply.push(ValkeyValue::Array(vec![
                bulk(id.as_slice()),
                ValkeyValue::Array(edges),
            ]));
            scored.push((score, id.as_slice()));
        }
        self.zadd(blocked, &scored)?;
        Ok(ValkeyValue::Array(reply))
    }
}
