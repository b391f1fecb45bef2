//! A [`Handle`]'s sorted-set calls (`RedisModule_ZsetAdd`, ranges by score).

use super::{Bound, Handle, Kind, Str, WrongType};
use std::os::raw::c_int;
use valkey_module::raw;

const ZADD_LT: c_int = 1 << 6;
const ZADD_ADDED: c_int = 1 << 2;
const ZADD_UPDATED: c_int = 1 << 3;

impl Handle {
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
}
