//! The queues (docs/http.md, "Reading"): `GET /queues`, every queue the
//! grant may see with its counts and settings, and `GET /queues/{q}`.

use super::Api;
use super::access::permit;
use super::error::{ApiError, ErrorBody};
use crate::grant::{Grant, Need};
use axum::extract::{Path, State};
use axum::{Extension, Json};
use echomq::prometheus::QueueSnapshot;
use echomq::{Connector, JobState};
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// A queue: its counts per state, whether it is paused, its settings.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct QueueView {
    /// Its name.
    name: String,
    /// Jobs per state (`scheduled`, `pending`, `active`, `completed`,
    /// `dead`, `cancelled`, `blocked`).
    counts: BTreeMap<&'static str, u64>,
    /// Whether claims are paused.
    paused: bool,
    /// Age of the pending job first in claim order, ms.
    oldest_pending_ms: Option<u64>,
    /// Its flow control.
    settings: Settings,
    /// Why it could not be read (a key of the wrong type, a bad record);
    /// the rest is then empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    unreadable: Option<String>,
}

/// A queue's flow control, where the server could say.
#[derive(Debug, Default, Serialize, ToSchema)]
pub(crate) struct Settings {
    /// `{"max", "per_ms", "used", "reset_ms", "hold_ms"}`; max 0 without
    /// a rate limit.
    #[schema(value_type = Option<Object>)]
    rate_limit: Option<Value>,
    /// `{"max", "active"}`; max 0 without a cap on active jobs.
    #[schema(value_type = Option<Object>)]
    concurrency: Option<Value>,
    /// What each finished state keeps: `{"completed", "completed_for_ms",
    /// "dead", "dead_for_ms", "cancelled", "cancelled_for_ms"}`.
    #[schema(value_type = Option<Object>)]
    retention: Option<Value>,
}

/// Every queue the grant may see.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct QueueList {
    queues: Vec<QueueView>,
}

impl QueueView {
    /// Queue `name` as read now.
    async fn read(connector: &Connector, name: &str) -> echomq::Result<Self> {
        let admin = connector.queue::<Value>(name)?.admin();
        let (snapshot, retention) =
            tokio::join!(QueueSnapshot::read(connector, name), admin.retention());
        Ok(Self::of(snapshot?, json(&retention?)))
    }

    fn of(snapshot: QueueSnapshot, retention: Option<Value>) -> Self {
        let counts = JobState::ALL
            .into_iter()
            .map(|state| (state.as_str(), snapshot.counts.get(state)))
            .collect();
        QueueView {
            name: snapshot.queue,
            counts,
            paused: snapshot.counts.paused,
            oldest_pending_ms: snapshot.oldest_pending_ms,
            settings: Settings {
                rate_limit: snapshot.rate_limit.as_ref().and_then(json),
                concurrency: snapshot.concurrency.as_ref().and_then(json),
                retention,
            },
            unreadable: None,
        }
    }

    fn unreadable(name: String, why: String) -> Self {
        QueueView {
            name,
            counts: BTreeMap::new(),
            paused: false,
            oldest_pending_ms: None,
            settings: Settings::default(),
            unreadable: Some(why),
        }
    }
}

/// `GET /queues`.
#[utoipa::path(
    get,
    path = "/queues",
    tag = "reading",
    responses((status = 200, description = "Every queue the token may see", body = QueueList))
)]
pub(crate) async fn list(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
) -> Result<Json<QueueList>, ApiError> {
    let connector = &api.app.connector;
    let grant = &grant;
    let listed = connector
        .read_queues(|name| async move {
            match grant.may_see(name.as_str()) {
                true => QueueView::read(connector, name.as_str()).await.map(Some),
                false => Ok(None),
            }
        })
        .await?;
    let queues = listed
        .into_iter()
        .filter_map(|row| match row {
            Ok(view) => view,
            Err(bad) if grant.may_see(&bad.queue) => {
                Some(QueueView::unreadable(bad.queue, bad.problem.to_string()))
            }
            Err(_) => None,
        })
        .collect();
    Ok(Json(QueueList { queues }))
}

/// `GET /queues/{q}`.
#[utoipa::path(
    get,
    path = "/queues/{q}",
    tag = "reading",
    params(("q" = String, Path, description = "The queue")),
    responses(
        (status = 200, description = "The queue", body = QueueView),
        (status = 404, description = "No such queue", body = ErrorBody),
    )
)]
pub(crate) async fn one(
    State(api): State<Api>,
    Extension(grant): Extension<Grant>,
    Path(queue): Path<String>,
) -> Result<Json<QueueView>, ApiError> {
    permit(&grant, &queue, Need::Read)?;
    let connector = &api.app.connector;
    let view = QueueView::read(connector, &queue).await?;
    if view.counts.values().sum::<u64>() == 0 {
        known(connector, &queue).await?;
    }
    Ok(Json(view))
}

fn json(value: &impl Serialize) -> Option<Value> {
    serde_json::to_value(value).ok()
}

/// 404 unless `queue` is one of the prefix's queues (read only for a
/// queue without jobs: one with jobs exists).
async fn known(connector: &Connector, queue: &str) -> Result<(), ApiError> {
    match connector.queues().await?.iter().any(|name| name == queue) {
        true => Ok(()),
        false => Err(ApiError::not_found(format!("no queue {queue}"))),
    }
}
