//! A job's time limit and start-by deadline: the options of [`NewJob`]
//! that become `TIME_LIMIT`, `START_BY` and `START_WITHIN`
//! (docs/protocol.md, "Time limits, start-by deadlines, LIFO and retention
//! by age"), checked on the client before anything is sent.

use crate::error::{Error, Result};
use crate::job::{DedupHold, NewJob, RunAt};
use echomq_protocol::arg::MAX_INT;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// When a job must have started by: the wire form of
/// [`NewJob::start_by`] and [`NewJob::start_within`] (the later call of
/// the two wins: a job has one deadline).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StartBy {
    /// An absolute instant (the caller's clock).
    At(SystemTime),
    /// Within this long of the enqueue, counted on the server's clock.
    Within(Duration),
}

/// Whole ms of `d`, at most 2^53 − 1 (the largest argument).
fn capped_ms(d: Duration) -> u64 {
    d.as_millis().min(u128::from(MAX_INT)) as u64
}

/// Unix ms of `at` (0 before the epoch).
fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, capped_ms)
}

impl<T> NewJob<T> {
    /// Limits each run of the job to `limit` from its claim: a worker
    /// cancels the handler at the limit and fails the attempt with the
    /// error `time limit <limit> exceeded`, retried under the job's
    /// attempts and backoff; the server's stalled sweep fails a run still
    /// held past it. Whole ms; zero is refused ([`Error::BadArgument`]
    /// `time_limit`) when the job is sent.
    ///
    /// ```
    /// use echomq::NewJob;
    /// use std::time::Duration;
    /// let job = NewJob::new("resize").time_limit(Duration::from_secs(30));
    /// ```
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = Some(limit);
        self
    }

    /// A start-by deadline at `deadline` (the caller's clock): a job not
    /// claimed by then is never claimed; it is cancelled with the reason
    /// `expired`. Replaces a [`NewJob::start_within`]. A deadline not
    /// later than now, or than the job's run-at ([`NewJob::at`]), is
    /// refused ([`Error::BadArgument`] `start_by`) when the job is sent.
    pub fn start_by(mut self, deadline: SystemTime) -> Self {
        self.start_by = Some(StartBy::At(deadline));
        self
    }

    /// A start-by deadline `within` after the enqueue, on the server's
    /// clock (see [`NewJob::start_by`]). Replaces a [`NewJob::start_by`].
    /// Zero, or not more than the job's delay ([`NewJob::after`]), is
    /// refused ([`Error::BadArgument`] `start_within`) when the job is sent.
    ///
    /// ```
    /// use echomq::NewJob;
    /// use std::time::Duration;
    /// let job = NewJob::new("otp").start_within(Duration::from_secs(600));
    /// ```
    pub fn start_within(mut self, within: Duration) -> Self {
        self.start_by = Some(StartBy::Within(within));
        self
    }

    /// Whether the job has a time limit or a deadline (it goes alone, not
    /// in a bulk call).
    pub(crate) fn has_deadlines(&self) -> bool {
        self.time_limit.is_some() || self.start_by.is_some()
    }

    /// The time options as protocol arguments (`TIME_LIMIT ms`, `START_BY
    /// ms`, `START_WITHIN ms`), checked: [`Error::BadArgument`] naming the
    /// option for a zero duration, a deadline in the past or not later
    /// than the run-at, or a deadline on a debounced job.
    pub(crate) fn deadline_args(&self) -> Result<Vec<Vec<u8>>> {
        let bad = |name, reason: String| Error::BadArgument { name, reason };
        let mut args = Vec::new();
        if let Some(limit) = self.time_limit {
            let ms = capped_ms(limit);
            if ms == 0 {
                return Err(bad("time_limit", "must be at least 1 ms".into()));
            }
            args.extend([b"TIME_LIMIT".to_vec(), ms.to_string().into_bytes()]);
        }
        let Some(start_by) = self.start_by else {
            return Ok(args);
        };
        let name = match start_by {
            StartBy::At(_) => "start_by",
            StartBy::Within(_) => "start_within",
        };
        if matches!(self.dedup_hold, Some(DedupHold::Debounce(_))) {
            return Err(bad(
                name,
                "a debounced job moves its run-at: it takes no start-by deadline".into(),
            ));
        }
        match start_by {
            StartBy::At(deadline) => {
                let ms = unix_ms(deadline);
                if ms <= unix_ms(SystemTime::now()) {
                    return Err(bad(name, format!("{ms} ms (unix) is not in the future")));
                }
                if let Some(RunAt::At(run_at)) = self.run_at
                    && ms <= run_at
                {
                    return Err(bad(
                        name,
                        format!("{ms} ms (unix) is not later than the run-at, {run_at} ms"),
                    ));
                }
                args.extend([b"START_BY".to_vec(), ms.to_string().into_bytes()]);
            }
            StartBy::Within(within) => {
                let ms = capped_ms(within);
                if ms == 0 {
                    return Err(bad(name, "must be at least 1 ms".into()));
                }
                if let Some(RunAt::In(delay)) = self.run_at
                    && ms <= delay
                {
                    return Err(bad(
                        name,
                        format!("{ms} ms is not more than the job's delay, {delay} ms"),
                    ));
                }
                args.extend([b"START_WITHIN".to_vec(), ms.to_string().into_bytes()]);
            }
        }
        Ok(args)
    }
}
