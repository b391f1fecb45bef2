//! The LIFO part of the invariant of `docs/protocol.md`, "Time limits,
//! start-by deadlines, LIFO and retention by age", checked against a live
//! keyspace: a job's `lifo`, when present, is `1`, on a queue marked
//! `lifo`. Its score is not checked: a LIFO job the first grouped job
//! moved out of `fifo` is scored as every moved entry (2^43 + seq).

use echomq_protocol::{JobId, JobState, Keyspace};
use redis::aio::MultiplexedConnection;
use std::collections::HashMap;

/// Every violation of the LIFO invariant, given each job's set.
pub(crate) async fn lifo_problems(
    conn: &mut MultiplexedConnection,
    keys: &Keyspace,
    member_of: &HashMap<String, Vec<JobState>>,
) -> Result<Vec<String>, String> {
    let mut problems = Vec::new();
    let marked = crate::invariant::meta_marked(conn, keys, "lifo").await?;
    for id in member_of.keys() {
        let job = JobId::new(id.clone()).map_err(|err| err.to_string())?;
        let lifo: Option<String> = redis::cmd("HGET")
            .arg(keys.job(&job))
            .arg("lifo")
            .query_async(conn)
            .await
            .map_err(|err| format!("HGET {id} lifo: {err}"))?;
        let Some(lifo) = lifo else { continue };
        if lifo != "1" {
            problems.push(format!("job {id} has a lifo of {lifo:?}"));
        }
        if !marked {
            problems.push(format!(
                "job {id} has a lifo but the meta hash has no lifo mark"
            ));
        }
    }
    Ok(problems)
}
