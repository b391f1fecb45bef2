//! The body of CLAIM (`scripts/claim.lua`) once its arguments are
//! checked: the command `EMQ.CLAIM` and the claim riding on
//! `EMQ.COMPLETE.BULK` both run it.

use crate::server::clock::{after, now_ms};
use crate::server::fast_hash::FastMap;
use crate::server::key::{Digits, Kind};
use crate::server::reply::{bulk, int};
use crate::server::store::Store;
use crate::server::store::claim_expiry::{READ_START_BY, past_start_by, pop_reach};
use crate::server::store::flow::Flow;
use crate::server::store::round_robin::PastStartBy;
use crate::server::store::{Settings, number};
use echomq_protocol::QueueKey;
use echomq_protocol::arg::{DEFAULT_MAX_ATTEMPTS, PROMOTE_PER_CLAIM, job_token};
use std::collections::hash_map::Entry;
use valkey_module::{ValkeyError, ValkeyResult, ValkeyValue};

/// The most jobs a claim's map of the jobs it read is sized for at first
/// (a larger claim grows it).
const CLAIM_MAP_MAX: usize = 1024;

/// Where a claim's read of a job holds its `dedup_mode`, `priority` and
/// `group` (see the claim's `read`).
const READ_MODE: usize = 4;

const READ_PRIORITY: usize = 6;

const READ_GROUP: usize = 7;

/// A job a claim read: [payload, failures, max_attempts, claims,
/// dedup_mode, dedup, priority, group, traceparent, time_limit, start_by,
/// waited]. READ_MODE, READ_PRIORITY, READ_GROUP and the expiry's
/// `READ_START_BY` and `READ_WAITED` name five of them.
pub(crate) type ClaimRead = [Option<Vec<u8>>; 13];

