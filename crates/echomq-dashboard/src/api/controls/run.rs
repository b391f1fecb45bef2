//! Sending a control from its checked body: each through the library's
//! typed function the registry names for it (`Admin::drain`,
//! `Jobs::cancel`, `Group::pause`…), so the API does what the library
//! does (its chunks, its relay after a removal) and answers what it
//! answers, as JSON.

use super::fields::Body;
use echomq::{
    CancelOutcome, DependencyOutcome, DrainScope, IfActive, JobId, Queue, Relayed, RetentionChange,
    Transition,
};
use serde_json::{Value, json};
use std::time::{Duration, SystemTime};

/// The answer of a control, or the library's error.
type Answer = echomq::Result<Value>;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn to_json<S: serde::Serialize>(value: S) -> Answer {
    Ok(serde_json::to_value(value)?)
}

/// Sends the queue's control `t` with `body`.
pub(crate) async fn queue(queue: &Queue<Value>, t: Transition, body: &Body) -> Answer {
    let admin = queue.admin();
    match t {
        Transition::Promote => {
            let promoted = queue.promote(body.int("limit").unwrap_or(1000)).await?;
            Ok(json!({ "promoted": promoted }))
        }
        Transition::StalledCheck => {
            let max_stalls = body.int("max_stalls").unwrap_or(1);
            let limit = body.int("limit").unwrap_or(1000);
            let retry_in: Vec<Duration> = body
                .ints("retry_in")
                .unwrap_or_default()
                .into_iter()
                .map(ms)
                .collect();
            to_json(
                queue
                    .sweep_stalled_retrying(max_stalls, limit, &retry_in)
                    .await?,
            )
        }
        Transition::Pause => admin.pause().await.map(|()| json!({ "paused": true })),
        Transition::Resume => admin.resume().await.map(|()| json!({ "paused": false })),
        Transition::Drain => {
            let mut scope = DrainScope::PENDING;
            if body.flag("scheduled") {
                scope = scope.and_scheduled();
            }
            if body.flag("blocked") {
                scope = scope.and_blocked();
            }
            Ok(json!({ "drained": admin.drain(scope).await? }))
        }
        Transition::Obliterate => {
            admin.obliterate(if_active(body)).await?;
            Ok(json!({ "obliterated": true }))
        }
        Transition::Counts => to_json(admin.counts().await?),
        Transition::Retention => to_json(admin.set_retention(retention(body)).await?),
        Transition::DedupOwner => {
            let owner = queue
                .jobs()
                .dedup_owner(body.text("dedup").unwrap_or_default())
                .await?;
            Ok(json!({ "job": owner.map(|id| id.as_str().to_string()) }))
        }
        Transition::DedupRelease => {
            let released = queue
                .jobs()
                .release_dedup(body.text("dedup").unwrap_or_default())
                .await?;
            Ok(json!({ "released": released }))
        }
        Transition::Limit => to_json(match (body.int("max"), body.flag("off")) {
            (Some(max), _) => {
                admin
                    .set_rate_limit(max, ms(body.int("per").unwrap_or(1)))
                    .await?
            }
            (None, true) => admin.clear_rate_limit().await?,
            (None, false) => admin.rate_limit().await?,
        }),
        Transition::Concurrency => to_json(match (body.int("max"), body.flag("off")) {
            (Some(max), _) => admin.set_concurrency_cap(max).await?,
            (None, true) => admin.clear_concurrency_cap().await?,
            (None, false) => admin.concurrency_cap().await?,
        }),
        Transition::Groups => {
            let count = body.int("count").unwrap_or(100);
            to_json(admin.groups(body.text("after"), count).await?)
        }
        Transition::FlowCheckup => {
            let checked = queue.checkup().await?;
            Ok(json!({
                "jobs": checked.jobs, "edges": checked.edges, "waiting": checked.waiting,
                "missing": checked.missing, "left": checked.left,
                "relayed": relayed(checked.relayed),
            }))
        }
        Transition::FlowOutbox => Ok(relayed(queue.relay().await?)),
        t => group(queue, t, body).await,
    }
}

