//! The invariant of `docs/protocol.md`, "Time limits, start-by deadlines,
//! LIFO and retention by age", checked against a live keyspace: a job with
//! a `time_limit` or a `start_by` (each a positive integer) is on a queue
//! marked `timed`; a pending or scheduled job with a `start_by` is a member
//! of `deadlines` scored by it; a job with a `reason` has `expired`, is
//! cancelled, and had a `start_by` below its cancelled-at.

use echomq_protocol::{JobId, JobState, Keyspace};
use redis::aio::MultiplexedConnection;
use std::collections::HashMap;

/// A job's fields the rules read.
type Fields = (Option<String>, Option<String>, Option<String>);

/// Every violation of the deadlines' invariant, given each job's set.
pub(crate) async fn deadline_problems(
    conn: &mut MultiplexedConnection,
    keys: &Keyspace,
    member_of: &HashMap<String, Vec<JobState>>,
) -> Result<Vec<String>, String> {
    let mut problems = Vec::new();
    let timed = crate::invariant::meta_marked(conn, keys, "timed").await?;
    for (id, states) in member_of {
        let job = JobId::new(id.clone()).map_err(|err| err.to_string())?;
        let (time_limit, start_by, reason): Fields = redis::cmd("HMGET")
            .arg(keys.job(&job))
            .arg(&["time_limit", "start_by", "reason"])
            .query_async(conn)
            .await
            .map_err(|err| format!("HMGET {id}: {err}"))?;
        let positive = |value: &str| value.parse::<u64>().is_ok_and(|n| n >= 1);
        for (name, value) in [("time_limit", &time_limit), ("start_by", &start_by)] {
            let Some(value) = value else { continue };
            if !positive(value) {
                problems.push(format!("job {id} has a {name} of {value:?}"));
            }
            if !timed {
                problems.push(format!(
                    "job {id} has a {name} but the meta hash has no timed mark"
                ));
            }
        }
        let state = states[0];
        if let Some(start_by) = &start_by
            && matches!(
                state,
                JobState::Pending | JobState::Scheduled | JobState::Blocked
            )
        {
            let score: Option<f64> = redis::cmd("ZSCORE")
                .arg(keys.deadlines())
                .arg(id)
                .query_async(conn)
                .await
                .map_err(|err| format!("ZSCORE deadlines {id}: {err}"))?;
            if score.map(|score| score as u64) != start_by.parse().ok() {
                problems.push(format!(
                    "{state} job {id} has start_by {start_by} but is scored {score:?} in deadlines"
                ));
            }
        }
        if let Some(reason) = reason {
            problems.extend(reason_problems(conn, keys, id, state, &reason, &start_by).await?);
        }
    }
    Ok(problems)
}

/// The rules of a job's `reason`: `expired`, on a cancelled job whose
/// `start_by` is below its cancelled-at; `dependency` (its failure policy
/// decided it: docs/protocol.md, "Failure policies"), on a dead or
/// cancelled job.
async fn reason_problems(
    conn: &mut MultiplexedConnection,
    keys: &Keyspace,
    id: &str,
    state: JobState,
    reason: &str,
    start_by: &Option<String>,
) -> Result<Vec<String>, String> {
    if reason == "dependency" {
        return Ok(match state {
            JobState::Dead | JobState::Cancelled => Vec::new(),
            _ => vec![format!("{state} job {id} has the reason dependency")],
        });
    }
    if reason != "expired" {
        return Ok(vec![format!("job {id} has the reason {reason:?}")]);
    }
    if state != JobState::Cancelled {
        return Ok(vec![format!("{state} job {id} has the reason expired")]);
    }
    let cancelled_at: Option<f64> = redis::cmd("ZSCORE")
        .arg(keys.state_set(JobState::Cancelled))
        .arg(id)
        .query_async(conn)
        .await
        .map_err(|err| format!("ZSCORE cancelled {id}: {err}"))?;
    let start_by: Option<f64> = start_by.as_deref().and_then(|s| s.parse().ok());
    Ok(match (start_by, cancelled_at) {
        (Some(start_by), Some(at)) if start_by < at => Vec::new(),
        _ => vec![format!(
            "expired job {id} has start_by {start_by:?}, not below its cancelled-at {cancelled_at:?}"
        )],
    })
}
