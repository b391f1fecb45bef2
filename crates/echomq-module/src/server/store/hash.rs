//! The store's hash calls (`HMGET`, `HSET`, `HDEL`, `HINCRBY` and the
//! reads of a job's fields), each on the key's open handle.

use super::{Store, number, wrongtype};
use crate::server::key::{Handle, Str};
use crate::server::store::Reply;
use crate::server::store::Settings;
use crate::server::store::metrics::{TIMING_FIELDS, Timing};
use valkey_module::ValkeyError;

impl Store<'_> {
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

    /// A hash's fields and values by turns (`HGETALL`): one of at most one
    /// field is read on the key (no call, so the command's handles stay
    /// open), a larger one by the command, whose order a scan of a
    /// hashtable-encoded hash may not keep.
    pub(crate) fn hgetall(&self, key: &[u8]) -> Result<Vec<Reply>, ValkeyError> {
        match self.with(key, false, Handle::hash_pairs_of_one) {
            Ok(Some(pairs)) => Ok(pairs.into_iter().map(Reply::Bytes).collect()),
            _ => Ok(self.read("HGETALL", &[key])?.items()),
        }
    }

    /// `HSCAN key cursor COUNT count`: the next cursor, and the page's
    /// fields and values by turns.
    pub(crate) fn hscan(
        &self,
        key: &[u8],
        cursor: &[u8],
        count: u64,
    ) -> Result<(Vec<u8>, Vec<Reply>), ValkeyError> {
        let count = count.to_string();
        let mut page = self
            .read("HSCAN", &[key, cursor, b"COUNT", count.as_bytes()])?
            .items()
            .into_iter();
        let next = page.next().and_then(Reply::bytes).unwrap_or_default();
        Ok((next, page.next().map(Reply::items).unwrap_or_default()))
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
        let (main, [dedup, mode, group, _, _], _) = self.read_job(conf, key, fields, false)?;
        Ok((main, [dedup, mode, group]))
    }

    /// [`Store::job_fields`] with the job's [`Timing`], read in the same
    /// `HMGET` on a queue whose metrics are on (`job_fields(…, true)`): what
    /// a job leaving `active` samples; and, on a queue whose meta mark
    /// `waited` is set (`conf.waited`), its `waited` as a fourth extra
    /// (whether its outcome is published), and on a queue with the `flows`
    /// mark its `dependents` as a fifth (whether its decision writes a
    /// resolution).
    #[allow(clippy::type_complexity)]
    pub(crate) fn job_fields_timed<const N: usize>(
        &self,
        conf: &Settings,
        key: &[u8],
        fields: [&[u8]; N],
    ) -> Result<([Option<Vec<u8>>; N], [Option<Vec<u8>>; 5], Timing), ValkeyError> {
        self.read_job(conf, key, fields, true)
    }

    /// A job's `fields` in one `HMGET`, and its `waited` in the same read
    /// on a queue whose meta mark `waited` is set (`job_fields_waited`):
    /// a queue nobody waits on reads no more of the job. On a queue with
    /// the `flows` mark (`flows`), its `waited` whatever the mark (a job
    /// has it only once the queue has the mark) and its `dependents`,
    /// returned after `waited`.
    #[allow(clippy::type_complexity)]
    pub(crate) fn job_fields_waited<const N: usize>(
        &self,
        (conf_waited, flows): (bool, bool),
        key: &[u8],
        fields: [&[u8]; N],
    ) -> Result<([Option<Vec<u8>>; N], Option<Vec<u8>>, Option<Vec<u8>>), ValkeyError> {
        let mut names: Vec<&[u8]> = fields.to_vec();
        if conf_waited || flows {
            names.push(b"waited");
        }
        if flows {
            names.push(b"dependents");
        }
        let mut values = self.hmget(key, &names)?.into_iter();
        let main: [Option<Vec<u8>>; N] = std::array::from_fn(|_| values.next().flatten());
        let waited = values.next().flatten();
        Ok((main, waited, values.next().flatten()))
    }

    #[allow(clippy::type_complexity)]
    fn read_job<const N: usize>(
        &self,
        conf: &Settings,
        key: &[u8],
        fields: [&[u8]; N],
        leaving: bool,
    ) -> Result<([Option<Vec<u8>>; N], [Option<Vec<u8>>; 5], Timing), ValkeyError> {
        let timing = leaving && conf.metrics;
        let waited = leaving && conf.waited;
        let flows = leaving && conf.flows;
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
        if waited {
            names.push(b"waited");
        }
        if flows {
            names.push(b"dependents");
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
        let waited = extra(waited);
        let dependents = extra(flows);
        let timing = Timing::read(claimed_at.as_deref(), run_at.or(created_at).as_deref());
        Ok((main, [dedup, mode, group, waited, dependents], timing))
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

    /// Sets hash fields whose names are data (an edge's `<queue> <id>`)
    /// from a flat field/value list (`HSET`): every string copied.
    pub(crate) fn hset_data(&self, key: &[u8], pairs: &[&[u8]]) -> Result<(), ValkeyError> {
        self.hset_strs(key, &self.strs(pairs))
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
}
