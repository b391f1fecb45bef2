//! The server's low-level key API (`RedisModule_OpenKey` and the hash, sorted
//! set, list, string and stream calls on an open key): what the commands use
//! instead of `RedisModule_Call`, which costs a command lookup, an argument
//! vector and a reply object per call.
//!
//! This file, `clock.rs`, `acl.rs` and `replicate.rs` are the only ones
//! with `unsafe`. A
//! [`Handle`] is one open key; `Store` keeps the handles of one command and
//! closes them all before any `RedisModule_Call`, so no handle sees a key
//! change under it. Nothing here replicates: a command is replicated whole
//! (`replicate.rs`), and a handle tells it when a write changed a key.
#![allow(unsafe_code)]

use crate::server::fast_hash::FastMap;
use std::cell::{Cell, RefCell};
use std::os::raw::{c_char, c_int, c_long};
use std::ptr;
use valkey_module::{Context, raw};

const READ: c_int = 1;
const WRITE: c_int = 2;
const KEYTYPE_EMPTY: c_int = 0;
const KEYTYPE_STRING: c_int = 1;
const KEYTYPE_LIST: c_int = 2;
const KEYTYPE_HASH: c_int = 3;
const KEYTYPE_SET: c_int = 4;
const KEYTYPE_ZSET: c_int = 5;
const KEYTYPE_STREAM: c_int = 7;
const HASH_NONE: c_int = 0;
const ZADD_LT: c_int = 1 << 6;
const ZADD_ADDED: c_int = 1 << 2;
const ZADD_UPDATED: c_int = 1 << 3;
const STREAM_ADD_AUTOID: c_int = 1;
const STREAM_TRIM_APPROX: c_int = 1;
const LIST_HEAD: c_int = 0;
const LIST_TAIL: c_int = 1;
/// `REDISMODULE_HASH_DELETE`: the value that deletes a hash field.
const HASH_DELETE: *mut raw::RedisModuleString = ptr::without_provenance_mut(1);

/// One of the API's function pointers; used inside `unsafe` blocks only.
/// The pointers are filled in by `RedisModule_Init` when the module loads,
/// before any command runs, and never written again: reading one copies a
/// plain `Option<fn>` out of its static.
macro_rules! api {
    ($name:ident) => {{
        raw::$name.expect(concat!(
            stringify!($name),
            " is missing from the server's module API"
        ))
    }};
}

/// A server string (`RedisModuleString`): one value serves both the write
/// on the key and its replication. Owns one reference, freed on drop,
/// unless it is a [`Str::name`].
pub(crate) struct Str {
    ctx: *mut raw::RedisModuleCtx,
    ptr: *mut raw::RedisModuleString,
    owned: bool,
}

thread_local! {
    /// The names of our vocabulary (fields, event words) as server strings,
    /// made once each and kept for the module's life: commands run on the
    /// server's main thread, and the vocabulary is the code's own, so this
    /// stays a few dozen entries.
    static NAMES: RefCell<Names> = RefCell::new(Names::default());
}

/// Slots of [`Names`]' front cache (a power of two).
const RECENT_SLOTS: usize = 64;

/// The kept names: by their bytes, and in front of that a direct-mapped
/// cache by where the caller's bytes live. Names are almost always string
/// literals, so the same address comes back on every call: one multiply
/// and one short compare find it, where the map hashes the bytes and
/// probes. The compare keeps it exact when an address is reused for other
/// bytes.
struct Names {
    by_bytes: FastMap<Vec<u8>, usize>,
    /// Boxed: a module's thread-locals live in the loader's small static
    /// TLS block, which refuses kilobytes.
    recent: Box<[Recent; RECENT_SLOTS]>,
}

/// One slot of the front cache: the caller's address and length, the kept
/// copy of the bytes (a map key's buffer: never freed nor moved), and the
/// server string.
#[derive(Clone, Copy)]
struct Recent {
    addr: usize,
    kept: *const u8,
    len: usize,
    string: usize,
}

impl Default for Names {
    fn default() -> Self {
        let empty = Recent {
            addr: 0,
            kept: ptr::null(),
            len: 0,
            string: 0,
        };
        Self {
            by_bytes: FastMap::default(),
            recent: Box::new([empty; RECENT_SLOTS]),
        }
    }
}

