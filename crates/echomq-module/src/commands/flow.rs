//! Flow control: LIMIT and CONCURRENCY — each the native twin of its
//! script in `crates/echomq/scripts/`, same checks in the same order, same
//! writes, replies and events — and what the other families share of it
//! (`rate_window` and `flow` of `scripts/include/settings.lua`,
//! `expect_freed_types` and `freed` of `pending.lua`): CLAIM hands out
//! what flow control lets out, and a job leaving `active` wakes a worker
//! waiting for room.

use crate::server::args::{Args, Opt, refuse};
use crate::server::clock::{after, now_ms};
use crate::server::key::Kind;
use crate::server::reply::{bulk, int};
use crate::server::store::{Limit, Settings, Store};
use echomq_protocol::QueueKey;
use echomq_protocol::arg::MAX_INT;
use valkey_module::{Context, ValkeyError, ValkeyResult, ValkeyString, ValkeyValue};

/// The rate limit's current window at `now` and the starts counted in it
/// (`rate_window`); `None` without a limit (max or per 0).
pub(crate) fn rate_window(limit: &Limit, now: u64) -> Option<(i64, i64)> {
    if limit.max == 0 || limit.per == 0 {
        return None;
    }
    let now = now as i64;
    let window = now - now % limit.per;
    let used = if limit.window == window {
        limit.used
    } else {
        0
    };
    Some((window, used))
}

/// What flow control lets a claim hand out (`flow`).
pub(crate) struct Flow {
    /// The most jobs it lets out; `None` when nothing binds.
    pub bound: Option<u64>,
    /// The wait_ms CLAIM answers when `bound` binds: the ms until the hold
    /// or the window ends, 0 for the cap on active jobs.
    pub wait: i64,
    /// The rate limit's current window and its count, when limited.
    pub window: Option<(i64, i64)>,
}

impl Flow {
    /// Paused, or no flow setting: nothing binds.
    pub(crate) const OPEN: Flow = Flow {
        bound: None,
        wait: 0,
        window: None,
    };
}

impl Store<'_> {
    /// What flow control lets a claim hand out at `now` (`flow`): nothing
    /// while held, what the window has left, the room under the cap,
    /// whichever is least (the window's wait on a tie).
    pub(crate) fn flow(&self, conf: &Settings, now: u64) -> Result<Flow, ValkeyError> {
        let limit = &conf.limit;
        if (now as i64) < limit.hold {
            return Ok(Flow {
                bound: Some(0),
                wait: limit.hold - now as i64,
                window: None,
            });
        }
        let mut flow = Flow::OPEN;
        flow.window = rate_window(limit, now);
        if let Some((window, used)) = flow.window {
            flow.bound = Some((limit.max - used).max(0) as u64);
            flow.wait = window + limit.per - now as i64;
        }
        if conf.concurrency > 0 {
            let active = self.zcard(self.key(QueueKey::Active))?;
            let room = (conf.concurrency - active).max(0) as u64;
            if flow.bound.is_none_or(|bound| room < bound) {
                flow.bound = Some(room);
                flow.wait = 0;
            }
        }
        Ok(flow)
    }

    /// With a cap on active jobs, what [`Store::freed`] touches must be of
    /// its type (`expect_freed_types`).
    pub(crate) fn expect_freed_types(&self, conf: &Settings) -> Result<(), ValkeyError> {
        if conf.concurrency > 0 {
            self.expect_types(&[
                (QueueKey::Pending, Kind::Zset),
                (QueueKey::Signal, Kind::Zset),
            ])?;
        }
        Ok(())
    }

    /// A job left active: under a cap on active jobs, one worker waiting
    /// for room may claim now, when jobs are pending (`freed`).
    pub(crate) fn freed(&self, conf: &Settings) -> Result<(), ValkeyError> {
        if conf.concurrency > 0 && self.pending_count()? > 0 {
            self.signal(0)?;
        }
        Ok(())
    }

    /// FAIL … RATE_LIMITED ms once the job is out of active: back to
    /// pending without a failure, and the queue held until
    /// max(limit_hold, now + ms), at most MAX_INT.
    pub(crate) fn rate_limited(
        &self,
        conf: &Settings,
        (id, group): (&[u8], Option<&[u8]>),
        priority: i64,
        message: &[u8],
        (now, retry_in): (u64, u64),
    ) -> Result<(), ValkeyError> {
        let meta = self.key(QueueKey::Meta);
        let held = crate::server::store::flow_setting(self.hget(meta, b"limit_hold")?.as_deref());
        let hold = (held.max(after(now, retry_in) as i64)).min(MAX_INT as i64);
        self.push_pending(conf.groups, id, priority, group, now)?;
        let now_s = now.to_string();
        self.hset(
            &self.job_key(id),
            &[
                b"state",
                b"pending",
                b"error",
                message,
                b"run_at",
                now_s.as_bytes(),
            ],
        )?;
        let hold_s = hold.to_string();
        self.hset(meta, &[b"limit_hold", hold_s.as_bytes()])?;
        self.signal(0)?;
        let retry_in_s = retry_in.to_string();
        self.emit(
            conf.events_max,
            &[
                b"event",
                b"rate_limited",
                b"id",
                id,
                b"retry_in",
                retry_in_s.as_bytes(),
            ],
        )
    }
}

