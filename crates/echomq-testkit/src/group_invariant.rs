//! The invariant of `docs/protocol.md`, "Groups", checked against a live
//! keyspace: every group's lane holds exactly its pending jobs (each
//! scored 2^52 lower in `pending`, none in `fifo`), its `active` counts its
//! active jobs, it is in the ready set, the wait set or neither as its
//! lane, pause, cap and window say, and the index lists exactly the groups
//! with keys.

use echomq_protocol::arg::GROUPED_OFFSET;
use echomq_protocol::keyspace::{GROUP_INFIX, LANE_INFIX, UNGROUPED};
use echomq_protocol::{JobId, JobState, Keyspace, QueueKey};
use redis::aio::MultiplexedConnection;
use std::collections::{BTreeMap, BTreeSet, HashMap};

type Scored = BTreeMap<String, f64>;

/// What the groups' keys hold, read in one pass.
struct Found {
    ready: Scored,
    waiting: Scored,
    index: BTreeSet<String>,
    lanes: BTreeMap<String, Scored>,
    hashes: BTreeMap<String, HashMap<String, String>>,
}

/// Every violation of the groups' invariant, given the ids in the queue's
/// `fifo` (its other pending and its active jobs are read here).
pub(crate) async fn group_problems(
    conn: &mut MultiplexedConnection,
    keys: &Keyspace,
    fifo: &[String],
) -> Result<Vec<String>, String> {
    let mut problems = Vec::new();
    let pending = scored(conn, &keys.pending()).await?;
    let active = scored(conn, &keys.state_set(JobState::Active)).await?;
    let mut want_lanes: BTreeMap<String, Scored> = BTreeMap::new();
    let mut want_active: BTreeMap<String, u64> = BTreeMap::new();
    // Jobs in fifo are ungrouped pending jobs: none may have a group.
    let mut ungrouped = !fifo.is_empty();
    for (id, group) in fifo.iter().zip(job_groups(conn, keys, fifo.iter()).await?) {
        if let Some(group) = group {
            problems.push(format!("job {id} of group {group} is in fifo"));
        }
    }
    let pending_groups = job_groups(conn, keys, pending.keys()).await?;
    for ((id, score), group) in pending.iter().zip(pending_groups) {
        match group {
            Some(group) => {
                let lane_score = score + GROUPED_OFFSET as f64;
                if *score >= 0.0 {
                    problems.push(format!(
                        "pending job {id} of group {group} is scored {score} ≥ 0"
                    ));
                }
                want_lanes
                    .entry(group)
                    .or_default()
                    .insert(id.clone(), lane_score);
            }
            None if *score < 0.0 => {
                problems.push(format!("ungrouped pending job {id} is scored {score} < 0"));
            }
            None => ungrouped = true,
        }
    }
    for group in job_groups(conn, keys, active.keys())
        .await?
        .into_iter()
        .flatten()
    {
        *want_active.entry(group).or_default() += 1;
    }
    let found = read(conn, keys).await?;
    let marked: Option<String> =
        query(conn, redis::cmd("HGET").arg(keys.meta()).arg("groups")).await?;
    let marked = marked.as_deref() == Some("1");
    let flow: Option<String> =
        query(conn, redis::cmd("HGET").arg(keys.meta()).arg("group_flow")).await?;
    let limited = found.hashes.values().any(|hash| {
        ["concurrency", "limit_max"]
            .iter()
            .any(|field| hash.get(*field).is_some_and(|n| n != "0"))
    });
    if limited && flow.as_deref() != Some("1") {
        problems
            .push("a group has a cap or a limit but the meta hash has no group_flow mark".into());
    }
    if (!want_lanes.is_empty() || !want_active.is_empty()) && !marked {
        problems.push("grouped jobs exist but the meta hash has no groups mark".into());
    }
    if found.lanes != want_lanes {
        problems.push(format!("lanes {:?}, expected {want_lanes:?}", found.lanes));
    }
    for (group, hash) in &found.hashes {
        let active = hash.get("active").map(String::as_str);
        let capped = hash.get("concurrency").is_some_and(|n| n != "0");
        // Only a group under a cap counts its active jobs.
        let want = if capped {
            want_active.get(group).copied().unwrap_or(0)
        } else {
            0
        };
        if hash.is_empty() {
            problems.push(format!("group {group} has an empty hash"));
        }
        match (active, want) {
            (None, 0) => {}
            (Some(n), want) if n == want.to_string() && want > 0 => {}
            (found, want) => problems.push(format!(
                "group {group} (capped: {capped}) says active {found:?}, expected {want}"
            )),
        }
    }
    let with_keys: BTreeSet<String> = found
        .lanes
        .keys()
        .chain(found.hashes.keys())
        .cloned()
        .collect();
    if found.index != with_keys {
        problems.push(format!(
            "group index {:?}, groups with keys {with_keys:?}",
            found.index
        ));
    }
    let now = server_ms(conn).await?;
    for group in found.ready.keys().chain(found.waiting.keys()) {
        if group != UNGROUPED && !found.lanes.contains_key(group) {
            problems.push(format!(
                "group {group} is ready or waiting with an empty lane"
            ));
        }
    }
    for group in found.lanes.keys() {
        let hash = found.hashes.get(group).cloned().unwrap_or_default();
        let place = place(&hash, now);
        let (ready, waiting) = (found.ready.contains_key(group), found.waiting.get(group));
        let ok = match place {
            Place::Ready => {
                ready && waiting.is_none() || !ready && waiting.is_some_and(|at| *at <= now as f64)
            }
            Place::Wait(at) => !ready && waiting == Some(&(at as f64)),
            Place::Nowhere => !ready && waiting.is_none(),
        };
        if !ok {
            problems.push(format!(
                "group {group} should be {place:?} but is ready: {ready}, waiting: {waiting:?}"
            ));
        }
    }
    let ungrouped_ready = found.ready.contains_key(UNGROUPED);
    if ungrouped_ready != (marked && ungrouped) {
        problems.push(format!(
            "the ungrouped lane is ready: {ungrouped_ready}, ungrouped jobs pending: {ungrouped}, groups mark: {marked}"
        ));
    }
    Ok(problems)
}

