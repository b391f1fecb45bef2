//! Time limits and start-by deadlines (`docs/protocol.md`, "Time limits,
//! start-by deadlines, LIFO and retention by age"): the options ENQUEUE and
//! SCHEDULE share, the queue's `timed` mark and the `deadlines` set (the
//! helpers of `scripts/include/deadlines.lua`).

use crate::server::args::{Opt, Options, RunAt, refuse};
use crate::server::clock::now_ms;
use crate::server::store::Store;
use echomq_protocol::QueueKey;
use echomq_protocol::arg::MAX_INT;
use valkey_module::ValkeyError;

/// `TIME_LIMIT ms` (≥ 1): how long a run may last.
pub(crate) const TIME_LIMIT: (&str, Opt) = ("TIME_LIMIT", Opt::int("time_limit", 1));
/// `START_BY ms` (≥ 1, later than now): the start-by deadline, absolute.
pub(crate) const START_BY: (&str, Opt) = ("START_BY", Opt::int("start_by", 1));
/// `START_WITHIN ms` (≥ 1): the start-by deadline, from now.
pub(crate) const START_WITHIN: (&str, Opt) = ("START_WITHIN", Opt::int("start_within", 1));

/// A new job's time limit and start-by deadline (ms), each when given.
#[derive(Clone, Copy, Default)]
pub(crate) struct Deadlines {
    pub time_limit: Option<u64>,
    pub start_by: Option<u64>,
}

impl Deadlines {
    /// Whether the job marks its queue `timed`.
    pub(crate) fn timed(&self) -> bool {
        self.time_limit.is_some() || self.start_by.is_some()
    }
}

/// The time options read (`deadline_options`), after the dedup options:
/// the two SYNTAX refusals first, then the checks against the clock (read
/// only when a deadline is given): START_BY must be later than now and
/// than `run_at`, as must now + START_WITHIN (capped at 2^53 − 1).
pub(crate) fn deadline_options(
    opts: &Options,
    run_at: Option<RunAt>,
) -> Result<Deadlines, ValkeyError> {
    let (by, within) = (opts.int("START_BY"), opts.int("START_WITHIN"));
    if by.is_some() && within.is_some() {
        return Err(refuse(
            "SYNTAX START_BY and START_WITHIN exclude each other",
        ));
    }
    if (by.is_some() || within.is_some()) && opts.has("DEBOUNCE") {
        return Err(refuse(
            "SYNTAX DEBOUNCE and a start-by deadline exclude each other",
        ));
    }
    let time_limit = opts.int("TIME_LIMIT");
    // The clock only once a deadline is given.
    let later_than_run_at =
        |start_by: u64, now: u64| run_at.is_none_or(|run_at| start_by > run_at.at(now));
    let start_by = match (by, within) {
        (None, None) => None,
        (_, Some(within)) => {
            let now = now_ms();
            let start_by = now.saturating_add(within).min(MAX_INT);
            if !later_than_run_at(start_by, now) {
                return Err(refuse("BADARG start_within"));
            }
            Some(start_by)
        }
        (Some(by), None) => {
            let now = now_ms();
            if by <= now || !later_than_run_at(by, now) {
                return Err(refuse("BADARG start_by"));
            }
            Some(by)
        }
    };
    Ok(Deadlines {
        time_limit,
        start_by,
    })
}

impl Store<'_> {
    /// Marks the queue `timed` (`mark_timed`), unless `marked` already.
    pub(crate) fn mark_timed(&self, marked: bool) -> Result<(), ValkeyError> {
        if marked {
            return Ok(());
        }
        self.hset(self.key(QueueKey::Meta), &[b"timed", b"1"])
    }

    /// A job that enters pending or the schedule again (a retry, DELAY,
    /// REQUEUE, REPROCESS, a stall recovered, RATE_LIMITED): on a `timed`
    /// queue, back in `deadlines` when it has a start_by, so it keeps its
    /// deadline (`keep_deadline`; the caller checked the set's type).
    pub(crate) fn keep_deadline(&self, timed: bool, id: &[u8]) -> Result<(), ValkeyError> {
        if !timed {
            return Ok(());
        }
        let start_by = self.hget(&self.job_key(id), b"start_by")?;
        match crate::server::store::number(start_by.as_deref()) {
            Some(start_by) => self.zadd(self.key(QueueKey::Deadlines), &[(start_by, id)]),
            None => Ok(()),
        }
    }

    /// A job back in pending (a retry, REQUEUE, REPROCESS, a stall
    /// recovered, RATE_LIMITED, a failure at its time limit): pushed as
    /// its LIFO flag and group say (`push_pending`), its deadline kept.
    pub(crate) fn back_to_pending(
        &self,
        conf: &crate::server::store::Settings,
        id: &[u8],
        priority: i64,
        group: Option<&[u8]>,
        now: u64,
    ) -> Result<(), ValkeyError> {
        self.push_pending((conf.groups, conf.lifo), id, priority, group, now)?;
        self.keep_deadline(conf.timed, id)
    }

    /// Checks the type of `deadlines` on a `timed` queue, before a path
    /// into pending or the schedule writes (`keep_deadline`'s set).
    pub(crate) fn expect_deadlines_type(&self, timed: bool) -> Result<(), ValkeyError> {
        if !timed {
            return Ok(());
        }
        self.expect_types(&[(QueueKey::Deadlines, crate::server::key::Kind::Zset)])
    }

    /// Adds jobs to `deadlines`, each scored by its start_by
    /// (`add_deadlines`).
    pub(crate) fn add_deadlines(&self, jobs: &[(i64, &[u8])]) -> Result<(), ValkeyError> {
        if jobs.is_empty() {
            return Ok(());
        }
        self.zadd(self.key(QueueKey::Deadlines), jobs)
    }
}

