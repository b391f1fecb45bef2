//! `emq watch <queue> [--from-start] [--job ID]… [--event NAME]…`: tails
//! the queue's lifecycle events live (those the filters pass:
//! [`super::watch_filter`]), one line per event — time (from the stream
//! id), event, job id, the event's own fields — or one JSON object per
//! line with `--json`.
//! Ctrl-C or SIGTERM ends it with exit 0. A dropped connection (a server
//! restart) is said on stderr and read again from the last event shown.

use super::stop::StopSignal;
use super::watch_filter::EventFilter;
use super::{open, out, out_json};
use crate::cli::{Global, WatchArgs};
use crate::error::CliError;
use crate::terminal::escape;
use crate::time::{format_duration, rfc3339};
use echomq::{Event, EventsFrom};
use serde_json::{Map, Value, json};
use std::time::Duration;

/// Width of the event column: the longest event name, `cancel_requested`.
const EVENT_WIDTH: usize = 16;
/// Narrowest job id column; it widens to the longest id seen so far.
const MIN_ID_WIDTH: usize = 8;
/// First wait before reading again after the connection dropped; it
/// doubles up to [`RECONNECT_MAX`].
const RECONNECT_MIN: Duration = Duration::from_millis(100);
const RECONNECT_MAX: Duration = Duration::from_secs(5);

pub(crate) async fn run(args: &WatchArgs, global: &Global) -> Result<(), CliError> {
    let filter = EventFilter::new(&args.jobs, &args.events)?;
    let mut stop = StopSignal::register()?;
    let queue = open(&args.queue, global).await?;
    let (from, since) = if args.from_start {
        (EventsFrom::Beginning, "from the oldest kept")
    } else {
        (EventsFrom::Now, "from now")
    };
    let mut events = queue.events(from).await?;
    // Says the reader is in place: an event written after this line shows.
    eprintln!(
        "watching the events of queue {} {since}; Ctrl-C to stop",
        queue.name()
    );
    let mut id_width = MIN_ID_WIDTH;
    let mut pause = RECONNECT_MIN;
    loop {
        let event = tokio::select! {
            () = stop.recv() => return Ok(()),
            event = events.next() => event,
        };
        let event = match event {
            Ok(event) => {
                pause = RECONNECT_MIN;
                event
            }
            Err(err) if err.is_connection() => {
                eprintln!("connection lost ({err}); reading on from the last event shown");
                tokio::select! {
                    () = stop.recv() => return Ok(()),
                    () = tokio::time::sleep(pause) => {}
                }
                pause = (pause * 2).min(RECONNECT_MAX);
                continue;
            }
            Err(err) => return Err(err.into()),
        };
        if !filter.passes(&event, &event.kind.name()) {
            continue;
        }
        if global.json {
            out_json(&to_json(&event))?;
            continue;
        }
        let id = event.job.as_ref().map_or("-", |id| id.as_str());
        id_width = id_width.max(escape(id).chars().count());
        out(&format!("{}\n", line(&event, id_width)))?;
    }
}

/// One aligned line: `time  event  id  field=value …`.
fn line(event: &Event, id_width: usize) -> String {
    let (name, fields) = (event.kind.name(), event.kind.fields());
    let name = escape(&name);
    let id = escape(event.job.as_ref().map_or("-", |id| id.as_str()));
    let time = stream_ms(&event.stream_id).map_or_else(|| event.stream_id.clone(), rfc3339);
    let fields: Vec<String> = fields
        .into_iter()
        .map(|(field, value)| format!("{field}={}", show(field, &value)))
        .collect();
    let text = format!(
        "{time}  {name:<EVENT_WIDTH$}  {id:<id_width$}  {}",
        fields.join(" ")
    );
    text.trim_end().to_string()
}