/// What LIMIT and GROUP.LIMIT were asked (options from ARGV `first` on):
/// `None` to read only, `Some(None)` for OFF, `Some(Some((max, per)))` to
/// set. `MAX` and `PER` go together, and either excludes `OFF`.
pub(crate) fn limit_change(
    args: &Args,
    first: usize,
) -> Result<Option<Option<(u64, u64)>>, ValkeyError> {
    let opts = args.options(
        first,
        &[
            ("MAX", Opt::int("max", 1)),
            ("PER", Opt::int("per", 1)),
            ("OFF", Opt::Flag),
        ],
    )?;
    if opts.has("OFF") && (opts.has("MAX") || opts.has("PER")) {
        return Err(refuse("SYNTAX MAX and OFF exclude each other"));
    }
    if opts.has("MAX") && !opts.has("PER") {
        return Err(refuse("BADARG per"));
    }
    if opts.has("PER") && !opts.has("MAX") {
        return Err(refuse("BADARG max"));
    }
    let set = opts.int("MAX").zip(opts.int("PER"));
    Ok((set.is_some() || opts.has("OFF")).then_some(set))
}

/// What CONCURRENCY and GROUP.CONCURRENCY were asked: `None` to read only,
/// `Some(None)` for OFF, `Some(Some(max))` to set.
pub(crate) fn cap_change(args: &Args, first: usize) -> Result<Option<Option<u64>>, ValkeyError> {
    let opts = args.options(first, &[("MAX", Opt::int("max", 1)), ("OFF", Opt::Flag)])?;
    if opts.has("MAX") && opts.has("OFF") {
        return Err(refuse("SYNTAX MAX and OFF exclude each other"));
    }
    let max = opts.int("MAX");
    Ok((max.is_some() || opts.has("OFF")).then_some(max))
}

/// `EMQ.LIMIT base [MAX n PER ms | OFF]` → `[max n per ms used n reset_ms n
/// hold_ms n]` after the change.
pub(crate) fn limit(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let change = limit_change(&args, 1)?;

    let store = Store::new(ctx, args.base());
    let mut conf = store.settings_with_limits()?;
    let meta = store.key(QueueKey::Meta);
    if let Some(set) = change {
        store.expect_types(&[(QueueKey::Events, Kind::Stream)])?;
        match set {
            None => {
                store.hdel(
                    meta,
                    &[
                        b"limit_max",
                        b"limit_per",
                        b"limit_window",
                        b"limit_used",
                        b"limit_hold",
                    ],
                )?;
                conf.limit = Limit::default();
            }
            Some((max, per)) => {
                let (max_s, per_s) = (max.to_string(), per.to_string());
                store.hset(
                    meta,
                    &[
                        b"limit_max",
                        max_s.as_bytes(),
                        b"limit_per",
                        per_s.as_bytes(),
                    ],
                )?;
                conf.limit.max = max as i64;
                conf.limit.per = per as i64;
            }
        }
        let (max_s, per_s) = (conf.limit.max.to_string(), conf.limit.per.to_string());
        store.emit(
            conf.events_max,
            &[
                b"event",
                b"limit_set",
                b"max",
                max_s.as_bytes(),
                b"per",
                per_s.as_bytes(),
            ],
        )?;
    }
    let now = now_ms();
    let mut reply = limit_reply(&conf.limit, now);
    reply.extend([bulk("hold_ms"), int((conf.limit.hold - now as i64).max(0))]);
    Ok(ValkeyValue::Array(reply))
}

/// LIMIT's and GROUP.LIMIT's reply but the hold: `[max n per ms used n
/// reset_ms n]` of the current window at `now`, all 0 without a limit.
pub(crate) fn limit_reply(limit: &Limit, now: u64) -> Vec<ValkeyValue> {
    let (max, per, used, reset) = match rate_window(limit, now) {
        Some((window, used)) => (limit.max, limit.per, used, window + limit.per - now as i64),
        None => (0, 0, 0, 0),
    };
    vec![
        bulk("max"),
        int(max),
        bulk("per"),
        int(per),
        bulk("used"),
        int(used),
        bulk("reset_ms"),
        int(reset),
    ]
}

/// `EMQ.CONCURRENCY base [MAX n | OFF]` → `[max n active n]` after the
/// change.
pub(crate) fn concurrency(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let change = cap_change(&args, 1)?;

    let store = Store::new(ctx, args.base());
    let mut conf = store.settings()?;
    store.expect_types(&[(QueueKey::Active, Kind::Zset)])?;
    if let Some(max) = change {
        store.expect_types(&[
            (QueueKey::Pending, Kind::Zset),
            (QueueKey::Events, Kind::Stream),
            (QueueKey::Signal, Kind::Zset),
        ])?;
        let meta = store.key(QueueKey::Meta);
        match max {
            None => {
                store.hdel(meta, &[b"concurrency"])?;
                conf.concurrency = 0;
            }
            Some(max) => {
                let max_s = max.to_string();
                store.hset(meta, &[b"concurrency", max_s.as_bytes()])?;
                conf.concurrency = max as i64;
            }
        }
        let max_s = conf.concurrency.to_string();
        store.emit(
            conf.events_max,
            &[b"event", b"concurrency_set", b"max", max_s.as_bytes()],
        )?;
        if store.pending_count()? > 0 {
            store.signal(0)?;
        }
    }
    let active = store.zcard(store.key(QueueKey::Active))?;
    Ok(ValkeyValue::Array(vec![
        bulk("max"),
        int(conf.concurrency),
        bulk("active"),
        int(active),
    ]))
}