impl Store<'_> {
    /// The whole of CLAIM once its arguments are checked (`claim_checked`
    /// of the prelude: `EMQ.CLAIM`, and the CLAIM tail of
    /// `EMQ.COMPLETE.BULK`): settings and types, the due jobs promoted,
    /// then unless paused up to `count` pending jobs → active under a lease
    /// of `lease` ms. Returns CLAIM's reply.
    pub(crate) fn claim_checked(&self, worker: &[u8], lease: u64, count: u64) -> ValkeyResult {
        let conf = self.claim_settings()?;
        self.open_outbox(&conf)?;
        self.claim_with(&conf, worker, lease, count)
    }

    /// CLAIM on the settings `conf` already read (with the rate limit's
    /// fields): the CLAIM tail of `EMQ.COMPLETE.BULK` shares its
    /// completions' read.
    pub(crate) fn claim_with(
        &self,
        conf: &Settings,
        worker: &[u8],
        lease: u64,
        count: u64,
    ) -> ValkeyResult {
        self.expect_types(&[
            (QueueKey::Seq, Kind::String),
            (QueueKey::Schedule, Kind::Zset),
            (QueueKey::Pending, Kind::Zset),
            (QueueKey::Active, Kind::Zset),
            (QueueKey::Events, Kind::Stream),
            (QueueKey::Signal, Kind::Zset),
        ])?;
        let grouped = conf.groups;
        if grouped {
            self.expect_group_keys(true, true)?;
        }
        let now = now_ms();
        // Every job hash this call may touch is read before its first write, so
        // a key of the wrong type refuses the call whole: the due jobs, and the
        // pending head (what the pop takes comes from these two), or on a queue
        // with groups the heads the round robin picks (and every group's hash
        // and lane it may write).
        let due = self.due_ids(now, PROMOTE_PER_CLAIM)?;
        // Sized for the batch: growing it would rehash it a few times.
        let expected = due.len() + usize::try_from(count).unwrap_or(0).min(CLAIM_MAP_MAX);
        let mut jobs: FastMap<Vec<u8>, ClaimRead> =
            FastMap::with_capacity_and_hasher(expected, Default::default());
        let read = |id: &[u8], due: bool| -> Result<ClaimRead, ValkeyError> {
            let key = self.job_key(id);
            const FIELDS: [&[u8]; 4] = [b"payload", b"failures", b"max_attempts", b"claims"];
            // The priority matters only to a due job's promotion.
            let ([payload, failures, max_attempts, claims, priority], [dedup, mode, group]) = if due
            {
                let [p, f, m, c] = FIELDS;
                self.job_fields(conf, &key, [p, f, m, c, b"priority"])?
            } else {
                let ([p, f, m, c], extra) = self.job_fields(conf, &key, FIELDS)?;
                ([p, f, m, c, None], extra)
            };
            // A due job's group is read with it (its promotion writes the
            // group's lane); a pending job's lane the round robin reads itself.
            if let Some(group) = group.as_ref().filter(|_| due) {
                self.read_lane(group)?;
            }
            // A job's trace context only once a job of the queue had one.
            let traceparent = if conf.traced {
                self.hget(&key, b"traceparent")?
            } else {
                None
            };
            // Its time limit and deadline only once a job of the queue had
            // one; `waited` of a job past its deadline (its expiry publishes).
            // (and its `dependents` on a queue with flows: its expiry writes
            // its resolution).
            let [time_limit, start_by, waited, dependents] = if conf.timed {
                let [limit, by] = self.hmget_n(&key, [b"time_limit", b"start_by"])?;
                let [waited, dependents] = match past_start_by(by.as_deref(), now) {
                    true if conf.flows => self.hmget_n(&key, [b"waited", b"dependents"])?,
                    true => [self.hget(&key, b"waited")?, None],
                    false => [None, None],
                };
                [limit, by, waited, dependents]
            } else {
                [None, None, None, None]
            };
            Ok([
                payload,
                failures,
                max_attempts,
                claims,
                mode,
                dedup,
                priority,
                group,
                traceparent,
                time_limit,
                start_by,
                waited,
                dependents,
            ])
        };
        for id in &due {
            jobs.insert(id.clone(), read(id, true)?);
        }
        let (flow, take) = if conf.paused {
            (Flow::OPEN, count)
        } else {
            let flow = self.flow(conf, now)?;
            let take = flow.bound.map_or(count, |bound| bound.min(count));
            (flow, take)
        };
        let (mut plan, mut reopened) = (None, Vec::new());
        // The head, and on a queue without groups how many of it are fifo's
        // and how far it was read.
        let (mut head, mut from_fifo, mut reach) = (Vec::new(), 0, take);
        // Reads a head job once; whether it is past its start_by (on a
        // timed queue only).
        let read_into =
            |jobs: &mut FastMap<Vec<u8>, ClaimRead>, id: &[u8]| -> Result<bool, ValkeyError> {
                let job = match jobs.entry(id.to_vec()) {
                    Entry::Occupied(entry) => entry.into_mut(),
                    Entry::Vacant(entry) => {
                        let fields = read(entry.key(), false)?;
                        entry.insert(fields)
                    }
                };
                Ok(conf.timed && past_start_by(job[READ_START_BY].as_deref(), now))
            };
        if !conf.paused && grouped {
            reopened = self.reopened(conf.group_flow, now)?;
            if take > 0 {
                // On a timed queue each head is read as the round robin reaches it.
                let mut past = |id: &[u8]| read_into(&mut jobs, id);
                let past: Option<PastStartBy<'_>> = conf.timed.then_some(&mut past);
                plan = Some(self.round_robin(conf.group_flow, (take, now), &reopened, past)?);
            }
            head = plan
                .iter()
                .flat_map(|plan| plan.picks.iter().map(|(_, id)| id.clone()))
                .collect();
        } else if !conf.paused && take > 0 {
            // On a timed queue, as far past the head as its expired jobs reach.
            loop {
                (head, from_fifo) = self.pending_head(reach)?;
                let mut past = 0;
                for id in &head {
                    past += u64::from(read_into(&mut jobs, id)?);
                }
                let read = head.len() as u64;
                if read < reach || read - past >= take || reach >= take + PROMOTE_PER_CLAIM {
                    break;
                }
                reach = (2 * reach).max(take + past).min(take + PROMOTE_PER_CLAIM);
            }
        }
        // The round robin's picks (a queue without groups read its head above).
        if grouped {
            for id in &head {
                read_into(&mut jobs, id)?;
            }
        }
        let expiring = conf.timed
            && jobs
                .values()
                .any(|job| past_start_by(job[READ_START_BY].as_deref(), now));
        let promoting: Vec<(i64, Option<Vec<u8>>)> = due
            .iter()
            .map(|id| {
                (
                    number(jobs[id][READ_PRIORITY].as_deref()).unwrap_or(0),
                    jobs[id][READ_GROUP].clone(),
                )
            })
            .collect();
        if jobs
            .values()
            .any(|job| job[READ_MODE].as_deref() == Some(b"debounce"))
        {
            self.expect_owner_type()?;
        }
        // What an expiry writes, checked first.
        if conf.timed {
            self.expect_expiry_types(conf, expiring && !conf.paused, now)?;
        }
        let promoted =
            self.promote((conf.events_max, grouped, conf.lifo), &due, &promoting, now)?;
        if conf.paused {
            return Ok(ValkeyValue::Array(Vec::new()));
        }

        let popped = if grouped {
            // Waiting groups whose window reopened are put where they belong.
            for group in &reopened {
                let st = self.group_state(group)?;
                let has_jobs = self.exists(&self.lane_key(group));
                self.place(group, &st, now, has_jobs)?;
            }
            if let Some(plan) = &plan {
                self.apply_round_robin(conf.group_flow, plan, now)?;
            }
            head
        } else {
            // LPOP fifo, then ZPOPMIN pending for the rest. With nothing
            // promoted and nothing expiring they are the head read above.
            let (popped, from_fifo) = if expiring && take > 0 {
                let (head, _) = self.pending_head(reach)?;
                let n = pop_reach(&jobs, &head, take, now);
                self.pending_head(n as u64)?
            } else if due.is_empty() || take == 0 {
                (head, from_fifo)
            } else {
                self.pending_head(take)?
            };
            self.pop_pending_head(&popped, from_fifo)?;
            popped
        };
        let popped = match &plan {
            Some(plan) => popped
                .into_iter()
                .chain(plan.passed.iter().map(|(_, id)| id.clone()))
                .collect(),
            None => popped,
        };
        let deadline = after(now, lease) as i64;
        let now_s = now.to_string();
        // Every claimed job's hash and event carry these two.
        self.share(now_s.as_bytes());
        self.share(worker);
        // Jobs past their start_by are expired, not handed out (their events
        // first), and the claimed ones leave `deadlines` with them.
        let popped = if conf.timed {
            let (expired, popped): (Vec<Vec<u8>>, Vec<Vec<u8>>) =
                popped.into_iter().partition(|id| {
                    jobs.get(id).is_some_and(|job| {
                        job[0].is_some() && past_start_by(job[READ_START_BY].as_deref(), now)
                    })
                });
            let expired: Vec<(Vec<u8>, ClaimRead)> = expired
                .into_iter()
                .filter_map(|id| jobs.remove(&id).map(|job| (id, job)))
                .collect();
            let claimed_with_deadline: Vec<&[u8]> = popped
                .iter()
                .filter(|id| {
                    jobs.get(*id)
                        .is_some_and(|job| job[0].is_some() && job[READ_START_BY].is_some())
                })
                .map(Vec::as_slice)
                .collect();
            self.expire_popped(conf, &expired, &claimed_with_deadline, now)?;
            popped
        } else {
            popped
        };
        let mut claimed = Vec::new();
        let mut leased: Vec<(i64, Vec<u8>)> = Vec::new();
        for id in popped {
            let key = self.job_key(&id);
            let Some(
                [
                    Some(payload),
                    failures,
                    max_attempts,
                    claims,
                    mode,
                    dedup,
                    _,
                    _,
                    traceparent,
                    time_limit,
                    _,
                    _,
                    _,
                ],
            ) = jobs.remove(&id)
            else {
                continue;
            };
            let count = number(claims.as_deref()).unwrap_or(0) + 1;
            let token = job_token(count, now as i64);
            let token_s = Digits::signed(token);
            let claims_s = Digits::signed(count);
            self.hset(
                &key,
                &[
                    b"state",
                    b"active",
                    b"claims",
                    claims_s.as_bytes(),
                    b"claimed_at",
                    now_s.as_bytes(),
                    b"worker",
                    worker,
                ],
            )?;
            self.emit(
                conf.events_max,
                &[
                    b"event",
                    b"claimed",
                    b"id",
                    &id,
                    b"token",
                    token_s.as_bytes(),
                    b"worker",
                    worker,
                ],
            )?;
            let mut entry = vec![
                bulk(id.clone()),
                int(token),
                bulk(payload),
                int(number(failures.as_deref()).unwrap_or(0)),
                int(number(max_attempts.as_deref()).unwrap_or(DEFAULT_MAX_ATTEMPTS as i64)),
            ];
            let mut lease_ends = deadline;
            if conf.timed {
                // Seven elements on a timed queue; the lease at most the limit.
                let limit = number(time_limit.as_deref());
                entry.push(bulk(traceparent.unwrap_or_default()));
                entry.push(int(limit.unwrap_or(0)));
                if let Some(limit) = limit.filter(|limit| (*limit as u64) < lease) {
                    lease_ends = after(now, limit as u64) as i64;
                }
            } else {
                entry.extend(traceparent.map(bulk));
            }
            claimed.push(ValkeyValue::Array(entry));
            self.release_debounced(&id, [mode.as_deref(), dedup.as_deref()])?;
            leased.push((lease_ends, id));
        }
        let leases: Vec<(i64, &[u8])> = leased
            .iter()
            .map(|(deadline, id)| (*deadline, id.as_slice()))
            .collect();
        self.add_leases(&leases)?;
        if let Some((window, used)) = flow.window
            && !claimed.is_empty()
        {
            let (window_s, used_s) = (
                window.to_string(),
                (used + claimed.len() as i64).to_string(),
            );
            self.hset(
                self.key(QueueKey::Meta),
                &[
                    b"limit_window",
                    window_s.as_bytes(),
                    b"limit_used",
                    used_s.as_bytes(),
                ],
            )?;
        }
        match flow.bound {
            // Flow control bound: pending jobs left behind were withheld.
            Some(bound) if bound < count => {
                if self.pending_count()? > 0 {
                    claimed.push(int(flow.wait));
                }
            }
            // A full batch may leave work behind: wake the next idle worker for
            // it. On a queue with groups, jobs this claim promoted are
            // claimable from the next claim on: wake one for them too.
            bound => {
                let full = claimed.len() as u64 == count && bound.is_none_or(|bound| bound > count);
                // The pending jobs left, counted once, where a branch below
                // asks (`end_claim`).
                let pending = if !grouped && (full || conf.flows) {
                    self.pending_count()?
                } else {
                    0
                };
                let left = || {
                    if grouped {
                        self.zcard(self.key(QueueKey::Groups))
                    } else {
                        Ok(pending)
                    }
                };
                if (full && left()? > 0) || (grouped && promoted > 0) {
                    self.signal(0)?;
                } else if conf.flows && !grouped && pending == 0 {
                    // The marker would wake a worker for jobs this claim
                    // took (a completion's unblocked dependents, claimed by
                    // its CLAIM tail).
                    self.unsignal_due(now)?;
                }
            }
        }
        Ok(ValkeyValue::Array(claimed))
    }
}
