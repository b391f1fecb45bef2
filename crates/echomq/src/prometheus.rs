//! The Prometheus text format of every queue under a prefix, read from the
//! server on each scrape (docs/observability.md): the handler `emq metrics
//! --listen` serves, for a user's own HTTP server too.
//!
//! ```no_run
//! # async fn serve(connector: echomq::Connector) -> echomq::Result<()> {
//! // In any HTTP handler: answer with this body and content type.
//! let body = echomq::prometheus::render(&connector).await?;
//! let content_type = echomq::prometheus::CONTENT_TYPE;
//! # let _ = (body, content_type); Ok(()) }
//! ```

use crate::queue_metrics::{Histogram, MetricsWindow};
use crate::{ConcurrencyCap, Connector, Counts, JobState, RateLimit, Result, Unreadable};
use echomq_protocol::metrics::{BOUNDS_MS, Outcome};
use serde_json::Value;
use std::fmt::Write;

/// The content type of the text format served.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What one scrape reads of one queue.
#[derive(Debug, Clone)]
pub struct QueueSnapshot {
    /// The queue's name.
    pub queue: String,
    /// Jobs per state, and whether it is paused.
    pub counts: Counts,
    /// Age of the pending job first in claim order, ms (`None` when none).
    pub oldest_pending_ms: Option<u64>,
    /// Its metrics since it began.
    pub total: MetricsWindow,
    /// Its rate limit, where the server could say.
    pub rate_limit: Option<RateLimit>,
    /// Its cap on active jobs, where the server could say.
    pub concurrency: Option<ConcurrencyCap>,
}

impl QueueSnapshot {
    /// Reads one queue: its counts, the oldest pending job's age, its
    /// metrics total and its flow control, concurrently (one round trip on
    /// a multiplexed connection).
    pub async fn read(connector: &Connector, name: &str) -> Result<Self> {
        let queue = connector.queue::<Value>(name)?;
        let admin = queue.admin();
        let (counts, oldest, total, limit, cap) = tokio::join!(
            admin.counts(),
            admin.oldest_pending_age(),
            queue.metrics_total(),
            admin.rate_limit(),
            admin.concurrency_cap(),
        );
        Ok(Self {
            queue: name.to_string(),
            counts: counts?,
            oldest_pending_ms: oldest?,
            total: total?,
            rate_limit: optional(limit)?,
            concurrency: optional(cap)?,
        })
    }
}

/// A flow setting the server may not answer — a module that does not serve
/// it, a replica (`READONLY`) or one at `maxmemory` (`OOM`) refuses the
/// write command that reads it on wire 6 — as `None`, so the rest shows.
fn optional<T>(read: Result<T>) -> Result<Option<T>> {
    match read {
        Ok(value) => Ok(Some(value)),
        Err(crate::Error::Wire6Unsupported { .. }) => Ok(None),
        Err(crate::Error::Redis(err)) if matches!(err.code(), Some("READONLY" | "OOM")) => Ok(None),
        Err(err) => Err(err),
    }
}

/// Reads every queue of the connector's prefix ([`Connector::read_queues`])
/// and renders them ([`render_snapshots`]); a queue that cannot be read is
/// left out of those families and named in `emq_queue_unreadable`
/// ([`render_unreadable`]), so one bad record does not fail the scrape.
pub async fn render(connector: &Connector) -> Result<String> {
    let listed = connector
        .read_queues(|name| async move { QueueSnapshot::read(connector, name.as_str()).await })
        .await?;
    let (snapshots, unreadable): (Vec<_>, Vec<_>) = listed.into_iter().partition(|q| q.is_ok());
    let snapshots: Vec<QueueSnapshot> = snapshots.into_iter().filter_map(|q| q.ok()).collect();
    let unreadable: Vec<Unreadable> = unreadable.into_iter().filter_map(|q| q.err()).collect();
    let mut text = render_snapshots(&snapshots);
    text.push_str(&render_unreadable(&unreadable));
    Ok(text)
}

