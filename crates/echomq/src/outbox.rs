//! The client's side of the `relay_*` reply words (docs/protocol.md,
//! "Deciding a job that has dependents"): a command that decided a job
//! with dependents not told yet answers `relay_completed`, `relay_dead` or
//! `relay_cancelled` in place of its word. The caller's result is the word
//! without the prefix; the job's id is kept here, per queue, for the
//! relay to deliver its resolution (`FLOW.OUTBOX … JOBS id …`).
//!
//! The relay itself (reading the outbox, `FLOW.RESOLVE` on the
//! dependents' queues, `FLOW.ACK`) is `flows/relay.rs`'s: it takes the
//! ids noted here after each verb that answered `relay_*`. They wait here
//! at most [`UNRELAYED_MAX`] a queue; past it the oldest are dropped,
//! which loses nothing: the sweep's outbox pass delivers every
//! resolution, noted or not.

use echomq_protocol::JobId;
use std::collections::VecDeque;
use std::sync::Mutex;

/// The prefix of a reply word that asks its caller to relay.
const RELAY_PREFIX: &str = "relay_";

/// Most ids a queue handle keeps for the relay.
pub(crate) const UNRELAYED_MAX: usize = 10_000;

/// A reply word as the caller reads it: `relay_completed` is `completed`,
/// with `true` (the decision wrote a resolution); any other word is
/// itself, with `false`.
pub(crate) fn relay_word(word: &str) -> (&str, bool) {
    match word.strip_prefix(RELAY_PREFIX) {
        Some(word) => (word, true),
        None => (word, false),
    }
}

/// The ids of a queue's jobs whose decision answered `relay_*`, oldest
/// first, shared by the clones of one queue handle.
#[derive(Debug, Default)]
pub(crate) struct Unrelayed(Mutex<VecDeque<JobId>>);

impl Unrelayed {
    /// Keeps `id` for the relay.
    pub(crate) fn note(&self, id: &JobId) {
        let mut ids = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if ids.len() == UNRELAYED_MAX {
            ids.pop_front();
        }
        ids.push_back(id.clone());
    }

    /// Every id kept, oldest first, and none left.
    pub(crate) fn take(&self) -> Vec<JobId> {
        let mut ids = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        ids.drain(..).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_relay_word_reads_as_its_plain_word() {
        assert_eq!(relay_word("relay_completed"), ("completed", true));
        assert_eq!(relay_word("relay_dead"), ("dead", true));
        assert_eq!(relay_word("cancelled"), ("cancelled", false));
        assert_eq!(relay_word("OK"), ("OK", false));
    }

    #[test]
    fn unrelayed_ids_are_taken_oldest_first_and_bounded() {
        let unrelayed = Unrelayed::default();
        for n in 0..UNRELAYED_MAX + 2 {
            unrelayed.note(&JobId::new(n.to_string()).unwrap());
        }
        let ids = unrelayed.take();
        assert_eq!(ids.len(), UNRELAYED_MAX);
        assert_eq!(ids[0].as_str(), "2");
        assert!(unrelayed.take().is_empty());
    }
}
