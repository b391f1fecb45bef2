//! How many jobs a worker holds claimed ahead of its running ones.
//!
//! By default a worker holds one batch ahead (as many jobs as its
//! concurrency). While its handlers are quick it holds more, up to
//! [`QUICK_AHEAD_MAX`], as many as its handlers get through in
//! [`QUICK_AHEAD_WAIT`]: at concurrency 1 a worker holding one job ahead
//! runs it, then waits a round trip for the next, and the server and the
//! worker take turns idling. The budget bounds what the quick jobs cost
//! the queue's other workers: the last job held ahead starts about
//! [`QUICK_AHEAD_WAIT`] after its claim. Slow handlers keep one batch.
//! `claim_ahead(n)` fixes the number instead.

use std::time::Duration;

/// The most jobs a worker with quick handlers holds ahead by default,
/// whatever its concurrency (one batch, when that is more).
pub(crate) const QUICK_AHEAD_MAX: usize = 16;

/// About how long the last of the jobs held ahead waits for a handler
/// while they are quick: the budget of [`Ahead::wanted`].
pub(crate) const QUICK_AHEAD_WAIT: Duration = Duration::from_millis(1);

/// The range of jobs held ahead: `least` always (unless a cap parks them
/// all), up to `most` while handlers are quick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ahead {
    concurrency: usize,
    /// Held ahead whatever the handlers' pace.
    pub least: usize,
    /// Held ahead at most.
    pub most: usize,
}

impl Ahead {
    /// Exactly `jobs` ahead (`claim_ahead(jobs)`).
    pub(super) fn fixed(concurrency: usize, jobs: usize) -> Self {
        Self {
            concurrency,
            least: jobs,
            most: jobs,
        }
    }

    /// The default: one batch, up to [`QUICK_AHEAD_MAX`] while handlers
    /// are quick.
    pub(super) fn quick(concurrency: usize) -> Self {
        Self {
            concurrency,
            least: concurrency,
            most: concurrency.max(QUICK_AHEAD_MAX),
        }
    }

    /// Whether the number held ahead follows the handlers' pace.
    pub(super) fn adapts(&self) -> bool {
        self.least < self.most
    }

    /// Jobs to hold ahead while handlers take `run` on average: as many as
    /// the running ones get through in [`QUICK_AHEAD_WAIT`], within the
    /// range.
    pub(super) fn wanted(&self, run: Duration) -> usize {
        let run = run.as_nanos().max(1);
        let fit = QUICK_AHEAD_WAIT.as_nanos() * self.concurrency as u128 / run;
        usize::try_from(fit)
            .unwrap_or(usize::MAX)
            .clamp(self.least, self.most)
    }
}

/// The next running average of handler times (weight 1/8 to the newest),
/// from `average` (`None` before the first) and the newest, `run`.
pub(crate) fn average(average: Option<Duration>, run: Duration) -> Duration {
    match average {
        None => run,
        Some(average) => (average * 7 + run) / 8,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_handlers_at_concurrency_1_hold_up_to_the_most_ahead() {
        let ahead = Ahead::quick(1);
        assert_eq!((ahead.least, ahead.most), (1, QUICK_AHEAD_MAX));
        assert_eq!(ahead.wanted(Duration::from_micros(5)), QUICK_AHEAD_MAX);
        assert_eq!(ahead.wanted(Duration::ZERO), QUICK_AHEAD_MAX);
    }

    #[test]
    fn the_number_ahead_is_what_the_handlers_get_through_in_the_budget() {
        let ahead = Ahead::quick(1);
        assert_eq!(ahead.wanted(Duration::from_micros(100)), 10);
        assert_eq!(ahead.wanted(Duration::from_micros(250)), 4);
        let four = Ahead::quick(4);
        assert_eq!(four.wanted(Duration::from_micros(500)), 8);
    }

    #[test]
    fn slow_handlers_keep_one_batch_ahead() {
        assert_eq!(Ahead::quick(1).wanted(Duration::from_millis(2)), 1);
        assert_eq!(Ahead::quick(8).wanted(Duration::from_secs(1)), 8);
    }

    #[test]
    fn a_concurrency_above_the_most_keeps_one_batch_and_does_not_adapt() {
        let ahead = Ahead::quick(50);
        assert_eq!((ahead.least, ahead.most), (50, 50));
        assert!(!ahead.adapts());
        assert_eq!(ahead.wanted(Duration::from_micros(1)), 50);
    }

    #[test]
    fn a_fixed_number_ahead_does_not_adapt() {
        let ahead = Ahead::fixed(1, 0);
        assert!(!ahead.adapts());
        assert_eq!(ahead.wanted(Duration::ZERO), 0);
        assert_eq!(ahead.wanted(Duration::from_secs(9)), 0);
    }

    #[test]
    fn the_average_weighs_the_newest_run_an_eighth() {
        let first = average(None, Duration::from_micros(80));
        assert_eq!(first, Duration::from_micros(80));
        assert_eq!(
            average(Some(first), Duration::from_micros(160)),
            Duration::from_micros(90)
        );
    }
}
