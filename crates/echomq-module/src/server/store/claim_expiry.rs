//! CLAIM's start-by check (`docs/protocol.md`, "Time limits, start-by
//! deadlines, LIFO and retention by age"; `past_start_by`, `pop_reach` and
//! `expire_popped` of `scripts/include/claim_reads.lua` and `claim.lua`): a
//! job past its `start_by` is expired, not handed out, and the claim fills
//! its count from the jobs behind it.

use crate::server::fast_hash::FastMap;
use crate::server::key::Kind;
use crate::server::store::claim::ClaimRead;
use crate::server::store::metrics::Tally;
use crate::server::store::{Settings, Store, number};
use echomq_protocol::QueueKey;
use echomq_protocol::arg::{PROMOTE_PER_CLAIM, TRIM_PER_TRANSITION};
use echomq_protocol::metrics::Outcome;
use valkey_module::ValkeyError;

/// Where a claim's read of a job holds its `start_by`.
pub(crate) const READ_START_BY: usize = 10;

/// Where a claim's read of a job holds its `waited` (read only for a job
/// past its deadline).
const READ_WAITED: usize = 11;

/// Where a claim's read of a job holds its `dependents` (read only for a
/// job past its deadline, on a queue with flows).
const READ_DEPENDENTS: usize = 12;

/// Whether a job whose `start_by` is `by` is past it at `now`.
pub(crate) fn past_start_by(by: Option<&[u8]>, now: u64) -> bool {
    number(by).is_some_and(|by| by < now as i64)
}

/// How many of the pending `head` (queue without groups, every job of it
/// read into `jobs`) a claim of `take` pops: as many as hand out `take`,
/// passing at most PROMOTE_PER_CLAIM jobs past their start_by, within what
/// was read (`pop_reach`).
pub(crate) fn pop_reach(
    jobs: &FastMap<Vec<u8>, ClaimRead>,
    head: &[Vec<u8>],
    take: u64,
    now: u64,
) -> usize {
    let (mut live, mut past) = (0, 0);
    for (j, id) in head.iter().enumerate() {
        let Some(job) = jobs.get(id) else {
            return j;
        };
        if !past_start_by(job[READ_START_BY].as_deref(), now) {
            live += 1;
            if live == take {
                return j + 1;
            }
        } else if past == PROMOTE_PER_CLAIM {
            return j;
        } else {
            past += 1;
        }
    }
    head.len()
}

impl Store<'_> {
    /// On a timed queue, before a claim's first write: `deadlines`'
    /// type, and when a job it read is past its deadline (`expiring`), what
    /// an expiry writes: `cancelled`, the owner hash (on a queue with
    /// dedup keys) and the metrics keys.
    pub(crate) fn expect_expiry_types(
        &self,
        conf: &Settings,
        expiring: bool,
        now: u64,
    ) -> Result<(), ValkeyError> {
        self.expect_types(&[(QueueKey::Deadlines, Kind::Zset)])?;
        if !expiring {
            return Ok(());
        }
        self.expect_types(&[(QueueKey::Cancelled, Kind::Zset)])?;
        if conf.dedup {
            self.expect_owner_type()?;
        }
        self.expect_metrics_types(conf, now)
    }

    /// CLAIM's expiry of the jobs it popped past their start_by
    /// (`expire_popped`): each cancelled as the sweep expires one, all out
    /// of `deadlines` with the claimed jobs that had a start_by
    /// (`claimed_with_deadline`), counted `cancelled` in the metrics, and
    /// `cancelled` trimmed.
    pub(crate) fn expire_popped(
        &self,
        conf: &Settings,
        expired: &[(Vec<u8>, ClaimRead)],
        claimed_with_deadline: &[&[u8]],
        now: u64,
    ) -> Result<(), ValkeyError> {
        let mut tally = Tally::default();
        for (id, job) in expired {
            let [dedup, mode] = [&job[5], &job[4]];
            self.cancel_expired(
                conf,
                id,
                crate::server::store::deadlines::Expired {
                    start_by: job[READ_START_BY].as_deref(),
                    waited: job[READ_WAITED].as_deref(),
                    dedup: dedup.as_deref(),
                    dedup_mode: mode.as_deref(),
                    due: None,
                    dependents: job[READ_DEPENDENTS].as_deref(),
                },
                now,
            )?;
            tally.outcome(Outcome::Cancelled);
        }
        let out: Vec<&[u8]> = claimed_with_deadline
            .iter()
            .copied()
            .chain(expired.iter().map(|(id, _)| id.as_slice()))
            .collect();
        if !out.is_empty() {
            self.zrem(self.key(QueueKey::Deadlines), &out)?;
        }
        if !expired.is_empty() {
            let limit = TRIM_PER_TRANSITION as i64 * expired.len() as i64;
            self.trim_finished(conf, QueueKey::Cancelled, limit, now)?;
            if conf.metrics {
                self.record_metrics(conf, &tally, now)?;
            }
        }
        Ok(())
    }
}
