//! The six states a job can be in. `docs/state-machine.md` draws the moves.

use crate::keyspace::QueueKey;
use std::fmt;
use std::str::FromStr;

/// Where a job is. The job hash's `state` field names exactly one state, and
/// the job's id is a member of that state's sorted set and of no other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobState {
    /// Waiting for its run-at on the `schedule` set. `SCHEDULE`, `FAIL` with a
    /// retry delay and `DELAY` move a job in; `PROMOTE` (and `CLAIM`'s own
    /// promotion) moves it to `pending` once due; `CANCEL` to `cancelled`;
    /// `REQUEUE` to `pending` at once.
    Scheduled,
    /// Claimable, on the `pending` set ordered by priority then arrival.
    /// `ENQUEUE`, promotion, an immediate retry, the stalled sweep, `REQUEUE`
    /// and `REPROCESS` move a job in; only `CLAIM` (to `active`), `CANCEL`,
    /// `DRAIN` and `REMOVE` move it out.
    Pending,
    /// Held by a worker under a lease, on the `active` set scored by the
    /// lease deadline. Only `CLAIM` moves a job in, and it issues the fencing
    /// token (within the queue's rate limit and cap on active jobs). The
    /// holder moves it out with `COMPLETE`, `FAIL` (`FAIL … RATE_LIMITED`
    /// back to pending without a failure) or `DELAY`; `STALLED.CHECK` takes
    /// it back once the lease ran out; `REQUEUE` and `REMOVE FORCE` void the
    /// lease.
    Active,
    /// Finished successfully (`COMPLETE`). Kept up to `keep_completed`, then
    /// trimmed oldest first; `REPROCESS` sends it back to `pending`.
    Completed,
    /// Dead-lettered: out of attempts, failed with `DEAD`, or stalled past
    /// `max_stalls`. Kept up to `keep_dead`; `REPROCESS` revives it.
    Dead,
    /// Cancelled before or while it ran (`CANCEL`, or `FAIL` of a job whose
    /// cancellation was requested). Kept up to `keep_cancelled`;
    /// `REPROCESS` revives it.
    Cancelled,
    /// Waiting for its dependencies (issue 43, docs/protocol.md "The state
    /// `blocked`"), on the `blocked` set scored by its next check-up; never
    /// claimed. `CANCEL` moves it to `cancelled`; `REMOVE`, `DRAIN …
    /// BLOCKED` and `OBLITERATE` delete it; `REQUEUE` and `RESCHEDULE`
    /// refuse it.
    Blocked,
}

impl JobState {
    /// Every state, in the order `COUNTS` reports them.
    pub const ALL: [JobState; 7] = [
        JobState::Scheduled,
        JobState::Pending,
        JobState::Active,
        JobState::Completed,
        JobState::Dead,
        JobState::Cancelled,
        JobState::Blocked,
    ];

    /// The word stored in the job hash's `state` field.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Scheduled => "scheduled",
            JobState::Pending => "pending",
            JobState::Active => "active",
            JobState::Completed => "completed",
            JobState::Dead => "dead",
            JobState::Cancelled => "cancelled",
            JobState::Blocked => "blocked",
        }
    }

    /// The sorted set holding jobs in this state (`scheduled` lives on `schedule`).
    pub fn set_key(self) -> QueueKey {
        match self {
            JobState::Scheduled => QueueKey::Schedule,
            JobState::Pending => QueueKey::Pending,
            JobState::Active => QueueKey::Active,
            JobState::Completed => QueueKey::Completed,
            JobState::Dead => QueueKey::Dead,
            JobState::Cancelled => QueueKey::Cancelled,
            JobState::Blocked => QueueKey::Blocked,
        }
    }

    /// Whether the job has finished (completed, dead or cancelled).
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            JobState::Completed | JobState::Dead | JobState::Cancelled
        )
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A word that is not one of the seven states.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown job state {0:?}; expected one of scheduled, pending, active, completed, dead, cancelled, blocked"
)]
pub struct UnknownState(pub String);

impl FromStr for JobState {
    type Err = UnknownState;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        JobState::ALL
            .into_iter()
            .find(|state| state.as_str() == s)
            .ok_or_else(|| UnknownState(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_through_their_words() {
        for state in JobState::ALL {
            assert_eq!(state.as_str().parse::<JobState>(), Ok(state));
        }
        assert!("waiting".parse::<JobState>().is_err());
    }

    #[test]
    fn each_state_has_its_own_set() {
        let mut sets: Vec<_> = JobState::ALL.iter().map(|s| s.set_key().name()).collect();
        sets.dedup();
        assert_eq!(sets.len(), 7);
        assert_eq!(JobState::Scheduled.set_key(), QueueKey::Schedule);
    }
}