/// A group's control (the `group` field names it).
async fn group(queue: &Queue<Value>, t: Transition, body: &Body) -> Answer {
    let group = queue
        .admin()
        .group(body.text("group").unwrap_or_default())?;
    let (max, off) = (body.int("max"), body.flag("off"));
    match t {
        Transition::GroupConcurrency => to_json(match (max, off) {
            (Some(max), _) => group.set_concurrency_cap(max).await?,
            (None, true) => group.clear_concurrency_cap().await?,
            (None, false) => group.concurrency_cap().await?,
        }),
        Transition::GroupLimit => to_json(match (max, off) {
            (Some(max), _) => {
                group
                    .set_rate_limit(max, ms(body.int("per").unwrap_or(1)))
                    .await?
            }
            (None, true) => group.clear_rate_limit().await?,
            (None, false) => group.rate_limit().await?,
        }),
        Transition::GroupPause => group.pause().await.map(|()| json!({ "paused": true })),
        Transition::GroupResume => group.resume().await.map(|()| json!({ "paused": false })),
        Transition::GroupCounts => to_json(group.counts().await?),
        t => unreachable!("{t:?} is not a queue's control (api/controls/table.rs)"),
    }
}

/// Sends job `id`'s control `t` with `body`.
pub(crate) async fn job(queue: &Queue<Value>, id: &JobId, t: Transition, body: &Body) -> Answer {
    let jobs = queue.jobs();
    let ok = json!({ "ok": true });
    match t {
        Transition::Reschedule => {
            let at = SystemTime::UNIX_EPOCH + ms(body.int("run_at").unwrap_or_default());
            jobs.reschedule(id, at).await.map(|()| ok)
        }
        Transition::Cancel => Ok(json!({
            "outcome": match jobs.cancel(id).await? {
                CancelOutcome::Cancelled => "cancelled",
                CancelOutcome::Requested => "requested",
            }
        })),
        Transition::Update => {
            let payload = serde_json::to_vec(body.json("payload").unwrap_or(&Value::Null))?;
            jobs.update_raw(id, payload).await.map(|()| ok)
        }
        Transition::Remove => Ok(json!({ "removed": jobs.remove(id, if_active(body)).await? })),
        Transition::Reprocess => jobs.reprocess(id).await.map(|()| ok),
        Transition::Requeue => jobs.requeue(id).await.map(|()| ok),
        Transition::FlowDeps => {
            let deps = jobs.dependencies(id).await?;
            let deps: Vec<Value> = deps
                .into_iter()
                .map(|dep| {
                    json!({
                        "ref": dep.reference, "queue": dep.queue, "id": dep.id.as_str(),
                        "outcome": outcome(&dep.outcome),
                    })
                })
                .collect();
            Ok(json!({ "dependencies": deps }))
        }
        Transition::FlowDependents => {
            let dependents: Vec<Value> = jobs
                .dependents(id)
                .await?
                .into_iter()
                .map(|d| json!({ "queue": d.queue, "id": d.id.as_str(), "told": d.told }))
                .collect();
            Ok(json!({ "dependents": dependents }))
        }
        t => unreachable!("{t:?} is not a job's control (api/controls/table.rs)"),
    }
}

fn if_active(body: &Body) -> IfActive {
    if body.flag("force") {
        IfActive::Force
    } else {
        IfActive::Refuse
    }
}

/// RETENTION's options as a change: an age of 0 removes the age rule.
fn retention(body: &Body) -> RetentionChange {
    let mut change = RetentionChange::new();
    if let Some(n) = body.int("completed") {
        change = change.completed(n);
    }
    if let Some(n) = body.int("dead") {
        change = change.dead(n);
    }
    if let Some(n) = body.int("cancelled") {
        change = change.cancelled(n);
    }
    change = match body.int("completed_for") {
        Some(0) => change.completed_for_off(),
        Some(age) => change.completed_for(ms(age)),
        None => change,
    };
    change = match body.int("dead_for") {
        Some(0) => change.dead_for_off(),
        Some(age) => change.dead_for(ms(age)),
        None => change,
    };
    match body.int("cancelled_for") {
        Some(0) => change.cancelled_for_off(),
        Some(age) => change.cancelled_for(ms(age)),
        None => change,
    }
}

fn relayed(r: Relayed) -> Value {
    json!({
        "resolved": r.resolved, "unblocked": r.unblocked, "decided": r.decided,
        "already": r.already, "left": r.left,
    })
}

fn outcome(outcome: &DependencyOutcome) -> Value {
    match outcome {
        DependencyOutcome::Completed { result, .. } => json!({
            "outcome": "completed",
            "result": result.as_deref().and_then(|r| serde_json::from_slice::<Value>(r).ok()),
        }),
        DependencyOutcome::Dead { failures, error } => {
            json!({ "outcome": "dead", "failures": failures, "error": error })
        }
        other => json!({ "outcome": other.word() }),
    }
}
