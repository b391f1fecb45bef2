//! The keyspace of one queue as the module sees it, and the helpers of
//! `scripts/include/` every command family shares (`keys.lua` and others).
//!
//! Writes go to open keys (`key.rs`), one handle per key for the whole
//! command; the rest (`SPUBLISH`, the log list, `OBLITERATE`'s deletions)
//! go through [`Store::write`], `RM_Call` without the `!` flag. None of
//! them is replicated as it is: the command is, whole, with the clock it
//! read and the event ids it took (`replicate.rs`).

pub(crate) mod batch;
pub(crate) mod dedup;
pub(crate) mod events;
pub(crate) mod fifo;
pub(crate) mod groups;
pub(crate) mod metrics;
pub(crate) mod round_robin;

use crate::server::args::{RunAt, bad_state, job_state, refuse, reply_text};
use crate::server::fast_hash::FastMap;
use crate::server::key::{Bound, Digits, Handle, Kind, Members, Str, WrongType};
use crate::server::store::events::HeldEvent;
use crate::server::store::fifo::by_fifo;
use crate::server::store::groups::GroupState;
use crate::server::store::metrics::{TIMING_FIELDS, Timing};
use echomq_protocol::arg::{
    DEFAULT_EVENTS_MAX, DEFAULT_KEEP_CANCELLED, DEFAULT_KEEP_COMPLETED, DEFAULT_KEEP_DEAD, MAX_INT,
    SKIPLIST_LEASES, job_token, pending_score,
};
use echomq_protocol::keyspace::{JOB_INFIX, LOGS_INFIX};
use echomq_protocol::metrics::{self as window_defaults, Windows};
use echomq_protocol::{JobState, QueueKey};
use std::cell::{OnceCell, RefCell};
use valkey_module::{CallOptions, CallOptionsBuilder, CallReply, CallResult, Context, ValkeyError};

/// The message of Valkey's own WRONGTYPE error.
pub(crate) const WRONGTYPE: &str =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

/// A reply of a called command, copied out of the server's reply object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    Int(i64),
    Bytes(Vec<u8>),
    Array(Vec<Reply>),
    Null,
}

impl Reply {
    fn from_call(reply: &CallReply) -> Self {
        match reply {
            CallReply::I64(n) => Reply::Int(n.to_i64()),
            CallReply::String(s) => Reply::Bytes(s.as_bytes().to_vec()),
            CallReply::Array(items) => Reply::Array(
                items
                    .iter()
                    .map(|item| item.map_or(Reply::Null, |item| Reply::from_call(&item)))
                    .collect(),
            ),
            _ => Reply::Null,
        }
    }

    /// The integer of an integer reply (0 otherwise).
    pub(crate) fn int(&self) -> i64 {
        match self {
            Reply::Int(n) => *n,
            _ => 0,
        }
    }

    /// The items of an array reply (none otherwise).
    pub(crate) fn items(self) -> Vec<Reply> {
        match self {
            Reply::Array(items) => items,
            _ => Vec::new(),
        }
    }

    /// The bytes of a string reply.
    pub(crate) fn bytes(self) -> Option<Vec<u8>> {
        match self {
            Reply::Bytes(bytes) => Some(bytes),
            _ => None,
        }
    }
}

/// Lua's `tonumber` on a stored integer field; `None` when absent or not
/// a number.
pub(crate) fn number(value: Option<&[u8]>) -> Option<i64> {
    let text = std::str::from_utf8(value?).ok()?.trim();
    text.parse::<i64>()
        .ok()
        .or_else(|| text.parse::<f64>().ok().map(|f| f as i64))
}

/// Queue settings from the meta hash, with their protocol defaults.
pub(crate) struct Settings {
    pub paused: bool,
    pub keep_completed: i64,
    pub keep_dead: i64,
    pub keep_cancelled: i64,
    pub events_max: i64,
    /// The cap on active jobs; 0 for none.
    pub concurrency: i64,
    /// Whether a job of the queue ever took a dedup key (`dedup` of the
    /// meta hash): only then are jobs' dedup fields read.
    pub dedup: bool,
    /// Whether a job of the queue ever had a group (`groups` of the meta
    /// hash): only then are jobs' groups read and the lanes kept.
    pub groups: bool,
    /// Whether a group of the queue ever had a cap or a rate limit
    /// (`group_flow` of the meta hash): only then are groups' settings read
    /// by claims and finishing jobs.
    pub group_flow: bool,
    /// Whether the queue keeps metrics (`metrics` of the meta hash is not
    /// `0`), and the shape of its windows.
    pub metrics: bool,
    /// Whether a job of the queue may have log lines: false when the logs
    /// mark (`logs` of the meta hash) is `0`, so retention deletes no log
    /// keys (docs/protocol.md, "The logs mark").
    pub logs: bool,
    /// The metrics windows (docs/protocol.md "Metrics").
    pub windows: Windows,
    /// Whether a job of the queue was ever enqueued with a trace context
    /// (`traced` of the meta hash): only then does CLAIM read a job's
    /// `traceparent`. Read by [`Store::settings_with_limits`] only.
    pub traced: bool,
    /// The rate limit and its state; read by
    /// [`Store::settings_with_limits`] only (all 0 otherwise).
    pub limit: Limit,
}

