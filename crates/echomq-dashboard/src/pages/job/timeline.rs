//! A job's own events, oldest first, as an `ol.timeline`: the time each
//! was written (a stream id starts with its ms) and what happened, in
//! words.

use super::EVENTS_SCANNED;
use crate::layout;
use echomq::{Event, EventKind};
use maud::{Markup, html};

/// The ms a stream entry id (`<ms>-<seq>`) was written at.
fn written_at(stream_id: &str) -> Option<u64> {
    stream_id.split('-').next()?.parse().ok()
}

/// The event's word, as the stream writes it (`claimed`, `dead`, …).
pub(crate) fn word(kind: &EventKind) -> &str {
    match kind {
        EventKind::Enqueued => "enqueued",
        EventKind::Scheduled { .. } => "scheduled",
        EventKind::Promoted => "promoted",
        EventKind::Claimed { .. } => "claimed",
        EventKind::Completed => "completed",
        EventKind::Retried { .. } => "retried",
        EventKind::Dead { .. } => "dead",
        EventKind::Cancelled => "cancelled",
        EventKind::CancelRequested => "cancel_requested",
        EventKind::Expired { .. } => "expired",
        EventKind::Blocked { .. } => "blocked",
        EventKind::DependencyResolved { .. } => "dependency_resolved",
        EventKind::Unblocked { .. } => "unblocked",
        EventKind::Linked { .. } => "linked",
        EventKind::Delayed { .. } => "delayed",
        EventKind::Rescheduled { .. } => "rescheduled",
        EventKind::Stalled { .. } => "stalled",
        EventKind::Paused => "paused",
        EventKind::Resumed => "resumed",
        EventKind::Drained { .. } => "drained",
        EventKind::Updated => "updated",
        EventKind::Progress { .. } => "progress",
        EventKind::Removed => "removed",
        EventKind::Reprocessed => "reprocessed",
        EventKind::Requeued => "requeued",
        EventKind::Deduplicated { .. } => "deduplicated",
        EventKind::Debounced { .. } => "debounced",
        EventKind::DedupReleased { .. } => "dedup_released",
        EventKind::RateLimited { .. } => "rate_limited",
        EventKind::LimitSet { .. } => "limit_set",
        EventKind::ConcurrencySet { .. } => "concurrency_set",
        EventKind::RetentionSet { .. } => "retention_set",
        EventKind::GroupPaused { .. } => "group_paused",
        EventKind::GroupResumed { .. } => "group_resumed",
        EventKind::GroupLimitSet { .. } => "group_limit_set",
        EventKind::GroupConcurrencySet { .. } => "group_concurrency_set",
        EventKind::Other(word) => word,
    }
}

/// What happened to the job, in words.
pub(crate) fn words(kind: &EventKind) -> String {
    use layout::{span, time};
    match kind {
        EventKind::Enqueued => "enqueued: pending".into(),
        EventKind::Scheduled { run_at } => format!("scheduled for {}", time(*run_at)),
        EventKind::Promoted => "promoted: due, now pending".into(),
        // The token is a machine's fence (a clock × 1000), not for reading.
        EventKind::Claimed { worker, .. } => format!("claimed by {worker}"),
        EventKind::Completed => "completed".into(),
        EventKind::Retried { error, delay } => {
            format!("failed, retried in {}: {error}", span(*delay))
        }
        EventKind::Dead { error } => format!("dead: {error}"),
        EventKind::Cancelled => "cancelled".into(),
        EventKind::CancelRequested => "cancellation asked of its holder".into(),
        EventKind::Expired { start_by } => {
            format!("expired: not claimed by its deadline {}", time(*start_by))
        }
        EventKind::Blocked { deps } => format!("blocked: waits for {deps} dependencies"),
        EventKind::DependencyResolved {
            dependency,
            outcome,
        } => format!("dependency {dependency} is {outcome}"),
        EventKind::Unblocked { to } => format!("unblocked: its dependencies ended, sent to {to}"),
        EventKind::Linked { dependent } => format!("linked: {dependent} runs after it"),
        EventKind::Delayed { delay } => format!("delayed by its holder for {}", span(*delay)),
        EventKind::Rescheduled { run_at } => format!("rescheduled for {}", time(*run_at)),
        EventKind::Stalled { to } => format!("stalled: its lease ran out, sent to {to}"),
        EventKind::Updated => "payload updated".into(),
        EventKind::Progress { progress } => format!("progress {progress}"),
        EventKind::Removed => "removed".into(),
        EventKind::Reprocessed => "reprocessed: pending again".into(),
        EventKind::Requeued => "requeued: pending now".into(),
        EventKind::Deduplicated { key, requested } => {
            format!("holds dedup key {key}: an enqueue of {requested} created nothing")
        }
        EventKind::Debounced { key, run_at } => format!(
            "debounced by key {key}: payload replaced, runs at {}",
            time(*run_at)
        ),
        EventKind::DedupReleased { key } => format!("dedup key {key} released"),
        EventKind::RateLimited { retry_in } => {
            format!(
                "rate limited: back to pending, the queue held {}",
                span(*retry_in)
            )
        }
        other => word(other).replace('_', " "),
    }
}

/// The job's events (`own`, oldest first) out of the `scanned` newest of
/// the queue's stream.
pub(super) fn list(own: &[&Event], scanned: u64) -> Markup {
    html! {
        @if own.is_empty() {
            p.muted id="timeline" { "No event of this job among the queue's newest " (scanned) "." }
        } @else {
            ol.timeline id="timeline" {
                @for event in own {
                    li data-event=(word(&event.kind)) data-stream-id=(event.stream_id) {
                        time.muted { (written_at(&event.stream_id).map(layout::time).unwrap_or_default()) }
                        " " (words(&event.kind))
                    }
                }
            }
            @if scanned >= EVENTS_SCANNED {
                p.muted { "From the queue's newest " (EVENTS_SCANNED) " events." }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_id_starts_with_its_ms() {
        assert_eq!(written_at("1796196182123-4"), Some(1_796_196_182_123));
        assert_eq!(written_at("x"), None);
    }

    #[test]
    fn events_read_in_words() {
        let claimed = EventKind::Claimed {
            token: 2,
            worker: "w1".into(),
        };
        assert_eq!(word(&claimed), "claimed");
        assert_eq!(words(&claimed), "claimed by w1");
        assert_eq!(words(&EventKind::Paused), "paused");
        assert_eq!(
            words(&EventKind::GroupPaused { group: "g".into() }),
            "group paused"
        );
    }
}
