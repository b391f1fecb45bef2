//! The state invariant of `docs/protocol.md`, checked against a live keyspace.
//!
//! A job's `state` names exactly one of the six state sets, its id is a
//! member of that set and of no other, every member of a set has a hash,
//! and no job hash or log list is left without a membership. The pending
//! set is `pending` and the list `fifo` together (see `fifo_problems`):
//! an id in one of them, once; `fifo` a list, kept only by a queue without
//! the `groups` mark, holding exactly its pending jobs of priority 0. Every
//! throttle key of the dedup set has its owner, and an owner entry outside
//! the set (a simple or debounce key) names an unfinished job that carries
//! it (see `dedup_problems`). The groups' keys agree with the jobs (see
//! `group_invariant.rs`). A job's `traceparent` follows the W3C rule, and
//! only a queue marked `traced` has jobs with one. No log list exists on a
//! queue whose logs mark is `0`. A job waited for (`waited` = 1) is on a
//! queue with the `waited` mark. An age rule of retention
//! (`keep_<set>_for` of the meta hash), when present, is a whole number of
//! ms ≥ 1: `RETENTION … *_FOR 0` deletes the field (see
//! `retention_problems`). Time limits and deadlines follow their rules
//! (see `deadline_invariant.rs`), LIFO jobs theirs (see `lifo_invariant.rs`),
//! flows theirs (see `flow_invariant.rs`).

use echomq_protocol::{DedupMode, JobId, JobState, Keyspace};
use redis::aio::MultiplexedConnection;
use std::collections::{HashMap, HashSet};

