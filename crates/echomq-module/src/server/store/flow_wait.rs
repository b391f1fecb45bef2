//! FLOW.WAIT once its arguments are checked (docs/protocol.md, "Spawning
//! and waiting"), the twin of `scripts/flow_wait.lua`: the job in hand's
//! new edges added `wait`, and with `deps_left` above 0 the job leaves
//! active as DELAY does, into `blocked`.

use crate::server::clock::now_ms;
use crate::server::key::{Digits, Kind};
use crate::server::store::{Store, number};
use echomq_protocol::QueueKey;
use echomq_protocol::arg::{FLOW_CHECKUP_MS, FLOW_EDGES_MAX};
use valkey_module::ValkeyError;

/// What FLOW.WAIT answers.
pub(crate) enum Waited {
    /// The job left active for `blocked`.
    Blocked,
    /// Every named edge was already resolved: nothing changed.
    Ready,
}

impl Waited {
    /// The reply's word.
    pub(crate) fn word(&self) -> &'static [u8] {
        match self {
            Waited::Blocked => b"blocked",
            Waited::Ready => b"ready",
        }
    }
}

impl Store<'_> {
    /// The job `id` held by `token` waits for the jobs whose fields
    /// (`<queue> <id>`, each once) are `named`: the fence, every key's
    /// type, the job's edge count and its group read before the first
    /// write; `BADARG edges` past `FLOW_EDGES_MAX` dependencies.
    pub(crate) fn wait_for(
        &self,
        id: &[u8],
        token: u64,
        named: &[Vec<u8>],
    ) -> Result<Waited, ValkeyError> {
        let conf = self.settings()?;
        let key = self.fenced(id, token)?;
        let deps = self.deps_key(id);
        self.expect_type_of(&deps, Kind::Hash)?;
        self.expect_types(&[
            (QueueKey::Active, Kind::Zset),
            (QueueKey::Blocked, Kind::Zset),
            (QueueKey::Events, Kind::Stream),
            (QueueKey::Signal, Kind::Zset),
        ])?;
        self.expect_freed_types(&conf)?;
        self.expect_deadlines_type(conf.timed)?;
        let [count, left, group] = self.hmget_n(&key, [b"deps", b"deps_left", b"group"])?;
        let group = group.filter(|_| conf.groups);
        self.read_group(conf.groups, true, group.as_deref())?;
        let mut edges: Vec<&[u8]> = Vec::new();
        for field in named {
            if self.hget(&deps, field)?.is_none() {
                edges.extend([field.as_slice(), b"wait"]);
            }
        }
        let added = (edges.len() / 2) as i64;
        let count = number(count.as_deref()).unwrap_or(0) + added;
        if count > FLOW_EDGES_MAX as i64 {
            return Err(crate::server::args::refuse("BADARG edges"));
        }
        let left = number(left.as_deref()).unwrap_or(0) + added;
        if left <= 0 {
            return Ok(Waited::Ready);
        }

        if added > 0 {
            self.hset(self.key(QueueKey::Meta), &[b"flows", b"1"])?;
            self.hset_data(&deps, &edges)?;
        }
        let now = now_ms();
        self.zrem(self.key(QueueKey::Active), &[id])?;
        if let Some(group) = &group {
            self.leave_active(conf.group_flow, group, now)?;
        }
        let checkup = now.saturating_add(FLOW_CHECKUP_MS) as i64;
        self.zadd(self.key(QueueKey::Blocked), &[(checkup, id)])?;
        self.keep_deadline(conf.timed, id)?;
        let (count, left) = (Digits::of(count as u64), Digits::of(left as u64));
        self.hset(
            &key,
            &[
                b"state",
                b"blocked",
                b"deps",
                count.as_bytes(),
                b"deps_left",
                left.as_bytes(),
            ],
        )?;
        self.hdel(&key, &[b"cancel"])?;
        self.emit(
            conf.events_max,
            &[b"event", b"blocked", b"id", id, b"deps", left.as_bytes()],
        )?;
        self.freed(&conf)?;
        Ok(Waited::Blocked)
    }
}
