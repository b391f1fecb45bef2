//! A [`Handle`]'s hash calls (`RedisModule_HashGet`, `RedisModule_HashSet`).

use super::{Handle, Kind, Str, WrongType};
use std::os::raw::{c_char, c_int, c_void};
use std::ptr;
use valkey_module::raw;

const HASH_NONE: c_int = 0;
/// `REDISMODULE_HASH_DELETE`: the value that deletes a hash field.
const HASH_DELETE: *mut raw::RedisModuleString = ptr::without_provenance_mut(1);

impl Handle {
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

    /// The fields and values of a hash holding at most one field, field
    /// and value by turns (`HGETALL`; empty when the key is absent), read
    /// on the key; `None` for a hash of more, whose `HGETALL` order only
    /// the command itself gives (a scan's may differ).
    pub(crate) fn hash_pairs_of_one(&self) -> Result<Option<Vec<Vec<u8>>>, WrongType> {
        if !self.expect(Kind::Hash)? {
            return Ok(Some(Vec::new()));
        }
        if self.len(Kind::Hash)? > 1 {
            return Ok(None);
        }
        /// Keeps one pair the scan calls back with, copied.
        unsafe extern "C" fn keep(
            _key: *mut raw::RedisModuleKey,
            field: *mut raw::RedisModuleString,
            value: *mut raw::RedisModuleString,
            pairs: *mut c_void,
        ) {
            // SAFETY: `pairs` is the vector `hash_pairs_of_one` passed,
            // alive for the scan; the strings are live for this call.
            unsafe {
                let pairs = &mut *pairs.cast::<Vec<Vec<u8>>>();
                for string in [field, value] {
                    let mut len = 0usize;
                    let data = api!(RedisModule_StringPtrLen)(string, &mut len);
                    pairs.push(std::slice::from_raw_parts(data.cast::<u8>(), len).to_vec());
                }
            }
        }
        let mut pairs: Vec<Vec<u8>> = Vec::with_capacity(2);
        // SAFETY: an open hash, a cursor created and destroyed here, and
        // `keep` given the vector it fills, which outlives the scan.
        unsafe {
            let cursor = api!(RedisModule_ScanCursorCreate)();
            let out = (&mut pairs as *mut Vec<Vec<u8>>).cast::<c_void>();
            while api!(RedisModule_ScanKey)(self.ptr, cursor, Some(keep), out) != 0 {}
            api!(RedisModule_ScanCursorDestroy)(cursor);
        }
        Ok(Some(pairs))
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
}
