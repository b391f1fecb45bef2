//! The store's list calls (`RPUSH`, `LLEN`, `LRANGE`, `LPOP`, `LREM`) and
//! its counters (`INCR`, `INCRBY`), each on the key's open handle.

use super::{Store, wrongtype};
use crate::server::args::refuse;
use crate::server::key::{Digits, Handle, Kind};
use valkey_module::ValkeyError;

/// How many elements [`Store::lpop`] drops with one `LTRIM` rather than
/// one key API pop each.
const TRIM_FROM: usize = 8;

impl Store<'_> {
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
}
