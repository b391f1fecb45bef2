//! A queue's repeats over HTTP (docs/http.md, "Repeats"): add one (the
//! REPEAT.ADD control, as `emq repeat add` sends it, through
//! `Queue::repeat_with`), list them, remove one.

use super::Api;
use super::access::permit;
use super::error::{ApiError, ErrorBody};
use super::json::Json;
use crate::grant::{Grant, Need};
use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use echomq::protocol::cadence::Cadence;
use echomq::{NewJob, Queue, Repeat, RepeatDefinition, Transition};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use utoipa::ToSchema;

/// A repeat: its key, one cadence (`every_ms` or `cron`), its bounds and
/// what each occurrence enqueues.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RepeatBody {
    /// Its key (a definition under the same key is replaced).
    key: String,
    /// Fires every this many milliseconds (at least 1); not with `cron`.
    every_ms: Option<u64>,
    /// A cron expression (`0 9 * * 1-5`); not with `every_ms`.
    cron: Option<String>,
    /// With `cron`: its IANA time zone (default UTC).
    tz: Option<String>,
    /// No occurrence before this instant (unix ms).
    start_ms: Option<u64>,
    /// No occurrence after this instant (unix ms).
    end_ms: Option<u64>,
    /// At most this many occurrences.
    times: Option<u64>,
    /// Each occurrence's payload (any JSON).
    #[schema(value_type = Object)]
    payload: Value,
    /// Each occurrence's priority (0–255, 0 claimed first).
    priority: Option<u8>,
    /// Each occurrence's attempts.
    attempts: Option<u64>,
}

/// A stored repeat definition.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RepeatShown {
    key: String,
    every_ms: Option<u64>,
    cron: Option<String>,
    tz: Option<String>,
    start_ms: Option<u64>,
    end_ms: Option<u64>,
    /// At most this many occurrences.
    limit: Option<u64>,
    /// The next occurrence after now (unix ms); none once it is done.
    next_ms: Option<u64>,
    #[schema(value_type = Object)]
    payload: Value,
    priority: u8,
    attempts: u64,
    created_ms: u64,
}

/// What an add did: the definition stored, and the one it replaced.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RepeatAddedBody {
    definition: RepeatShown,
    replaced: Option<RepeatShown>,
}

/// A queue's repeats, by key.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct RepeatList {
    repeats: Vec<RepeatShown>,
}

/// `POST /queues/{q}/repeats`.
#[utoipa::path(
    post,
    path = "/queues/{q}/repeats",
    tag = "operators",
    params(("q" = String, Path, description = "The queue")),
    request_body(content = RepeatBody, description = "The repeat"),
    responses(
        (status = 201, description = "Stored", body = RepeatAddedBody),
        (status = 400, description = "A field was wrong (`field` names it)", body = ErrorBody),
        (status = 403, description = "The grant may not send REPEAT.ADD to this queue", body = ErrorBody),
    )
)]
pub(crate) async fn add(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Path(queue): Path<String>,
    Json(body): Json<RepeatBody>,
) -> Result<Response, ApiError> {
    let queue = repeats_of(&api, &grant, &queue, Need::Control(Transition::RepeatAdd))?;
    let repeat = cadence(&body)?;
    let mut job = NewJob::new(&body.payload);
    if let Some(priority) = body.priority {
        job = job.priority(priority);
    }
    if let Some(attempts) = body.attempts {
        job = job.attempts(attempts);
    }
    never_fires(&body, &repeat)?;
    let added = queue
        .repeat_with(&body.key, repeat, job)
        .await
        .map_err(key_named)?;
    let now = now_ms();
    let answer = RepeatAddedBody {
        definition: shown(&added.definition, now),
        replaced: added.replaced.map(|old| shown(&old, now)),
    };
    Ok((StatusCode::CREATED, axum::Json(answer)).into_response())
}

/// `GET /queues/{q}/repeats`.
#[utoipa::path(
    get,
    path = "/queues/{q}/repeats",
    tag = "operators",
    params(("q" = String, Path, description = "The queue")),
    responses(
        (status = 200, description = "Its repeats, by key", body = RepeatList),
        (status = 403, description = "The grant may not read this queue", body = ErrorBody),
    )
)]
pub(crate) async fn list(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Path(queue): Path<String>,
) -> Result<axum::Json<RepeatList>, ApiError> {
    let queue = repeats_of(&api, &grant, &queue, Need::Read)?;
    let now = now_ms();
    let repeats = queue.repeats().await?;
    let repeats = repeats.iter().map(|one| shown(one, now)).collect();
    Ok(axum::Json(RepeatList { repeats }))
}