/// The family `emq_queue_unreadable`: 1 per queue the scrape could not
/// read, labelled with the queue and the problem (the key and what it
/// holds); nothing at all when every queue was read.
pub fn render_unreadable(unreadable: &[Unreadable]) -> String {
    let mut out = Text::default();
    if unreadable.is_empty() {
        return out.text;
    }
    out.header(
        "emq_queue_unreadable",
        "gauge",
        "1 for a queue the scrape could not read (a key of the wrong type, a registry member that is not a queue name); its other families leave it out.",
    );
    for queue in unreadable {
        let problem = queue.problem.to_string();
        sample(
            &mut out.text,
            "emq_queue_unreadable",
            &queue.queue,
            &[("problem", problem.as_str())],
            1.0,
        );
    }
    out.text
}

/// The text format of `snapshots`, one family after the other.
pub fn render_snapshots(snapshots: &[QueueSnapshot]) -> String {
    let mut out = Text::default();
    out.family(
        "emq_queue_jobs",
        "gauge",
        "Jobs in each state.",
        snapshots,
        |s, put| {
            for state in JobState::ALL {
                put(&[("state", state.as_str())], s.counts.get(state) as f64);
            }
        },
    );
    out.family(
        "emq_queue_paused",
        "gauge",
        "1 while the queue is paused (claims hand out nothing), else 0.",
        snapshots,
        |s, put| put(&[], f64::from(u8::from(s.counts.paused))),
    );
    out.family(
        "emq_queue_oldest_pending_age_seconds",
        "gauge",
        "How long the pending job first in claim order has been ready (0 when none is pending).",
        snapshots,
        |s, put| put(&[], s.oldest_pending_ms.unwrap_or(0) as f64 / 1000.0),
    );
    out.family(
        "emq_jobs_finished_total",
        "counter",
        "Jobs that left active (or were cancelled waiting) since the queue began, by outcome.",
        snapshots,
        |s, put| {
            for outcome in Outcome::ALL {
                put(
                    &[("outcome", outcome.field())],
                    s.total.outcome(outcome) as f64,
                );
            }
        },
    );
    out.histogram(
        "emq_job_wait_seconds",
        "From ready (enqueued, due or retried) to claimed, per job that left active.",
        snapshots,
        |s| &s.total.wait,
    );
    out.histogram(
        "emq_job_run_seconds",
        "From claimed to finished, per job that left active.",
        snapshots,
        |s| &s.total.run,
    );
    let limited: Vec<&QueueSnapshot> = snapshots
        .iter()
        .filter(|s| s.rate_limit.is_some_and(|l| l.is_set()))
        .collect();
    let limit = |s: &QueueSnapshot| s.rate_limit.unwrap_or_default();
    out.family_of(
        "emq_queue_rate_limit_max",
        "gauge",
        "Jobs that may start per window of the queue's rate limit (queues with one).",
        &limited,
        |s, put| put(&[], limit(s).max as f64),
    );
    out.family_of(
        "emq_queue_rate_limit_window_seconds",
        "gauge",
        "The rate limit's window (queues with one).",
        &limited,
        |s, put| put(&[], limit(s).per.as_secs_f64()),
    );
    out.family_of(
        "emq_queue_rate_limit_used",
        "gauge",
        "Jobs started in the rate limit's current window (queues with one).",
        &limited,
        |s, put| put(&[], limit(s).used as f64),
    );
    let capped: Vec<&QueueSnapshot> = snapshots
        .iter()
        .filter(|s| s.concurrency.is_some_and(|c| c.is_set()))
        .collect();
    out.family_of(
        "emq_queue_concurrency_max",
        "gauge",
        "Jobs that may be active at once across every worker (queues with a cap).",
        &capped,
        |s, put| put(&[], s.concurrency.unwrap_or_default().max as f64),
    );
    out.text
}

/// The text being written.
#[derive(Default)]
struct Text {
    text: String,
}

