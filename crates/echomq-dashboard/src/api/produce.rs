//! The producers' endpoint (docs/http.md, "Producers"):
//! `POST /queues/{q}/jobs` with one job or an array of them, every option
//! of the library's `NewJob`, and `?wait=` for the outcome.

use super::Api;
use super::access::permit;
use super::error::{ApiError, ErrorBody};
use super::json::{Json, from_value};
use super::model::{JobOutcome, outcome_answer};
use super::query::{LONGEST_WAIT, Query, duration};
use crate::grant::{Grant, Need};
use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use echomq::{EnqueueOutcome, Enqueued, NewJob};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::{Duration, SystemTime};
use utoipa::ToSchema;

/// The most jobs one request enqueues.
pub(crate) const MOST_JOBS: usize = 1000;

/// A job to enqueue: its payload and the options of `NewJob`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct JobBody {
    /// Any JSON.
    #[schema(value_type = Object)]
    payload: Value,
    /// Its id (an enqueue of an id that exists changes nothing).
    id: Option<String>,
    /// 0–255, 0 claimed first.
    priority: Option<u8>,
    /// Attempts before it is dead-lettered (at least 1; default 3).
    attempts: Option<u64>,
    /// Runs this long from now (server clock); not with `run_at`.
    delay_ms: Option<u64>,
    /// Runs at this instant (unix ms).
    run_at: Option<u64>,
    /// A deduplication key.
    dedup: Option<String>,
    /// Throttle: the key holds this long (with `dedup`).
    dedup_for_ms: Option<u64>,
    /// Debounce: the job runs this long after the last enqueue with its
    /// key (with `dedup`).
    debounce_ms: Option<u64>,
    /// Its group.
    group: Option<String>,
    /// How long a run may last.
    time_limit_ms: Option<u64>,
    /// When it must have started by (unix ms), or it is cancelled.
    start_by: Option<u64>,
    /// How long from now it may wait to start, or it is cancelled.
    start_within_ms: Option<u64>,
    /// Claimed newest first among its priority.
    #[serde(default)]
    lifo: bool,
    /// A W3C trace context (`traceparent` header value).
    traceparent: Option<String>,
}

/// One job or many (at most 1,000).
#[derive(ToSchema)]
#[serde(untagged)]
#[allow(dead_code)] // the document's schema of the body, read as JSON first
pub(crate) enum NewJobs {
    /// One job.
    One(Box<JobBody>),
    /// Many, enqueued in one pipeline, answered in their order.
    Many(Vec<JobBody>),
}

/// What one enqueue did.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Created {
    /// The job's id; for `deduplicated` or `debounced`, the holder's.
    id: String,
    /// `created`, `existed`, `deduplicated` or `debounced`.
    outcome: &'static str,
}

/// What an enqueue of many did, in their order.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct CreatedMany {
    jobs: Vec<Created>,
}

/// What an enqueue answers: one job's, or many's.
#[derive(ToSchema)]
#[serde(untagged)]
#[allow(dead_code)] // the document's schema of the answer
pub(crate) enum EnqueueAnswer {
    /// One job's.
    One(Created),
    /// Many jobs', in their order.
    Many(CreatedMany),
}

/// The query of an enqueue.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EnqueueQuery {
    wait: Option<String>,
}

