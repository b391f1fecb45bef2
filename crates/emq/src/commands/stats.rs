//! `emq stats <queue>`: job counts per state, whether the queue is paused,
//! how long its oldest pending job has waited, its flow control: the rate
//! limit, the current window's use and the cap on active jobs, how many
//! deduplication keys it holds, and its last hour: finished jobs per minute
//! as a sparkline, and the wait and run time percentiles.

use super::flow;
use super::last_hour::LastHour;
use super::list::yes_no;
use super::{open, out, out_json};
use crate::cli::{Global, StatsArgs};
use crate::error::CliError;
use crate::table::{Align, Table};
use crate::time::{format_age, format_duration};
use echomq::{ConcurrencyCap, Counts, JobState, RateLimit};
use serde::Serialize;

/// `emq stats --json`: the counts, the age, then flow control.
#[derive(Debug, Serialize)]
struct Stats {
    #[serde(flatten)]
    counts: Counts,
    total: u64,
    /// Age of the oldest pending job (ms, server clock); `null` when none.
    oldest_pending_age_ms: Option<u64>,
    /// Deduplication keys held now (server clock).
    dedup_keys_held: u64,
    /// The rate limit and the current window's use (0s when none);
    /// `null` when the server cannot say (see [`readable`]).
    rate_limit: Option<RateLimit>,
    /// The cap on active jobs (max 0 when none); `null` likewise.
    concurrency: Option<ConcurrencyCap>,
    /// The last hour of the queue's metrics.
    last_hour: LastHour,
}

/// A flow setting read with `LIMIT` or `CONCURRENCY`, which are write
/// commands of the module: `None` where the server cannot answer one — a
/// module that does not serve it (an older one), or a replica, which
/// refuses a write command (`READONLY`), or one at `maxmemory` (`OOM`) —
/// so the rest of the stats show.
fn readable<T>(read: echomq::Result<T>) -> Result<Option<T>, CliError> {
    match read {
        Ok(value) => Ok(Some(value)),
        Err(echomq::Error::Wire6Unsupported { .. }) => Ok(None),
        Err(echomq::Error::Redis(err)) if matches!(err.code(), Some("READONLY" | "OOM")) => {
            Ok(None)
        }
        Err(err) => Err(err.into()),
    }
}

pub(crate) async fn run(args: &StatsArgs, global: &Global) -> Result<(), CliError> {
    let queue = open(&args.queue, global).await?;
    let admin = queue.admin();
    let counts = admin.counts().await?;
    let oldest = admin.oldest_pending_age().await?;
    let dedup = admin.dedup_keys_held().await?;
    let limit = readable(admin.rate_limit().await)?;
    let cap = readable(admin.concurrency_cap().await)?;
    let hour = LastHour::read(&queue).await?;
    if global.json {
        return out_json(&Stats {
            counts,
            total: counts.total(),
            oldest_pending_age_ms: oldest,
            dedup_keys_held: dedup,
            rate_limit: limit,
            concurrency: cap,
            last_hour: hour,
        });
    }
    let shown = Shown {
        counts,
        oldest,
        dedup,
        limit,
        cap,
        hour,
    };
    out(&format!("queue {}\n{}", queue.name(), render(&shown)))
}

/// What `emq stats` shows, read.
struct Shown {
    counts: Counts,
    oldest: Option<u64>,
    dedup: u64,
    limit: Option<RateLimit>,
    cap: Option<ConcurrencyCap>,
    hour: LastHour,
}

/// The human output below the queue's name: the counts per state, then one
/// line per fact, every line within 80 columns (a long fact takes a
/// second, indented line).
fn render(shown: &Shown) -> String {
    let mut counts = Table::new([Align::Left, Align::Right]);
    counts.row(["state", "jobs"]);
    for state in JobState::ALL {
        counts.row([
            state.as_str().to_string(),
            shown.counts.get(state).to_string(),
        ]);
    }
    counts.row(["total".to_string(), shown.counts.total().to_string()]);
    let mut facts = Table::new([Align::Left, Align::Left]);
    facts.row(["paused", yes_no(shown.counts.paused)]);
    facts.row([
        "oldest pending".to_string(),
        shown.oldest.map_or_else(|| "-".into(), format_age),
    ]);
    let unknown = || "- (not served)".to_string();
    match &shown.limit {
        None => drop(facts.row(["rate limit".to_string(), unknown()])),
        Some(limit) => limit_rows(&mut facts, limit),
    }
    facts.row([
        "concurrency".to_string(),
        shown.cap.as_ref().map_or_else(unknown, flow::describe_cap),
    ]);
    facts.row(["dedup keys held".to_string(), shown.dedup.to_string()]);
    let (bars, finished) = shown.hour.describe_throughput();
    facts.row(["last hour".to_string(), bars]);
    facts.row([String::new(), finished]);
    facts.row(["wait".to_string(), shown.hour.wait_ms.describe()]);
    facts.row(["run".to_string(), shown.hour.run_ms.describe()]);
    format!("{counts}\n{facts}")
}

/// The rate limit, the current window's use and the hold, a line each.
fn limit_rows(facts: &mut Table, limit: &RateLimit) {
    if limit.is_set() {
        let jobs = if limit.max == 1 {
            "job starts"
        } else {
            "jobs start"
        };
        facts.row([
            "rate limit".to_string(),
            format!(
                "at most {} {jobs} per {}",
                limit.max,
                format_duration(limit.per)
            ),
        ]);
        facts.row([
            "  this window".to_string(),
            format!(
                "{} started, ends in {}",
                limit.used,
                format_age(limit.reset_in.as_millis() as u64)
            ),
        ]);
    } else {
        facts.row(["rate limit", "none"]);
    }
    if !limit.hold_for.is_zero() {
        facts.row([
            "  held".to_string(),
            format!(
                "for {} (a handler met a rate limit)",
                format_age(limit.hold_for.as_millis() as u64)
            ),
        ]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Columns every line of `emq stats` fits in.
    const WIDTH: usize = 80;

    #[test]
    fn the_widest_stats_fit_80_columns() {
        let counts = Counts {
            pending: 9_999_999_999,
            completed: 9_999_999_999,
            paused: true,
            ..Counts::default()
        };
        let shown = Shown {
            counts,
            oldest: Some(400 * 86_400_000),
            dedup: 9_999_999_999,
            limit: Some(RateLimit {
                max: 1_000_000,
                per: Duration::from_millis(86_399_999),
                used: 999_999,
                reset_in: Duration::from_millis(86_399_999),
                hold_for: Duration::from_millis(86_399_999),
            }),
            cap: Some(ConcurrencyCap {
                max: 1_000_000,
                active: 1_000_000,
            }),
            hour: LastHour::with_windows(vec![u64::MAX / 1000; 360], 10_000),
        };
        let text = render(&shown);
        for line in text.lines() {
            assert!(
                line.chars().count() <= WIDTH,
                "{} columns: {line}",
                line.chars().count()
            );
        }
        assert!(text.contains("  this window"), "{text}");
        assert!(text.contains("  held "), "{text}");
    }
}
