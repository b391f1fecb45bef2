//! Bounded waits: how a test waits for something to happen, never a bare
//! sleep. The condition is checked at once, then every [`EVERY`] (or
//! [`Wait::every`]) until it holds or the limit has passed; then the test
//! fails naming what it awaited, for how long, and the last reason the
//! condition gave.
//!
//! ```
//! use echomq_testkit::wait_until;
//! use std::time::{Duration, Instant};
//!
//! let start = Instant::now();
//! wait_until("10 ms to pass", Duration::from_secs(5), || {
//!     start.elapsed() >= Duration::from_millis(10)
//! });
//! ```

use std::fmt::Display;
use std::time::{Duration, Instant};

/// How often a wait checks its condition again, unless told otherwise.
pub const EVERY: Duration = Duration::from_millis(10);

/// How often the testkit's own setup waits (a cluster forming, a sentinel
/// failing over) check again: each check queries every node.
pub(crate) const SETUP_EVERY: Duration = Duration::from_millis(50);

/// What a condition answers: what the wait returns once it holds, or why
/// it does not yet.
///
/// `bool` holds when true; `Option<T>` holds with `Some(t)`, returning `t`;
/// `Result<T, E>` holds with `Ok(t)`, and its error is quoted if the wait
/// times out.
pub trait Condition {
    /// What the wait returns once the condition holds.
    type Value;

    /// `Ok` once the condition holds, else why not (possibly empty).
    fn check(self) -> Result<Self::Value, String>;
}

impl Condition for bool {
    type Value = ();

    fn check(self) -> Result<(), String> {
        if self { Ok(()) } else { Err(String::new()) }
    }
}

impl<T> Condition for Option<T> {
    type Value = T;

    fn check(self) -> Result<T, String> {
        self.ok_or_else(String::new)
    }
}

impl<T, E: Display> Condition for Result<T, E> {
    type Value = T;

    fn check(self) -> Result<T, String> {
        self.map_err(|err| err.to_string())
    }
}

/// A bounded wait for `what`, at most `limit` long.
#[derive(Debug, Clone, Copy)]
pub struct Wait<'a> {
    what: &'a str,
    limit: Duration,
    every: Duration,
}

impl<'a> Wait<'a> {
    /// A wait for `what` (named in the failure: "the replica to sync"),
    /// failing after `limit`, checking every [`EVERY`].
    pub fn new(what: &'a str, limit: Duration) -> Self {
        Self {
            what,
            limit,
            every: EVERY,
        }
    }

    /// Checks every `every` instead.
    pub fn every(self, every: Duration) -> Self {
        Self { every, ..self }
    }

    /// Blocks the thread until `condition` holds; returns what it gave.
    /// Panics when it still does not hold after the limit.
    #[track_caller]
    pub fn until<C: Condition>(self, mut condition: impl FnMut() -> C) -> C::Value {
        let deadline = Instant::now() + self.limit;
        loop {
            match condition().check() {
                Ok(value) => return value,
                Err(reason) => self.give_up_after(deadline, &reason),
            }
            std::thread::sleep(self.every);
        }
    }

    /// Waits (on the tokio timer) until `condition` holds; returns what it
    /// gave. Panics when it still does not hold after the limit.
    pub async fn until_async<C, F, Fut>(self, mut condition: F) -> C::Value
    where
        C: Condition,
        F: FnMut() -> Fut,
        Fut: Future<Output = C>,
    {
        let deadline = Instant::now() + self.limit;
        loop {
            match condition().await.check() {
                Ok(value) => return value,
                Err(reason) => self.give_up_after(deadline, &reason),
            }
            tokio::time::sleep(self.every).await;
        }
    }

    /// Panics, naming what was awaited and why it is not yet, once
    /// `deadline` has passed.
    #[track_caller]
    fn give_up_after(&self, deadline: Instant, reason: &str) {
        if Instant::now() >= deadline {
            let reason = if reason.is_empty() {
                String::new()
            } else {
                format!(": {reason}")
            };
            panic!(
                "timed out after {:?} waiting for {}{reason}",
                self.limit, self.what
            );
        }
    }
}

/// [`Wait::until`] with the default interval: blocks until `condition`
/// holds, for at most `limit`, failing the test naming `what`.
#[track_caller]
pub fn wait_until<C: Condition>(
    what: &str,
    limit: Duration,
    condition: impl FnMut() -> C,
) -> C::Value {
    Wait::new(what, limit).until(condition)
}

/// [`Wait::until_async`] with the default interval: waits until
/// `condition` holds, for at most `limit`, failing the test naming `what`.
pub async fn wait_for<C, F, Fut>(what: &str, limit: Duration, condition: F) -> C::Value
where
    C: Condition,
    F: FnMut() -> Fut,
    Fut: Future<Output = C>,
{
    Wait::new(what, limit).until_async(condition).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn returns_what_the_condition_gave_once_it_holds() {
        let calls = Cell::new(0);
        let got = wait_until("the third call", Duration::from_secs(5), || {
            calls.set(calls.get() + 1);
            (calls.get() == 3).then_some("third")
        });
        assert_eq!((got, calls.get()), ("third", 3));
    }

    #[test]
    fn a_timeout_names_what_was_awaited_and_the_last_reason() {
        let failed = std::panic::catch_unwind(|| {
            Wait::new("the impossible", Duration::from_millis(30))
                .every(Duration::from_millis(5))
                .until(|| Err::<(), _>("still not"))
        });
        let message = failed.unwrap_err();
        let message = message.downcast_ref::<String>().unwrap();
        assert_eq!(
            message,
            "timed out after 30ms waiting for the impossible: still not"
        );
    }

    #[tokio::test]
    async fn the_async_wait_checks_again_until_it_holds() {
        let calls = Cell::new(0);
        wait_for("the second call", Duration::from_secs(5), || {
            calls.set(calls.get() + 1);
            std::future::ready(calls.get() >= 2)
        })
        .await;
        assert_eq!(calls.get(), 2);
    }
}
