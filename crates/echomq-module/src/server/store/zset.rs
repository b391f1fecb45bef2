//! The store's sorted-set calls (`ZADD`, `ZREM`, `ZSCORE`, `ZCARD`, ranges
//! by score), each on the key's open handle.

use super::{Reply, Store, wrongtype};
use crate::server::clock;
use crate::server::key::{Bound, Kind, Str};
use echomq_protocol::QueueKey;
use echomq_protocol::arg::SKIPLIST_LEASES;
use std::sync::atomic::{AtomicU64, Ordering};
use valkey_module::ValkeyError;

/// The longest `zset-max-listpack-value` for which a member is padded
/// past it ([`Store::add_leases`]).
const SKIPLIST_PAD_MAX: usize = 4096;

/// How long a `zset-max-listpack-value` read is used before it is read
/// again, ms. A worker over several queues refills an active set at
/// nearly every claim, and `CONFIG GET` through `RM_Call` was 2.7 % of
/// the server's time there; a setting changed meanwhile costs at most a
/// second of claims whose set keeps the server's own encoding (a pad too
/// short) or gets a pad longer than needed: the keyspace is the same.
const PAD_LIMIT_READ_EVERY_MS: u64 = 1000;

/// The last `zset-max-listpack-value` read, for [`Store::skiplist_pad`].
static PAD_LIMIT: PadLimit = PadLimit {
    read_at_ms: AtomicU64::new(0),
    limit: AtomicU64::new(NO_PAD),
};

/// [`PadLimit::limit`]'s mark for "no pad": the server keeps long members
/// in listpacks, or did not tell its setting.
const NO_PAD: u64 = u64::MAX;

/// A `zset-max-listpack-value` and when it was read (the server's clock,
/// ms; 0: never). Commands run one at a time on the server's main thread:
/// the atomics only make the static safe to share.
struct PadLimit {
    read_at_ms: AtomicU64,
    limit: AtomicU64,
}

impl PadLimit {
    /// The limit read within the last [`PAD_LIMIT_READ_EVERY_MS`], else
    /// the one `read` answers now (kept for the next claims).
    fn get_or_read(&self, read: impl FnOnce() -> Option<usize>) -> Option<usize> {
        let now = clock::read();
        let read_at = self.read_at_ms.load(Ordering::Relaxed);
        if read_at == 0 || now.saturating_sub(read_at) >= PAD_LIMIT_READ_EVERY_MS {
            let limit = read().map_or(NO_PAD, |limit| limit as u64);
            self.limit.store(limit, Ordering::Relaxed);
            self.read_at_ms.store(now.max(1), Ordering::Relaxed);
        }
        match self.limit.load(Ordering::Relaxed) {
            NO_PAD => None,
            limit => usize::try_from(limit).ok(),
        }
    }
}

impl Store<'_> {
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
    ///
    /// The long member goes in before the leases, not after: they then go
    /// straight into the skiplist, with no listpack to scan on the way
    /// and none to convert. A set that empties at every batch (a worker
    /// over several queues holds one batch of a queue at a time: the
    /// completions empty the set, the claim riding on them fills it again)
    /// paid those scans and that conversion at every claim.
    pub(crate) fn add_leases(&self, leases: &[(i64, &[u8])]) -> Result<(), ValkeyError> {
        let active = self.key(QueueKey::Active);
        let before = self.zcard(active)?;
        // Every lease is new: a claimed job was in no state set but pending.
        let after = before + leases.len() as i64;
        let at = SKIPLIST_LEASES as i64;
        let pad = if before < at && after >= at {
            self.skiplist_pad()
        } else {
            None
        };
        if let Some(pad) = &pad {
            self.zadd(active, &[(0, pad.as_slice())])?;
        }
        self.zadd(active, leases)?;
        if let Some(pad) = &pad {
            self.zrem(active, &[pad.as_slice()])?;
        }
        Ok(())
    }

    /// A member that makes the sorted set it joins a skiplist (see
    /// [`Store::add_leases`]): one byte longer than the server's
    /// `zset-max-listpack-value`. `None` when the server keeps members that
    /// long in listpacks, or does not tell its setting: the set then stays
    /// as the server encodes it.
    fn skiplist_pad(&self) -> Option<Vec<u8>> {
        let limit = PAD_LIMIT.get_or_read(|| self.listpack_value_limit())?;
        // Never a job id: ids hold no whitespace and no braces.
        let mut pad = b"{skiplist} ".to_vec();
        pad.resize(limit + 1, b'.');
        Some(pad)
    }

    /// The server's `zset-max-listpack-value` (`CONFIG GET`), when it tells
    /// it and it is below [`SKIPLIST_PAD_MAX`].
    fn listpack_value_limit(&self) -> Option<usize> {
        let limit = match self.read("CONFIG", &[b"GET", b"zset-max-listpack-value"]) {
            Ok(Reply::Array(pair)) => match pair.get(1) {
                Some(Reply::Bytes(value)) => std::str::from_utf8(value)
                    .ok()
                    .and_then(|value| value.parse::<usize>().ok()),
                _ => None,
            },
            _ => None,
        };
        limit.filter(|&limit| limit < SKIPLIST_PAD_MAX)
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

    /// At most `limit` members scored in [min, max], lowest first, each
    /// with its score.
    pub(crate) fn zrange_scored(
        &self,
        key: &[u8],
        min: Bound,
        max: Bound,
        limit: u64,
    ) -> Result<Vec<(Vec<u8>, f64)>, ValkeyError> {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        self.with(key, false, |h| h.zset_range(min, max, limit))
            .map_err(wrongtype)
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
}