impl Names {
    /// The kept server string of `bytes`, made on first use.
    fn get(&mut self, bytes: &[u8]) -> usize {
        let addr = bytes.as_ptr() as usize;
        let slot = (addr ^ bytes.len()).wrapping_mul(crate::server::fast_hash::SEED as usize)
            >> (usize::BITS - RECENT_SLOTS.trailing_zeros());
        let recent = self.recent[slot];
        // SAFETY: `kept` is the buffer of a key of `by_bytes`, whose entries
        // are never removed, and `len` its length.
        if recent.string != 0
            && recent.addr == addr
            && recent.len == bytes.len()
            && unsafe { std::slice::from_raw_parts(recent.kept, recent.len) } == bytes
        {
            return recent.string;
        }
        let (kept, string) = match self.by_bytes.get_key_value(bytes) {
            Some((kept, string)) => (kept.as_ptr(), *string),
            None => {
                let made = Str::with_ctx(ptr::null_mut(), bytes);
                let string = made.ptr as usize;
                std::mem::forget(made);
                let key = bytes.to_vec();
                let kept = key.as_ptr();
                self.by_bytes.insert(key, string);
                (kept, string)
            }
        };
        self.recent[slot] = Recent {
            addr,
            kept,
            len: bytes.len(),
            string,
        };
        string
    }
}

/// Slots of [`Members`] (a power of two), and how many a lookup probes.
const MEMBER_SLOTS: usize = 256;
const MEMBER_PROBES: usize = 4;

/// The job ids one command wrote, as server strings, found by where the
/// caller's bytes live: a command that moves a job passes the same buffer
/// to its event and to each set the job leaves or enters, so one string
/// serves them all. Open addressing over a fixed table (made on first use)
/// rather than a map: a lookup costs a multiply and a compare, which is
/// what makes sharing a string cheaper than making another. Every string
/// is kept until the command ends, as its aliases may be.
#[derive(Default)]
pub(crate) struct Members {
    slots: Option<Box<[Member]>>,
    /// Strings whose slot a later id took, kept for their aliases.
    evicted: Vec<Str>,
}

/// One slot of [`Members`]: the caller's address and length, and the
/// string made of the bytes there.
#[derive(Default)]
struct Member {
    addr: usize,
    len: usize,
    string: Option<Str>,
}

impl Members {
    /// An alias of `id`'s string, valid while this table lives: the one
    /// made for the same bytes at the same address, else a new one.
    pub(crate) fn get(&mut self, ctx: &Context, id: &[u8]) -> Str {
        let (addr, len) = (id.as_ptr() as usize, id.len());
        // Built in place: a boxed array would be built on the stack, then
        // copied.
        let slots = self
            .slots
            .get_or_insert_with(|| (0..MEMBER_SLOTS).map(|_| Member::default()).collect());
        let home = (addr ^ len).wrapping_mul(crate::server::fast_hash::SEED as usize)
            >> (usize::BITS - MEMBER_SLOTS.trailing_zeros());
        let mut free = None;
        for probe in 0..MEMBER_PROBES {
            let at = (home + probe) % MEMBER_SLOTS;
            match &slots[at].string {
                Some(string) if slots[at].addr == addr && slots[at].len == len => {
                    // The bytes there may have changed since: the string
                    // serves only the same bytes.
                    if string.as_slice() == id {
                        return string.alias();
                    }
                    free = free.or(Some(at));
                }
                Some(_) => {}
                None => {
                    free = free.or(Some(at));
                    break;
                }
            }
        }
        let at = free.unwrap_or(home);
        let string = Str::new(ctx, id);
        let alias = string.alias();
        let slot = &mut slots[at];
        if let Some(old) = slot.string.replace(string) {
            self.evicted.push(old);
        }
        (slot.addr, slot.len) = (addr, len);
        alias
    }
}

impl Str {
    /// A copy of `bytes` as a server string.
    pub(crate) fn new(ctx: &Context, bytes: &[u8]) -> Self {
        Self::with_ctx(ctx.ctx, bytes)
    }

    fn with_ctx(ctx: *mut raw::RedisModuleCtx, bytes: &[u8]) -> Self {
        // SAFETY: `ctx` is the live context of the running command and the
        // server copies `bytes` into the new string.
        let ptr = unsafe {
            api!(RedisModule_CreateString)(ctx, bytes.as_ptr().cast::<c_char>(), bytes.len())
        };
        Self {
            ctx,
            ptr,
            owned: true,
        }
    }

