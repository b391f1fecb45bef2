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
use crate::time::format_age;
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
    let cap = readable(admin.concurrency().await)?;
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
    let mut table = Table::new([Align::Left, Align::Right]);
    table.row(["state", "jobs"]);
    for state in JobState::ALL {
        table.row([state.as_str().to_string(), counts.get(state).to_string()]);
    }
    table.row(["total".to_string(), counts.total().to_string()]);
    table.row(["paused", yes_no(counts.paused)]);
    table.row([
        "oldest pending".to_string(),
        oldest.map_or_else(|| "-".into(), format_age),
    ]);
    let unknown = || "- (not served)".to_string();
    table.row([
        "rate limit".to_string(),
        limit.as_ref().map_or_else(unknown, flow::describe_limit),
    ]);
    table.row([
        "concurrency".to_string(),
        cap.as_ref().map_or_else(unknown, flow::describe_cap),
    ]);
    table.row(["dedup keys held".to_string(), dedup.to_string()]);
    table.row(["last hour".to_string(), hour.describe_throughput()]);
    table.row(["wait".to_string(), hour.wait_ms.describe()]);
    table.row(["run".to_string(), hour.run_ms.describe()]);
    out(&format!("queue {}\n{table}", queue.name()))
}