/// `{"stream_id", "index", "time_ms", "event", "id", <the event's
/// fields>}` (`index`: the event's place in its stream entry).
fn to_json(event: &Event) -> Value {
    let (name, fields) = (event.kind.name(), event.kind.fields());
    let mut object = Map::new();
    object.insert("stream_id".into(), json!(event.stream_id));
    object.insert("index".into(), json!(event.index));
    object.insert("time_ms".into(), json!(stream_ms(&event.stream_id)));
    object.insert("event".into(), json!(name));
    object.insert("id".into(), json!(event.job.as_ref().map(|id| id.as_str())));
    for (field, value) in fields {
        object.insert(field.into(), value);
    }
    Value::Object(object)
}

/// A field's value for people: instants as RFC 3339, delays as durations,
/// text quoted when it has spaces (or is empty), control characters
/// escaped.
fn show(field: &str, value: &Value) -> String {
    match (field, value) {
        ("run_at", Value::Number(ms)) => ms.as_u64().map_or_else(|| ms.to_string(), rfc3339),
        (
            "delay" | "retry_in" | "per" | "completed_for" | "dead_for" | "cancelled_for",
            Value::Number(ms),
        ) => ms.as_u64().map_or_else(
            || ms.to_string(),
            |ms| format_duration(Duration::from_millis(ms)),
        ),
        (_, Value::String(text))
            if text.is_empty() || text.contains(|c: char| c.is_whitespace() || c == '"') =>
        {
            format!("{text:?}")
        }
        (_, Value::String(text)) => escape(text).into_owned(),
        (_, other) => other.to_string(),
    }
}

/// The milliseconds of a stream id (`1712345678901-0`).
fn stream_ms(stream_id: &str) -> Option<u64> {
    stream_id.split('-').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use echomq::{EventKind, JobId};

    fn event(kind: EventKind, job: Option<&str>) -> Event {
        Event {
            stream_id: "1712345678901-0".into(),
            index: 0,
            job: job.map(|id| JobId::new(id).unwrap()),
            kind,
        }
    }

    #[test]
    fn lines_are_aligned_and_show_fields() {
        let claimed = event(
            EventKind::Claimed {
                token: 2,
                worker: "h:1:1".into(),
            },
            Some("j1"),
        );
        assert_eq!(
            line(&claimed, 8),
            "2024-04-05T19:34:38.901Z  claimed           j1        token=2 worker=h:1:1"
        );
        let retried = event(
            EventKind::Retried {
                error: "it broke".into(),
                delay: 1500,
            },
            Some("j1"),
        );
        assert!(
            line(&retried, 8)
                .ends_with("retried           j1        error=\"it broke\" delay=1s500ms"),
            "{}",
            line(&retried, 8)
        );
        let paused = event(EventKind::Paused, None);
        assert_eq!(
            line(&paused, 8),
            "2024-04-05T19:34:38.901Z  paused            -"
        );
    }

    #[test]
    fn flow_events_show_their_durations() {
        let held = event(EventKind::RateLimited { retry_in: 30_000 }, Some("j1"));
        assert!(
            line(&held, 8).ends_with("rate_limited      j1        retry_in=30s"),
            "{}",
            line(&held, 8)
        );
        let limit = event(
            EventKind::LimitSet {
                max: 100,
                per: 1000,
            },
            None,
        );
        assert!(
            line(&limit, 8).ends_with("limit_set         -         max=100 per=1s"),
            "{}",
            line(&limit, 8)
        );
        let cap = event(EventKind::ConcurrencySet { max: 3 }, None);
        assert_eq!(to_json(&cap)["max"], 3);
        assert_eq!(to_json(&cap)["event"], "concurrency_set");
    }

    #[test]
    fn json_carries_every_field() {
        let scheduled = event(EventKind::Scheduled { run_at: 5 }, Some("s"));
        assert_eq!(
            to_json(&scheduled),
            json!({"stream_id": "1712345678901-0", "index": 0, "time_ms": 1_712_345_678_901u64,
                   "event": "scheduled", "id": "s", "run_at": 5})
        );
        let other = event(EventKind::Other("future".into()), None);
        assert_eq!(to_json(&other)["event"], "future");
        assert_eq!(to_json(&other)["id"], Value::Null);
    }
}