/// What STALLED.CHECK read of a job whose lease ran out at its time limit
/// (`fail_at_limit`).
pub(crate) struct AtLimit<'a> {
    pub failures: Option<&'a [u8]>,
    pub max_attempts: Option<&'a [u8]>,
    pub priority: i64,
    pub time_limit: u64,
    pub group: Option<&'a [u8]>,
    pub dedup: [Option<&'a [u8]>; 2],
    pub waited: Option<&'a [u8]>,
    /// Its resolution, should it die (`outbox.due`).
    pub due: Option<&'a crate::server::store::outbox::Due>,
}

/// Where a job failed at its limit went: the metrics' outcome, and whether
/// it entered pending (a retry at once).
pub(crate) struct LimitFailed {
    pub outcome: echomq_protocol::metrics::Outcome,
    pub pending: bool,
}

/// Whether a lease that ran out at `deadline` ran out at the job's time
/// limit (inline in `stalled_check.lua`): `deadline` ≥ `claimed_at` +
/// `time_limit`.
pub(crate) fn at_time_limit(
    time_limit: Option<u64>,
    claimed_at: Option<i64>,
    deadline: f64,
) -> bool {
    match (time_limit, claimed_at) {
        (Some(limit), Some(claimed_at)) => deadline >= claimed_at as f64 + limit as f64,
        _ => false,
    }
}

/// A failed job with attempts left, for [`Store::retry`]: where it goes
/// back, its failures counted and the error.
pub(crate) struct Retry<'a> {
    pub priority: i64,
    pub group: Option<&'a [u8]>,
    pub failures: &'a str,
    pub error: &'a [u8],
    /// ms from now; 0: pending at once.
    pub delay: u64,
}

