//! `POST /queues/{q}/claim` (docs/http.md, "Workers in any language"):
//! up to `count` jobs under a lease, each with its fencing token; with
//! `wait_ms`, a long poll that waits without polling the server
//! ([`echomq::ClaimWaits`]: one listener per queue however many wait).

use super::Api;
use super::access::permit;
use super::error::{ApiError, ErrorBody};
use super::json::Json;
use super::model::json_or_text;
use crate::grant::{Grant, Need};
use axum::Extension;
use axum::extract::{Path, State};
use echomq::Claimed;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;
use utoipa::ToSchema;

/// The most jobs one claim asks for.
pub(crate) const MOST_JOBS: u64 = 1000;
/// The longest a claim waits for work, in ms.
pub(crate) const MOST_WAIT_MS: u64 = 60_000;
/// The lease when the body gives none, in ms (a worker's default).
pub(crate) const DEFAULT_LEASE_MS: u64 = 30_000;

/// What a claim asks for.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClaimBody {
    /// How many jobs at most, 1–1000 (default 1).
    #[schema(minimum = 1, maximum = 1000)]
    count: Option<u64>,
    /// The lease of each job, in ms (default 30000): extend it at a
    /// third of it, or the stalled sweep takes the job back.
    #[schema(minimum = 1)]
    lease_ms: Option<u64>,
    /// How long to wait for work when none is pending, in ms, at most
    /// 60000 (default 0: answer at once).
    #[schema(maximum = 60000)]
    wait_ms: Option<u64>,
    /// The worker's name, stored on each job (default: the token's name).
    worker: Option<String>,
}

/// The jobs claimed.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ClaimedJobs {
    /// In claim order; empty when none was pending (after the wait).
    pub(crate) jobs: Vec<ClaimedJob>,
}

/// One job claimed: what a worker needs to run it and to answer for it.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ClaimedJob {
    /// Its id.
    id: String,
    /// The fencing token every call on it must carry.
    token: u64,
    /// The payload, any JSON (a string when it is not JSON; then
    /// `payload_raw` is true).
    #[schema(value_type = Object)]
    payload: Value,
    /// Whether the payload was not JSON (written by another client).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    payload_raw: bool,
    /// This attempt's number, from 1.
    attempt: u64,
    /// Attempts allowed in all.
    max_attempts: u64,
    /// The lease granted, in ms (at most the job's time limit).
    lease_ms: u64,
    /// How long this run may last, in ms; none without a limit.
    time_limit_ms: Option<u64>,
    /// The W3C trace context it was enqueued with.
    traceparent: Option<String>,
}

impl ClaimedJob {
    fn of(job: Claimed<Value>, lease_ms: u64) -> Self {
        let time_limit_ms = job.time_limit().map(|limit| limit.as_millis() as u64);
        let (payload, payload_raw) = json_or_text(job.payload_text());
        ClaimedJob {
            id: job.id.as_str().to_string(),
            token: job.token,
            payload,
            payload_raw,
            attempt: job.attempt(),
            max_attempts: job.max_attempts,
            lease_ms: time_limit_ms.map_or(lease_ms, |limit| limit.min(lease_ms)),
            time_limit_ms,
            traceparent: job.traceparent().map(str::to_string),
        }
    }
}

/// `POST /queues/{q}/claim`.
#[utoipa::path(
    post,
    path = "/queues/{q}/claim",
    tag = "workers",
    params(("q" = String, Path, description = "The queue")),
    request_body = ClaimBody,
    responses(
        (status = 200, description = "The jobs claimed, each with its token; empty when none was pending within wait_ms", body = ClaimedJobs),
        (status = 400, description = "A bad count, lease_ms or wait_ms (field names it)", body = ErrorBody),
        (status = 403, description = "The token may not work this queue", body = ErrorBody),
    )
)]
pub(crate) async fn claim(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Path(queue): Path<String>,
    Json(body): Json<ClaimBody>,
) -> Result<axum::Json<ClaimedJobs>, ApiError> {
    permit(&grant, &queue, Need::Work)?;
    Ok(axum::Json(
        claim_for(&api, &grant, &queue, body.check("")?).await?,
    ))
}

/// A claim's body, checked: how many jobs, the lease and the wait, in ms.
pub(crate) struct Checked {
    count: u64,
    lease_ms: u64,
    wait_ms: u64,
    worker: Option<String>,
}

impl ClaimBody {
    /// The body checked (400 naming the field, `within` before its name:
    /// `claim.` in a batch completion's body) before anything is sent.
    pub(crate) fn check(self, within: &str) -> Result<Checked, ApiError> {
        let count = self.count.unwrap_or(1);
        if !(1..=MOST_JOBS).contains(&count) {
            return Err(ApiError::bad_request(format!(
                "count is {count}: a claim takes 1–{MOST_JOBS} jobs"
            ))
            .with_field(format!("{within}count")));
        }
        let lease_ms = self.lease_ms.unwrap_or(DEFAULT_LEASE_MS);
        if lease_ms == 0 {
            return Err(ApiError::bad_request("lease_ms is at least 1")
                .with_field(format!("{within}lease_ms")));
        }
        let wait_ms = self.wait_ms.unwrap_or(0);
        if wait_ms > MOST_WAIT_MS {
            return Err(ApiError::bad_request(format!(
                "wait_ms is {wait_ms}: a claim waits at most {MOST_WAIT_MS} ms"
            ))
            .with_field(format!("{within}wait_ms")));
        }
        Ok(Checked {
            count,
            lease_ms,
            wait_ms,
            worker: self.worker,
        })
    }
}

/// Claims what `claim` asks of `queue` for `grant` (already permitted to
/// work it).
pub(crate) async fn claim_for(
    api: &Api,
    grant: &Grant,
    queue: &str,
    claim: Checked,
) -> Result<ClaimedJobs, ApiError> {
    let Checked {
        count,
        lease_ms,
        wait_ms,
        worker,
    } = claim;
    let worker = worker.unwrap_or_else(|| grant.name.clone());
    let handle = api.app.connector.queue::<Value>(queue)?;
    let claimed = api
        .app
        .claim_waits
        .claim(
            &handle,
            &worker,
            Duration::from_millis(lease_ms),
            count as usize,
            Duration::from_millis(wait_ms),
        )
        .await?;
    let jobs = claimed
        .into_iter()
        .map(|job| ClaimedJob::of(job, lease_ms))
        .collect();
    Ok(ClaimedJobs { jobs })
}
