//! The keyspace of one queue as the module sees it, and the helpers of
//! `scripts/include/` every command family shares (`keys.lua` and others).
//!
//! Writes go to open keys (`server/key/`), one handle per key for the whole
//! command; the rest (the log list, `OBLITERATE`'s deletions) go through
//! [`Store::write`], `RM_Call` without the `!` flag, and publishing through
//! the module API (`server/publish.rs`). None of them is replicated as it
//! is: the command is, whole, with the clock it read and the event ids it
//! took (`server/replicate.rs`).
//!
//! This file holds the store itself: its handles, its strings, the
//! queue's key names and the type checks. The calls on one kind of key
//! are in `hash.rs`, `zset.rs`, `list.rs`, those by `RedisModule_Call` in
//! `call.rs`, the settings in `settings.rs`; the rest are the shared
//! bookkeeping of the families (`pending.rs`, `fifo.rs`, `job.rs`,
//! `events.rs`, `metrics.rs`, `groups.rs`, `round_robin.rs`, `dedup.rs`,
//! `flow.rs`), and the bodies commands share (`batch.rs`: enqueue and
//! complete for one job or many; `claim.rs`: the claim; `flow_jobs.rs`:
//! a flow's jobs and their edges).

pub(crate) mod batch;
mod call;
mod claim;
mod claim_expiry;
pub(crate) mod deadlines;
pub(crate) mod dedup;
mod events;
mod fifo;
pub(crate) mod flow;
pub(crate) mod flow_jobs;
pub(crate) mod flow_link;
pub(crate) mod flow_resolve;
pub(crate) mod flow_wait;
pub(crate) mod groups;
mod hash;
mod job;
pub(crate) mod lifo;
mod list;
pub(crate) mod metrics;
pub(crate) mod outbox;
mod own_edges;
mod pending;
mod round_robin;
mod settings;
mod zset;

pub(crate) use call::Reply;
pub(crate) use job::same_token;
pub(crate) use own_edges::{DependentsRead, zero_fields};
pub(crate) use pending::score;
pub(crate) use settings::{EnqueueSettings, Limit, Settings, flow_setting};

use crate::server::args::{RunAt, WRONGTYPE, refuse};
use crate::server::fast_hash::FastMap;
use crate::server::key::{Handle, Kind, Members, Str, WrongType};
use crate::server::store::events::HeldEvent;
use crate::server::store::groups::GroupState;
use echomq_protocol::keyspace::{JOB_INFIX, LOGS_INFIX};
use echomq_protocol::{JobState, QueueKey};
use std::cell::{OnceCell, RefCell};
use valkey_module::{CallOptions, Context, ValkeyError};

/// Lua's `tonumber` on a stored integer field; `None` when absent or not
/// a number.
pub(crate) fn number(value: Option<&[u8]>) -> Option<i64> {
    let text = std::str::from_utf8(value?).ok()?.trim();
    text.parse::<i64>()
        .ok()
        .or_else(|| text.parse::<f64>().ok().map(|f| f as i64))
}

/// A job to create (`enqueue_jobs`): due at once unless `run_at` is later.
pub(crate) struct NewJob {
    /// The id, or `*` for the next free counter value.
    pub id: Vec<u8>,
    pub payload: Vec<u8>,
    pub priority: u64,
    pub attempts: u64,
    /// `Some` for SCHEDULE, which also checks the schedule set's type.
    pub run_at: Option<RunAt>,
    /// The repeat definition that produced the job.
    pub repeat: Option<Vec<u8>>,
    /// Its deduplication key and mode (ENQUEUE and SCHEDULE only).
    pub dedup: Option<crate::server::store::dedup::Dedup>,
    /// Its group (ENQUEUE and SCHEDULE only).
    pub group: Option<Vec<u8>>,
    /// The W3C trace context of its enqueue (ENQUEUE and SCHEDULE only).
    pub traceparent: Option<Vec<u8>>,
    /// Its time limit and start-by deadline (ENQUEUE and SCHEDULE only).
    pub deadlines: crate::server::store::deadlines::Deadlines,
    /// Whether it enters pending at the front of its priority (`LIFO`;
    /// ENQUEUE and SCHEDULE only).
    pub lifo: bool,
    /// Whether its enqueue said `WAITED`: created marked waited for.
    pub waited: bool,
    /// Fields its hash gets past an enqueue's, flat (a flow job's `flow`,
    /// `ref`, …: `flow_jobs.rs`); empty for other jobs.
    pub extra: Vec<Vec<u8>>,
}

