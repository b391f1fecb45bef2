//! The outbox part of the flow invariant of `docs/protocol.md`, "The flow
//! invariant", checked against a live keyspace: an id is in `resolutions`
//! iff its `resolution:<id>` exists, and then its `left` is the number of
//! `0` fields of its `dependents:<id>`, at least 1, and the job is decided
//! or gone; a decided or gone job with a `0` field is in `resolutions`; a
//! job's `dependents` is the length of its `dependents:<id>`; a
//! `deps:<id>` or `dependents:<id>` outlives its job only in the outbox;
//! a queue holding any of these has the `flows` mark (but the hand-off an
//! `OBLITERATE` left, with no meta hash).

use echomq_protocol::{JobId, JobState, Keyspace};
use redis::aio::MultiplexedConnection;
use std::collections::{HashMap, HashSet};

/// Whether a job in `states` (none: gone) is decided or gone.
fn decided_or_gone(states: Option<&Vec<JobState>>) -> bool {
    match states.and_then(|states| states.first()) {
        None => true,
        Some(state) => matches!(
            state,
            JobState::Completed | JobState::Dead | JobState::Cancelled
        ),
    }
}

/// The ids of the keys `<base><infix><id>`.
async fn ids_under(
    conn: &mut MultiplexedConnection,
    keys: &Keyspace,
    infix: &str,
) -> Result<Vec<String>, String> {
    let prefix = format!("{}{infix}", keys.base());
    Ok(crate::invariant::scan(conn, &format!("{prefix}*"))
        .await?
        .into_iter()
        .map(|key| key[prefix.len()..].to_string())
        .collect())
}

/// Every violation of the outbox invariant, given each job's set.
pub(crate) async fn outbox_problems(
    conn: &mut MultiplexedConnection,
    keys: &Keyspace,
    member_of: &HashMap<String, Vec<JobState>>,
) -> Result<Vec<String>, String> {
    use echomq_protocol::keyspace::{DEPENDENTS_INFIX, DEPS_INFIX, RESOLUTION_INFIX};
    let mut problems = Vec::new();
    let outbox: Vec<String> = redis::cmd("ZRANGE")
        .arg(keys.key(echomq_protocol::QueueKey::Resolutions))
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await
        .map_err(|err| format!("ZRANGE resolutions: {err}"))?;
    let in_outbox: HashSet<&String> = outbox.iter().collect();
    let resolutions = ids_under(conn, keys, RESOLUTION_INFIX).await?;
    let dependents = ids_under(conn, keys, DEPENDENTS_INFIX).await?;
    let deps = ids_under(conn, keys, DEPS_INFIX).await?;
    for id in &resolutions {
        if !in_outbox.contains(id) {
            problems.push(format!(
                "resolution:{id} exists but {id} is not in resolutions"
            ));
        }
    }
    let mut untold: HashMap<String, usize> = HashMap::new();
    for id in &dependents {
        let values: Vec<String> = redis::cmd("HVALS")
            .arg(format!("{}{DEPENDENTS_INFIX}{id}", keys.base()))
            .query_async(conn)
            .await
            .map_err(|err| format!("HVALS dependents:{id}: {err}"))?;
        for value in &values {
            if value != "0" && value != "1" {
                problems.push(format!("dependents:{id} holds a field valued {value:?}"));
            }
        }
        let zeros = values.iter().filter(|value| *value == "0").count();
        untold.insert(id.clone(), zeros);
        let states = member_of.get(id);
        if states.is_none() && !in_outbox.contains(id) {
            problems.push(format!(
                "dependents:{id} outlives its job outside the outbox"
            ));
        }
        if zeros > 0 && decided_or_gone(states) && !in_outbox.contains(id) {
            problems.push(format!(
                "job {id} is decided or gone with {zeros} dependents not told, and not in resolutions"
            ));
        }
        if states.is_some() {
            let job = JobId::new(id.clone()).map_err(|err| err.to_string())?;
            let count: Option<String> = redis::cmd("HGET")
                .arg(keys.job(&job))
                .arg("dependents")
                .query_async(conn)
                .await
                .map_err(|err| format!("HGET {id} dependents: {err}"))?;
            if count.as_deref() != Some(values.len().to_string().as_str()) {
                problems.push(format!(
                    "job {id} has dependents {count:?} but dependents:{id} holds {}",
                    values.len()
                ));
            }
        }
    }
    for id in &outbox {
        let left: Option<String> = redis::cmd("HGET")
            .arg(format!("{}{RESOLUTION_INFIX}{id}", keys.base()))
            .arg("left")
            .query_async(conn)
            .await
            .map_err(|err| format!("HGET resolution:{id} left: {err}"))?;
        let zeros = untold.get(id).copied().unwrap_or(0);
        match left {
            None => problems.push(format!(
                "{id} is in resolutions without its resolution:{id}"
            )),
            Some(left) if left != zeros.to_string() || zeros == 0 => problems.push(format!(
                "resolution:{id} has left {left} but dependents:{id} has {zeros} not told"
            )),
            Some(_) => {}
        }
        if !decided_or_gone(member_of.get(id)) {
            problems.push(format!("{id} is in resolutions but undecided"));
        }
    }
    for id in &deps {
        if !member_of.contains_key(id) {
            problems.push(format!("deps:{id} outlives its job"));
        }
    }
    let any = !outbox.is_empty() || !dependents.is_empty() || !deps.is_empty();
    let (meta, flows): (bool, Option<String>) = (
        redis::cmd("EXISTS")
            .arg(keys.meta())
            .query_async(conn)
            .await
            .map_err(|err| format!("EXISTS meta: {err}"))?,
        redis::cmd("HGET")
            .arg(keys.meta())
            .arg("flows")
            .query_async(conn)
            .await
            .map_err(|err| format!("HGET flows: {err}"))?,
    );
    if any && meta && flows.as_deref() != Some("1") {
        problems.push("the queue holds flow keys but its meta hash has no flows mark".into());
    }
    Ok(problems)
}