/// `POST /queues/{q}/jobs`.
#[utoipa::path(
    post,
    path = "/queues/{q}/jobs",
    tag = "producers",
    params(
        ("q" = String, Path, description = "The queue"),
        ("wait" = Option<String>, Query, description = "One job only: wait this long (250ms, 30s, at most 5m) for its outcome"),
    ),
    request_body(content = NewJobs, description = "One job or an array of at most 1,000"),
    responses(
        (status = 201, description = "Enqueued", body = EnqueueAnswer),
        (status = 200, description = "With ?wait: the job's outcome", body = JobOutcome),
        (status = 202, description = "With ?wait: the time ran out, the job runs on", body = JobOutcome),
        (status = 400, description = "A field was wrong (`field` names it)", body = ErrorBody),
        (status = 403, description = "The grant may not enqueue on this queue", body = ErrorBody),
    )
)]
pub(crate) async fn enqueue(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Path(queue): Path<String>,
    Query(query): Query<EnqueueQuery>,
    Json(body): Json<Value>,
) -> Result<Response, ApiError> {
    permit(&grant, &queue, Need::Produce)?;
    let wait = match &query.wait {
        Some(text) => Some(duration("wait", text, LONGEST_WAIT)?),
        None => None,
    };
    let q = api.app.connector.queue::<Value>(&queue)?;
    let Value::Array(items) = body else {
        let mut job = new_job(from_value(body)?)?;
        if wait.is_some() {
            job = job.awaited();
        }
        let enqueued = q.enqueue(job).await?;
        return match wait {
            Some(wait) => outcome_answer(&enqueued.id, enqueued.outcome(wait).await),
            None => Ok((StatusCode::CREATED, axum::Json(created(&enqueued))).into_response()),
        };
    };
    if wait.is_some() {
        return Err(
            ApiError::bad_request("?wait waits for one job: send an object").with_field("wait"),
        );
    }
    if items.len() > MOST_JOBS {
        return Err(ApiError::bad_request(format!(
            "{} jobs in one request: at most {MOST_JOBS}",
            items.len()
        )));
    }
    let bodies: Vec<JobBody> = from_value(Value::Array(items))?;
    let jobs = bodies
        .into_iter()
        .enumerate()
        .map(|(at, body)| new_job(body).map_err(|err| in_item(err, at)))
        .collect::<Result<Vec<_>, _>>()?;
    let enqueued = q.enqueue_bulk(jobs).await?;
    let jobs = enqueued.iter().map(created).collect();
    Ok((StatusCode::CREATED, axum::Json(CreatedMany { jobs })).into_response())
}

/// The same refusal, its field named inside item `at` of the array.
fn in_item(mut err: ApiError, at: usize) -> ApiError {
    err.detail.field = Some(match err.detail.field.take() {
        Some(field) => format!("[{at}].{field}"),
        None => format!("[{at}]"),
    });
    err
}

fn created(enqueued: &Enqueued) -> Created {
    Created {
        id: enqueued.id.as_str().to_string(),
        outcome: match enqueued.effect {
            EnqueueOutcome::Created => "created",
            EnqueueOutcome::Existed => "existed",
            EnqueueOutcome::Deduplicated => "deduplicated",
            EnqueueOutcome::Debounced => "debounced",
        },
    }
}

/// The library's job of `body`.
fn new_job(body: JobBody) -> Result<NewJob<Value>, ApiError> {
    let ms = Duration::from_millis;
    let instant = |at: u64| SystemTime::UNIX_EPOCH + ms(at);
    let mut job = NewJob::new(body.payload);
    if let Some(id) = body.id {
        job = job
            .id(id)
            .map_err(|err| ApiError::from(err).with_field("id"))?;
    }
    job = match (body.delay_ms, body.run_at) {
        (Some(_), Some(_)) => {
            return Err(
                ApiError::bad_request("delay_ms and run_at exclude each other")
                    .with_field("run_at"),
            );
        }
        (Some(delay), None) => job.after(ms(delay)),
        (None, Some(at)) => job.at(instant(at)),
        (None, None) => job,
    };
    let needs_dedup = |field: &str| {
        ApiError::bad_request(format!("{field} needs dedup (the key it holds)")).with_field(field)
    };
    if body.dedup.is_none() {
        if body.dedup_for_ms.is_some() {
            return Err(needs_dedup("dedup_for_ms"));
        }
        if body.debounce_ms.is_some() {
            return Err(needs_dedup("debounce_ms"));
        }
    }
    if let Some(priority) = body.priority {
        job = job.priority(priority);
    }
    if let Some(attempts) = body.attempts {
        job = job.attempts(attempts);
    }
    if let Some(key) = body.dedup {
        job = job.dedup(key);
    }
    if let Some(period) = body.dedup_for_ms {
        job = job.dedup_for(ms(period));
    }
    if let Some(wait) = body.debounce_ms {
        job = job.debounce(ms(wait));
    }
    if let Some(group) = body.group {
        job = job.group(group);
    }
    if let Some(limit) = body.time_limit_ms {
        job = job.time_limit(ms(limit));
    }
    if let Some(at) = body.start_by {
        job = job.start_by(instant(at));
    }
    if let Some(within) = body.start_within_ms {
        job = job.start_within(ms(within));
    }
    if body.lifo {
        job = job.lifo();
    }
    if let Some(traceparent) = body.traceparent {
        job = job.traceparent(traceparent);
    }
    Ok(job)
}