/// Checks the invariant of the queue `keys` on the server that holds its
/// slot, given the URLs of every server (one, or each cluster master).
/// Returns a description of every violation.
pub async fn check_invariant(urls: &[String], keys: &Keyspace) -> Result<(), String> {
    let mut conn = owner(urls, keys).await?;
    let mut member_of: HashMap<String, Vec<JobState>> = HashMap::new();
    for state in JobState::ALL {
        let ids: Vec<String> = redis::cmd("ZRANGE")
            .arg(keys.state_set(state))
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await
            .map_err(|err| format!("ZRANGE {state}: {err}"))?;
        for id in ids {
            member_of.entry(id).or_default().push(state);
        }
    }
    let mut problems = Vec::new();
    let (traced, grouped, logs_mark, waited_mark): (
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    ) = redis::cmd("HMGET")
        .arg(keys.meta())
        .arg(&["traced", "groups", "logs", "waited"])
        .query_async(&mut conn)
        .await
        .map_err(|err| format!("HMGET traced groups logs waited: {err}"))?;
    let grouped = grouped.as_deref() == Some("1");
    let fifo = fifo_ids(&mut conn, keys, &mut problems).await?;
    let scored: HashSet<String> = member_of
        .iter()
        .filter(|(_, states)| states.contains(&JobState::Pending))
        .map(|(id, _)| id.clone())
        .collect();
    fifo_problems(&fifo, &scored, grouped, &mut problems);
    for id in &fifo {
        let states = member_of.entry(id.clone()).or_default();
        if !states.contains(&JobState::Pending) {
            states.push(JobState::Pending);
        }
    }
    let in_fifo: HashSet<&String> = fifo.iter().collect();
    for (id, states) in &member_of {
        if states.len() > 1 {
            problems.push(format!("job {id} is a member of several sets: {states:?}"));
        }
        let job = JobId::new(id.clone()).map_err(|err| err.to_string())?;
        let (found, traceparent, priority, waited): (
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        ) = redis::cmd("HMGET")
            .arg(keys.job(&job))
            .arg(&["state", "traceparent", "priority", "waited"])
            .query_async(&mut conn)
            .await
            .map_err(|err| format!("HMGET {id}: {err}"))?;
        if waited.as_deref() == Some("1") && waited_mark.as_deref() != Some("1") {
            problems.push(format!(
                "job {id} is waited for but the meta hash has no waited mark"
            ));
        }
        if let Some(tp) = traceparent {
            if echomq_protocol::trace::check_traceparent(tp.as_bytes()).is_err() {
                problems.push(format!("job {id} has a malformed traceparent {tp:?}"));
            }
            if traced.as_deref() != Some("1") {
                problems.push(format!(
                    "job {id} has a traceparent but the meta hash has no traced mark"
                ));
            }
        }
        if found.is_some() {
            let urgent = matches!(priority.as_deref(), None | Some("0"));
            if in_fifo.contains(id) && !urgent {
                problems.push(format!(
                    "job {id} of priority {priority:?} is in fifo, which holds priority 0 only"
                ));
            }
            if !grouped && scored.contains(id) && urgent {
                problems.push(format!(
                    "job {id} of priority 0 is in pending on a queue without groups (it belongs in fifo)"
                ));
            }
        }
        match found {
            None => problems.push(format!("job {id} is in {states:?} but has no hash")),
            Some(state) if state != states[0].as_str() => problems.push(format!(
                "job {id} says {state} but is in the {} set",
                states[0]
            )),
            Some(_) => {}
        }
    }
    let job_prefix = keys.job(&JobId::new("x").expect("valid id"));
    let job_prefix = job_prefix.trim_end_matches('x');
    for key in scan(&mut conn, &format!("{job_prefix}*")).await? {
        let id = &key[job_prefix.len()..];
        if !member_of.contains_key(id) {
            problems.push(format!("job hash {key} is in no state set (orphan)"));
        }
    }
    // A log goes with its job, and none exists under a logs mark of 0.
    let logs_prefix = keys.logs(&JobId::new("x").expect("valid id"));
    let logs_prefix = logs_prefix.trim_end_matches('x');
    for key in scan(&mut conn, &format!("{logs_prefix}*")).await? {
        let id = &key[logs_prefix.len()..];
        if !member_of.contains_key(id) {
            problems.push(format!("log list {key} belongs to no job (orphan)"));
        } else if logs_mark.as_deref() == Some("0") {
            problems.push(format!("log list {key} exists under a logs mark of 0"));
        }
    }
    problems.extend(dedup_problems(&mut conn, keys).await?);
    problems.extend(retention_problems(&mut conn, keys).await?);
    problems.extend(crate::group_invariant::group_problems(&mut conn, keys, &fifo).await?);
    problems
        .extend(crate::deadline_invariant::deadline_problems(&mut conn, keys, &member_of).await?);
    problems.extend(crate::lifo_invariant::lifo_problems(&mut conn, keys, &member_of).await?);
    problems.extend(crate::flow_invariant::flow_problems(&mut conn, keys, &member_of).await?);
    problems.extend(crate::outbox_invariant::outbox_problems(&mut conn, keys, &member_of).await?);
    if problems.is_empty() {
        Ok(())
    } else {
        problems.sort();
        Err(problems.join("\n"))
    }
}

/// The ids in `<base>:fifo`, head first; none, and a problem, when the key
/// holds another type than a list.
async fn fifo_ids(
    conn: &mut MultiplexedConnection,
    keys: &Keyspace,
    problems: &mut Vec<String>,
) -> Result<Vec<String>, String> {
    let kind: String = redis::cmd("TYPE")
        .arg(keys.fifo())
        .query_async(conn)
        .await
        .map_err(|err| format!("TYPE fifo: {err}"))?;
    match kind.as_str() {
        "list" => redis::cmd("LRANGE")
            .arg(keys.fifo())
            .arg(0)
            .arg(-1)
            .query_async(conn)
            .await
            .map_err(|err| format!("LRANGE fifo: {err}")),
        "none" => Ok(Vec::new()),
        other => {
            problems.push(format!("fifo is a {other}, not a list"));
            Ok(Vec::new())
        }
    }
}

