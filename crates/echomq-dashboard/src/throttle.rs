//! Wrong tokens at sign-in, counted per client address: past
//! [`FAILURES_ALLOWED`] within [`WINDOW`], that address is answered 429
//! until the window passes. A program that mounts the router without
//! connection info (`into_make_service_with_connect_info`) counts every
//! client as one.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Wrong tokens one address may send within [`WINDOW`].
pub(crate) const FAILURES_ALLOWED: u32 = 5;
/// The window failures are counted over.
pub(crate) const WINDOW: Duration = Duration::from_secs(60);
/// Addresses tracked at most (the oldest windows go first).
const MOST_ADDRESSES: usize = 10_000;

/// Failures of one address in its current window.
#[derive(Debug, Clone, Copy)]
struct Failures {
    since: Instant,
    count: u32,
}

/// Sign-in failures per client address (`None`: unknown).
#[derive(Debug, Default)]
pub(crate) struct LoginThrottle {
    by_client: Mutex<HashMap<Option<IpAddr>, Failures>>,
}

impl LoginThrottle {
    /// How long `client` must wait before it may try again; `None` when it
    /// may try now.
    pub(crate) fn wait(&self, client: Option<IpAddr>) -> Option<Duration> {
        let now = Instant::now();
        let by_client = self.lock();
        let failures = by_client.get(&client)?;
        let passed = now.duration_since(failures.since);
        (failures.count >= FAILURES_ALLOWED && passed < WINDOW).then(|| WINDOW - passed)
    }

    /// Counts a wrong token from `client`.
    pub(crate) fn failed(&self, client: Option<IpAddr>) {
        let now = Instant::now();
        let mut by_client = self.lock();
        if by_client.len() >= MOST_ADDRESSES {
            by_client.retain(|_, f| now.duration_since(f.since) < WINDOW);
        }
        if by_client.len() >= MOST_ADDRESSES && !by_client.contains_key(&client) {
            let oldest = by_client
                .iter()
                .min_by_key(|(_, f)| f.since)
                .map(|(c, _)| *c);
            if let Some(oldest) = oldest {
                by_client.remove(&oldest);
            }
        }
        let failures = by_client.entry(client).or_insert(Failures {
            since: now,
            count: 0,
        });
        if now.duration_since(failures.since) >= WINDOW {
            *failures = Failures {
                since: now,
                count: 0,
            };
        }
        failures.count += 1;
    }

    /// Forgets `client`'s failures (it signed in).
    pub(crate) fn succeeded(&self, client: Option<IpAddr>) {
        self.lock().remove(&client);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Option<IpAddr>, Failures>> {
        self.by_client
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_waits_after_its_allowed_failures_and_others_do_not() {
        let throttle = LoginThrottle::default();
        let a = Some("10.0.0.1".parse().unwrap());
        let b = Some("10.0.0.2".parse().unwrap());
        for _ in 0..FAILURES_ALLOWED {
            assert_eq!(throttle.wait(a), None);
            throttle.failed(a);
        }
        let wait = throttle.wait(a).expect("a waits");
        assert!(wait <= WINDOW && wait > WINDOW / 2, "{wait:?}");
        assert_eq!(throttle.wait(b), None);
        throttle.succeeded(a);
        assert_eq!(throttle.wait(a), None);
    }

    #[test]
    fn a_window_that_passed_counts_afresh() {
        let throttle = LoginThrottle::default();
        for _ in 0..FAILURES_ALLOWED {
            throttle.failed(None);
        }
        throttle.lock().get_mut(&None).unwrap().since -= WINDOW;
        assert_eq!(throttle.wait(None), None);
        throttle.failed(None);
        assert_eq!(throttle.lock()[&None].count, 1);
    }
}