    /// An integer as a server string (its decimal digits).
    pub(crate) fn int(ctx: &Context, n: i64) -> Self {
        // SAFETY: `ctx` is the live context of the running command.
        let ptr = unsafe { api!(RedisModule_CreateStringFromLongLong)(ctx.ctx, n) };
        Self {
            ctx: ctx.ctx,
            ptr,
            owned: true,
        }
    }

    /// A name of the code's own vocabulary (a field, an event word): the
    /// one server string kept for it, which this value does not free. Saves
    /// an allocation per use on the hot paths.
    pub(crate) fn name(bytes: &[u8]) -> Self {
        let ptr = NAMES.with(|names| names.borrow_mut().get(bytes)) as *mut raw::RedisModuleString;
        Self {
            ctx: ptr::null_mut(),
            ptr,
            owned: false,
        }
    }

    /// Another handle on the same server string that does not free it:
    /// valid while `self` lives.
    pub(crate) fn alias(&self) -> Self {
        Self {
            ctx: self.ctx,
            ptr: self.ptr,
            owned: false,
        }
    }

    /// Takes ownership of a string the server handed out (none for null).
    fn adopt(ctx: *mut raw::RedisModuleCtx, ptr: *mut raw::RedisModuleString) -> Option<Self> {
        (!ptr.is_null()).then(|| Self {
            ctx,
            ptr,
            owned: true,
        })
    }

    /// The server string, for an argument vector.
    pub(crate) fn ptr(&self) -> *mut raw::RedisModuleString {
        self.ptr
    }

    fn bytes(&self) -> Vec<u8> {
        self.as_slice().to_vec()
    }

    /// The string's bytes, borrowed for as long as this value lives (the
    /// server string is immutable while referenced).
    pub(crate) fn as_slice(&self) -> &[u8] {
        let mut len = 0usize;
        // SAFETY: `ptr` is a live string; the returned pointer stays valid
        // while it lives and `len` bytes are readable from it.
        unsafe {
            let data = api!(RedisModule_StringPtrLen)(self.ptr, &mut len);
            std::slice::from_raw_parts(data.cast::<u8>(), len)
        }
    }
}

impl Drop for Str {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        // SAFETY: this value owns one reference to the string.
        unsafe { api!(RedisModule_FreeString)(self.ctx, self.ptr) }
    }
}

/// Runs `f` on the pointers `ptrs` as one array: on the stack for the
/// usual handful, on the heap beyond 32.
fn with_argv<R>(
    ptrs: impl Iterator<Item = *mut raw::RedisModuleString>,
    f: impl FnOnce(&mut [*mut raw::RedisModuleString]) -> R,
) -> R {
    let mut stack = [ptr::null_mut(); 32];
    let mut heap = Vec::new();
    let mut len = 0;
    for p in ptrs {
        if len < stack.len() {
            stack[len] = p;
        } else {
            if heap.is_empty() {
                heap.extend_from_slice(&stack);
            }
            heap.push(p);
        }
        len += 1;
    }
    if heap.is_empty() {
        f(&mut stack[..len])
    } else {
        f(&mut heap)
    }
}

/// Turns off the server's signal of every key a module opened for writing
/// (at `CloseKey`): a handle signals its key only when a write changed it
/// ([`Handle`]), as the commands a script calls do, so a command that only
/// read a key, or was refused, leaves a WATCH on it intact on both wires.
pub(crate) fn signal_only_writes(ctx: &Context) {
    ctx.set_module_options(raw::ModuleOptions::NO_IMPLICIT_SIGNAL_MODIFIED);
}

/// The decimal digits of an integer, kept on the stack: the per-job
/// numbers of the hot paths (a token, a priority) without an allocation.
pub(crate) struct Digits {
    /// Room for u64::MAX, and for i64::MIN with its sign.
    text: [u8; 21],
    start: usize,
}