impl Store<'_> {
    /// A failed job with attempts left (FAIL, the sweep's failure at a
    /// time limit), already out of `active`: back to pending now when its
    /// delay is 0, else scheduled at now + delay; its failures, error and
    /// run-at written, its deadline kept, a worker signalled, and the
    /// `retried` event.
    pub(crate) fn retry(
        &self,
        conf: &crate::server::store::Settings,
        id: &[u8],
        retry: Retry<'_>,
        now: u64,
    ) -> Result<(), ValkeyError> {
        use crate::server::clock::after;
        let key = self.job_key(id);
        let (state, run_at) = if retry.delay == 0 {
            self.back_to_pending(conf, id, retry.priority, retry.group, now)?;
            (&b"pending"[..], now)
        } else {
            let run_at = after(now, retry.delay);
            self.zadd(self.key(QueueKey::Schedule), &[(run_at as i64, id)])?;
            self.keep_deadline(conf.timed, id)?;
            (&b"scheduled"[..], run_at)
        };
        let run_at_s = run_at.to_string();
        self.hset(
            &key,
            &[
                b"state",
                state,
                b"failures",
                retry.failures.as_bytes(),
                b"error",
                retry.error,
                b"run_at",
                run_at_s.as_bytes(),
            ],
        )?;
        self.signal(if retry.delay == 0 { 0 } else { run_at })?;
        let delay_s = retry.delay.to_string();
        self.emit(
            conf.events_max,
            &[
                b"event",
                b"retried",
                b"id",
                id,
                b"error",
                retry.error,
                b"delay",
                delay_s.as_bytes(),
            ],
        )
    }

    /// STALLED.CHECK's failure of an active job at its time limit
    /// (`fail_at_limit`), the job already out of `active`: as FAIL with the
    /// error `time limit <d> exceeded` would, failures + 1, then retried
    /// after `delays[failures]` (the last repeating; none: at once) while
    /// attempts remain, else dead.
    pub(crate) fn fail_at_limit(
        &self,
        conf: &crate::server::store::Settings,
        id: &[u8],
        job: AtLimit<'_>,
        delays: &[u64],
        now: u64,
    ) -> Result<LimitFailed, ValkeyError> {
        use crate::server::store::number;
        use echomq_protocol::arg::DEFAULT_MAX_ATTEMPTS;
        use echomq_protocol::metrics::Outcome;
        let key = self.job_key(id);
        let message = echomq_protocol::time_limit::exceeded(job.time_limit);
        let failures = number(job.failures).unwrap_or(0) + 1;
        let failures_s = failures.to_string();
        let attempts = number(job.max_attempts).unwrap_or(DEFAULT_MAX_ATTEMPTS as i64);
        if failures < attempts {
            let at = usize::try_from(failures)
                .unwrap_or(usize::MAX)
                .min(delays.len());
            let delay = at.checked_sub(1).map_or(0, |at| delays[at]);
            self.retry(
                conf,
                id,
                Retry {
                    priority: job.priority,
                    group: job.group,
                    failures: &failures_s,
                    error: message.as_bytes(),
                    delay,
                },
                now,
            )?;
            return Ok(LimitFailed {
                outcome: Outcome::Failed,
                pending: delay == 0,
            });
        }
        let now_s = now.to_string();
        self.hset(
            &key,
            &[
                b"state",
                b"dead",
                b"failures",
                failures_s.as_bytes(),
                b"error",
                message.as_bytes(),
                b"finished_at",
                now_s.as_bytes(),
            ],
        )?;
        self.zadd(self.key(QueueKey::Dead), &[(now as i64, id)])?;
        self.emit(
            conf.events_max,
            &[b"event", b"dead", b"id", id, b"error", message.as_bytes()],
        )?;
        self.publish_outcome(
            job.waited,
            id,
            &[b"dead", failures_s.as_bytes(), message.as_bytes()],
        )?;
        let [dedup, mode] = job.dedup;
        self.release_dedup(id, dedup, mode)?;
        let tail = crate::server::store::outbox::dead_tail(failures, message.as_bytes());
        self.write_resolution(id, job.due, b"dead", Some(&tail), now)?;
        Ok(LimitFailed {
            outcome: Outcome::Dead,
            pending: false,
        })
    }
}

/// A member of `deadlines` scored before now, its job read
/// (`read_past_deadlines`): `live` when the job waits (pending or
/// scheduled) with that start_by.
pub(crate) struct PastDeadline {
    pub id: Vec<u8>,
    pub live: bool,
    pub job: Waiting,
}

/// What expiring a waiting job reads of it (`expire_waiting`).
#[derive(Default)]
pub(crate) struct Waiting {
    pub state: Option<Vec<u8>>,
    pub start_by: Option<Vec<u8>>,
    pub dedup: Option<Vec<u8>>,
    pub dedup_mode: Option<Vec<u8>>,
    /// The lane's group: only for a pending job on a queue with groups.
    pub group: Option<Vec<u8>>,
    pub waited: Option<Vec<u8>>,
    /// Its resolution (`outbox.due`), read with it for a live one.
    pub due: Option<crate::server::store::outbox::Due>,
}

/// What the expiry of a job past its start_by writes of it
/// (`cancel_expired`).
pub(crate) struct Expired<'a> {
    pub start_by: Option<&'a [u8]>,
    pub waited: Option<&'a [u8]>,
    pub dedup: Option<&'a [u8]>,
    pub dedup_mode: Option<&'a [u8]>,
    /// Its resolution when read before the command's first write (the
    /// sweep's); `None` to read it now from `dependents`, leniently (a
    /// claim's: it popped the job already).
    pub due: Option<Option<&'a crate::server::store::outbox::Due>>,
    pub dependents: Option<&'a [u8]>,
}

