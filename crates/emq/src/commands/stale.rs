//! Which fields of a job's record still apply in its state. The server
//! keeps a field until something overwrites it: a job released back to
//! pending keeps its old `run_at`, a reprocessed one its old `worker` and
//! `result`. Human rows (`emq job`, `emq jobs`) show `-` for a field that
//! does not apply to the job's current state; `--json` gives the record as
//! stored.
//!
//! | field | shown in |
//! | --- | --- |
//! | `run_at` | scheduled (when it runs) |
//! | `claimed_at`, `worker`, `progress` | active, completed, dead, cancelled (the last attempt) |
//! | `cancel_requested` | active |
//! | `finished_at` | completed, dead, cancelled |
//! | `result` | completed |
//! | `error` | every state but completed (the last failure: why a job waits to retry, or died) |

use echomq::JobState;

/// A field of the record whose value belongs to one part of a job's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    /// `run_at`.
    RunAt,
    /// `claimed_at`, `worker` and `progress`: the last attempt's.
    Attempt,
    /// `cancel_requested`.
    CancelRequested,
    /// `finished_at`.
    FinishedAt,
    /// `result`.
    Result,
    /// `error`: the last failure.
    Error,
}

impl Field {
    /// Whether the field applies to a job in `state` (the module's table).
    pub(crate) fn applies(self, state: JobState) -> bool {
        use JobState::{Active, Cancelled, Completed, Dead, Scheduled};
        match self {
            Field::RunAt => state == Scheduled,
            Field::Attempt => matches!(state, Active | Completed | Dead | Cancelled),
            Field::CancelRequested => state == Active,
            Field::FinishedAt => matches!(state, Completed | Dead | Cancelled),
            Field::Result => state == Completed,
            Field::Error => state != Completed,
        }
    }

    /// `value`, or `-` where the field does not apply to `state`.
    pub(crate) fn show(self, state: JobState, value: String) -> String {
        if self.applies(state) {
            value
        } else {
            "-".into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_job_shows_no_attempt_and_no_run_at() {
        assert!(!Field::RunAt.applies(JobState::Pending));
        assert!(!Field::Attempt.applies(JobState::Pending));
        assert!(Field::RunAt.applies(JobState::Scheduled));
        assert!(Field::Attempt.applies(JobState::Active));
        assert!(!Field::Result.applies(JobState::Dead));
        assert!(!Field::Error.applies(JobState::Completed));
        assert_eq!(Field::RunAt.show(JobState::Pending, "x".into()), "-");
    }
}