impl Digits {
    /// The digits of `n`.
    pub(crate) fn of(n: u64) -> Self {
        let mut text = [0u8; 21];
        let mut start = text.len();
        let mut rest = n;
        loop {
            start -= 1;
            text[start] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                return Self { text, start };
            }
        }
    }

    /// The digits of `n`, after a `-` when negative.
    pub(crate) fn signed(n: i64) -> Self {
        let mut digits = Self::of(n.unsigned_abs());
        if n < 0 {
            digits.start -= 1;
            digits.text[digits.start] = b'-';
        }
        digits
    }

    /// The digits as bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.text[self.start..]
    }
}

/// A stream entry's id, `<ms>-<seq>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventId {
    pub ms: u64,
    pub seq: u64,
}

impl EventId {
    /// The id after this one, as `XADD *` takes it within one millisecond.
    pub(crate) fn next(self) -> Self {
        match self.seq.checked_add(1) {
            Some(seq) => Self { ms: self.ms, seq },
            None => Self {
                ms: self.ms.saturating_add(1),
                seq: 0,
            },
        }
    }

    /// Parses `<ms>-<seq>`.
    pub(crate) fn parse(text: &[u8]) -> Option<Self> {
        let text = std::str::from_utf8(text).ok()?;
        let (ms, seq) = text.split_once('-')?;
        Some(Self {
            ms: ms.parse().ok()?,
            seq: seq.parse().ok()?,
        })
    }
}

impl std::fmt::Display for EventId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// What a key holds, as `TYPE` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    None,
    String,
    List,
    Hash,
    Set,
    Zset,
    Stream,
    Other,
}

/// The key holds another type than the operation takes (`WRONGTYPE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WrongType;

/// Bounds of a score range: a value and whether it is excluded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bound {
    pub score: f64,
    pub exclusive: bool,
}

impl Bound {
    /// Every score from the lowest.
    pub(crate) const LOWEST: Bound = Bound {
        score: f64::NEG_INFINITY,
        exclusive: false,
    };
    /// Every score to the highest.
    pub(crate) const HIGHEST: Bound = Bound {
        score: f64::INFINITY,
        exclusive: false,
    };

    /// Up to and including `score`.
    pub(crate) fn upto(score: f64) -> Self {
        Self {
            score,
            exclusive: false,
        }
    }

    /// From `score` on, included (a lower bound).
    pub(crate) fn from(score: f64) -> Self {
        Self {
            score,
            exclusive: false,
        }
    }

    /// Up to but excluding `score`.
    pub(crate) fn below(score: f64) -> Self {
        Self {
            score,
            exclusive: true,
        }
    }
}

/// An open key, closed on drop. Opened for reading, or for reading and
/// writing; the write operations below take a writable handle.
pub(crate) struct Handle {
    ctx: *mut raw::RedisModuleCtx,
    ptr: *mut raw::RedisModuleKey,
    writable: bool,
    /// The key's name, kept as the first argument of replicated writes.
    name: Str,
    /// Whether a write changed the key, as the command it stands for would
    /// count it: the key is signalled as modified (WATCH, client tracking)
    /// when the handle closes, and only then (see [`signal_only_writes`]).
    changed: Cell<bool>,
}

impl Handle {
    /// Opens `name`; an absent key opened for reading has a null handle,
    /// which every read below takes as empty.
    pub(crate) fn open(ctx: &Context, name: &[u8], writable: bool) -> Self {
        let name = Str::new(ctx, name);
        let mode = if writable { READ | WRITE } else { READ };
        // SAFETY: live context and key name, which outlives the handle.
        let ptr = unsafe { api!(RedisModule_OpenKey)(ctx.ctx, name.ptr, mode) };
        Self {
            ctx: ctx.ctx,
            ptr,
            writable,
            name,
            changed: Cell::new(false),
        }
    }

    /// Records that a write changed the key.
    fn touched(&self, changed: bool) {
        if changed {
            self.changed.set(true);
            crate::server::replicate::wrote();
        }
    }

    /// Whether the write operations may be used.
    pub(crate) fn writable(&self) -> bool {
        self.writable
    }

    /// The type of the key (`TYPE`).
    pub(crate) fn kind(&self) -> Kind {
        // SAFETY: `KeyType` accepts a null handle (an absent key).
        match unsafe { api!(RedisModule_KeyType)(self.ptr) } {
            KEYTYPE_EMPTY => Kind::None,
            KEYTYPE_STRING => Kind::String,
            KEYTYPE_LIST => Kind::List,
            KEYTYPE_HASH => Kind::Hash,
            KEYTYPE_SET => Kind::Set,
            KEYTYPE_ZSET => Kind::Zset,
            KEYTYPE_STREAM => Kind::Stream,
            _ => Kind::Other,
        }
    }