/// `DELETE /queues/{q}/repeats/{key}`.
#[utoipa::path(
    delete,
    path = "/queues/{q}/repeats/{key}",
    tag = "operators",
    params(
        ("q" = String, Path, description = "The queue"),
        ("key" = String, Path, description = "The repeat's key"),
    ),
    responses(
        (status = 200, description = "Removed, with its scheduled occurrences"),
        (status = 403, description = "The grant may not send REPEAT.ADD to this queue", body = ErrorBody),
        (status = 404, description = "No repeat of that key", body = ErrorBody),
    )
)]
pub(crate) async fn remove(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Path((queue, key)): Path<(String, String)>,
) -> Result<axum::Json<Value>, ApiError> {
    let need = Need::Control(Transition::RepeatAdd);
    let handle = repeats_of(&api, &grant, &queue, need)?;
    if !handle.unrepeat(&key).await? {
        return Err(ApiError::not_found(format!(
            "no repeat {key} in queue {queue}"
        )));
    }
    Ok(axum::Json(json!({ "key": key, "removed": true })))
}

fn repeats_of(api: &Api, grant: &Grant, queue: &str, need: Need) -> Result<Queue<Value>, ApiError> {
    permit(grant, queue, need)?;
    Ok(api.app.connector.queue::<Value>(queue)?)
}

/// The body's cadence and bounds; 400 naming the field otherwise.
fn cadence(body: &RepeatBody) -> Result<Repeat, ApiError> {
    let named =
        |field: &'static str| move |err: echomq::Error| ApiError::from(err).with_field(field);
    let mut repeat = match (body.every_ms, &body.cron) {
        (Some(0), None) => {
            return Err(bad("every_ms", "a repeat interval is at least 1 ms"));
        }
        (Some(ms), None) => Repeat::every(Duration::from_millis(ms)),
        (None, Some(expression)) => Repeat::cron(expression).map_err(named("cron"))?,
        _ => return Err(bad("every_ms", "give exactly one of every_ms and cron")),
    };
    if let Some(zone) = &body.tz {
        repeat = repeat.tz(zone).map_err(named("tz"))?;
    }
    if let Some(start) = body.start_ms {
        repeat = repeat.start(UNIX_EPOCH + Duration::from_millis(start));
    }
    if let Some(end) = body.end_ms {
        repeat = repeat.end(UNIX_EPOCH + Duration::from_millis(end));
    }
    if let Some(times) = body.times {
        repeat = repeat.times(times);
    }
    Ok(repeat)
}

/// 400 when the repeat has no occurrence between its start and its end
/// (or within its times): it would never fire.
fn never_fires(body: &RepeatBody, repeat: &Repeat) -> Result<(), ApiError> {
    let probe = RepeatDefinition {
        key: body.key.clone(),
        schedule: repeat.schedule().clone(),
        payload: Value::Null,
        // Neither decides when it fires.
        priority: 0,
        attempts: 1,
        created_ms: now_ms(),
    };
    match probe.first() {
        Some(_) => Ok(()),
        None => Err(bad(
            "end_ms",
            "the repeat would never fire: no occurrence between its start and end_ms (within times)",
        )),
    }
}

/// A refused key (checked before anything is sent) names the field `key`.
fn key_named(err: echomq::Error) -> ApiError {
    let key = matches!(
        err,
        echomq::Error::Name(_)
            | echomq::Error::BadArgument {
                name: "repeat key",
                ..
            }
    );
    match key {
        true => ApiError::from(err).with_field("key"),
        false => err.into(),
    }
}

fn bad(field: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!("{field}: {why}")).with_field(field)
}

fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH);
    since.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `definition` as the API shows it, its next occurrence after `now`.
fn shown(definition: &RepeatDefinition, now: u64) -> RepeatShown {
    let schedule = &definition.schedule;
    let (every_ms, cron, tz) = match &schedule.cadence {
        Cadence::Every { interval_ms, .. } => (Some(*interval_ms), None, None),
        Cadence::Cron {
            expression,
            timezone,
        } => (None, Some(expression.clone()), Some(timezone.clone())),
    };
    RepeatShown {
        key: definition.key.clone(),
        every_ms,
        cron,
        tz,
        start_ms: schedule.start_ms,
        end_ms: schedule.end_ms,
        limit: schedule.limit,
        next_ms: definition.next_after(now),
        payload: definition.payload.clone(),
        priority: definition.priority,
        attempts: definition.attempts,
        created_ms: definition.created_ms,
    }
}