/// Writes one sample of the current queue: its extra labels and value.
type Put<'a> = dyn FnMut(&[(&str, &str)], f64) + 'a;

impl Text {
    /// A family over every snapshot.
    fn family(
        &mut self,
        name: &str,
        kind: &str,
        help: &str,
        snapshots: &[QueueSnapshot],
        each: impl Fn(&QueueSnapshot, &mut Put<'_>),
    ) {
        let all: Vec<&QueueSnapshot> = snapshots.iter().collect();
        self.family_of(name, kind, help, &all, each);
    }

    /// A family over some snapshots; nothing at all without one.
    fn family_of(
        &mut self,
        name: &str,
        kind: &str,
        help: &str,
        snapshots: &[&QueueSnapshot],
        each: impl Fn(&QueueSnapshot, &mut Put<'_>),
    ) {
        if snapshots.is_empty() {
            return;
        }
        self.header(name, kind, help);
        for snapshot in snapshots {
            let text = &mut self.text;
            each(snapshot, &mut |labels, value| {
                sample(text, name, &snapshot.queue, labels, value);
            });
        }
    }

    /// A histogram family: cumulative buckets in seconds, sum and count.
    fn histogram(
        &mut self,
        name: &str,
        help: &str,
        snapshots: &[QueueSnapshot],
        of: impl Fn(&QueueSnapshot) -> &Histogram,
    ) {
        if snapshots.is_empty() {
            return;
        }
        self.header(name, "histogram", help);
        let bucket = format!("{name}_bucket");
        for snapshot in snapshots {
            let histogram = of(snapshot);
            let mut cumulative = 0;
            for (i, n) in histogram.bins.iter().enumerate() {
                cumulative += n;
                let le = BOUNDS_MS.get(i).map_or_else(
                    || "+Inf".to_string(),
                    |ms| (*ms as f64 / 1000.0).to_string(),
                );
                let labels = [("le", le.as_str())];
                sample(
                    &mut self.text,
                    &bucket,
                    &snapshot.queue,
                    &labels,
                    cumulative as f64,
                );
            }
            let queue = &snapshot.queue;
            let sum = histogram.sum_ms as f64 / 1000.0;
            sample(&mut self.text, &format!("{name}_sum"), queue, &[], sum);
            let count = histogram.count() as f64;
            sample(&mut self.text, &format!("{name}_count"), queue, &[], count);
        }
    }

    fn header(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {help}");
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }
}

/// One sample line: `name{queue="q",k="v"} value`.
fn sample(out: &mut String, name: &str, queue: &str, labels: &[(&str, &str)], value: f64) {
    let _ = write!(out, "{name}{{queue=\"{}\"", escape(queue));
    for (key, label) in labels {
        let _ = write!(out, ",{key}=\"{}\"", escape(label));
    }
    let _ = writeln!(out, "}} {value}");
}

/// A label value escaped as the text format wants (`\\`, `\"`, `\n`).
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn a_histogram_is_cumulative_and_ends_at_inf() {
        let mut total = MetricsWindow::default();
        total.wait.bins[0] = 2;
        total.wait.bins[16] = 1;
        total.wait.sum_ms = 3_600_010;
        let text = render_snapshots(&[QueueSnapshot {
            queue: "q".into(),
            counts: Counts::default(),
            oldest_pending_ms: None,
            total,
            rate_limit: None,
            concurrency: None,
        }]);
        assert!(text.contains("emq_job_wait_seconds_bucket{queue=\"q\",le=\"0.005\"} 2\n"));
        assert!(text.contains("emq_job_wait_seconds_bucket{queue=\"q\",le=\"3600\"} 2\n"));
        assert!(text.contains("emq_job_wait_seconds_bucket{queue=\"q\",le=\"+Inf\"} 3\n"));
        assert!(text.contains("emq_job_wait_seconds_count{queue=\"q\"} 3\n"));
        assert!(!text.contains("emq_queue_rate_limit_max"));
    }
}