    /// Absent (false), or of kind `want` (true).
    fn expect(&self, want: Kind) -> Result<bool, WrongType> {
        match self.kind() {
            Kind::None => Ok(false),
            found if found == want => Ok(true),
            _ => Err(WrongType),
        }
    }

    /// Elements of a collection of kind `want`; 0 when absent.
    pub(crate) fn len(&self, want: Kind) -> Result<usize, WrongType> {
        self.expect(want)?;
        // SAFETY: `ValueLength` accepts a null handle.
        Ok(unsafe { api!(RedisModule_ValueLength)(self.ptr) })
    }

    /// Fields of a hash (`HMGET`), named from the code's vocabulary
    /// ([`Str::name`]).
    pub(crate) fn hash_get(&self, fields: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>, WrongType> {
        if !self.expect(Kind::Hash)? {
            return Ok(vec![None; fields.len()]);
        }
        Ok(fields
            .iter()
            .map(|field| self.hash_field(&Str::name(field)))
            .collect())
    }

    /// One field of a hash whose name is data, not the code's vocabulary (a
    /// dedup key), given as a server string the caller owns: never kept
    /// among the names (`HGET`).
    pub(crate) fn hash_get_value(&self, field: &Str) -> Result<Option<Vec<u8>>, WrongType> {
        if !self.expect(Kind::Hash)? {
            return Ok(None);
        }
        Ok(self.hash_field(field))
    }

    /// One field of an open hash.
    fn hash_field(&self, field: &Str) -> Option<Vec<u8>> {
        let mut value: *mut raw::RedisModuleString = ptr::null_mut();
        // SAFETY: an open hash, one field/out-pointer pair, then the
        // terminating null the variadic call expects.
        unsafe {
            api!(RedisModule_HashGet)(
                self.ptr,
                HASH_NONE,
                field.ptr,
                &mut value as *mut *mut raw::RedisModuleString,
                ptr::null_mut::<c_char>(),
            )
        };
        Str::adopt(self.ctx, value).map(|value| value.bytes())
    }

    /// Sets hash fields from a flat field/value list (`HSET`).
    pub(crate) fn hash_set(&self, pairs: &[Str]) -> Result<(), WrongType> {
        self.expect(Kind::Hash)?;
        // Up to four pairs per `HashSet`: the call's own checks once for
        // them, not once a field.
        for four in pairs.chunks(8) {
            let p = |i: usize| four.get(i).map_or(ptr::null_mut(), |s: &Str| s.ptr);
            // SAFETY: a writable key holding a hash or nothing (checked
            // above), whole field/value pairs, and the terminating null
            // after the last.
            unsafe {
                let set = api!(RedisModule_HashSet);
                let end = ptr::null_mut::<c_char>();
                // Whole pairs only, as `chunks_exact(2)` would take them.
                match four.len() & !1 {
                    0 => 0,
                    2 => set(self.ptr, HASH_NONE, p(0), p(1), end),
                    4 => set(self.ptr, HASH_NONE, p(0), p(1), p(2), p(3), end),
                    6 => set(self.ptr, HASH_NONE, p(0), p(1), p(2), p(3), p(4), p(5), end),
                    _ => set(
                        self.ptr,
                        HASH_NONE,
                        p(0),
                        p(1),
                        p(2),
                        p(3),
                        p(4),
                        p(5),
                        p(6),
                        p(7),
                        end,
                    ),
                };
            }
        }
        // HSET signals the key whatever it set.
        self.touched(true);
        Ok(())
    }

    /// Sets one hash field (`HSET key field value`).
    pub(crate) fn hash_set_pair(&self, field: &Str, value: &Str) -> Result<(), WrongType> {
        self.expect(Kind::Hash)?;
        self.hash_write(field, value.ptr);
        self.touched(true);
        Ok(())
    }

    /// Deletes hash fields (`HDEL`; an emptied hash is deleted); returns
    /// how many were there.
    pub(crate) fn hash_del(&self, fields: &[Str]) -> Result<usize, WrongType> {
        if !self.expect(Kind::Hash)? {
            return Ok(0);
        }
        let deleted: usize = fields
            .iter()
            .map(|field| self.hash_write(field, HASH_DELETE) as usize)
            .sum();
        self.touched(deleted > 0);
        Ok(deleted)
    }

    /// One `HashSet` pair; returns how many fields it changed.
    fn hash_write(&self, field: &Str, value: *mut raw::RedisModuleString) -> c_int {
        // SAFETY: a writable key holding a hash or nothing (checked by the
        // callers), one field/value pair and the terminating null.
        unsafe {
            api!(RedisModule_HashSet)(
                self.ptr,
                HASH_NONE,
                field.ptr,
                value,
                ptr::null_mut::<c_char>(),
            )
        }
    }

    /// Adds or rescores members (`ZADD`, with `LT` when `lower_only`);
    /// true when anything changed.
    pub(crate) fn zset_add(
        &self,
        members: &[(f64, &Str)],
        lower_only: bool,
    ) -> Result<bool, WrongType> {
        self.expect(Kind::Zset)?;
        let mut changed = false;
        for (score, member) in members {
            let mut flags = if lower_only { ZADD_LT } else { 0 };
            // SAFETY: a writable key holding a sorted set or nothing.
            unsafe { api!(RedisModule_ZsetAdd)(self.ptr, *score, member.ptr, &mut flags) };
            changed |= flags & (ZADD_ADDED | ZADD_UPDATED) != 0;
        }
        self.touched(changed);
        Ok(changed)
    }

    /// Removes members (`ZREM`); returns how many were there. An emptied
    /// set is deleted, as `ZREM` does.
    pub(crate) fn zset_rem(&self, members: &[Str]) -> Result<usize, WrongType> {
        if !self.expect(Kind::Zset)? {
            return Ok(0);
        }
        let mut removed = 0;
        for member in members {
            let mut deleted: c_int = 0;
            // SAFETY: a writable sorted-set key.
            unsafe { api!(RedisModule_ZsetRem)(self.ptr, member.ptr, &mut deleted) };
            removed += usize::from(deleted != 0);
        }
        self.touched(removed > 0);
        Ok(removed)
    }

    /// A member's score (`ZSCORE`); `None` when it is not a member.
    pub(crate) fn zset_score(&self, member: &Str) -> Result<Option<f64>, WrongType> {
        if !self.expect(Kind::Zset)? {
            return Ok(None);
        }
        let mut score = 0f64;
        // SAFETY: an open sorted-set key and a live member string.
        let found = unsafe { api!(RedisModule_ZsetScore)(self.ptr, member.ptr, &mut score) };
        Ok((found == raw::Status::Ok as c_int).then_some(score))
    }

    /// At most `limit` members with scores in [min, max], lowest first,
    /// ties in member order (`ZRANGE key min max BYSCORE LIMIT 0 limit`).
    pub(crate) fn zset_range(
        &self,
        min: Bound,
        max: Bound,
        limit: usize,
    ) -> Result<Vec<(Vec<u8>, f64)>, WrongType> {
        let mut out = Vec::new();
        if !self.expect(Kind::Zset)? || limit == 0 {
            return Ok(out);
        }
        // SAFETY: an open sorted-set key; the iterator is stopped before
        // returning.
        unsafe {
            api!(RedisModule_ZsetFirstInScoreRange)(
                self.ptr,
                min.score,
                max.score,
                c_int::from(min.exclusive),
                c_int::from(max.exclusive),
            );
            while api!(RedisModule_ZsetRangeEndReached)(self.ptr) == 0 && out.len() < limit {
                let mut score = 0f64;
                let member = api!(RedisModule_ZsetRangeCurrentElement)(self.ptr, &mut score);
                let Some(member) = Str::adopt(self.ctx, member) else {
                    break;
                };
                out.push((member.bytes(), score));
                if api!(RedisModule_ZsetRangeNext)(self.ptr) == 0 {
                    break;
                }
            }
            api!(RedisModule_ZsetRangeStop)(self.ptr);
        }
        Ok(out)
    }

    /// The highest score of an open sorted set; `None` when empty.
    pub(crate) fn zset_last_score(&self) -> Result<Option<f64>, WrongType> {
        if !self.expect(Kind::Zset)? {
            return Ok(None);
        }
        let mut last = None;
        // SAFETY: an open sorted-set key; the iterator is stopped before
        // returning.
        unsafe {
            api!(RedisModule_ZsetLastInScoreRange)(
                self.ptr,
                f64::NEG_INFINITY,
                f64::INFINITY,
                0,
                0,
            );
            if api!(RedisModule_ZsetRangeEndReached)(self.ptr) == 0 {
                let mut score = 0f64;
                let member = api!(RedisModule_ZsetRangeCurrentElement)(self.ptr, &mut score);
                if Str::adopt(self.ctx, member).is_some() {
                    last = Some(score);
                }
            }
            api!(RedisModule_ZsetRangeStop)(self.ptr);
        }
        Ok(last)
    }

    /// Pushes `items` at the tail of a list, in order (`RPUSH`).
    pub(crate) fn list_push(&self, items: &[Str]) -> Result<(), WrongType> {
        self.expect(Kind::List)?;
        for item in items {
            // SAFETY: a writable key holding a list or nothing, and a live
            // string (the server takes a reference).
            unsafe { api!(RedisModule_ListPush)(self.ptr, LIST_TAIL, item.ptr) };
        }
        self.touched(!items.is_empty());
        Ok(())
    }

    /// Element `index` (from 0) of an open list that has it.
    fn list_get(&self, index: usize) -> Option<Str> {
        let index = c_long::try_from(index).ok()?;
        // SAFETY: an open list key; the returned string is ours to free.
        Str::adopt(self.ctx, unsafe {
            api!(RedisModule_ListGet)(self.ptr, index)
        })
    }

    /// At most `limit` elements from a list's head (`LRANGE key 0
    /// limit-1`).
    pub(crate) fn list_head(&self, limit: usize) -> Result<Vec<Vec<u8>>, WrongType> {
        let len = self.len(Kind::List)?.min(limit);
        // Read in order: the server steps its iterator from one to the next.
        Ok((0..len)
            .map_while(|index| self.list_get(index).map(|item| item.bytes()))
            .collect())
    }

    /// Pops at most `count` elements from a list's head (`LPOP key count`;
    /// an emptied list is deleted); returns how many it popped.
    pub(crate) fn list_pop(&self, count: usize) -> Result<usize, WrongType> {
        let len = self.len(Kind::List)?.min(count);
        let mut popped = 0;
        while popped < len {
            // SAFETY: a writable list key; the popped string is ours to free.
            let item = unsafe { api!(RedisModule_ListPop)(self.ptr, LIST_HEAD) };
            if Str::adopt(self.ctx, item).is_none() {
                break;
            }
            popped += 1;
        }
        self.touched(popped > 0);
        Ok(popped)
    }

    /// A string value (`GET`).
    pub(crate) fn string_get(&self) -> Result<Option<Vec<u8>>, WrongType> {
        if !self.expect(Kind::String)? {
            return Ok(None);
        }
        let mut len = 0usize;
        // SAFETY: an open string key; DMA for reading, copied out at once.
        Ok(unsafe {
            let data = api!(RedisModule_StringDMA)(self.ptr, &mut len, READ);
            (!data.is_null()).then(|| std::slice::from_raw_parts(data.cast::<u8>(), len).to_vec())
        })
    }

    /// `INCRBY` in place: the stored integer plus `by`, written over the
    /// old digits. `Ok(None)` when the value is not an integer (or would
    /// overflow), which `INCRBY` refuses.
    pub(crate) fn string_incr(&self, by: i64) -> Result<Option<i64>, WrongType> {
        let current = match self.string_get()? {
            None => 0,
            // Only the canonical form INCR takes: no sign, spaces or zeros.
            Some(text) => match std::str::from_utf8(&text)
                .ok()
                .and_then(|t| t.parse::<i64>().ok())
            {
                Some(n) if n.to_string().as_bytes() == text.as_slice() => n,
                _ => return Ok(None),
            },
        };
        let Some(next) = current.checked_add(by) else {
            return Ok(None);
        };
        let digits = next.to_string();
        // SAFETY: a writable string key (or an absent one, which Truncate
        // creates); the DMA pointer is taken after the resize and `len`
        // bytes are writable from it.
        unsafe {
            api!(RedisModule_StringTruncate)(self.ptr, digits.len());
            let mut len = 0usize;
            let data = api!(RedisModule_StringDMA)(self.ptr, &mut len, READ | WRITE);
            if data.is_null() || len != digits.len() {
                return Ok(None);
            }
            std::slice::from_raw_parts_mut(data.cast::<u8>(), len)
                .copy_from_slice(digits.as_bytes());
        }
        self.touched(true);
        Ok(Some(next))
    }

    /// Appends an entry at `id` (`XADD key id …`), or with an automatic id
    /// when `id` is none (or, should the stream's last id be higher, which
    /// a replay never meets); then, with `max`, trims to about `max`
    /// entries as `XADD key MAXLEN ~ max` does. Returns the entry's id,
    /// whether the trim removed entries, and the stream's length after.
    pub(crate) fn stream_add(
        &self,
        fields: &[Str],
        id: Option<EventId>,
        max: Option<i64>,
    ) -> Result<(EventId, bool, usize), WrongType> {
        self.expect(Kind::Stream)?;
        let mut added = raw::RedisModuleStreamID { ms: 0, seq: 0 };
        with_argv(fields.iter().map(|field| field.ptr), |argv| {
            let pairs = (argv.len() / 2) as i64;
            // SAFETY: a writable key holding a stream or nothing; `argv`
            // holds field/value pairs that live until the end of this call.
            unsafe {
                let add = api!(RedisModule_StreamAdd);
                let explicit = id.is_some_and(|id| {
                    added = raw::RedisModuleStreamID {
                        ms: id.ms,
                        seq: id.seq,
                    };
                    add(self.ptr, 0, &mut added, argv.as_mut_ptr(), pairs)
                        == raw::Status::Ok as c_int
                });
                if !explicit {
                    add(
                        self.ptr,
                        STREAM_ADD_AUTOID,
                        &mut added,
                        argv.as_mut_ptr(),
                        pairs,
                    );
                }
            };
        });
        self.touched(true);
        // SAFETY: the same key, still open for writing.
        unsafe {
            let trimmed = max.map_or(0, |max| {
                api!(RedisModule_StreamTrimByLength)(self.ptr, STREAM_TRIM_APPROX, max)
            });
            let len = api!(RedisModule_ValueLength)(self.ptr);
            let id = EventId {
                ms: added.ms,
                seq: added.seq,
            };
            Ok((id, trimmed > 0, len))
        }
    }

    /// Trims a stream to exactly its newest `len` entries (`XTRIM key
    /// MAXLEN len`); nothing when the key holds no stream.
    pub(crate) fn stream_trim_exact(&self, len: u64) {
        if self.kind() == Kind::Stream {
            let len = i64::try_from(len).unwrap_or(i64::MAX);
            // SAFETY: a writable stream key.
            let trimmed = unsafe { api!(RedisModule_StreamTrimByLength)(self.ptr, 0, len) };
            self.touched(trimmed > 0);
        }
    }

    /// Whether the key has an expiry (`PTTL` ≥ 0).
    pub(crate) fn has_expire(&self) -> bool {
        // SAFETY: an open key (a null handle reads as no expiry).
        !self.ptr.is_null() && unsafe { api!(RedisModule_GetExpire)(self.ptr) } >= 0
    }

    /// Sets the key's expiry to an absolute instant, ms (`PEXPIREAT`).
    pub(crate) fn set_abs_expire(&self, at_ms: i64) {
        // SAFETY: a writable key that exists (the caller wrote it).
        unsafe { api!(RedisModule_SetAbsExpire)(self.ptr, at_ms) };
        self.touched(true);
    }

    /// Deletes the key (`DEL`); true when it existed.
    pub(crate) fn delete(&self) -> bool {
        let existed = self.kind() != Kind::None;
        if existed {
            // SAFETY: a writable key.
            unsafe { api!(RedisModule_DeleteKey)(self.ptr) };
        }
        self.touched(existed);
        existed
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        if self.changed.get() {
            // SAFETY: the live context of the running command and the key's
            // name, which this handle keeps.
            unsafe { api!(RedisModule_SignalModifiedKey)(self.ctx, self.name.ptr) };
        }
        // SAFETY: `CloseKey` accepts null, and this value owns the handle.
        unsafe { api!(RedisModule_CloseKey)(self.ptr) }
    }
}
