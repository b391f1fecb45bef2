//! The server's strings (`RedisModuleString`) a command writes with: one
//! [`Str`] serves both the write on the key and its replication. The
//! names of the code's vocabulary are made once for the module's life
//! (`Names`), a command's job ids once per command ([`Members`]).

use crate::server::fast_hash::FastMap;
use std::cell::RefCell;
use std::os::raw::c_char;
use std::ptr;
use valkey_module::{Context, raw};

thread_local! {
    /// The names of our vocabulary (fields, event words) as server strings,
    /// made once each and kept for the module's life: commands run on the
    /// server's main thread, and the vocabulary is the code's own, so this
    /// stays a few dozen entries.
    static NAMES: RefCell<Names> = RefCell::new(Names::default());
}

/// A server string (`RedisModuleString`): one value serves both the write
/// on the key and its replication. Owns one reference, freed on drop,
/// unless it is a [`Str::name`].
pub(crate) struct Str {
    ctx: *mut raw::RedisModuleCtx,
    pub(super) ptr: *mut raw::RedisModuleString,
    owned: bool,
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
    pub(super) fn adopt(
        ctx: *mut raw::RedisModuleCtx,
        ptr: *mut raw::RedisModuleString,
    ) -> Option<Self> {
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

    pub(super) fn bytes(&self) -> Vec<u8> {
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
