//! The server's low-level key API (`RedisModule_OpenKey` and the hash, sorted
//! set, list, string and stream calls on an open key): what the commands use
//! instead of `RedisModule_Call`, which costs a command lookup, an argument
//! vector and a reply object per call.
//!
//! This folder, `clock.rs`, `acl.rs`, `publish.rs` and `replicate.rs` are
//! the only places with `unsafe`. A [`Handle`] is one open key (this file: opening,
//! type, expiry, deletion; the calls on each kind of key in `hash.rs`,
//! `zset.rs`, `list.rs`, `string.rs`, `stream.rs`); a [`Str`] one server
//! string (`server_str.rs`); `numbers.rs` holds the ids and bounds it
//! takes. `Store` keeps the handles of one command and closes them all
//! before any `RedisModule_Call`, so no handle sees a key change under it.
//! Nothing here replicates: a command is replicated whole
//! (`replicate.rs`), and a handle tells it when a write changed a key.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::os::raw::c_int;
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

// After the macro, which the calls on each kind of key use.
mod hash;
mod list;
mod numbers;
mod server_str;
mod stream;
mod string;
mod zset;

pub(crate) use numbers::{Bound, Digits, EventId};
pub(crate) use server_str::{Members, Str};

/// Turns off the server's signal of every key a module opened for writing
/// (at `CloseKey`): a handle signals its key only when a write changed it
/// ([`Handle`]), as the commands a script calls do, so a command that only
/// read a key, or was refused, leaves a WATCH on it intact on both wires.
pub(crate) fn signal_only_writes(ctx: &Context) {
    ctx.set_module_options(raw::ModuleOptions::NO_IMPLICIT_SIGNAL_MODIFIED);
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