#[derive(Debug)]
enum Place {
    Ready,
    Wait(u64),
    Nowhere,
}

/// Where a group with jobs in its lane belongs at `now`.
fn place(hash: &HashMap<String, String>, now: u64) -> Place {
    let n = |name: &str| {
        hash.get(name)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    if hash.get("paused").map(String::as_str) == Some("1") {
        return Place::Nowhere;
    }
    if n("concurrency") > 0 && n("active") >= n("concurrency") {
        return Place::Nowhere;
    }
    let (max, per) = (n("limit_max"), n("limit_per"));
    if max > 0 && per > 0 {
        let window = now - now % per;
        let used = if n("limit_window") == window {
            n("limit_used")
        } else {
            0
        };
        if used >= max {
            return Place::Wait(window + per);
        }
    }
    Place::Ready
}

async fn read(conn: &mut MultiplexedConnection, keys: &Keyspace) -> Result<Found, String> {
    let ready = scored(conn, &keys.key(QueueKey::Groups)).await?;
    let waiting = scored(conn, &keys.key(QueueKey::GroupsWait)).await?;
    let index = scored(conn, &keys.key(QueueKey::GroupIndex))
        .await?
        .into_keys()
        .collect();
    let mut lanes = BTreeMap::new();
    let lane_prefix = format!("{}{LANE_INFIX}", keys.base());
    for key in crate::invariant::scan(conn, &format!("{lane_prefix}*")).await? {
        lanes.insert(
            key[lane_prefix.len()..].to_string(),
            scored(conn, &key).await?,
        );
    }
    let mut hashes = BTreeMap::new();
    let group_prefix = format!("{}{GROUP_INFIX}", keys.base());
    for key in crate::invariant::scan(conn, &format!("{group_prefix}*")).await? {
        let hash: HashMap<String, String> = query(conn, redis::cmd("HGETALL").arg(&key)).await?;
        hashes.insert(key[group_prefix.len()..].to_string(), hash);
    }
    Ok(Found {
        ready,
        waiting,
        index,
        lanes,
        hashes,
    })
}

/// The `group` of each job of `ids`, in order, pipelined a thousand at a
/// time.
async fn job_groups<'a>(
    conn: &mut MultiplexedConnection,
    keys: &Keyspace,
    ids: impl Iterator<Item = &'a String>,
) -> Result<Vec<Option<String>>, String> {
    let ids: Vec<&String> = ids.collect();
    let mut groups = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(1000) {
        let mut pipe = redis::pipe();
        for id in chunk {
            let job = JobId::new(id.as_str()).map_err(|err| err.to_string())?;
            pipe.cmd("HGET").arg(keys.job(&job)).arg("group");
        }
        let found: Vec<Option<String>> = pipe
            .query_async(conn)
            .await
            .map_err(|err| format!("reading the jobs' groups: {err}"))?;
        groups.extend(found);
    }
    Ok(groups)
}

async fn scored(conn: &mut MultiplexedConnection, key: &str) -> Result<Scored, String> {
    let pairs: Vec<(String, f64)> = query(
        conn,
        redis::cmd("ZRANGE")
            .arg(key)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES"),
    )
    .await?;
    Ok(pairs.into_iter().collect())
}

async fn server_ms(conn: &mut MultiplexedConnection) -> Result<u64, String> {
    let (secs, micros): (u64, u64) = query(conn, &mut redis::cmd("TIME")).await?;
    Ok(secs * 1000 + micros / 1000)
}

async fn query<T: redis::FromRedisValue>(
    conn: &mut MultiplexedConnection,
    cmd: &mut redis::Cmd,
) -> Result<T, String> {
    cmd.query_async(conn)
        .await
        .map_err(|err| format!("{cmd:?}: {err}"))
}