/// One command's view of its queue: the base key, the context, the clock.
pub(crate) struct Store<'a> {
    ctx: &'a Context,
    base: &'a [u8],
    /// The options of [`Store::read`] and [`Store::write`], built on first
    /// use (most commands never call a command).
    read: OnceCell<CallOptions>,
    write: OnceCell<CallOptions>,
    /// The keys this command has open, by name (see [`Store::with`]).
    handles: RefCell<FastMap<Vec<u8>, Handle>>,
    /// The fixed keys' names, built once per command (see [`Store::key`]).
    keys: [OnceCell<Vec<u8>>; QueueKey::ALL.len()],
    /// Whether the command writes (registered `write`): then every key is
    /// opened for writing (see [`Store::with`]).
    writes: bool,
    /// Each group's state as this command read and changed it (see
    /// [`Store::group_state`]).
    groups: RefCell<FastMap<Vec<u8>, GroupState>>,
    /// The command's newest job event, not yet written (see
    /// [`Store::emit`]); written when the store is dropped, at the latest.
    pub(crate) held_event: RefCell<Option<HeldEvent>>,
    /// Values a command writes for every job of a batch (its clock, the
    /// worker's name), each made into a server string once (see
    /// [`Store::share`]).
    shared: RefCell<Vec<(Vec<u8>, Str)>>,
    /// The job ids this command wrote as set members or events' `id`s,
    /// each made into a server string once (see [`Store::member`]).
    members: RefCell<Members>,
    /// The channels this command published on, by suffix, each made into
    /// a server string once (see `Store::publish`).
    channels: RefCell<Vec<(&'static [u8], Str)>>,
}

impl Drop for Store<'_> {
    fn drop(&mut self) {
        // The stream's type was checked before the command's first write,
        // as every command that emits does: the write cannot be refused.
        let _ = self.flush_events();
    }
}

/// The longest value [`Store::value`] keeps for the command's later
/// writes of the same bytes: a job id's longest, so an id written to a
/// hash or an event shares its string with the sets it enters.
const SHORT_VALUE: usize = echomq_protocol::name::MAX_JOB_ID;

/// Room for the keys a command opens before its map of handles grows: a
/// worker's call completes one batch and claims the next, each job's hash
/// opened once, and a dozen of the queue's own keys.
const HANDLES_AT_FIRST: usize = 128;

/// Most keys a command keeps open: opening one more closes them all (a
/// batch of this many jobs reads and writes each job through one handle).
const OPEN_KEYS: usize = 1024;

impl<'a> Store<'a> {
    /// The store of a command that writes.
    pub(crate) fn new(ctx: &'a Context, base: &'a [u8]) -> Self {
        Self::opening(ctx, base, true)
    }

    /// The store of a read-only command (`GET`, `COUNTS`): keys are opened
    /// for reading only.
    pub(crate) fn reader(ctx: &'a Context, base: &'a [u8]) -> Self {
        Self::opening(ctx, base, false)
    }

    /// A store whose keys are opened for writing when `writes`.
    fn opening(ctx: &'a Context, base: &'a [u8], writes: bool) -> Self {
        Self {
            ctx,
            base,
            read: OnceCell::new(),
            write: OnceCell::new(),
            handles: RefCell::new(FastMap::with_capacity_and_hasher(
                HANDLES_AT_FIRST,
                Default::default(),
            )),
            keys: Default::default(),
            writes,
            groups: RefCell::default(),
            held_event: RefCell::default(),
            shared: RefCell::default(),
            channels: RefCell::default(),
            members: RefCell::default(),
        }
    }

    /// Makes `value` one server string for the rest of the command: the
    /// writes of every job of a batch share it rather than copy it.
    pub(crate) fn share(&self, value: &[u8]) {
        let mut shared = self.shared.borrow_mut();
        if !shared.iter().any(|(bytes, _)| bytes == value) {
            shared.push((value.to_vec(), Str::new(self.ctx, value)));
        }
    }

    /// A value's server string: a kept name for a job state, the command's
    /// shared one when [`Store::share`] made it, else a copy (kept as a
    /// [`Store::member`] when short).
    fn value(&self, item: &[u8]) -> Str {
        if is_state_word(item) {
            return Str::name(item);
        }
        let shared = self.shared.borrow();
        match shared.iter().find(|(bytes, _)| bytes == item) {
            Some((_, string)) => string.alias(),
            // A short value (an id, a token) is often written twice or
            // more: to a hash, an event, a set. A long one is not kept.
            None if item.len() <= SHORT_VALUE => self.member(item),
            None => Str::new(self.ctx, item),
        }
    }

    /// A job id's server string, made once per command: a job moving from
    /// one set to another and its event share it.
    fn member(&self, id: &[u8]) -> Str {
        self.members.borrow_mut().get(self.ctx, id)
    }

