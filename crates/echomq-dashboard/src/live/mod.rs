//! The live updates' list of what is watched ([`Live`]), which the shared
//! state holds: the [`hub`] that reads each watched queue's events once
//! for every viewer (one connection on one server, one per queue on a
//! cluster), the [`part`]s viewed now with their latest readings, and at
//! most [`Live::cap`] viewers' slots (`Dashboard::live_viewers`).
//!
//! It reads no part and draws none: `feed/` does, and answers each viewer
//! (503 past the cap). This module imports no page, so the state that
//! holds it imports none either.

pub(crate) mod hub;
pub(crate) mod part;

use echomq::Connector;
use part::Parts;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// Live viewers served at once unless [`Dashboard::live_viewers`]
/// says otherwise.
///
/// [`Dashboard::live_viewers`]: crate::Dashboard::live_viewers
pub const DEFAULT_LIVE_VIEWERS: usize = 100;

/// The live updates of one dashboard: its readers of events, its parts
/// and its viewers' slots.
#[derive(Debug)]
pub(crate) struct Live {
    /// The readers of the watched queues' events.
    pub(crate) hub: hub::Hub,
    /// The parts viewed now.
    pub(crate) parts: Parts,
    /// One permit per viewer served.
    pub(crate) slots: Arc<Semaphore>,
    /// Viewers served at once, at most.
    pub(crate) cap: usize,
}

impl Live {
    /// Live updates of `connector`'s queues for at most `cap` viewers at
    /// once.
    pub(crate) fn new(connector: Connector, cap: usize) -> Self {
        Self {
            hub: hub::Hub::new(connector),
            parts: Parts::default(),
            slots: Arc::new(Semaphore::new(cap)),
            cap,
        }
    }
}
