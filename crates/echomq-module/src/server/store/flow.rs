//! What the families share of flow control (`rate_window` and `flow` of
//! `scripts/include/settings.lua`, `expect_freed_types` and `freed` of
//! `pending.lua`): CLAIM hands out what flow control lets out, and a job
//! leaving `active` wakes a worker waiting for room. The commands LIMIT
//! and CONCURRENCY are in `commands/flow.rs`.

use crate::server::clock::after;
use crate::server::key::Kind;
use crate::server::store::{Limit, Settings, Store};
use echomq_protocol::QueueKey;
use echomq_protocol::arg::MAX_INT;
use valkey_module::ValkeyError;

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
        self.back_to_pending(conf, id, priority, group, now)?;
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
