//! The plan of the race: what becomes of each job, when its wait starts,
//! and which answers are right.

use echomq::{Error, JobId, NewJob, Outcome};
use serde_json::{Value, json};
use std::time::Duration;

/// What becomes of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// The worker completes it with [`result`].
    Completes,
    /// The worker fails it with [`error`]; with one attempt, it dies.
    Dies,
    /// Scheduled an hour out; an operator cancels it.
    Cancelled,
    /// Scheduled an hour out; an operator removes it.
    Removed,
    /// Scheduled an hour out, and left so.
    Undecided,
}

impl Kind {
    /// Whether the worker runs it.
    pub(super) fn is_worked(self) -> bool {
        matches!(self, Kind::Completes | Kind::Dies)
    }
}

/// When a job's wait starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Start {
    /// Before any job runs.
    Before,
    /// Around its job's turn: just before it, or just after.
    During,
    /// Once every job is decided.
    After,
}

/// How an answer reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Exactly the job's outcome (or `Removed` where retention may have
    /// trimmed it before the wait began).
    Right,
    /// `Removed` for a completed job whose wait began before it completed:
    /// right only if the outcome was published while the subscription was
    /// down, and retention trimmed the job before the read-back.
    Trimmed,
    /// Anything else.
    Wrong,
}

/// What the answers added up to.
#[derive(Debug, Default)]
pub(super) struct Tally {
    pub(super) right: usize,
    pub(super) trimmed_early: usize,
}

pub(super) fn kind(n: usize) -> Kind {
    match n % 100 {
        _ if n % 1000 == 999 => Kind::Undecided,
        7 | 57 => Kind::Dies,
        42 => Kind::Cancelled,
        92 => Kind::Removed,
        _ => Kind::Completes,
    }
}

pub(super) fn start(n: usize) -> Start {
    match n % 3 {
        0 => Start::Before,
        1 => Start::During,
        _ => Start::After,
    }
}

pub(super) fn id(n: usize) -> JobId {
    JobId::new(format!("r{n}")).unwrap()
}

/// Job `n`: payload `{"n": n}`, one attempt, scheduled an hour out unless
/// the worker is to run it.
pub(super) fn new_job(n: usize) -> NewJob<Value> {
    let job = NewJob::new(json!({ "n": n }))
        .id(format!("r{n}"))
        .unwrap()
        .attempts(1);
    if kind(n).is_worked() {
        job
    } else {
        job.after(Duration::from_secs(3600))
    }
}

/// The result the worker completes job `n` with: made from its payload,
/// so that another job's result is caught.
pub(super) fn result(n: usize) -> Value {
    json!({ "n": n, "square": n * n })
}

/// The error job `n` dies of.
pub(super) fn error(n: usize) -> String {
    format!("boom {n}")
}

/// How many jobs the worker has handled when the During wait of job `n`
/// starts: about when its own turn comes (the worker takes jobs in id
/// order, and runs 979 of every 1,000), from 120 jobs before it to 120
/// after.
pub(super) fn turn(n: usize) -> usize {
    let at = (n * 979 / 1000) as i64 + (n % 7) as i64 * 40 - 120;
    at.max(0) as usize
}

/// How the answer `got` for job `n`, whose wait began at `start`, reads;
/// `kept` says whether retention kept the job once all were decided.
pub(super) fn verdict(
    n: usize,
    start: Start,
    kept: bool,
    got: &echomq::Result<Outcome<Value>>,
) -> Verdict {
    let right = match (kind(n), got) {
        (Kind::Completes, Ok(Outcome::Completed { result: Some(r) })) => *r == result(n),
        (Kind::Completes, Ok(Outcome::Removed)) => match start {
            Start::Before => return Verdict::Trimmed,
            Start::During => true,
            Start::After => !kept,
        },
        (Kind::Dies, Ok(Outcome::Dead { error: e, attempts })) => *e == error(n) && *attempts == 1,
        (Kind::Cancelled, Ok(Outcome::Cancelled)) | (Kind::Removed, Ok(Outcome::Removed)) => true,
        (Kind::Undecided, Err(Error::Timeout { job, .. })) => *job == id(n),
        _ => false,
    };
    if right {
        Verdict::Right
    } else {
        Verdict::Wrong
    }
}
