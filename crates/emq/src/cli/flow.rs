//! Arguments of flow control: `rate-limit` (the queue's rate limit) and
//! `concurrency-cap` (its cap on active jobs).

use super::whole;
use crate::time::parse_duration;
use clap::Args;
use std::time::Duration;

/// `emq rate-limit` (once `emq limit`, still accepted).
#[derive(Debug, Args)]
pub struct RateLimitArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// At most this many jobs start per --per, across every worker (with
    /// --per; without either, the rate limit is shown).
    #[arg(long, requires = "per", value_parser = whole::at_least(1))]
    pub max: Option<u64>,
    /// The window of --max (300ms, 1s, 1m, 1h30m; at least 1ms), aligned
    /// on the server's clock.
    #[arg(long, value_name = "duration", requires = "max", value_parser = parse_window, allow_hyphen_values = true)]
    pub per: Option<Duration>,
    /// Remove the rate limit (and a hold a handler's rate-limited outcome set).
    #[arg(long, conflicts_with_all = ["max", "per"])]
    pub off: bool,
}

/// `emq concurrency-cap` (once `emq concurrency`, still accepted).
#[derive(Debug, Args)]
pub struct ConcurrencyCapArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// At most this many jobs active at once, across every worker (without
    /// it or --off, the cap is shown).
    #[arg(value_name = "N", value_parser = whole::at_least(1))]
    pub max: Option<u64>,
    /// Remove the cap.
    #[arg(long, conflicts_with = "max")]
    pub off: bool,
}

/// A rate limit's window: a duration of at least 1 ms.
pub(super) fn parse_window(text: &str) -> Result<Duration, String> {
    let window = parse_duration(text)?;
    if window < Duration::from_millis(1) {
        return Err(format!("{text:?}: a window lasts at least 1ms"));
    }
    Ok(window)
}
