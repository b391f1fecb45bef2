//! `emq retention`: set or show how many finished jobs each finished set
//! of a queue keeps and for how long (docs/protocol.md, "Retention by
//! age").

use super::{note_if_empty, open, out, out_json};
use crate::cli::{Age, Global, RetentionArgs};
use crate::error::CliError;
use crate::time::format_duration;
use echomq::{Retention, RetentionChange};
use serde_json::json;
use std::time::Duration;

/// `emq retention <queue> [--completed N] [--completed-for D] …`: writes
/// the settings given (none: only reads), then shows them all.
pub(crate) async fn run(args: &RetentionArgs, global: &Global) -> Result<(), CliError> {
    let queue = open(&args.queue, global).await?;
    let retention = queue.admin().set_retention(change(args)).await?;
    if global.json {
        return out_json(&json!({ "queue": queue.name().as_str(), "retention": retention }));
    }
    out(&format!(
        "queue {} keeps\n{}",
        queue.name(),
        describe(&retention)
    ))?;
    note_if_empty(&queue, global).await
}

/// The change the options ask for.
fn change(args: &RetentionArgs) -> RetentionChange {
    let mut change = RetentionChange::new();
    if let Some(n) = args.completed {
        change = change.completed(n);
    }
    if let Some(n) = args.dead {
        change = change.dead(n);
    }
    if let Some(n) = args.cancelled {
        change = change.cancelled(n);
    }
    change = match args.completed_for {
        Some(Age::Keep(age)) => change.completed_for(age),
        Some(Age::Off) => change.completed_for_off(),
        None => change,
    };
    change = match args.dead_for {
        Some(Age::Keep(age)) => change.dead_for(age),
        Some(Age::Off) => change.dead_for_off(),
        None => change,
    };
    match args.cancelled_for {
        Some(Age::Keep(age)) => change.cancelled_for(age),
        Some(Age::Off) => change.cancelled_for_off(),
        None => change,
    }
}

/// A queue's retention for people, one finished set a line:
/// `  completed  the newest 1000, each for at most 1d`.
pub(crate) fn describe(retention: &Retention) -> String {
    [
        ("completed", retention.completed, retention.completed_for),
        ("dead", retention.dead, retention.dead_for),
        ("cancelled", retention.cancelled, retention.cancelled_for),
    ]
    .into_iter()
    .map(|(set, count, age)| format!("  {set:<10} {}\n", rule(count, age)))
    .collect()
}

/// One set's rule: `the newest 1000, each for at most 1d`, `none`.
pub(crate) fn rule(count: u64, age: Option<Duration>) -> String {
    match (count, age) {
        (0, _) => "none".to_string(),
        (n, None) => format!("the newest {n} (no age limit)"),
        (n, Some(age)) => format!("the newest {n}, each for at most {}", format_duration(age)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retention_reads_one_set_a_line() {
        let retention = Retention {
            completed: 1000,
            completed_for: Some(Duration::from_secs(86_400)),
            dead: 10_000,
            dead_for: None,
            cancelled: 0,
            cancelled_for: None,
        };
        assert_eq!(
            describe(&retention),
            "  completed  the newest 1000, each for at most 1d\n  \
             dead       the newest 10000 (no age limit)\n  \
             cancelled  none\n"
        );
    }
}