/// What an enqueue reads of the meta hash (`enqueue_settings`): nothing
/// else of the settings matters to ENQUEUE, SCHEDULE or their bulk forms,
/// so they read no more (a queue with a meta hash pays four lookups, not
/// nine).
pub(crate) struct EnqueueSettings {
    pub events_max: i64,
    /// As [`Settings::dedup`].
    pub dedup: bool,
    /// As [`Settings::groups`].
    pub groups: bool,
    /// As [`Settings::traced`].
    pub traced: bool,
    /// Whether the queue has a logs mark (any value): an enqueue that
    /// creates a job on a queue without one sets it.
    pub logs_marked: bool,
}

/// The rate limit of a queue and its state (`limit_*` of the meta hash),
/// each a flow setting (see [`flow_setting`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Limit {
    pub max: i64,
    pub per: i64,
    pub window: i64,
    pub used: i64,
    pub hold: i64,
}

impl Settings {
    /// A queue with no meta hash.
    const DEFAULT: Settings = Settings {
        paused: false,
        keep_completed: DEFAULT_KEEP_COMPLETED as i64,
        keep_dead: DEFAULT_KEEP_DEAD as i64,
        keep_cancelled: DEFAULT_KEEP_CANCELLED as i64,
        events_max: DEFAULT_EVENTS_MAX as i64,
        concurrency: 0,
        dedup: false,
        groups: false,
        group_flow: false,
        metrics: true,
        logs: true,
        windows: Windows {
            fine_ms: window_defaults::DEFAULT_FINE_MS,
            fine_keep: window_defaults::DEFAULT_FINE_KEEP,
            coarse_ms: window_defaults::DEFAULT_COARSE_MS,
            coarse_keep: window_defaults::DEFAULT_COARSE_KEEP,
        },
        traced: false,
        limit: Limit {
            max: 0,
            per: 0,
            window: 0,
            used: 0,
            hold: 0,
        },
    };
}

/// A stored count setting (`count_setting`): the whole number >= 0, else
/// `default`.
fn count_setting(value: Option<&[u8]>, default: i64) -> i64 {
    let text = value.and_then(|v| std::str::from_utf8(v).ok());
    match text.and_then(|t| t.trim().parse::<f64>().ok()) {
        Some(n) if n.is_finite() && n >= 0.0 && n.fract() == 0.0 => n as i64,
        _ => default,
    }
}

