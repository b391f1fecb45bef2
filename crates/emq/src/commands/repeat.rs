//! `emq repeat add|list|remove`: repeat definitions of a queue.

use super::{connect, json_arg, out, out_json, queue_name};
use crate::cli::{Global, RepeatAddArgs, RepeatCommand, RepeatListArgs, RepeatRemoveArgs};
use crate::error::CliError;
use crate::table::{Align, Table};
use crate::time::{format_duration, now_ms, rfc3339};
use echomq::protocol::cadence::Cadence;
use echomq::{NewJob, Repeat, RepeatDefinition};
use serde::Serialize;
use serde_json::{Value, json};
use std::time::Duration;

pub(crate) async fn run(command: &RepeatCommand, global: &Global) -> Result<(), CliError> {
    match command {
        RepeatCommand::Add(args) => add(args, global).await,
        RepeatCommand::List(args) => list(args, global).await,
        RepeatCommand::Remove(args) => remove(args, global).await,
    }
}

async fn add(args: &RepeatAddArgs, global: &Global) -> Result<(), CliError> {
    let name = queue_name(&args.queue)?;
    let payload = json_arg("<json>", &args.payload)?;
    let repeat = build(args)?;
    // Refuse a definition that would never fire before storing it.
    let probe = RepeatDefinition {
        key: args.key.clone(),
        schedule: repeat.schedule().clone(),
        payload: Value::Null,
        priority: args.priority,
        attempts: args.attempts,
        created_ms: now_ms(),
    };
    if probe.first().is_none() {
        return Err(CliError::usage(format!(
            "repeat {} would never fire: no occurrence between its start and --end{}",
            args.key,
            if args.times.is_some() {
                " within --times"
            } else {
                ""
            }
        )));
    }
    let url = global.url_or_default();
    let queue = connect(&url, global).await?.queue::<Value>(name.as_str())?;
    let job = NewJob::new(&payload)
        .priority(args.priority)
        .attempts(args.attempts);
    let added = queue.repeat_with(&args.key, repeat, job).await?;
    let now = now_ms();
    let shown = AddedJson {
        definition: RepeatJson::of(&added.definition, now),
        replaced: added.replaced.map(|old| RepeatJson::of(&old, now)),
    };
    if global.json {
        return out_json(&shown);
    }
    let next = shown.definition.next_utc.as_deref().unwrap_or("none");
    let verb = match &shown.replaced {
        Some(old) => format!("replaced repeat {} (was {})", args.key, old.cadence),
        None => format!("repeat {}", args.key),
    };
    out(&format!(
        "{verb} on queue {name}: {}, next at {next}\n",
        shown.definition.cadence
    ))
}

/// The [`Repeat`] the flags describe; a bad cron expression or zone is a
/// usage error naming the flag.
fn build(args: &RepeatAddArgs) -> Result<Repeat, CliError> {
    let flag = |flag: &str, err: echomq::Error| match err {
        echomq::Error::BadArgument { reason, .. } => {
            CliError::usage(format!("invalid {flag}: {reason}"))
        }
        other => CliError::usage(format!("invalid {flag}: {other}")),
    };
    let mut repeat = match (args.every, &args.cron) {
        (Some(every), _) if every < Duration::from_millis(1) => {
            return Err(CliError::usage(format!(
                "invalid --every {}: a repeat interval is at least 1ms",
                format_duration(every)
            )));
        }
        (Some(every), _) => Repeat::every(every),
        (None, Some(expression)) => Repeat::cron(expression).map_err(|err| flag("--cron", err))?,
        (None, None) => return Err(CliError::usage("repeat add needs --every or --cron")),
    };
    if let Some(zone) = &args.tz {
        repeat = repeat.tz(zone).map_err(|err| flag("--tz", err))?;
    }
    if let Some(start) = args.start {
        repeat = repeat.start(start);
    }
    if let Some(end) = args.end {
        repeat = repeat.end(end);
    }
    if let Some(times) = args.times {
        repeat = repeat.times(times);
    }
    Ok(repeat)
}

