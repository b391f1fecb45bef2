//! The per-queue part of the flow invariant of `docs/protocol.md` ("The
//! flow invariant"), checked against a live keyspace: a blocked job has
//! `deps_left` ≥ 1; a job's `deps` is the length of its `deps:<id>` hash
//! and `deps_left` the number of its `wait` fields (every other value a
//! resolution text), and a job with `deps_left` ≥ 1 is blocked, dead or
//! cancelled; `dependents` is the length of `dependents:<id>`, whose values
//! are `0` or `1`; `on_failure`, when present, is `ignore` or `cancel`; an
//! edge hash belongs to a job (a `dependents` hash outlives it only while
//! its resolution waits in `resolutions`); and a queue holding any flow
//! key or field has the `flows` mark. A queue without the mark costs one
//! scan of each edge hash prefix, no read per job.

use echomq_protocol::keyspace::{DEPENDENTS_INFIX, DEPS_INFIX};
use echomq_protocol::{JobId, JobState, Keyspace};
use redis::aio::MultiplexedConnection;
use std::collections::HashMap;

/// The first words a resolution text starts with.
const OUTCOMES: [&str; 4] = ["completed ", "dead ", "cancelled ", "removed "];

/// A job's `state`, `on_failure`, `deps`, `deps_left` and `dependents`.
type FlowFields = (
    Option<String>,
    Option<String>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
);

/// Every violation of the flow invariant, given each job's set.
pub(crate) async fn flow_problems(
    conn: &mut MultiplexedConnection,
    keys: &Keyspace,
    member_of: &HashMap<String, Vec<JobState>>,
) -> Result<Vec<String>, String> {
    let mut problems = Vec::new();
    let marked = crate::invariant::meta_marked(conn, keys, "flows").await?;
    let base = keys.base();
    let edges = |infix: &str| format!("{base}{infix}");
    let told: Vec<String> = redis::cmd("ZRANGE")
        .arg(format!("{base}:resolutions"))
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await
        .map_err(|err| format!("ZRANGE resolutions: {err}"))?;
    for infix in [DEPS_INFIX, DEPENDENTS_INFIX] {
        let prefix = edges(infix);
        for key in crate::invariant::scan(conn, &format!("{prefix}*")).await? {
            let id = &key[prefix.len()..];
            // The hand-off an OBLITERATE leaves outlives the queue's mark.
            let outlives = infix == DEPENDENTS_INFIX && told.iter().any(|t| t == id);
            if !marked && !outlives {
                problems.push(format!("{key} exists but the meta hash has no flows mark"));
            }
            if !member_of.contains_key(id) && !outlives {
                problems.push(format!("{key} belongs to no job (orphan)"));
            }
        }
    }
    if !marked {
        return Ok(problems);
    }
    for (id, states) in member_of {
        let job = JobId::new(id.clone()).map_err(|err| err.to_string())?;
        let fields: FlowFields = redis::cmd("HMGET")
            .arg(keys.job(&job))
            .arg(&["state", "on_failure", "deps", "deps_left", "dependents"])
            .query_async(conn)
            .await
            .map_err(|err| format!("HMGET {id} flow fields: {err}"))?;
        let (state, on_failure, deps, deps_left, dependents) = fields;
        let blocked = states.contains(&JobState::Blocked);
        if let Some(policy) = on_failure.filter(|p| p != "ignore" && p != "cancel") {
            problems.push(format!("job {id} has an on_failure of {policy:?}"));
        }
        if blocked && deps_left.unwrap_or(0) < 1 {
            problems.push(format!("job {id} is blocked with deps_left {deps_left:?}"));
        }
        if deps_left.unwrap_or(0) >= 1
            && !matches!(state.as_deref(), Some("blocked" | "dead" | "cancelled"))
        {
            problems.push(format!(
                "job {id} has deps_left {deps_left:?} but is {state:?}"
            ));
        }
        if deps.is_some() || deps_left.is_some() {
            let values: Vec<String> = redis::cmd("HVALS")
                .arg(format!("{}{id}", edges(DEPS_INFIX)))
                .query_async(conn)
                .await
                .map_err(|err| format!("HVALS deps of {id}: {err}"))?;
            let waiting = values.iter().filter(|v| *v == "wait").count() as u64;
            if deps != Some(values.len() as u64) || deps_left != Some(waiting) {
                problems.push(format!(
                    "job {id} has deps {deps:?} and deps_left {deps_left:?}, its deps hash {} fields, {waiting} wait",
                    values.len()
                ));
            }
            for value in values.iter().filter(|v| *v != "wait") {
                if !OUTCOMES.iter().any(|outcome| value.starts_with(outcome)) {
                    problems.push(format!("job {id} has an edge valued {value:?}"));
                }
            }
        }
        if let Some(dependents) = dependents {
            let values: Vec<String> = redis::cmd("HVALS")
                .arg(format!("{}{id}", edges(DEPENDENTS_INFIX)))
                .query_async(conn)
                .await
                .map_err(|err| format!("HVALS dependents of {id}: {err}"))?;
            if dependents != values.len() as u64 {
                problems.push(format!(
                    "job {id} has dependents {dependents}, its dependents hash {} fields",
                    values.len()
                ));
            }
            if values.iter().any(|v| v != "0" && v != "1") {
                problems.push(format!("job {id} has a dependent valued neither 0 nor 1"));
            }
        }
    }
    Ok(problems)
}
