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

    /// Adds jobs to `deadlines`, each scored by its start_by
    /// (`add_deadlines`).
    pub(crate) fn add_deadlines(&self, jobs: &[(i64, &[u8])]) -> Result<(), ValkeyError> {
        if jobs.is_empty() {
            return Ok(());
        }
        self.zadd(self.key(QueueKey::Deadlines), jobs)
    }
}
