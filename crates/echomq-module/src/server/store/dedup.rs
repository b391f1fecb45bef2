//! Deduplication (`docs/protocol.md`, "Deduplication"): the options ENQUEUE
//! and SCHEDULE share, and the keyspace helpers every release path uses
//! (the helpers of `scripts/include/dedup.lua`). The flow-control
//! commands DEDUP.OWNER and DEDUP.RELEASE are in `commands/flow.rs`.

use crate::server::args::WRONGTYPE;
use crate::server::args::{Opt, Options, refuse};
use crate::server::clock::after;
use crate::server::key::{Bound, Kind, Str};
use crate::server::store::{EnqueueSettings, NewJob, Store};
use echomq_protocol::arg::TRIM_PER_TRANSITION;
use echomq_protocol::{DedupMode, QueueKey};
use valkey_module::ValkeyError;

/// `DEDUP key`, the option ENQUEUE and SCHEDULE share.
pub(crate) const DEDUP: (&str, Opt) = ("DEDUP", Opt::Key { arg: "dedup" });
/// `DEDUP_FOR ms` (≥ 1): a throttle key.
pub(crate) const DEDUP_FOR: (&str, Opt) = ("DEDUP_FOR", Opt::int("dedup_for", 1));
/// `DEBOUNCE ms` (≥ 1), ENQUEUE's only: a debounced job.
pub(crate) const DEBOUNCE: (&str, Opt) = ("DEBOUNCE", Opt::int("debounce", 1));

/// A new job's deduplication key, its mode and the mode's ms.
pub(crate) struct Dedup {
    pub key: Vec<u8>,
    pub mode: DedupMode,
    /// DEDUP_FOR's or DEBOUNCE's ms (0 for a simple key).
    pub ms: u64,
}

/// The dedup options read (`dedup_options`): DEDUP_FOR and DEBOUNCE
/// exclude each other, and each needs DEDUP.
pub(crate) fn dedup_options(opts: &Options) -> Result<Option<Dedup>, ValkeyError> {
    let (dedup_for, debounce) = (opts.int("DEDUP_FOR"), opts.int("DEBOUNCE"));
    if dedup_for.is_some() && debounce.is_some() {
        return Err(refuse("SYNTAX DEDUP_FOR and DEBOUNCE exclude each other"));
    }
    let Some(key) = opts.text("DEDUP") else {
        return match (dedup_for, debounce) {
            (Some(_), _) => Err(refuse("SYNTAX DEDUP_FOR needs DEDUP")),
            (_, Some(_)) => Err(refuse("SYNTAX DEBOUNCE needs DEDUP")),
            _ => Ok(None),
        };
    };
    let (mode, ms) = match (dedup_for, debounce) {
        (Some(ms), _) => (DedupMode::Throttle, ms),
        (_, Some(ms)) => (DedupMode::Debounce, ms),
        _ => (DedupMode::Simple, 0),
    };
    Ok(Some(Dedup {
        key: key.to_vec(),
        mode,
        ms,
    }))
}

/// The job states a debounced job waits in.
fn waits(state: &[u8]) -> bool {
    state == b"scheduled" || state == b"pending"
}

/// Whether a deduplication key is held (`dedup_holder`).
pub(crate) enum Hold {
    /// No owner entry.
    Free,
    /// A throttle key whose time is up, not yet removed: not held.
    Expired,
    /// Held by this job.
    By(Vec<u8>),
}

