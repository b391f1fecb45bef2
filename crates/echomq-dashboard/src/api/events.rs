//! `GET /queues/{q}/events`: the queue's lifecycle events as server-sent
//! events, live. Each event's `id:` is `<stream id>/<index>` (one stream
//! entry can carry several jobs' events), `event:` its name, `data:` its
//! job and fields as JSON. A client that reconnects with `Last-Event-ID`
//! (browsers' `EventSource` does by itself) reads on just after the last
//! event it got, the rest of its entry included; without one, from now.
//!
//! Each stream reads on a connection of its own (`XREAD BLOCK`), so the
//! streams share the dashboard's live viewers' slots
//! (`Dashboard::live_viewers`): past them, 503.

use super::Api;
use super::access::permit;
use super::error::{ApiError, ErrorBody};
use crate::grant::{Grant, Need};
use axum::Extension;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event as Sse, KeepAlive};
use axum::response::{IntoResponse, Response};
use echomq::{Event, EventsFrom};
use futures_util::StreamExt;
use serde_json::{Map, Value, json};
use std::convert::Infallible;
use std::time::Duration;

/// How long one read of the stream blocks before it reads again (the
/// keep-alive comments go on meanwhile).
const READ_BLOCK: Duration = Duration::from_secs(15);

/// `GET /queues/{q}/events`.
#[utoipa::path(
    get,
    path = "/queues/{q}/events",
    tag = "reading",
    params(
        ("q" = String, Path, description = "The queue"),
        ("Last-Event-ID" = Option<String>, Header, description = "Resume just after this event (`<stream id>/<index>`, or a stream id: after its whole entry)"),
    ),
    responses(
        (status = 200, description = "text/event-stream: `id:` <stream id>/<index>, `event:` the event's name, `data:` {\"job\", its fields…}", content_type = "text/event-stream"),
        (status = 400, description = "A Last-Event-ID that names no event", body = ErrorBody),
        (status = 503, description = "Every live slot is taken", body = ErrorBody),
    )
)]
pub(crate) async fn stream(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Path(queue): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    permit(&grant, &queue, Need::Read)?;
    let from = match headers.get("last-event-id") {
        Some(value) => resume_after(value.to_str().unwrap_or(""))?,
        None => EventsFrom::Now,
    };
    let live = &api.app.live;
    let Ok(slot) = live.slots.clone().try_acquire_owned() else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "UNAVAILABLE",
            format!(
                "every live slot is taken ({} at once: --live-viewers); try again later",
                live.cap
            ),
        ));
    };
    let events = api
        .app
        .connector
        .queue::<Value>(&queue)?
        .events(from)
        .await?;
    let stream = futures_util::stream::unfold((events, slot), |(mut events, slot)| async move {
        loop {
            match events.next_within(READ_BLOCK).await {
                Ok(Some(event)) => return Some((Ok::<_, Infallible>(sse(&event)), (events, slot))),
                Ok(None) => continue,
                // The connection failed: the stream ends, and the client
                // reconnects with its Last-Event-ID.
                Err(err) => {
                    tracing::debug!("events stream: {err}");
                    return None;
                }
            }
        }
    });
    Ok(axum::response::sse::Sse::new(stream.boxed())
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// Where a stream resumes after `id` (`<stream id>/<index>`, or a
/// stream id alone: after its whole entry); 400 naming `Last-Event-ID`.
fn resume_after(id: &str) -> Result<EventsFrom, ApiError> {
    let stream_id = |text: &str| {
        let (ms, seq) = text.split_once('-')?;
        let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
        (digits(ms) && digits(seq)).then(|| text.to_string())
    };
    let from = match id.split_once('/') {
        Some((entry, index)) => stream_id(entry)
            .zip(index.parse().ok())
            .map(|(stream_id, index)| EventsFrom::AfterEvent { stream_id, index }),
        None => stream_id(id).map(EventsFrom::After),
    };
    from.ok_or_else(|| {
        ApiError::bad_request(format!(
            "Last-Event-ID {id:?} names no event: expected <stream id>/<index> (1712345678901-0/0)"
        ))
        .with_field("Last-Event-ID")
    })
}

/// The server-sent event of `event`.
fn sse(event: &Event) -> Sse {
    let mut data = Map::new();
    data.insert(
        "job".into(),
        json!(event.job.as_ref().map(|id| id.as_str())),
    );
    for (field, value) in event.kind.fields() {
        data.insert(field.into(), value);
    }
    Sse::default()
        .id(format!("{}/{}", event.stream_id, event.index))
        .event(event.kind.name())
        .data(Value::Object(data).to_string())
}