impl Store<'_> {
    /// Up to `limit` members of `deadlines` scored < `now`, each with its
    /// job read and, for a live pending grouped job, its lane
    /// (`read_past_deadlines`), before the sweep's first write.
    pub(crate) fn read_past_deadlines(
        &self,
        conf: &crate::server::store::Settings,
        now: u64,
        limit: u64,
    ) -> Result<Vec<PastDeadline>, ValkeyError> {
        use crate::server::key::Bound;
        use crate::server::store::number;
        let scored = self.zrange_scored(
            self.key(QueueKey::Deadlines),
            Bound::LOWEST,
            Bound::below(now as f64),
            limit,
        )?;
        let mut past = Vec::with_capacity(scored.len());
        for (id, score) in scored {
            let ([state, start_by, dedup, dedup_mode, group], waited, dependents) = self
                .job_fields_waited(
                    (conf.waited, conf.flows),
                    &self.job_key(&id),
                    [b"state", b"start_by", b"dedup", b"dedup_mode", b"group"],
                )?;
            let waiting = matches!(
                state.as_deref(),
                Some(b"pending" | b"scheduled" | b"blocked")
            );
            let live = waiting && number(start_by.as_deref()).map(|by| by as f64) == Some(score);
            let group =
                group.filter(|_| live && conf.groups && state.as_deref() == Some(b"pending"));
            if let Some(group) = &group {
                self.read_lane(group)?;
            }
            let due = match live {
                true => self.resolution_due(conf.flows, &id, dependents.as_deref(), false)?,
                false => None,
            };
            past.push(PastDeadline {
                id,
                live,
                job: Waiting {
                    state,
                    start_by,
                    dedup,
                    dedup_mode,
                    group,
                    waited,
                    due,
                },
            });
        }
        Ok(past)
    }

    /// A waiting job whose start_by passed → `cancelled` as CANCEL of it
    /// would, with `reason` expired and the event `expired` (start_by) in
    /// place of `cancelled`; out of `deadlines` (`expire_waiting`). The
    /// caller trims `cancelled` and counts the metrics.
    pub(crate) fn expire_waiting(
        &self,
        conf: &crate::server::store::Settings,
        id: &[u8],
        job: &Waiting,
        now: u64,
    ) -> Result<(), ValkeyError> {
        match job.state.as_deref() {
            Some(b"pending") => self.leave_pending(conf.groups, id, job.group.as_deref())?,
            Some(b"blocked") => {
                self.zrem(self.key(QueueKey::Blocked), &[id])?;
            }
            _ => {
                self.zrem(self.key(QueueKey::Schedule), &[id])?;
            }
        }
        self.zrem(self.key(QueueKey::Deadlines), &[id])?;
        self.cancel_expired(
            conf,
            id,
            Expired {
                start_by: job.start_by.as_deref(),
                waited: job.waited.as_deref(),
                dedup: job.dedup.as_deref(),
                dedup_mode: job.dedup_mode.as_deref(),
                due: Some(job.due.as_ref()),
                dependents: None,
            },
            now,
        )
    }

    /// A job past its start_by that has left its waiting set (and
    /// `deadlines`, or is about to) → `cancelled` (`cancel_expired`):
    /// `reason` expired, the event `expired` (start_by), `<id> cancelled`
    /// published to a waiter, its dedup key released, its resolution
    /// written. The caller trims `cancelled` and counts the metrics.
    pub(crate) fn cancel_expired(
        &self,
        conf: &crate::server::store::Settings,
        id: &[u8],
        job: Expired<'_>,
        now: u64,
    ) -> Result<(), ValkeyError> {
        let read;
        let due = match job.due {
            Some(due) => due,
            None => {
                read = self.resolution_due(conf.flows, id, job.dependents, true)?;
                read.as_ref()
            }
        };
        self.zadd(self.key(QueueKey::Cancelled), &[(now as i64, id)])?;
        let now_s = now.to_string();
        self.hset(
            &self.job_key(id),
            &[
                b"state",
                b"cancelled",
                b"reason",
                b"expired",
                b"finished_at",
                now_s.as_bytes(),
            ],
        )?;
        let start_by = job.start_by.unwrap_or_default();
        self.emit(
            conf.events_max,
            &[b"event", b"expired", b"id", id, b"start_by", start_by],
        )?;
        self.publish_outcome(job.waited, id, &[b"cancelled"])?;
        self.release_dedup(id, job.dedup, job.dedup_mode)?;
        self.write_resolution(id, due, b"cancelled", None, now)?;
        Ok(())
    }

    /// STALLED.CHECK's expiry of the members `past` (`expire_past`): a
    /// live one expires, any other is dropped without a write to its job.
    /// Returns how many expired.
    pub(crate) fn expire_past(
        &self,
        conf: &crate::server::store::Settings,
        past: &[PastDeadline],
        now: u64,
    ) -> Result<i64, ValkeyError> {
        let mut expired = 0;
        for member in past {
            if member.live {
                self.expire_waiting(conf, &member.id, &member.job, now)?;
                expired += 1;
            } else {
                self.zrem(self.key(QueueKey::Deadlines), &[&member.id])?;
            }
        }
        Ok(expired)
    }
}