    /// [`Store::member`] of each of `ids`: a set's or a list's members.
    fn members(&self, ids: &[&[u8]]) -> Vec<Str> {
        ids.iter().map(|id| self.member(id)).collect()
    }

    /// The queue's base key.
    pub(crate) fn base(&self) -> &[u8] {
        self.base
    }

    /// A group's state as this command last read or changed it.
    pub(crate) fn cached_group(&self, group: &[u8]) -> Option<GroupState> {
        self.groups.borrow().get(group).cloned()
    }

    /// Keeps a group's state for the rest of the command.
    pub(crate) fn cache_group(&self, group: &[u8], st: GroupState) {
        self.groups.borrow_mut().insert(group.to_vec(), st);
    }

    /// Runs `f` on the open handle of `key`, opening it (for writing when
    /// `write`) unless this command has it open already. A command that
    /// writes opens every key for writing, so a job hash read first is
    /// written through the same handle.
    pub(crate) fn with<R>(&self, key: &[u8], write: bool, f: impl FnOnce(&Handle) -> R) -> R {
        let mut handles = self.handles.borrow_mut();
        match handles.get(key) {
            Some(handle) if !write || handle.writable() => return f(handle),
            // A read-only handle is closed before the key is reopened.
            Some(_) => drop(handles.remove(key)),
            None if handles.len() >= OPEN_KEYS => handles.clear(),
            None => {}
        }
        let handle = Handle::open(self.ctx, key, write || self.writes);
        f(handles.entry(key.to_vec()).or_insert(handle))
    }

    /// The type of a key.
    pub(crate) fn kind(&self, key: &[u8]) -> Kind {
        self.with(key, false, Handle::kind)
    }

    /// Whether a key exists (`EXISTS`).
    pub(crate) fn exists(&self, key: &[u8]) -> bool {
        self.kind(key) != Kind::None
    }

    /// A copy of data bytes (a dedup key) as a server string, for the
    /// reads and writes of one command to share.
    pub(crate) fn text(&self, bytes: &[u8]) -> Str {
        Str::new(self.ctx, bytes)
    }

    /// Deletes keys (`DEL`).
    pub(crate) fn del(&self, keys: &[&[u8]]) {
        for key in keys {
            self.with(key, true, Handle::delete);
        }
    }

    /// A fixed key of the queue: `<base>:<name>`.
    pub(crate) fn key(&self, key: QueueKey) -> &[u8] {
        let index = QueueKey::ALL.iter().position(|k| *k == key).unwrap_or(0);
        self.keys[index].get_or_init(|| {
            let mut out = self.base.to_vec();
            out.push(b':');
            out.extend_from_slice(key.name().as_bytes());
            out
        })
    }

    /// `<base>:job:<id>`.
    pub(crate) fn job_key(&self, id: &[u8]) -> Vec<u8> {
        [self.base, JOB_INFIX.as_bytes(), id].concat()
    }

    /// `<base>:logs:<id>`.
    pub(crate) fn logs_key(&self, id: &[u8]) -> Vec<u8> {
        [self.base, LOGS_INFIX.as_bytes(), id].concat()
    }

    /// Refuses with WRONGTYPE unless each of the queue's `keys` is absent
    /// or of its kind (`expect_type`, key by key, in order). `pending`
    /// stands for the pending set, which is two keys: with it, `fifo` must
    /// be a list or absent too (`expect_pending_types`; docs/protocol.md,
    /// "The fifo").
    pub(crate) fn expect_types(&self, keys: &[(QueueKey, Kind)]) -> Result<(), ValkeyError> {
        for (key, want) in keys {
            self.expect_type_of(self.key(*key), *want)?;
            if *key == QueueKey::Pending {
                self.expect_type_of(self.key(QueueKey::Fifo), Kind::List)?;
            }
        }
        Ok(())
    }

    /// [`Store::expect_types`] for any one key.
    pub(crate) fn expect_type_of(&self, key: &[u8], want: Kind) -> Result<(), ValkeyError> {
        if !self.absent_or(key, want) {
            return Err(refuse(WRONGTYPE));
        }
        Ok(())
    }

    /// Whether `key` is absent or of kind `want` (the check of
    /// [`Store::expect_type_of`], answered instead of refused).
    pub(crate) fn absent_or(&self, key: &[u8], want: Kind) -> bool {
        let found = self.kind(key);
        found == Kind::None || found == want
    }
}

pub(crate) fn wrongtype(_: WrongType) -> ValkeyError {
    refuse(WRONGTYPE)
}

/// Whether `value` is a job state's name (`pending`, `active`, …).
fn is_state_word(value: &[u8]) -> bool {
    JobState::ALL
        .iter()
        .any(|state| state.as_str().as_bytes() == value)
}
