//! A test's own tracing subscriber, safe beside tests that run on other
//! threads of the same process without one.
//!
//! `tracing` caches each callsite's interest once for the whole process.
//! While at most one dispatcher is registered, tracing-core computes it
//! from the default of the thread that first reaches the callsite: a
//! sibling test's thread has none (`NoSubscriber`), so a span it creates
//! first is cached as never wanted, and a test's thread-local subscriber
//! never sees it. [`scoped`] installs, once per process, a global default
//! that wants every callsite sometimes (and enables none, so a thread
//! without its own subscriber still records nothing): no callsite is
//! cached as never, and each span asks the subscriber of its own thread.

use std::sync::Once;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::{DefaultGuard, Interest};
use tracing::{Event, Metadata, Subscriber};

/// `subscriber` as this thread's default until the guard drops, with
/// the global default of this module's doc in place first.
pub(crate) fn scoped(subscriber: impl Subscriber + Send + Sync + 'static) -> DefaultGuard {
    static UNDECIDED: Once = Once::new();
    UNDECIDED.call_once(|| {
        // Another global default set first keeps its place; it decides.
        let _ = tracing::subscriber::set_global_default(Undecided);
    });
    let guard = tracing::subscriber::set_default(subscriber);
    // A callsite whose interest was computed before the global default
    // existed is asked again, now of every registered dispatcher.
    tracing::callsite::rebuild_interest_cache();
    guard
}

/// Wants every callsite sometimes, so each span and event asks the
/// current thread's subscriber; enables nothing itself.
struct Undecided;

impl Subscriber for Undecided {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::sometimes()
    }

    fn enabled(&self, _: &Metadata<'_>) -> bool {
        false
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, _: &Event<'_>) {}

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}