/// The pending set's rules of `docs/protocol.md` ("The fifo") that the
/// ids alone show: an id is in `fifo` once and not also in `pending`
/// (`scored`), and a queue with the `groups` mark (`grouped`) keeps no
/// `fifo`. (The jobs' priorities are checked with their hashes.)
fn fifo_problems(
    fifo: &[String],
    scored: &HashSet<String>,
    grouped: bool,
    problems: &mut Vec<String>,
) {
    if grouped && !fifo.is_empty() {
        problems.push(format!(
            "the queue has the groups mark but a fifo of {} jobs",
            fifo.len()
        ));
    }
    let mut times: HashMap<&String, usize> = HashMap::new();
    for id in fifo {
        *times.entry(id).or_default() += 1;
    }
    for (id, times) in times {
        if times > 1 {
            problems.push(format!("job {id} is in fifo {times} times"));
        }
        if scored.contains(id) {
            problems.push(format!("job {id} is in both pending and fifo"));
        }
    }
}

/// The age rules of retention against `docs/protocol.md` ("Retention by
/// age"): each `keep_<set>_for` of the meta hash is absent or a whole
/// number of ms ≥ 1, as RETENTION writes it (an age of 0 deletes it).
async fn retention_problems(
    conn: &mut MultiplexedConnection,
    keys: &Keyspace,
) -> Result<Vec<String>, String> {
    const AGES: [&str; 3] = ["keep_completed_for", "keep_dead_for", "keep_cancelled_for"];
    let stored: Vec<Option<String>> = redis::cmd("HMGET")
        .arg(keys.meta())
        .arg(&AGES)
        .query_async(conn)
        .await
        .map_err(|err| format!("HMGET {AGES:?}: {err}"))?;
    Ok(AGES
        .iter()
        .zip(stored)
        .filter_map(|(field, value)| {
            let value = value?;
            let whole = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
            (!whole || value.parse::<u64>().map_or(true, |ms| ms == 0))
                .then(|| format!("meta {field} is {value:?}, not a whole number of ms ≥ 1"))
        })
        .collect())
}

/// The server's `TIME`, the dedup keys with their scores, their owners.
type DedupKeys = ((u64, u64), Vec<(String, f64)>, HashMap<String, String>);

/// The deduplication keys against the invariant of `docs/protocol.md`
/// ("Deduplication"): every member of `<base>:dedup` (a throttle key) has
/// its `dedup_owner` field, whose job, if it still carries the key, is in
/// `throttle` mode; an owner field outside the set is a simple or
/// debounce key, whose job exists, carries that key in `simple` or
/// `debounce` mode and is unfinished (`debounce`: scheduled or pending); a
/// member scored above now (the server's clock) is a throttle key within
/// its time, one scored ≤ now an expired entry not yet removed (allowed).
async fn dedup_problems(
    conn: &mut MultiplexedConnection,
    keys: &Keyspace,
) -> Result<Vec<String>, String> {
    let ((secs, micros), scored, owners): DedupKeys = redis::pipe()
        .cmd("TIME")
        .cmd("ZRANGE")
        .arg(keys.dedup())
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .cmd("HGETALL")
        .arg(keys.dedup_owner())
        .query_async(conn)
        .await
        .map_err(|err| format!("reading the dedup keys: {err}"))?;
    let now = (secs * 1000 + micros / 1000) as f64;
    let mut problems = Vec::new();
    for (key, owner) in &owners {
        let job = JobId::new(owner.clone()).map_err(|err| err.to_string())?;
        let (state, carried, mode): (Option<String>, Option<String>, Option<String>) =
            redis::cmd("HMGET")
                .arg(keys.job(&job))
                .arg(&["state", "dedup", "dedup_mode"])
                .query_async(conn)
                .await
                .map_err(|err| format!("HMGET {owner}: {err}"))?;
        if scored.iter().any(|(member, _)| member == key) {
            // A throttle key: its job may be gone, but one that carries the
            // key took it in throttle mode.
            if carried.as_deref() == Some(key.as_str()) && mode.as_deref() != Some("throttle") {
                problems.push(format!(
                    "dedup key {key} is in the dedup set but its holder {owner} is in mode {mode:?}"
                ));
            }
            continue;
        }
        if mode.as_deref() == Some(DedupMode::Simple.as_str()) {
            problems.push(format!(
                "job {owner} stores the dedup mode simple, which a key without a mode means"
            ));
        }
        let mode = DedupMode::of_job(carried.as_deref(), mode.as_deref());
        let state = state.and_then(|state| state.parse::<JobState>().ok());
        let waits = matches!(state, Some(JobState::Scheduled | JobState::Pending));
        let fits = match mode {
            // Unfinished: waiting, in hand, or blocked by FLOW.WAIT.
            Some(DedupMode::Simple) => {
                waits || matches!(state, Some(JobState::Active | JobState::Blocked))
            }
            Some(DedupMode::Debounce) => waits,
            _ => false,
        };
        if carried.as_deref() != Some(key.as_str()) || !fits {
            problems.push(format!(
                "dedup key {key} is held until released by job {owner}, which is {state:?} in mode {mode:?} carrying {carried:?}"
            ));
        }
    }
    for (key, score) in &scored {
        if !owners.contains_key(key) {
            let held = if *score > now { "held" } else { "expired" };
            problems.push(format!("throttle key {key} ({held}) has no owner"));
        }
    }
    Ok(problems)
}

