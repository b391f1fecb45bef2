//! A lifecycle event's name as the stream writes it and its own fields
//! as JSON ([`EventKind::name`], [`EventKind::fields`]): what `emq watch`
//! prints and the HTTP API's event stream sends, from one table.

use crate::events::EventKind;
use serde_json::{Value, json};
use std::borrow::Cow;

impl EventKind {
    /// The event's name as the stream writes it (`enqueued`, `claimed`,
    /// `cancel_requested`, …; an unknown event's own word).
    pub fn name(&self) -> Cow<'_, str> {
        describe(self).0
    }

    /// The event's own fields (`token` and `worker` of `claimed`, …), in
    /// the stream's words, as JSON; none for most events.
    pub fn fields(&self) -> Vec<(&'static str, Value)> {
        describe(self).1
    }
}

/// The event's name and its own fields, in one table.
fn describe(kind: &EventKind) -> (Cow<'_, str>, Vec<(&'static str, Value)>) {
    let (name, fields) = match kind {
        EventKind::Enqueued => ("enqueued", vec![]),
        EventKind::Scheduled { run_at } => ("scheduled", vec![("run_at", json!(run_at))]),
        EventKind::Promoted => ("promoted", vec![]),
        EventKind::Claimed { token, worker } => (
            "claimed",
            vec![("token", json!(token)), ("worker", json!(worker))],
        ),
        EventKind::Completed => ("completed", vec![]),
        EventKind::Retried { error, delay } => (
            "retried",
            vec![("error", json!(error)), ("delay", json!(delay))],
        ),
        EventKind::Dead { error } => ("dead", vec![("error", json!(error))]),
        EventKind::Cancelled => ("cancelled", vec![]),
        EventKind::CancelRequested => ("cancel_requested", vec![]),
        EventKind::Expired { start_by } => ("expired", vec![("start_by", json!(start_by))]),
        EventKind::Blocked { deps } => ("blocked", vec![("deps", json!(deps))]),
        EventKind::DependencyResolved {
            dependency,
            outcome,
        } => (
            "dependency_resolved",
            vec![
                ("dependency", json!(dependency)),
                ("outcome", json!(outcome)),
            ],
        ),
        EventKind::Unblocked { to } => ("unblocked", vec![("to", json!(to))]),
        EventKind::Linked { dependent } => ("linked", vec![("dependent", json!(dependent))]),
        EventKind::Delayed { delay } => ("delayed", vec![("delay", json!(delay))]),
        EventKind::Rescheduled { run_at } => ("rescheduled", vec![("run_at", json!(run_at))]),
        EventKind::Stalled { to } => ("stalled", vec![("to", json!(to))]),
        EventKind::Paused => ("paused", vec![]),
        EventKind::Resumed => ("resumed", vec![]),
        EventKind::Drained { count } => ("drained", vec![("count", json!(count))]),
        EventKind::Updated => ("updated", vec![]),
        EventKind::Progress { progress } => ("progress", vec![("progress", json!(progress))]),
        EventKind::Removed => ("removed", vec![]),
        EventKind::Reprocessed => ("reprocessed", vec![]),
        EventKind::Requeued => ("requeued", vec![]),
        EventKind::Deduplicated { key, requested } => (
            "deduplicated",
            vec![("key", json!(key)), ("requested", json!(requested))],
        ),
        EventKind::Debounced { key, run_at } => (
            "debounced",
            vec![("key", json!(key)), ("run_at", json!(run_at))],
        ),
        EventKind::DedupReleased { key } => ("dedup_released", vec![("key", json!(key))]),
        EventKind::RateLimited { retry_in } => {
            ("rate_limited", vec![("retry_in", json!(retry_in))])
        }
        EventKind::LimitSet { max, per } => {
            ("limit_set", vec![("max", json!(max)), ("per", json!(per))])
        }
        EventKind::ConcurrencySet { max } => ("concurrency_set", vec![("max", json!(max))]),
        EventKind::RetentionSet {
            completed,
            completed_for,
            dead,
            dead_for,
            cancelled,
            cancelled_for,
        } => (
            "retention_set",
            vec![
                ("completed", json!(completed)),
                ("completed_for", json!(completed_for)),
                ("dead", json!(dead)),
                ("dead_for", json!(dead_for)),
                ("cancelled", json!(cancelled)),
                ("cancelled_for", json!(cancelled_for)),
            ],
        ),
        EventKind::GroupPaused { group } => ("group_paused", vec![("group", json!(group))]),
        EventKind::GroupResumed { group } => ("group_resumed", vec![("group", json!(group))]),
        EventKind::GroupLimitSet { group, max, per } => (
            "group_limit_set",
            vec![
                ("group", json!(group)),
                ("max", json!(max)),
                ("per", json!(per)),
            ],
        ),
        EventKind::GroupConcurrencySet { group, max } => (
            "group_concurrency_set",
            vec![("group", json!(group)), ("max", json!(max))],
        ),
        EventKind::Other(word) => return (Cow::Borrowed(word.as_str()), vec![]),
    };
    (Cow::Borrowed(name), fields)
}