/// A flow setting or its state (`flow_setting`): the stored whole number in
/// [0, MAX_INT], else 0 (off).
pub(crate) fn flow_setting(value: Option<&[u8]>) -> i64 {
    match count_setting(value, 0) {
        n if n > MAX_INT as i64 => 0,
        n => n,
    }
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

/// How many elements [`Store::lpop`] drops with one `LTRIM` rather than
/// one key API pop each.
const TRIM_FROM: usize = 8;

/// Room for the keys a command opens before its map of handles grows: a
/// worker's call completes one batch and claims the next, each job's hash
/// opened once, and a dozen of the queue's own keys.
const HANDLES_AT_FIRST: usize = 128;

/// Most keys a command keeps open: opening one more closes them all (a
/// batch of this many jobs reads and writes each job through one handle).
const OPEN_KEYS: usize = 1024;

/// The longest `zset-max-listpack-value` for which a member is padded
/// past it ([`Store::add_leases`]).
const SKIPLIST_PAD_MAX: usize = 4096;

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

    /// Runs a command by `RedisModule_Call`, after closing every handle
    /// (no open handle may see a key change under it).
    fn call(&self, options: &CallOptions, cmd: &str, args: &[&[u8]]) -> Result<Reply, ValkeyError> {
        self.handles.borrow_mut().clear();
        self.run(options, cmd, args)
            .map(|reply| Reply::from_call(&reply))
    }

    /// Runs a command by `RedisModule_Call`: its error reply is the
    /// refusal. The caller has closed the handles of the keys it changes.
    fn run(
        &self,
        options: &CallOptions,
        cmd: &str,
        args: &[&[u8]],
    ) -> Result<CallReply<'static>, ValkeyError> {
        let result: CallResult<'static> = self.ctx.call_ext(cmd, options, args);
        result.map_err(|err| refuse(reply_text(err.as_bytes())))
    }

    /// A read: not replicated.
    pub(crate) fn read(&self, cmd: &str, args: &[&[u8]]) -> Result<Reply, ValkeyError> {
        let options = self
            .read
            .get_or_init(|| CallOptionsBuilder::new().errors_as_replies().build());
        self.call(options, cmd, args)
    }

    fn write_options(&self) -> &CallOptions {
        self.write
            .get_or_init(|| CallOptionsBuilder::new().errors_as_replies().build())
    }

    /// A write: not replicated as itself (the command is, whole).
    pub(crate) fn write(&self, cmd: &str, args: &[&[u8]]) -> Result<Reply, ValkeyError> {
        crate::server::replicate::wrote();
        self.call(self.write_options(), cmd, args)
    }

    /// A [`Store::write`] whose reply is not wanted, by a command that
    /// changes only `keys`: their handles are closed, and the others stay
    /// open for the rest of the command rather than be opened again.
    fn write_changing(&self, keys: &[&[u8]], cmd: &str, args: &[&[u8]]) -> Result<(), ValkeyError> {
        crate::server::replicate::wrote();
        {
            let mut handles = self.handles.borrow_mut();
            for key in keys {
                drop(handles.remove(*key));
            }
        }
        self.run(self.write_options(), cmd, args).map(drop)
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

    /// Fields of a hash (`HMGET`).
    pub(crate) fn hmget(
        &self,
        key: &[u8],
        fields: &[&[u8]],
    ) -> Result<Vec<Option<Vec<u8>>>, ValkeyError> {
        self.with(key, false, |h| h.hash_get(fields))
            .map_err(wrongtype)
    }

    /// One field of a hash (`HGET`).
    pub(crate) fn hget(&self, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>, ValkeyError> {
        Ok(self.hmget(key, &[field])?.pop().flatten())
    }

    /// A copy of data bytes (a dedup key) as a server string, for the
    /// reads and writes of one command to share.
    pub(crate) fn text(&self, bytes: &[u8]) -> Str {
        Str::new(self.ctx, bytes)
    }

    /// One field of a hash whose name is data, not the code's vocabulary (a
    /// dedup key, from [`Store::text`]): never kept among the names
    /// (`HGET`).
    pub(crate) fn hget_value(
        &self,
        key: &[u8],
        field: &Str,
    ) -> Result<Option<Vec<u8>>, ValkeyError> {
        self.with(key, false, |h| h.hash_get_value(field))
            .map_err(wrongtype)
    }

    /// A job's `fields` and, once a job of the queue ever took a dedup key
    /// (`conf.dedup`), its `[dedup, dedup_mode]`, and once a job of the
    /// queue ever had a group (`conf.groups`), its `group`, in the same
    /// `HMGET` (`None` otherwise): a queue without keys or groups reads no
    /// more of its jobs than before (`job_fields` of the scripts).
    #[allow(clippy::type_complexity)]
    pub(crate) fn job_fields<const N: usize>(
        &self,
        conf: &Settings,
        key: &[u8],
        fields: [&[u8]; N],
    ) -> Result<([Option<Vec<u8>>; N], [Option<Vec<u8>>; 3]), ValkeyError> {
        let (main, extra, _) = self.read_job(conf, key, fields, false)?;
        Ok((main, extra))
    }

    /// [`Store::job_fields`] with the job's [`Timing`], read in the same
    /// `HMGET` on a queue whose metrics are on (`job_fields(…, true)`): what
    /// a job leaving `active` samples.
    #[allow(clippy::type_complexity)]
    pub(crate) fn job_fields_timed<const N: usize>(
        &self,
        conf: &Settings,
        key: &[u8],
        fields: [&[u8]; N],
    ) -> Result<([Option<Vec<u8>>; N], [Option<Vec<u8>>; 3], Timing), ValkeyError> {
        self.read_job(conf, key, fields, true)
    }

    #[allow(clippy::type_complexity)]
    fn read_job<const N: usize>(
        &self,
        conf: &Settings,
        key: &[u8],
        fields: [&[u8]; N],
        timing: bool,
    ) -> Result<([Option<Vec<u8>>; N], [Option<Vec<u8>>; 3], Timing), ValkeyError> {
        let timing = timing && conf.metrics;
        let mut names: Vec<&[u8]> = fields.to_vec();
        // A timing field the caller reads itself (the fence's claimed_at)
        // is not read twice.
        let own = |name: &[u8]| fields.iter().position(|field| *field == name);
        if timing {
            names.extend(TIMING_FIELDS.iter().filter(|name| own(name).is_none()));
        }
        if conf.dedup {
            names.extend([b"dedup".as_slice(), b"dedup_mode"]);
        }
        if conf.groups {
            names.push(b"group");
        }
        let mut values = self.hmget(key, &names)?.into_iter();
        let main: [Option<Vec<u8>>; N] = std::array::from_fn(|_| values.next().flatten());
        let mut extra = |wanted: bool| {
            if wanted {
                values.next().flatten()
            } else {
                None
            }
        };
        let [claimed_at, run_at, created_at] = TIMING_FIELDS.map(|name| match own(name) {
            Some(at) if timing => main[at].clone(),
            _ => extra(timing),
        });
        let (dedup, mode) = (extra(conf.dedup), extra(conf.dedup));
        let group = extra(conf.groups);
        let timing = Timing::read(claimed_at.as_deref(), run_at.or(created_at).as_deref());
        Ok((main, [dedup, mode, group], timing))
    }

    /// `N` fields of a hash, as an array to destructure.
    pub(crate) fn hmget_n<const N: usize>(
        &self,
        key: &[u8],
        fields: [&[u8]; N],
    ) -> Result<[Option<Vec<u8>>; N], ValkeyError> {
        let mut values = self.hmget(key, &fields)?.into_iter();
        Ok(std::array::from_fn(|_| values.next().flatten()))
    }

    /// Server strings of `items`, for a write.
    fn strs(&self, items: &[&[u8]]) -> Vec<Str> {
        items.iter().map(|item| Str::new(self.ctx, item)).collect()
    }

    /// Server strings of a flat name/value list (HSET's fields and values,
    /// an event's): the names from the kept vocabulary ([`Str::name`]), the
    /// values as [`Store::value`] makes them; `names_at` says which
    /// positions hold names.
    pub(crate) fn pairs(&self, items: &[&[u8]], names_at: impl Fn(usize) -> bool) -> Vec<Str> {
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                if names_at(i) {
                    Str::name(item)
                } else {
                    self.value(item)
                }
            })
            .collect()
    }

    /// Sets hash fields from a flat field/value list (`HSET`).
    pub(crate) fn hset(&self, key: &[u8], pairs: &[&[u8]]) -> Result<(), ValkeyError> {
        self.hset_strs(key, &self.pairs(pairs, |i| i % 2 == 0))
    }

    /// Deletes hash fields (`HDEL`).
    pub(crate) fn hdel(&self, key: &[u8], fields: &[&[u8]]) -> Result<(), ValkeyError> {
        self.hdel_strs(key, &self.pairs(fields, |_| true))
    }

    /// Sets one hash field whose name is data, not the code's vocabulary (a
    /// dedup key, from [`Store::text`]): the value copied (`HSET key field
    /// value`).
    pub(crate) fn hset_value(
        &self,
        key: &[u8],
        field: &Str,
        value: &[u8],
    ) -> Result<(), ValkeyError> {
        let value = Str::new(self.ctx, value);
        self.with(key, true, |h| {
            h.hash_set_pair(field, &value)?;
            Ok(())
        })
        .map_err(wrongtype)
    }

    /// Deletes hash fields whose names are data (`HDEL`).
    pub(crate) fn hdel_values(&self, key: &[u8], fields: &[&[u8]]) -> Result<(), ValkeyError> {
        self.hdel_strs(key, &self.strs(fields))
    }

    fn hset_strs(&self, key: &[u8], args: &[Str]) -> Result<(), ValkeyError> {
        self.with(key, true, |h| {
            h.hash_set(args)?;
            Ok(())
        })
        .map_err(wrongtype)
    }

    fn hdel_strs(&self, key: &[u8], args: &[Str]) -> Result<(), ValkeyError> {
        self.with(key, true, |h| {
            h.hash_del(args)?;
            Ok(())
        })
        .map_err(wrongtype)
    }

    /// Adds to integer fields of a hash (`HINCRBY` each; an absent or
    /// non-integer field counts from 0), as one `HSET` of the values it
    /// left.
    pub(crate) fn hash_incr(&self, key: &[u8], adds: &[(&[u8], i64)]) -> Result<(), ValkeyError> {
        let names: Vec<&[u8]> = adds.iter().map(|(field, _)| *field).collect();
        self.with(key, true, |h| {
            let current = h.hash_get(&names)?;
            let mut args = Vec::with_capacity(adds.len() * 2);
            for ((field, by), stored) in adds.iter().zip(current) {
                args.push(Str::name(field));
                args.push(Str::int(
                    self.ctx,
                    number(stored.as_deref()).unwrap_or(0) + by,
                ));
            }
            h.hash_set(&args)?;
            Ok(())
        })
        .map_err(wrongtype)
    }

    /// Sets a key's expiry to an absolute instant, ms, unless it has one
    /// (`PEXPIREAT key at NX`).
    pub(crate) fn expire_at_nx(&self, key: &[u8], at_ms: i64) {
        self.with(key, true, |h| {
            if !h.has_expire() {
                h.set_abs_expire(at_ms);
            }
        })
    }

    /// Adds or rescores members (`ZADD key score member …`).
    pub(crate) fn zadd(&self, key: &[u8], members: &[(i64, &[u8])]) -> Result<(), ValkeyError> {
        if members.is_empty() {
            return Ok(());
        }
        let ids: Vec<&[u8]> = members.iter().map(|(_, member)| *member).collect();
        let strings = self.members(&ids);
        let scored: Vec<(f64, &Str)> = members
            .iter()
            .zip(&strings)
            .map(|((score, _), member)| (*score as f64, member))
            .collect();
        self.with(key, true, |h| {
            h.zset_add(&scored, false)?;
            Ok(())
        })
        .map_err(wrongtype)
    }

    /// Adds leases to the active set (`ZADD active deadline id …`), and
    /// turns an active set that grows to `SKIPLIST_LEASES` a skiplist.
    ///
    /// The server keeps a sorted set of up to `zset-max-listpack-entries`
    /// (128) members as a listpack, which every `ZADD` and `ZREM` scans:
    /// at concurrency 50 a worker holds 100 leases, and those scans were a
    /// fifth of the server's time. A member longer than
    /// `zset-max-listpack-value` turns a set into a skiplist, and removing
    /// it does not turn it back, so one such member added and removed in
    /// the same command makes the set a skiplist until it empties. The
    /// keyspace is the same; only the encoding differs (a replica and an
    /// AOF replay run the same command, so do the same).
    pub(crate) fn add_leases(&self, leases: &[(i64, &[u8])]) -> Result<(), ValkeyError> {
        let active = self.key(QueueKey::Active);
        let before = self.zcard(active)?;
        self.zadd(active, leases)?;
        // Every lease is new: a claimed job was in no state set but pending.
        let after = before + leases.len() as i64;
        let at = SKIPLIST_LEASES as i64;
        if before < at && after >= at {
            self.as_skiplist(active)?;
        }
        Ok(())
    }

    /// Makes the sorted set at `key` a skiplist (see [`Store::add_leases`]).
    fn as_skiplist(&self, key: &[u8]) -> Result<(), ValkeyError> {
        // The encoding is the server's business: a setting it does not
        // tell leaves the set as it is, and the command goes on.
        let limit = match self.read("CONFIG", &[b"GET", b"zset-max-listpack-value"]) {
            Ok(Reply::Array(pair)) => match pair.get(1) {
                Some(Reply::Bytes(value)) => std::str::from_utf8(value)
                    .ok()
                    .and_then(|value| value.parse::<usize>().ok()),
                _ => None,
            },
            _ => None,
        };
        // A server that keeps long members in listpacks keeps this one.
        let Some(limit) = limit.filter(|&limit| limit < SKIPLIST_PAD_MAX) else {
            return Ok(());
        };
        // Never a job id: ids hold no whitespace and no braces.
        let mut pad = b"{skiplist} ".to_vec();
        pad.resize(limit + 1, b'.');
        self.zadd(key, &[(0, pad.as_slice())])?;
        self.zrem(key, &[pad.as_slice()])?;
        Ok(())
    }

    /// Removes members (`ZREM`); returns how many were there.
    pub(crate) fn zrem(&self, key: &[u8], members: &[&[u8]]) -> Result<usize, ValkeyError> {
        if members.is_empty() {
            return Ok(0);
        }
        let args = self.members(members);
        self.with(key, true, |h| h.zset_rem(&args))
            .map_err(wrongtype)
    }

    /// Adds `member` at `score` unless it is a member already (`ZADD NX`;
    /// it writes only when it adds).
    pub(crate) fn zadd_new(
        &self,
        key: &[u8],
        score: i64,
        member: &[u8],
    ) -> Result<(), ValkeyError> {
        if self.zscore(key, &self.text(member))?.is_none() {
            self.zadd(key, &[(score, member)])?;
        }
        Ok(())
    }

    /// The highest score of a sorted set (`ZRANGE key -1 -1 WITHSCORES`);
    /// `None` when empty.
    pub(crate) fn zlast_score(&self, key: &[u8]) -> Result<Option<f64>, ValkeyError> {
        self.with(key, false, |h| h.zset_last_score())
            .map_err(wrongtype)
    }

    /// A member's score (`ZSCORE`); `None` when it is not a member.
    pub(crate) fn zscore(&self, key: &[u8], member: &Str) -> Result<Option<f64>, ValkeyError> {
        self.with(key, false, |h| h.zset_score(member))
            .map_err(wrongtype)
    }

    /// Members of a sorted set (`ZCARD`).
    pub(crate) fn zcard(&self, key: &[u8]) -> Result<i64, ValkeyError> {
        let len = self.with(key, false, |h| h.len(Kind::Zset));
        Ok(len.map_err(wrongtype)? as i64)
    }

    /// At most `limit` members scored in [min, max], lowest first.
    pub(crate) fn zrange(
        &self,
        key: &[u8],
        min: Bound,
        max: Bound,
        limit: u64,
    ) -> Result<Vec<Vec<u8>>, ValkeyError> {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        Ok(self
            .with(key, false, |h| h.zset_range(min, max, limit))
            .map_err(wrongtype)?
            .into_iter()
            .map(|(member, _)| member)
            .collect())
    }

    /// Pushes `items` at the tail of a list, in order (`RPUSH`; nothing
    /// when there are none).
    pub(crate) fn rpush(&self, key: &[u8], items: &[&[u8]]) -> Result<(), ValkeyError> {
        if items.is_empty() {
            return Ok(());
        }
        let args = self.members(items);
        self.with(key, true, |h| h.list_push(&args))
            .map_err(wrongtype)
    }

    /// Elements of a list (`LLEN`).
    pub(crate) fn llen(&self, key: &[u8]) -> Result<i64, ValkeyError> {
        let len = self.with(key, false, |h| h.len(Kind::List));
        Ok(len.map_err(wrongtype)? as i64)
    }

    /// At most `limit` elements from a list's head (`LRANGE key 0
    /// limit-1`).
    pub(crate) fn lrange(&self, key: &[u8], limit: u64) -> Result<Vec<Vec<u8>>, ValkeyError> {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        self.with_list_read(key, |h| h.list_head(limit))
            .map_err(wrongtype)
    }

    /// Drops at most `count` elements from a list's head (`LPOP key
    /// count`). Many at once are trimmed off by the command (`LTRIM key
    /// count -1`, which replies with no elements): the key API pops one
    /// element at a time, and makes a string of each.
    pub(crate) fn lpop(&self, key: &[u8], count: usize) -> Result<(), ValkeyError> {
        if count == 0 {
            return Ok(());
        }
        if count >= TRIM_FROM {
            let from = Digits::of(count as u64);
            return self.write_changing(&[key], "LTRIM", &[key, from.as_bytes(), b"-1"]);
        }
        self.with(key, true, |h| h.list_pop(count))
            .map_err(wrongtype)?;
        Ok(())
    }

    /// Removes the first element equal to `item` (`LREM key 1 item`);
    /// true when there was one. Called as the command: linear in the
    /// list's length as the key API would be, but without a string made
    /// for each element it passes.
    pub(crate) fn lrem_first(&self, key: &[u8], item: &[u8]) -> Result<bool, ValkeyError> {
        Ok(self.write("LREM", &[key, b"1", item])?.int() > 0)
    }

    /// [`Store::with`] for an operation that reads a list's elements, and
    /// then closes the handle. Reading an element leaves the server's list
    /// iterator on the open key, which only closing the key (or a push or
    /// pop) frees: deleting the key first (`DeleteKey`) would strand it,
    /// and the server asserts when the key then closes. Closed here, while
    /// the list exists, the iterator goes with it.
    fn with_list_read<R>(&self, key: &[u8], f: impl FnOnce(&Handle) -> R) -> R {
        let out = self.with(key, false, f);
        let handle = self.handles.borrow_mut().remove(key);
        drop(handle);
        out
    }

    /// `INCR`: the counter's next value.
    pub(crate) fn incr(&self, key: &[u8]) -> Result<i64, ValkeyError> {
        self.incr_by(key, 1)
    }

    /// `INCRBY key by`.
    pub(crate) fn incr_by(&self, key: &[u8], by: i64) -> Result<i64, ValkeyError> {
        self.with(key, true, |h| {
            let next = h
                .string_incr(by)
                .map_err(wrongtype)?
                .ok_or_else(|| refuse("ERR value is not an integer or out of range"))?;
            Ok(next)
        })
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
        let found = self.kind(key);
        if found != Kind::None && found != want {
            return Err(refuse(WRONGTYPE));
        }
        Ok(())
    }

    /// The queue's settings (`settings`).
    pub(crate) fn settings(&self) -> Result<Settings, ValkeyError> {
        self.read_settings(false)
    }

    /// The queue's settings with its rate limit and its state
    /// (`settings(meta, true)`), in the same read.
    pub(crate) fn settings_with_limits(&self) -> Result<Settings, ValkeyError> {
        self.read_settings(true)
    }

    /// What an enqueue reads of the settings (`enqueue_settings`): the
    /// events cap, the dedup mark, the groups mark, the traced mark and
    /// whether the logs mark is set, in one `HMGET` (which also checks the
    /// meta hash's type).
    pub(crate) fn enqueue_settings(&self) -> Result<EnqueueSettings, ValkeyError> {
        let [events_max, dedup, groups, traced, logs] = self.hmget_n(
            self.key(QueueKey::Meta),
            [b"events_max", b"dedup", b"groups", b"traced", b"logs"],
        )?;
        Ok(EnqueueSettings {
            events_max: count_setting(events_max.as_deref(), DEFAULT_EVENTS_MAX as i64),
            dedup: dedup.as_deref() == Some(b"1"),
            groups: groups.as_deref() == Some(b"1"),
            traced: traced.as_deref() == Some(b"1"),
            logs_marked: logs.is_some(),
        })
    }

    /// Sets the logs mark of a queue without one (`mark_logs`), before the
    /// enqueue's jobs enter any set: `0` when the queue holds no job yet,
    /// else `1` (its jobs may have logs).
    pub(crate) fn mark_logs(&self) -> Result<(), ValkeyError> {
        // The six state sets, and `fifo`, the rest of the pending set.
        let held = JobState::ALL
            .iter()
            .map(|state| state.set_key())
            .chain([QueueKey::Fifo])
            .any(|set| self.exists(self.key(set)));
        let mark: &[u8] = if held { b"1" } else { b"0" };
        self.hset(self.key(QueueKey::Meta), &[b"logs", mark])
    }

    fn read_settings(&self, limits: bool) -> Result<Settings, ValkeyError> {
        let meta = self.key(QueueKey::Meta);
        match self.kind(meta) {
            Kind::None => return Ok(Settings::DEFAULT),
            Kind::Hash => {}
            _ => return Err(refuse(WRONGTYPE)),
        }
        const FIELDS: [&[u8]; 21] = [
            b"paused",
            b"keep_completed",
            b"keep_dead",
            b"keep_cancelled",
            b"events_max",
            b"concurrency",
            b"dedup",
            b"groups",
            b"group_flow",
            b"metrics",
            b"metrics_fine_ms",
            b"metrics_fine_keep",
            b"metrics_coarse_ms",
            b"metrics_coarse_keep",
            b"logs",
            b"limit_max",
            b"limit_per",
            b"limit_window",
            b"limit_used",
            b"limit_hold",
            b"traced",
        ];
        let wanted = if limits { &FIELDS[..] } else { &FIELDS[..15] };
        let values = self.hmget(meta, wanted)?;
        let field = |i: usize| values.get(i).and_then(Option::as_deref);
        let or = |i: usize, default: u64| count_setting(field(i), default as i64);
        let flow = |i: usize| flow_setting(field(i));
        Ok(Settings {
            paused: field(0) == Some(b"1"),
            keep_completed: or(1, DEFAULT_KEEP_COMPLETED),
            keep_dead: or(2, DEFAULT_KEEP_DEAD),
            keep_cancelled: or(3, DEFAULT_KEEP_CANCELLED),
            events_max: or(4, DEFAULT_EVENTS_MAX),
            concurrency: flow(5),
            dedup: field(6) == Some(b"1"),
            groups: field(7) == Some(b"1"),
            group_flow: field(8) == Some(b"1"),
            metrics: field(9) != Some(b"0"),
            logs: field(14) != Some(b"0"),
            windows: Windows::from_settings(|name| {
                let at = FIELDS.iter().position(|f| *f == name.as_bytes())?;
                field(at)
            }),
            traced: field(20) == Some(b"1"),
            limit: Limit {
                max: flow(15),
                per: flow(16),
                window: flow(17),
                used: flow(18),
                hold: flow(19),
            },
        })
    }

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

    /// Publishes `id` on the queue's cancel channel, `<base>:cancel`
    /// (`SPUBLISH`; a replica publishes it again as it replays the call).
    pub(crate) fn publish_cancel(&self, id: &[u8]) -> Result<(), ValkeyError> {
        let channel = [self.base, b":cancel"].concat();
        self.write("SPUBLISH", &[&channel, id])?;
        Ok(())
    }

    /// Keeps at most `keep` members of a finished set, deleting the oldest
    /// (at most `limit`) with their hashes and, when `logs` (the queue's
    /// [`Settings::logs`]), their logs (`trim_finished`).
    pub(crate) fn trim_finished(
        &self,
        logs: bool,
        set: QueueKey,
        keep: i64,
        limit: i64,
    ) -> Result<(), ValkeyError> {
        let set = self.key(set);
        let excess = self.zcard(set)? - keep;
        if excess <= 0 {
            return Ok(());
        }
        let ids = self.zrange(set, Bound::LOWEST, Bound::HIGHEST, excess.min(limit) as u64)?;
        let mut doomed = Vec::with_capacity(ids.len() * 2);
        for id in &ids {
            doomed.push(self.job_key(id));
            if logs {
                doomed.push(self.logs_key(id));
            }
        }
        // As the script does: one DEL and one ZREMRANGEBYRANK, called and
        // called as they are (cheaper per job than a handle per key).
        let doomed: Vec<&[u8]> = doomed.iter().map(Vec::as_slice).collect();
        self.write_changing(&doomed, "DEL", &doomed)?;
        let last = Digits::of(ids.len() as u64 - 1);
        self.write_changing(&[set], "ZREMRANGEBYRANK", &[set, b"0", last.as_bytes()])?;
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
    /// script's loop does. Returns how many moved.
    pub(crate) fn promote(
        &self,
        conf: (i64, bool),
        due: &[Vec<u8>],
        jobs: &[(i64, Option<Vec<u8>>)],
        now: u64,
    ) -> Result<usize, ValkeyError> {
        let (events_max, groups_on) = conf;
        if due.is_empty() {
            return Ok(0);
        }
        let queued = |(priority, group): &(i64, Option<Vec<u8>>)| {
            by_fifo(groups_on, *priority, group.as_deref())
        };
        let mut seq = self.take_seqs(jobs.iter().filter(|job| !queued(job)).count())?;
        let (mut scored, mut fifo) = (Vec::with_capacity(due.len()), Vec::new());
        for (id, job) in due.iter().zip(jobs) {
            let (priority, group) = job;
            if queued(job) {
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
        groups_on: bool,
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
        let group = group.filter(|_| groups_on);
        self.read_group(groups_on, true, group.as_deref())?;
        Ok((key, from, number(priority.as_deref()).unwrap_or(0), group))
    }

    /// The fencing check: the job must be active and hold the token
    /// (`fenced`). Returns the job key.
    pub(crate) fn fenced(&self, id: &[u8], token: u64) -> Result<Vec<u8>, ValkeyError> {
        self.holder(id, token)?.ok_or_else(|| refuse("NOTACTIVE"))
    }

    /// The job key when `token` holds the job (active, holding `token`);
    /// none otherwise.
    pub(crate) fn holder(&self, id: &[u8], token: u64) -> Result<Option<Vec<u8>>, ValkeyError> {
        let key = self.job_key(id);
        let [state, claims, claimed_at] =
            self.hmget_n(&key, [b"state", b"claims", b"claimed_at"])?;
        let holds = state.as_deref() == Some(b"active")
            && same_token(claims.as_deref(), claimed_at.as_deref(), token);
        Ok(holds.then_some(key))
    }

    /// [`Store::holder`], with the job's `[dedup, dedup_mode, group]` and
    /// its [`Timing`] read in the same `HMGET` (COMPLETE frees the key and
    /// the group's place and samples the metrics; see
    /// [`Store::job_fields_timed`]); an active job's group's keys are read.
    #[allow(clippy::type_complexity)]
    pub(crate) fn holder_with_extra(
        &self,
        conf: &Settings,
        id: &[u8],
        token: u64,
    ) -> Result<(Option<Vec<u8>>, [Option<Vec<u8>>; 3], Timing), ValkeyError> {
        let key = self.job_key(id);
        let ([state, claims, claimed_at], extra, timing) =
            self.job_fields_timed(conf, &key, [b"state", b"claims", b"claimed_at"])?;
        let active = state.as_deref() == Some(b"active");
        if let Some(group) = extra[2].as_deref().filter(|_| active && conf.group_flow) {
            self.group_state(group)?;
        }
        let holds = active && same_token(claims.as_deref(), claimed_at.as_deref(), token);
        Ok((holds.then_some(key), extra, timing))
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

/// Whether a job whose `claims` and `claimed_at` read so holds `token`
/// (`job_token(claims, claimed_at) == token`).
pub(crate) fn same_token(claims: Option<&[u8]>, claimed_at: Option<&[u8]>, token: u64) -> bool {
    match (number(claims), number(claimed_at)) {
        (Some(claims), Some(claimed_at)) => {
            u64::try_from(job_token(claims, claimed_at)) == Ok(token)
        }
        _ => false,
    }
}

/// A pending score: priority·2^44 + (seq mod 2^44).
pub(crate) fn score(priority: i64, seq: i64) -> i64 {
    let seq = seq.rem_euclid(1 << 44);
    match u8::try_from(priority) {
        Ok(priority) => pending_score(priority, seq as u64) as i64,
        Err(_) => priority * (1 << 44) + seq,
    }
}