impl Store<'_> {
    /// Whether `key` is held at `now` (`dedup_holder`): held when it has an
    /// owner entry, unless it is a member of the dedup set (a throttle key)
    /// scored ≤ now. The HGET checks the owner hash's type, the ZSCORE
    /// (only for a key with an owner) the dedup set's.
    pub(crate) fn dedup_holder(&self, key: &Str, now: u64) -> Result<Hold, ValkeyError> {
        let Some(owner) = self.hget_value(self.key(QueueKey::DedupOwner), key)? else {
            return Ok(Hold::Free);
        };
        Ok(match self.zscore(self.key(QueueKey::Dedup), key)? {
            Some(score) if score <= now as f64 => Hold::Expired,
            _ => Hold::By(owner),
        })
    }

    /// Refuses with WRONGTYPE unless the dedup owner hash is a hash or
    /// absent: checked before the first write of a command that may free a
    /// key (`expect_owner_type`).
    pub(crate) fn expect_owner_type(&self) -> Result<(), ValkeyError> {
        self.expect_types(&[(QueueKey::DedupOwner, Kind::Hash)])
    }

    /// Removes at most TRIM_PER_TRANSITION expired throttle keys (score ≤
    /// now), oldest first, with their owners (`trim_dedup`). The read
    /// checks the dedup set's type.
    fn trim_dedup(&self, now: u64) -> Result<(), ValkeyError> {
        let dedup = self.key(QueueKey::Dedup);
        let expired = self.zrange(
            dedup,
            Bound::LOWEST,
            Bound::upto(now as f64),
            TRIM_PER_TRANSITION,
        )?;
        if !expired.is_empty() {
            let members: Vec<&[u8]> = expired.iter().map(Vec::as_slice).collect();
            self.zrem(dedup, &members)?;
            self.hdel_values(self.key(QueueKey::DedupOwner), &members)?;
        }
        Ok(())
    }

    /// Frees the dedup key of job `id` once it finished or is deleted,
    /// unless it is a throttle key, and only while `id` owns it: its owner
    /// entry goes (simple and debounce keys are not in the dedup set)
    /// (`release_dedup`).
    pub(crate) fn release_dedup(
        &self,
        id: &[u8],
        key: Option<&[u8]>,
        mode: Option<&[u8]>,
    ) -> Result<(), ValkeyError> {
        let Some(key) = key else {
            return Ok(());
        };
        let owners = self.key(QueueKey::DedupOwner);
        if mode != Some(b"throttle")
            && self.hget_value(owners, &self.text(key))?.as_deref() == Some(id)
        {
            self.hdel_values(owners, &[key])?;
        }
        Ok(())
    }

    /// CLAIM's hook: a claimed job in debounce mode frees its key
    /// (`release_debounced`). `dedup` is the job's `[dedup_mode, dedup]`.
    pub(crate) fn release_debounced(
        &self,
        id: &[u8],
        dedup: [Option<&[u8]>; 2],
    ) -> Result<(), ValkeyError> {
        let [mode, key] = dedup;
        if mode == Some(b"debounce") {
            self.release_dedup(id, key, mode)?;
        }
        Ok(())
    }

    /// The dedup keys of the jobs `doomed` (ids) carry, read before a
    /// command deletes them, the owner hash's type checked: (id, key, mode)
    /// per job with one (`deleted_dedup_keys`). Reads nothing when no job
    /// holds a key (no owners).
    #[allow(clippy::type_complexity)]
    pub(crate) fn deleted_dedup_keys(
        &self,
        doomed: &[Vec<u8>],
    ) -> Result<Vec<(Vec<u8>, Vec<u8>, Option<Vec<u8>>)>, ValkeyError> {
        let mut held = Vec::new();
        if !self.exists(self.key(QueueKey::DedupOwner)) {
            return Ok(held);
        }
        for id in doomed {
            let [key, mode] = self.hmget_n(&self.job_key(id), [b"dedup", b"dedup_mode"])?;
            if let Some(key) = key {
                held.push((id.clone(), key, mode));
            }
        }
        self.expect_owner_type()?;
        Ok(held)
    }

    /// ENQUEUE or SCHEDULE of one job with a dedup key, the other keys'
    /// types checked (the dedup keys' by their first read, before any
    /// write) (`enqueue_deduplicated`): an id that exists changes nothing; a
    /// held key creates nothing (or debounces its waiting debounced job);
    /// else the job is created and takes the key. Only a throttle key
    /// enters the dedup set, and only a throttle enqueue trims expired
    /// entries; a simple or debounce key taken from an expired throttle
    /// entry leaves the set.
    pub(crate) fn enqueue_deduplicated(
        &self,
        conf: &EnqueueSettings,
        job: NewJob,
        now: u64,
    ) -> Result<Vec<(Vec<u8>, i64)>, ValkeyError> {
        let Some(dedup) = &job.dedup else {
            return self.enqueue_jobs(conf, vec![job], now);
        };
        if job.id != b"*" {
            match self.kind(&self.job_key(&job.id)) {
                Kind::Hash => return Ok(vec![(job.id, 0)]),
                Kind::None => {}
                _ => return Err(refuse(WRONGTYPE)),
            }
        }
        // One server copy of the key serves the read and the writes.
        let key = self.text(&dedup.key);
        let expired = match self.dedup_holder(&key, now)? {
            Hold::By(holder) => return self.deduplicated(conf, holder, &job, now),
            Hold::Expired => true,
            Hold::Free => false,
        };
        let (mode, ms) = (dedup.mode, dedup.ms);
        if mode == DedupMode::Throttle {
            self.trim_dedup(now)?;
        }
        let reply = self.enqueue_jobs(conf, vec![job], now)?;
        if let Some((id, _)) = reply.first() {
            self.hset_value(self.key(QueueKey::DedupOwner), &key, id)?;
        }
        if mode == DedupMode::Throttle {
            let until = after(now, ms) as i64;
            self.zadd(self.key(QueueKey::Dedup), &[(until, key.as_slice())])?;
        } else if expired {
            self.zrem(self.key(QueueKey::Dedup), &[key.as_slice()])?;
        }
        if !conf.dedup {
            self.hset(self.key(QueueKey::Meta), &[b"dedup", b"1"])?;
        }
        Ok(reply)
    }

    /// An enqueue with a key `holder` holds: with DEBOUNCE, a waiting
    /// debounced holder is debounced; else nothing is created.
    fn deduplicated(
        &self,
        conf: &EnqueueSettings,
        holder: Vec<u8>,
        job: &NewJob,
        now: u64,
    ) -> Result<Vec<(Vec<u8>, i64)>, ValkeyError> {
        let Some(dedup) = &job.dedup else {
            return Ok(vec![(holder, 2)]);
        };
        if dedup.mode == DedupMode::Debounce {
            let [state, mode, group] =
                self.hmget_n(&self.job_key(&holder), [b"state", b"dedup_mode", b"group"])?;
            if let Some(state) = state.filter(|state| waits(state))
                && mode.as_deref() == Some(b"debounce")
            {
                let group = group.filter(|_| conf.groups);
                if let Some(group) = group.as_deref().filter(|_| state == b"pending") {
                    self.read_lane(group)?;
                }
                return self.debounce(conf, holder, &state, group.as_deref(), job, now);
            }
        }
        self.emit(
            conf.events_max,
            &[
                b"event",
                b"deduplicated",
                b"id",
                &holder,
                b"key",
                &dedup.key,
                b"requested",
                &job.id,
            ],
        )?;
        Ok(vec![(holder, 2)])
    }

    /// A debounced job that still waits (`state`): its payload replaced, its
    /// run-at pushed to now + the request's ms, back in the schedule set
    /// (`debounce`).
    fn debounce(
        &self,
        conf: &EnqueueSettings,
        id: Vec<u8>,
        state: &[u8],
        group: Option<&[u8]>,
        job: &NewJob,
        now: u64,
    ) -> Result<Vec<(Vec<u8>, i64)>, ValkeyError> {
        let (key, ms) = job
            .dedup
            .as_ref()
            .map_or((&[][..], 0), |dedup| (dedup.key.as_slice(), dedup.ms));
        let run_at = after(now, ms);
        let run_at_s = run_at.to_string();
        if state == b"pending" {
            self.leave_pending(conf.groups, &id, group)?;
        }
        self.zadd(self.key(QueueKey::Schedule), &[(run_at as i64, &id)])?;
        self.hset(
            &self.job_key(&id),
            &[
                b"state",
                b"scheduled",
                b"payload",
                &job.payload,
                b"run_at",
                run_at_s.as_bytes(),
            ],
        )?;
        self.emit(
            conf.events_max,
            &[
                b"event",
                b"debounced",
                b"id",
                &id,
                b"key",
                key,
                b"run_at",
                run_at_s.as_bytes(),
            ],
        )?;
        self.signal(run_at)?;
        Ok(vec![(id, 3)])
    }
}
