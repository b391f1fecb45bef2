//! Worker settings and counters.

use super::ahead::Ahead;
use super::telemetry::{JobOutcome, WorkerMetrics};
use echomq_protocol::backoff::Backoff;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How a worker runs.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub name: String,
    pub concurrency: usize,
    /// Jobs held claimed beyond the running ones, as given; `None`: the
    /// concurrency, and more while handlers are quick (see
    /// [`Options::ahead`]).
    pub claim_ahead: Option<usize>,
    pub lease: Duration,
    pub backoff: Backoff,
    pub idle_wait: Duration,
    pub repeats: bool,
    pub stalled_interval: Duration,
    pub max_stalls: u64,
}

impl Options {
    /// Jobs held claimed beyond the running ones: as given, or by default
    /// one batch (the concurrency), up to [`super::ahead::QUICK_AHEAD_MAX`] while the
    /// handlers are quick.
    pub(super) fn ahead(&self) -> Ahead {
        match self.claim_ahead {
            Some(jobs) => Ahead::fixed(self.concurrency, jobs),
            None => Ahead::quick(self.concurrency),
        }
    }

    /// Jobs the worker holds at most: running, and claimed ahead.
    pub(super) fn held(&self) -> usize {
        self.concurrency + self.ahead().most
    }

    pub(super) fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self {
            name: format!(
                "{}:{}:{}",
                host_name(),
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ),
            concurrency: 10,
            claim_ahead: None,
            lease: Duration::from_secs(30),
            backoff: Backoff::default(),
            idle_wait: Duration::from_secs(5),
            repeats: true,
            stalled_interval: Duration::from_secs(30),
            max_stalls: 1,
        }
    }
}

fn host_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty() && !name.contains(char::is_whitespace))
        .unwrap_or_else(|| "host".into())
}

/// Live counters of a worker, and its metrics' handles.
pub(crate) struct Counters {
    pub claimed: AtomicU64,
    pub completed: AtomicU64,
    pub retried: AtomicU64,
    pub dead: AtomicU64,
    pub cancelled: AtomicU64,
    pub delayed: AtomicU64,
    pub rate_limited: AtomicU64,
    pub released: AtomicU64,
    pub lost: AtomicU64,
    pub write_errors: AtomicU64,
    pub blocked: AtomicU64,
    pub metrics: WorkerMetrics,
}

impl Counters {
    pub(super) fn new(metrics: WorkerMetrics) -> Self {
        Self {
            claimed: AtomicU64::default(),
            completed: AtomicU64::default(),
            retried: AtomicU64::default(),
            dead: AtomicU64::default(),
            cancelled: AtomicU64::default(),
            delayed: AtomicU64::default(),
            rate_limited: AtomicU64::default(),
            released: AtomicU64::default(),
            lost: AtomicU64::default(),
            write_errors: AtomicU64::default(),
            blocked: AtomicU64::default(),
            metrics,
        }
    }

    /// Counts `n` attempts that ended in `outcome`, in the stats and the
    /// metrics. (A lease found voided before anything was written is
    /// counted in the metrics only: `WorkerStats::lost` counts refused
    /// writes.)
    pub(super) fn finish(&self, outcome: JobOutcome, n: u64) {
        let stat = match outcome {
            JobOutcome::Completed => &self.completed,
            JobOutcome::Retried => &self.retried,
            JobOutcome::Dead => &self.dead,
            JobOutcome::Cancelled => &self.cancelled,
            JobOutcome::Delayed => &self.delayed,
            JobOutcome::RateLimited => &self.rate_limited,
            JobOutcome::Released => &self.released,
            JobOutcome::LeaseLost => &self.lost,
            JobOutcome::WriteFailed => &self.write_errors,
            JobOutcome::Blocked => &self.blocked,
        };
        Self::add(stat, n);
        self.metrics.finished(outcome, n);
    }

    pub(super) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(super) fn snapshot(&self) -> WorkerStats {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        WorkerStats {
            claimed: get(&self.claimed),
            completed: get(&self.completed),
            retried: get(&self.retried),
            dead: get(&self.dead),
            cancelled: get(&self.cancelled),
            delayed: get(&self.delayed),
            rate_limited: get(&self.rate_limited),
            released: get(&self.released),
            lost: get(&self.lost),
            write_errors: get(&self.write_errors),
            blocked: get(&self.blocked),
        }
    }
}

/// What a worker has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerStats {
    /// Jobs claimed.
    pub claimed: u64,
    /// Jobs completed.
    pub completed: u64,
    /// Failed attempts sent back for a retry.
    pub retried: u64,
    /// Jobs dead-lettered.
    pub dead: u64,
    /// Jobs cancelled.
    pub cancelled: u64,
    /// Jobs sent back to the schedule set by their handler (not failures).
    pub delayed: u64,
    /// Jobs sent back to pending by a handler that met a rate limit (not
    /// failures), each holding the queue.
    pub rate_limited: u64,
    /// Jobs released back to pending by a shutdown past its deadline.
    pub released: u64,
    /// Outcomes refused with `NOTACTIVE`: the lease was lost first.
    pub lost: u64,
    /// Outcomes that could not be written (the job will be recovered by
    /// the stalled sweep).
    pub write_errors: u64,
    /// Runs that ended with the job blocked on the children its handler
    /// spawned (not failures): each runs again once they ended.
    pub blocked: u64,
}

impl WorkerStats {
    /// Both counts together (a worker over many queues: its queues').
    pub(crate) fn plus(self, other: Self) -> Self {
        Self {
            claimed: self.claimed + other.claimed,
            completed: self.completed + other.completed,
            retried: self.retried + other.retried,
            dead: self.dead + other.dead,
            cancelled: self.cancelled + other.cancelled,
            delayed: self.delayed + other.delayed,
            rate_limited: self.rate_limited + other.rate_limited,
            released: self.released + other.released,
            lost: self.lost + other.lost,
            write_errors: self.write_errors + other.write_errors,
            blocked: self.blocked + other.blocked,
        }
    }

    /// Jobs whose outcome was written (completed, retried, dead, cancelled,
    /// delayed, rate limited or released).
    pub fn finished(&self) -> u64 {
        self.completed
            + self.retried
            + self.dead
            + self.cancelled
            + self.delayed
            + self.rate_limited
            + self.released
    }
}
