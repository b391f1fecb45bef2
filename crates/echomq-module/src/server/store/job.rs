//! One job's hash as the commands over a job in hand see it: the fencing
//! check (`fenced`, `holder`), its cancel message, and the retention that
//! deletes finished jobs (`trim_finished`).

use super::{Settings, Store, number};
use crate::server::args::refuse;
use crate::server::key::{Bound, Digits, Str};
use crate::server::publish::publish_shard;
use crate::server::store::metrics::Timing;
use echomq_protocol::QueueKey;
use echomq_protocol::arg::job_token;
use valkey_module::ValkeyError;

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

impl Store<'_> {
    /// Publishes `id` on the queue's cancel channel, `<base>:cancel`
    /// (`SPUBLISH`; a replica publishes it again as it replays the call).
    pub(crate) fn publish_cancel(&self, id: &[u8]) -> Result<(), ValkeyError> {
        self.publish(b":cancel", id)
    }

    /// `SPUBLISH <base><suffix> message`: through the module API where the
    /// server has it ([`publish_shard`]: no call, and the command's open
    /// keys stay open), else by `RedisModule_Call`. Neither is replicated
    /// as itself: the command is, whole, and a replica publishes again as
    /// it replays it.
    /// The channel is made into a server string once per command.
    fn publish(&self, suffix: &'static [u8], message: &[u8]) -> Result<(), ValkeyError> {
        // As a call of SPUBLISH did: the command is replicated.
        crate::server::replicate::wrote();
        let channel = {
            let mut channels = self.channels.borrow_mut();
            match channels.iter().find(|(kept, _)| *kept == suffix) {
                Some((_, channel)) => channel.alias(),
                None => {
                    let channel = Str::new(self.ctx, &[self.base, suffix].concat());
                    let alias = channel.alias();
                    channels.push((suffix, channel));
                    alias
                }
            }
        };
        if publish_shard(self.ctx, &channel, message) {
            return Ok(());
        }
        self.write("SPUBLISH", &[channel.as_slice(), message])?;
        Ok(())
    }

    /// Publishes `<id> <outcome>` on the queue's outcome channel,
    /// `<base>:outcome`, when the job's `waited` read `1` (`publish_outcome`;
    /// read only on a queue whose meta mark `waited` is set, none
    /// elsewhere). `outcome` is the message's parts after the id, joined by
    /// spaces. A replica publishes it again as it replays the call.
    pub(crate) fn publish_outcome(
        &self,
        waited: Option<&[u8]>,
        id: &[u8],
        outcome: &[&[u8]],
    ) -> Result<(), ValkeyError> {
        if waited != Some(b"1") {
            return Ok(());
        }
        let length = outcome.iter().map(|part| 1 + part.len()).sum::<usize>();
        let mut message = Vec::with_capacity(id.len() + length);
        message.extend_from_slice(id);
        for part in outcome {
            message.push(b' ');
            message.extend_from_slice(part);
        }
        self.publish(b":outcome", &message)
    }

    /// Publishes `<id> removed` for each of `ids`, unfinished jobs about to
    /// be deleted, whose `waited` is `1` (`publish_removed`); reads nothing
    /// unless `marked` (the queue's meta mark `waited`). DRAIN and
    /// OBLITERATE delete a job key of another type as they find it: such a
    /// key holds no `waited`, and refuses nothing after their first write.
    pub(crate) fn publish_removed(&self, marked: bool, ids: &[Vec<u8>]) -> Result<(), ValkeyError> {
        if !marked {
            return Ok(());
        }
        for id in ids {
            let waited = self.hget(&self.job_key(id), b"waited").unwrap_or(None);
            self.publish_outcome(waited.as_deref(), id, &[b"removed"])?;
        }
        Ok(())
    }

    /// Trims a finished set (`trim_finished`; docs/protocol.md, "Retention
    /// by age"): deletes, oldest first, the members scored <= now - the
    /// set's age rule (when it has one), then those beyond its count, at
    /// most `limit` in all, with their hashes and, when the queue's
    /// [`Settings::logs`], their logs, and on a queue with flows their flow
    /// keys ([`Store::flow_keys_of`]). Both rules take the lowest scores,
    /// so the doomed are the first ranks; without an age rule it reads
    /// what the count rule alone did.
    pub(crate) fn trim_finished(
        &self,
        conf: &Settings,
        set: QueueKey,
        limit: i64,
        now: u64,
    ) -> Result<(), ValkeyError> {
        let (keep, age) = conf.retention(set);
        let set = self.key(set);
        let excess = (self.zcard(set)? - keep).min(limit);
        let aged = if age > 0 && (age as u64) < now {
            let cutoff = Bound::upto((now - age as u64) as f64);
            self.zrange(set, Bound::LOWEST, cutoff, limit.max(0) as u64)?
        } else {
            Vec::new()
        };
        let ids = if aged.len() as i64 >= excess {
            aged
        } else {
            self.zrange(set, Bound::LOWEST, Bound::HIGHEST, excess as u64)?
        };
        if ids.is_empty() {
            return Ok(());
        }
        let mut doomed = self.flow_keys_of(conf.flows, &ids)?;
        doomed.reserve(ids.len() * 2);
        for id in &ids {
            doomed.push(self.job_key(id));
            if conf.logs {
                doomed.push(self.logs_key(id));
            }
        }
        // As the script does: one DEL (the flow keys with the jobs') and one
        // ZREMRANGEBYRANK, called as they are (cheaper per job than a handle
        // per key).
        let doomed: Vec<&[u8]> = doomed.iter().map(Vec::as_slice).collect();
        self.write_changing(&doomed, "DEL", &doomed)?;
        let last = Digits::of(ids.len() as u64 - 1);
        self.write_changing(&[set], "ZREMRANGEBYRANK", &[set, b"0", last.as_bytes()])?;
        Ok(())
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

    /// [`Store::holder`], with the job's `[dedup, dedup_mode, group, waited,
    /// dependents]` and
    /// its [`Timing`] read in the same `HMGET` (COMPLETE frees the key and
    /// the group's place and samples the metrics; see
    /// [`Store::job_fields_timed`]); an active job's group's keys are read.
    #[allow(clippy::type_complexity)]
    pub(crate) fn holder_with_extra(
        &self,
        conf: &Settings,
        id: &[u8],
        token: u64,
    ) -> Result<(Option<Vec<u8>>, [Option<Vec<u8>>; 5], Timing), ValkeyError> {
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
