//! The events stream (`docs/protocol.md`, "Events"): the same event for
//! jobs one after another shares an entry, at most `EVENT_JOBS` jobs, and
//! an entry of n jobs trims the stream to about `events_max / n` entries.
//! The twin of `emit` and `flush_events` in `scripts/include/events.lua`.

use crate::server::key::Str;
use crate::server::store::{Store, wrongtype};
use echomq_protocol::QueueKey;
use echomq_protocol::arg::EVENT_JOBS;
use valkey_module::ValkeyError;

/// An entry being filled: its fields so far (`event`, the event's name,
/// then each job's `id` and fields), and how many jobs it holds.
pub(crate) struct HeldEvent {
    fields: Vec<Str>,
    jobs: u64,
    max: i64,
}

impl Store<'_> {
    /// Appends a lifecycle event, `[event, name, id, …]` for a job or
    /// `[event, name, …]` otherwise (`emit`; events_max 0 turns them off).
    /// A job's event is held: the same event for the next job joins its
    /// entry, and anything else, or the end of the command, writes it.
    pub(crate) fn emit(&self, max: i64, fields: &[&[u8]]) -> Result<(), ValkeyError> {
        if max <= 0 {
            return Ok(());
        }
        let for_a_job = fields.get(2) == Some(&&b"id"[..]);
        {
            let mut held = self.held_event.borrow_mut();
            if let Some(entry) = held.as_mut().filter(|entry| {
                for_a_job && entry.fields[1].as_slice() == fields[1] && entry.jobs < EVENT_JOBS
            }) {
                // Names at even positions: `id`, then the job's fields.
                entry
                    .fields
                    .extend(self.pairs(&fields[2..], |i| i % 2 == 0));
                entry.jobs += 1;
                return Ok(());
            }
        }
        self.flush_events()?;
        let entry = HeldEvent {
            // Names at even positions, and the event's own name.
            fields: self.pairs(fields, |i| i % 2 == 0 || i == 1),
            jobs: 1,
            max,
        };
        if for_a_job {
            *self.held_event.borrow_mut() = Some(entry);
            Ok(())
        } else {
            self.add_event(entry)
        }
    }

    /// Writes the held entry, if any (`flush_events`).
    pub(crate) fn flush_events(&self) -> Result<(), ValkeyError> {
        let held = self.held_event.borrow_mut().take();
        held.map_or(Ok(()), |entry| self.add_event(entry))
    }

    /// Adds `entry` to the stream, trimmed to about `max / jobs` entries.
    fn add_event(&self, entry: HeldEvent) -> Result<(), ValkeyError> {
        let events = self.key(QueueKey::Events);
        let max = (entry.max as u64).div_ceil(entry.jobs) as i64;
        self.with(events, true, |h| {
            // A call's first event takes the stream's next id (`XADD *`),
            // the others the ids after it; a replay takes the ids its
            // primary did, and trims once, exactly, at its end
            // (`replicate.rs`).
            let (id, trim) = crate::server::replicate::next_event();
            let (id, trimmed, len) = h.stream_add(&entry.fields, id, trim.then_some(max))?;
            crate::server::replicate::event_added(id, trimmed, len);
            Ok(())
        })
        .map_err(wrongtype)
    }
}
