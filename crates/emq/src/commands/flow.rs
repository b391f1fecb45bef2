//! `emq rate-limit` and `emq concurrency-cap`: set, clear or show a queue's rate
//! limit and its cap on active jobs (`docs/flow-control.md`); and how
//! `emq stats` describes them.

use super::{note_if_empty, open, out, out_json};
use crate::cli::{ConcurrencyCapArgs, Global, RateLimitArgs};
use crate::error::CliError;
use crate::time::format_duration;
use echomq::{ConcurrencyCap, RateLimit};
use serde_json::json;

/// `emq rate-limit <queue> [--max N --per D | --off]`.
pub(crate) async fn rate_limit(args: &RateLimitArgs, global: &Global) -> Result<(), CliError> {
    let queue = open(&args.queue, global).await?;
    let admin = queue.admin();
    let limit = match (args.max, args.per, args.off) {
        (Some(max), Some(per), _) => admin.set_rate_limit(max, per).await?,
        (_, _, true) => admin.clear_rate_limit().await?,
        _ => admin.rate_limit().await?,
    };
    if global.json {
        return out_json(&json!({ "queue": queue.name().as_str(), "rate_limit": limit }));
    }
    out(&format!(
        "queue {}: {}\n",
        queue.name(),
        describe_limit(&limit)
    ))?;
    note_if_empty(&queue, global).await
}

/// `emq concurrency-cap <queue> [N | --off]`.
pub(crate) async fn concurrency_cap(
    args: &ConcurrencyCapArgs,
    global: &Global,
) -> Result<(), CliError> {
    let queue = open(&args.queue, global).await?;
    let admin = queue.admin();
    let cap = match (args.max, args.off) {
        (Some(max), _) => admin.set_concurrency_cap(max).await?,
        (None, true) => admin.clear_concurrency_cap().await?,
        (None, false) => admin.concurrency_cap().await?,
    };
    if global.json {
        return out_json(&json!({ "queue": queue.name().as_str(), "concurrency": cap }));
    }
    out(&format!("queue {}: {}\n", queue.name(), describe_cap(&cap)))?;
    note_if_empty(&queue, global).await
}

/// A rate limit for people: `at most 100 jobs start per 1s (3 in this
/// window, which ends in 250ms)`, `no rate limit`; and the hold, if any.
pub(crate) fn describe_limit(limit: &RateLimit) -> String {
    let mut text = if limit.is_set() {
        format!(
            "at most {} {} per {} ({} started in this window, which ends in {})",
            limit.max,
            if limit.max == 1 {
                "job starts"
            } else {
                "jobs start"
            },
            format_duration(limit.per),
            limit.used,
            format_duration(limit.reset_in)
        )
    } else {
        "no rate limit".to_string()
    };
    if !limit.hold_for.is_zero() {
        text.push_str(&format!(
            "; held for {} (a handler met a rate limit)",
            format_duration(limit.hold_for)
        ));
    }
    text
}

/// A cap for people: `at most 3 jobs active at once (1 active now)`, `no
/// cap on active jobs (1 active now)`.
pub(crate) fn describe_cap(cap: &ConcurrencyCap) -> String {
    if cap.is_set() {
        format!(
            "at most {} {} active at once ({} active now)",
            cap.max,
            if cap.max == 1 { "job" } else { "jobs" },
            cap.active
        )
    } else {
        format!("no cap on active jobs ({} active now)", cap.active)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn limits_and_caps_read_as_sentences() {
        let limit = RateLimit {
            max: 100,
            per: Duration::from_secs(1),
            used: 3,
            reset_in: Duration::from_millis(250),
            hold_for: Duration::ZERO,
        };
        assert_eq!(
            describe_limit(&limit),
            "at most 100 jobs start per 1s (3 started in this window, which ends in 250ms)"
        );
        let held = RateLimit {
            hold_for: Duration::from_secs(30),
            ..RateLimit::default()
        };
        assert_eq!(
            describe_limit(&held),
            "no rate limit; held for 30s (a handler met a rate limit)"
        );
        let cap = ConcurrencyCap { max: 1, active: 1 };
        assert_eq!(
            describe_cap(&cap),
            "at most 1 job active at once (1 active now)"
        );
        assert_eq!(
            describe_cap(&ConcurrencyCap::default()),
            "no cap on active jobs (0 active now)"
        );
    }
}