async fn list(args: &RepeatListArgs, global: &Global) -> Result<(), CliError> {
    let name = queue_name(&args.queue)?;
    let url = global.url_or_default();
    let queue = connect(&url, global).await?.queue::<Value>(name.as_str())?;
    let now = now_ms();
    let definitions: Vec<RepeatJson> = queue
        .repeats()
        .await?
        .iter()
        .map(|definition| RepeatJson::of(definition, now))
        .collect();
    if global.json {
        return out_json(&definitions);
    }
    if definitions.is_empty() {
        return out(&format!("queue {name} has no repeat definitions\n"));
    }
    let mut table = Table::new([Align::Left]);
    table.row(["key", "cadence", "next", "limit/end", "payload"]);
    for d in &definitions {
        let bounds = [
            d.limit.map(|limit| format!("limit {limit}")),
            d.end_ms.map(|end| format!("end {}", rfc3339(end))),
        ];
        let bounds: Vec<String> = bounds.into_iter().flatten().collect();
        table.row([
            d.key.clone(),
            d.cadence.clone(),
            d.next_utc.clone().unwrap_or_else(|| "none".into()),
            if bounds.is_empty() {
                "-".into()
            } else {
                bounds.join(", ")
            },
            d.payload.to_string(),
        ]);
    }
    out(&format!("queue {name}\n{table}"))
}

async fn remove(args: &RepeatRemoveArgs, global: &Global) -> Result<(), CliError> {
    let name = queue_name(&args.queue)?;
    let url = global.url_or_default();
    let queue = connect(&url, global).await?.queue::<Value>(name.as_str())?;
    if !queue.unrepeat(&args.key).await? {
        return Err(CliError::not_found(format!(
            "no repeat {} in queue {name}",
            args.key
        )));
    }
    if global.json {
        return out_json(&json!({ "key": args.key, "removed": true }));
    }
    out(&format!("removed repeat {} from queue {name}\n", args.key))
}

/// What `repeat add --json` prints: the stored definition (as `repeat list
/// --json` shows it) and, when the key held one, the definition it replaced.
#[derive(Debug, Serialize)]
struct AddedJson {
    #[serde(flatten)]
    definition: RepeatJson,
    #[serde(skip_serializing_if = "Option::is_none")]
    replaced: Option<RepeatJson>,
}

/// A definition as `repeat list --json` prints it (and `repeat add --json`).
#[derive(Debug, Serialize)]
struct RepeatJson {
    key: String,
    /// `every 5m` or `cron 0 9 * * 1-5 Europe/Berlin`.
    cadence: String,
    every_ms: Option<u64>,
    cron: Option<String>,
    tz: Option<String>,
    start_ms: Option<u64>,
    end_ms: Option<u64>,
    limit: Option<u64>,
    /// The next occurrence after now (host clock); `None` once done.
    next_ms: Option<u64>,
    next_utc: Option<String>,
    payload: Value,
    priority: u8,
    attempts: u64,
    created_ms: u64,
    /// The stored schedule text.
    schedule: String,
}

impl RepeatJson {
    fn of(definition: &RepeatDefinition, now: u64) -> Self {
        let schedule = &definition.schedule;
        let (cadence, every_ms, cron, tz) = match &schedule.cadence {
            Cadence::Every { interval_ms, .. } => (
                format!(
                    "every {}",
                    format_duration(Duration::from_millis(*interval_ms))
                ),
                Some(*interval_ms),
                None,
                None,
            ),
            Cadence::Cron {
                expression,
                timezone,
            } => (
                format!("cron {expression} {timezone}"),
                None,
                Some(expression.clone()),
                Some(timezone.clone()),
            ),
        };
        let next_ms = definition.next_after(now);
        Self {
            key: definition.key.clone(),
            cadence,
            every_ms,
            cron,
            tz,
            start_ms: schedule.start_ms,
            end_ms: schedule.end_ms,
            limit: schedule.limit,
            next_ms,
            next_utc: next_ms.map(rfc3339),
            payload: definition.payload.clone(),
            priority: definition.priority,
            attempts: definition.attempts,
            created_ms: definition.created_ms,
            schedule: schedule.encode(),
        }
    }
}
