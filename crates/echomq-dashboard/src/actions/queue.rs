//! The actions on one queue: `POST /queues/{queue}/act/{action}` — pause
//! and resume, promote due jobs, the bulk verbs, drain and obliterate
//! (behind the queue's name typed again), repeat definitions, groups and
//! limits.

mod bulk;

use super::{Fields, field};
use crate::error::PageError;
use crate::state::App;
use echomq::{DrainScope, IfActive, Queue, Repeat};
use serde_json::Value;
use std::time::Duration;

/// Due scheduled jobs one "promote due" moves at most.
const PROMOTE_MOST: u64 = 1_000;

/// Runs queue action `action` on queue `name`; the notice to show.
pub(super) async fn act(
    app: &App,
    name: &str,
    action: &str,
    fields: &Fields,
) -> Result<String, PageError> {
    let queue = app.connector.queue::<Value>(name)?;
    let admin = queue.admin();
    match action {
        "pause" => {
            admin.pause().await?;
            Ok(format!("paused {name}"))
        }
        "resume" => {
            admin.resume().await?;
            Ok(format!("resumed {name}"))
        }
        "promote-due" => {
            let moved = queue.promote(PROMOTE_MOST).await?;
            Ok(format!("promoted {moved} due jobs"))
        }
        "bulk" => bulk::run(&queue, fields).await,
        "drain" => {
            confirmed(name, fields)?;
            let mut scope = DrainScope::PENDING;
            if field(fields, "scheduled") == Some("1") {
                scope = scope.and_scheduled();
            }
            if field(fields, "blocked") == Some("1") {
                scope = scope.and_blocked();
            }
            let deleted = admin.drain(scope).await?;
            Ok(format!("drained {name}: {deleted} jobs deleted"))
        }
        "obliterate" => {
            confirmed(name, fields)?;
            let active = match field(fields, "force") {
                Some("1") => IfActive::Force,
                _ => IfActive::Refuse,
            };
            admin.obliterate(active).await?;
            Ok(format!("obliterated {name}"))
        }
        "repeat-add" => add_repeat(&queue, fields).await,
        "repeat-remove" => {
            let key = text(fields, "key")?;
            if queue.unrepeat(key).await? {
                Ok(format!("removed repeat {key}"))
            } else {
                Err(PageError::NotFound(format!("no repeat definition {key:?}")))
            }
        }
        "group-pause" | "group-resume" => {
            let group = admin.group(text(fields, "group")?)?;
            if action == "group-pause" {
                group.pause().await?;
                Ok(format!("paused group {}", group.name()))
            } else {
                group.resume().await?;
                Ok(format!("resumed group {}", group.name()))
            }
        }
        "limit" => {
            let (max, per) = (number(fields, "max")?, number(fields, "per_ms")?);
            let limit = admin
                .set_rate_limit(max, Duration::from_millis(per))
                .await?;
            Ok(format!(
                "rate limit: at most {} jobs per {} ms",
                limit.max,
                limit.per.as_millis()
            ))
        }
        "limit-clear" => {
            admin.clear_rate_limit().await?;
            Ok("rate limit cleared".into())
        }
        "concurrency" => {
            let cap = admin.set_concurrency_cap(number(fields, "max")?).await?;
            Ok(format!("concurrency: at most {} active", cap.max))
        }
        "concurrency-clear" => {
            admin.clear_concurrency_cap().await?;
            Ok("concurrency cap cleared".into())
        }
        _ => Err(PageError::NotFound(format!(
            "no queue action named {action:?}"
        ))),
    }
}

/// Refuses (400) unless the form's `confirm` is the queue's name.
fn confirmed(name: &str, fields: &Fields) -> Result<(), PageError> {
    if field(fields, "confirm").map(str::trim) == Some(name) {
        Ok(())
    } else {
        Err(PageError::BadInput("type the queue name to confirm".into()))
    }
}

/// Field `name`, not empty (400 naming it otherwise).
fn text<'a>(fields: &'a Fields, name: &str) -> Result<&'a str, PageError> {
    field(fields, name)
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| PageError::BadInput(format!("{name}: required")))
}

/// Field `name` as a whole number (400 naming it otherwise).
fn number(fields: &Fields, name: &str) -> Result<u64, PageError> {
    let value = text(fields, name)?;
    value
        .parse()
        .map_err(|_| PageError::BadInput(format!("{name}: {value:?} is not a whole number")))
}

/// `repeat-add`: key, `every_ms` or `cron`, and a JSON payload.
async fn add_repeat(queue: &Queue<Value>, fields: &Fields) -> Result<String, PageError> {
    let key = text(fields, "key")?;
    let every = field(fields, "every_ms")
        .map(str::trim)
        .filter(|v| !v.is_empty());
    let cron = field(fields, "cron")
        .map(str::trim)
        .filter(|v| !v.is_empty());
    let repeat = match (every, cron) {
        (Some(_), None) => {
            let ms = number(fields, "every_ms")?;
            if ms == 0 {
                return Err(PageError::BadInput(
                    "every_ms: a repeat interval is at least 1 ms".into(),
                ));
            }
            Repeat::every(Duration::from_millis(ms))
        }
        (None, Some(expression)) => Repeat::cron(expression)?,
        _ => {
            return Err(PageError::BadInput(
                "every_ms or cron: give exactly one".into(),
            ));
        }
    };
    let payload = text(fields, "payload")?;
    let payload: Value = serde_json::from_str(payload)
        .map_err(|err| PageError::BadInput(format!("payload is not JSON: {err}")))?;
    let added = queue.repeat(key, repeat, &payload).await?;
    Ok(match added.replaced {
        Some(old) => format!(
            "replaced repeat {key} (was {})",
            crate::layout::cadence(&old)
        ),
        None => format!("added repeat {key}"),
    })
}

/// The queue actions this handler runs: every queue action of the table
/// (`action_map.rs`), the queues page's and the queue page's.
#[cfg(test)]
const HANDLED: [&str; 14] = [
    "pause",
    "resume",
    "promote-due",
    "bulk",
    "drain",
    "obliterate",
    "repeat-add",
    "repeat-remove",
    "group-pause",
    "group-resume",
    "limit",
    "limit-clear",
    "concurrency",
    "concurrency-clear",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action_map::{ACTIONS, Place};

    #[test]
    fn every_queue_action_of_the_table_is_handled() {
        let mut table: Vec<&str> = ACTIONS
            .iter()
            .filter(|a| a.place != Place::Job)
            .map(|a| a.verb)
            .collect();
        table.sort_unstable();
        table.dedup();
        let mut handled = HANDLED.to_vec();
        handled.sort_unstable();
        assert_eq!(table, handled);
    }
}