/// Panics with every violation of the invariant.
pub async fn assert_invariant(urls: &[String], keys: &Keyspace) {
    if let Err(problems) = check_invariant(urls, keys).await {
        panic!("state invariant broken for {}:\n{problems}", keys.base());
    }
}

/// Every key of `keys`'s queue on the server that holds it (SCAN, so it
/// also finds keys the protocol does not name).
pub async fn queue_keys(urls: &[String], keys: &Keyspace) -> Result<Vec<String>, String> {
    let mut conn = owner(urls, keys).await?;
    let mut found = scan(&mut conn, &format!("{}*", keys.base())).await?;
    found.sort();
    Ok(found)
}

/// A plain connection to the server that serves the queue's slot: the only
/// server on a standalone setup, the slot's master on a cluster.
async fn owner(urls: &[String], keys: &Keyspace) -> Result<MultiplexedConnection, String> {
    let mut last = String::from("no server URL given");
    for url in urls {
        let client = redis::Client::open(url.as_str()).map_err(|err| err.to_string())?;
        // A queue of many jobs answers long replies: no response timeout.
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
        let mut conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|err| format!("{url}: {err}"))?;
        let probe: redis::RedisResult<u64> = redis::cmd("ZCARD")
            .arg(keys.pending())
            .query_async(&mut conn)
            .await;
        match probe {
            Ok(_) => return Ok(conn),
            Err(err) if err.code() == Some("MOVED") => last = format!("{url}: MOVED"),
            Err(err) => return Err(format!("{url}: {err}")),
        }
    }
    Err(format!("no server holds {}: {last}", keys.base()))
}

/// Whether the queue's meta hash has `mark` set to `1` (a feature's mark:
/// `timed`, `lifo`, `flows`).
pub(crate) async fn meta_marked(
    conn: &mut MultiplexedConnection,
    keys: &Keyspace,
    mark: &str,
) -> Result<bool, String> {
    let value: Option<String> = redis::cmd("HGET")
        .arg(keys.meta())
        .arg(mark)
        .query_async(conn)
        .await
        .map_err(|err| format!("HGET {mark}: {err}"))?;
    Ok(value.as_deref() == Some("1"))
}

pub(crate) async fn scan(
    conn: &mut MultiplexedConnection,
    pattern: &str,
) -> Result<Vec<String>, String> {
    let mut cursor: u64 = 0;
    let mut keys = Vec::new();
    loop {
        let (next, batch): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000)
            .query_async(conn)
            .await
            .map_err(|err| format!("SCAN {pattern}: {err}"))?;
        keys.extend(batch);
        if next == 0 {
            return Ok(keys);
        }
        cursor = next;
    }
}
