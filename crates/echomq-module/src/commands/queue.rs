//! Over the whole queue: PAUSE, RESUME, DRAIN, OBLITERATE, COUNTS,
//! RETENTION — each
//! the native twin of its script in `crates/echomq/scripts/`, same checks
//! in the same order, same writes, replies and events. The client sends
//! them from its `admin.rs` (`Admin`, `queue.admin()`).

use crate::server::args::{Args, Opt, refuse};
use crate::server::clock::now_ms;
use crate::server::key::Kind;
use crate::server::reply::bulk;
use crate::server::reply::int;
use crate::server::store::groups::by_group;
use crate::server::store::{Reply, Store};
use echomq_protocol::arg::DEFAULT_DELETE_COUNT;
use echomq_protocol::{JobState, QueueKey};
use valkey_module::{Context, ValkeyError, ValkeyResult, ValkeyString, ValkeyValue};

/// `EMQ.PAUSE base`: claims hand out nothing until RESUME.
pub(crate) fn pause(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    args.no_options(0)?;

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    store.expect_types(&[(QueueKey::Events, Kind::Stream)])?;
    store.hset(store.key(QueueKey::Meta), &[b"paused", b"1"])?;
    store.emit(conf.events_max, &[b"event", b"paused"])?;
    Ok(ValkeyValue::SimpleStringStatic("OK"))
}

/// `EMQ.RESUME base`: claims hand out jobs again; idle workers are woken.
pub(crate) fn resume(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    args.no_options(0)?;

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    store.expect_types(&[
        (QueueKey::Events, Kind::Stream),
        (QueueKey::Signal, Kind::Zset),
    ])?;
    store.hset(store.key(QueueKey::Meta), &[b"paused", b"0"])?;
    store.emit(conf.events_max, &[b"event", b"resumed"])?;
    store.signal(0)?;
    Ok(ValkeyValue::SimpleStringStatic("OK"))
}

/// `EMQ.DRAIN base [SCHEDULED] [BLOCKED] [COUNT n]` → how many jobs were
/// deleted.
pub(crate) fn drain(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let opts = args.options(
        1,
        &[
            ("SCHEDULED", Opt::Flag),
            ("BLOCKED", Opt::Flag),
            ("COUNT", Opt::int("count", 1)),
        ],
    )?;
    let budget = opts.int("COUNT").unwrap_or(DEFAULT_DELETE_COUNT);

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    store.expect_types(&[
        (QueueKey::Pending, Kind::Zset),
        (QueueKey::Schedule, Kind::Zset),
        (QueueKey::Blocked, Kind::Zset),
        (QueueKey::Events, Kind::Stream),
    ])?;
    store.open_outbox(&conf)?;
    // The jobs to delete, found before the first write: the pending set's
    // (fifo's head first), then with SCHEDULED the schedule set's, then
    // with BLOCKED the blocked set's.
    let (pending, from_fifo) = store.pending_head(budget)?;
    let mut deleted = pending.len() as u64;
    let scheduled = if opts.has("SCHEDULED") && budget > deleted {
        first_ids(&store, QueueKey::Schedule, budget - deleted)?
    } else {
        Vec::new()
    };
    deleted += scheduled.len() as u64;
    let blocked = if opts.has("BLOCKED") && budget > deleted {
        first_ids(&store, QueueKey::Blocked, budget - deleted)?
    } else {
        Vec::new()
    };
    deleted += blocked.len() as u64;
    let held = store.deleted_dedup_keys(&[pending.as_slice(), &scheduled, &blocked].concat())?;
    // On a queue with groups, the pending jobs' groups (their lanes' and
    // hashes' types checked), in the order first met.
    let mut grouped: Vec<(Vec<u8>, &[u8])> = Vec::new();
    if conf.groups {
        store.expect_group_keys(true, false)?;
        for id in &pending {
            if let Some(group) = store.hget(&store.job_key(id), b"group")? {
                grouped.push((group, id));
            }
        }
    }
    let lanes = by_group(grouped);
    for (group, _) in &lanes {
        store.read_lane(group)?;
    }
    let now = now_ms();
    store.publish_removed(conf.waited, &pending)?;
    store.resolve_removed(conf.flows, &pending, now)?;
    delete_jobs(&store, &pending, false)?;
    store.pop_pending_head(&pending, from_fifo)?;
    store.publish_removed(conf.waited, &scheduled)?;
    store.resolve_removed(conf.flows, &scheduled, now)?;
    delete_ids(&store, QueueKey::Schedule, &scheduled, false)?;
    store.publish_removed(conf.waited, &blocked)?;
    store.resolve_removed(conf.flows, &blocked, now)?;
    delete_ids(&store, QueueKey::Blocked, &blocked, false)?;
    for (id, key, mode) in &held {
        store.release_dedup(id, Some(key), mode.as_deref())?;
    }
    for (group, ids) in &lanes {
        store.lane_deleted(group, ids)?;
    }
    if !pending.is_empty() {
        store.ungrouped_left(conf.groups)?;
    }
    if deleted > 0 {
        let count = deleted.to_string();
        store.emit(
            conf.events_max,
            &[b"event", b"drained", b"count", count.as_bytes()],
        )?;
    }
    Ok(int(deleted as i64))
}

/// `EMQ.OBLITERATE base [FORCE] [COUNT n]` → job hashes and groups left;
/// 0 when the queue is gone.
pub(crate) fn obliterate(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let opts = args.options(1, &[("FORCE", Opt::Flag), ("COUNT", Opt::int("count", 1))])?;
    let mut budget = opts.int("COUNT").unwrap_or(DEFAULT_DELETE_COUNT);

    let store = Store::new(ctx, args.base());
    // Every fixed key but the base and the outbox (the hand-off outlives
    // the queue), in the order of OBLITERATE's KEYS[2..].
    let key_args: Vec<&[u8]> = QueueKey::ALL[1..]
        .iter()
        .filter(|key| **key != QueueKey::Resolutions)
        .map(|key| store.key(*key))
        .collect();
    if store.read("EXISTS", &key_args)?.int() == 0 {
        return Ok(int(0));
    }
    // The paused state and the waited mark (only then are the unfinished
    // jobs' `waited` read).
    let mut marks = store
        .read(
            "HMGET",
            &[store.key(QueueKey::Meta), b"paused", b"waited", b"flows"],
        )?
        .items()
        .into_iter();
    let (paused, waited, flows) = (marks.next(), marks.next(), marks.next());
    if paused != Some(Reply::Bytes(b"1".to_vec())) {
        return Err(refuse("NOTPAUSED"));
    }
    let waited = waited == Some(Reply::Bytes(b"1".to_vec()));
    let flows = flows == Some(Reply::Bytes(b"1".to_vec()));
    if flows {
        store.expect_types(&[(QueueKey::Resolutions, Kind::Zset)])?;
    }
    let now = now_ms();
    if !opts.has("FORCE") && store.read("ZCARD", &[store.key(QueueKey::Active)])?.int() > 0 {
        return Err(refuse("BADSTATE active"));
    }
    // The seven state sets, in the order the script empties them (its
    // KEYS[4..9], then `blocked`, its KEYS[21]).
    let state_sets = JobState::ALL.map(JobState::set_key);
    store.expect_types(&state_sets.map(|set| (set, Kind::Zset)))?;
    store.expect_types(&[(QueueKey::GroupIndex, Kind::Zset)])?;
    // Obliterating frees every dedup key at once.
    store.del(&[store.key(QueueKey::Dedup), store.key(QueueKey::DedupOwner)]);
    // Groups first, each with its lane and hash.
    let index = store.key(QueueKey::GroupIndex);
    let groups = first_ids(&store, QueueKey::GroupIndex, budget)?;
    if !groups.is_empty() {
        let mut doomed = Vec::with_capacity(groups.len() * 2);
        for group in &groups {
            doomed.push(store.lane_key(group));
            doomed.push(store.group_key(group));
        }
        let del: Vec<&[u8]> = doomed.iter().map(Vec::as_slice).collect();
        store.write("DEL", &del)?;
        let mut zrem: Vec<&[u8]> = vec![index];
        zrem.extend(groups.iter().map(Vec::as_slice));
        store.write("ZREM", &zrem)?;
        budget -= groups.len() as u64;
    }
    let mut left = store.read("ZCARD", &[index])?.int();
    for set in state_sets {
        if budget > 0 {
            let ids = first_ids(&store, set, budget)?;
            // Deleting an unfinished job publishes its outcome.
            let unfinished = matches!(
                set,
                QueueKey::Schedule | QueueKey::Pending | QueueKey::Active | QueueKey::Blocked
            );
            store.publish_removed(waited && unfinished, &ids)?;
            if unfinished {
                store.resolve_removed(flows, &ids, now)?;
            } else {
                store.forget_flow_keys(flows, &ids)?;
            }
            delete_ids(&store, set, &ids, set == QueueKey::Active)?;
            budget -= ids.len() as u64;
        }
        left += store.read("ZCARD", &[store.key(set)])?.int();
    }
    // Then the fifo's jobs, from its head.
    let fifo = store.key(QueueKey::Fifo);
    if budget > 0 {
        let ids = store.lrange(fifo, budget)?;
        store.publish_removed(waited, &ids)?;
        store.resolve_removed(flows, &ids, now)?;
        delete_jobs(&store, &ids, false)?;
        store.lpop(fifo, ids.len())?;
    }
    left += store.llen(fifo)?;
    if left == 0 {
        let metrics = store.metrics_windows_kept(&store.settings()?, now);
        store.del(&metrics.iter().map(Vec::as_slice).collect::<Vec<_>>());
        let sweep = [args.base(), b":sweep"].concat();
        store.write("DEL", &key_args)?;
        store.write("DEL", &[&sweep])?;
    }
    Ok(int(left))
}

/// The first `budget` jobs of `set`, lowest score first.
fn first_ids(store: &Store<'_>, set: QueueKey, budget: u64) -> Result<Vec<Vec<u8>>, ValkeyError> {
    let last = (budget - 1).to_string();
    Ok(store
        .read("ZRANGE", &[store.key(set), b"0", last.as_bytes()])?
        .items()
        .into_iter()
        .filter_map(Reply::bytes)
        .collect())
}

/// Deletes the hashes and logs of the jobs `ids`, publishing each id on
/// the cancel channel first when `publish`.
fn delete_jobs(store: &Store<'_>, ids: &[Vec<u8>], publish: bool) -> Result<(), ValkeyError> {
    if ids.is_empty() {
        return Ok(());
    }
    let mut doomed = Vec::with_capacity(ids.len() * 2);
    for id in ids {
        doomed.push(store.job_key(id));
        doomed.push(store.logs_key(id));
        if publish {
            store.publish_cancel(id)?;
        }
    }
    let del: Vec<&[u8]> = doomed.iter().map(Vec::as_slice).collect();
    store.write("DEL", &del)?;
    Ok(())
}

/// Deletes the jobs `ids` of the sorted set `set` ([`delete_jobs`]) and
/// takes them out of it.
fn delete_ids(
    store: &Store<'_>,
    set: QueueKey,
    ids: &[Vec<u8>],
    publish: bool,
) -> Result<(), ValkeyError> {
    if ids.is_empty() {
        return Ok(());
    }
    delete_jobs(store, ids, publish)?;
    let mut zrem: Vec<&[u8]> = vec![store.key(set)];
    zrem.extend(ids.iter().map(Vec::as_slice));
    store.write("ZREM", &zrem)?;
    Ok(())
}

/// `EMQ.COUNTS base`.
pub(crate) fn counts(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    args.no_options(0)?;
    let store = Store::reader(ctx, args.base());
    let mut reply = Vec::new();
    for state in JobState::ALL {
        reply.push(bulk(state.as_str()));
        let n = match state {
            // The pending set is two keys.
            JobState::Pending => store.pending_count()?,
            _ => store.read("ZCARD", &[store.key(state.set_key())])?.int(),
        };
        reply.push(int(n));
    }
    let paused = store.read("HGET", &[store.key(QueueKey::Meta), b"paused"])?;
    reply.push(bulk("paused"));
    reply.push(int(i64::from(paused == Reply::Bytes(b"1".to_vec()))));
    Ok(ValkeyValue::Array(reply))
}

/// RETENTION's options, in its reply's order: the word, its reply and
/// BADARG name, and the meta field it writes.
const RETENTION: [(&str, &str, &[u8]); 6] = [
    ("COMPLETED", "completed", b"keep_completed"),
    ("COMPLETED_FOR", "completed_for", b"keep_completed_for"),
    ("DEAD", "dead", b"keep_dead"),
    ("DEAD_FOR", "dead_for", b"keep_dead_for"),
    ("CANCELLED", "cancelled", b"keep_cancelled"),
    ("CANCELLED_FOR", "cancelled_for", b"keep_cancelled_for"),
];

/// `EMQ.RETENTION base [COMPLETED n] [COMPLETED_FOR ms] [DEAD n] [DEAD_FOR
/// ms] [CANCELLED n] [CANCELLED_FOR ms]` → the six settings after the
/// change. An age of 0 deletes its field (no age rule); nothing is
/// trimmed here.
pub(crate) fn retention(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let spec = RETENTION.map(|(word, name, _)| (word, Opt::int(name, 0)));
    let opts = args.options(1, &spec)?;

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    let mut values = [
        conf.keep_completed,
        conf.keep_completed_for,
        conf.keep_dead,
        conf.keep_dead_for,
        conf.keep_cancelled,
        conf.keep_cancelled_for,
    ];
    let asked: Vec<(usize, u64)> = RETENTION
        .iter()
        .enumerate()
        .filter_map(|(i, (word, _, _))| opts.int(word).map(|n| (i, n)))
        .collect();
    if !asked.is_empty() {
        store.expect_types(&[(QueueKey::Events, Kind::Stream)])?;
        let texts: Vec<String> = asked.iter().map(|(_, n)| n.to_string()).collect();
        let mut set: Vec<&[u8]> = Vec::new();
        let mut unset: Vec<&[u8]> = Vec::new();
        for (&(i, n), text) in asked.iter().zip(&texts) {
            let (word, _, field) = RETENTION[i];
            if n == 0 && word.ends_with("_FOR") {
                unset.push(field);
            } else {
                set.extend([field, text.as_bytes()]);
            }
            values[i] = n as i64;
        }
        let meta = store.key(QueueKey::Meta);
        if !set.is_empty() {
            store.hset(meta, &set)?;
        }
        if !unset.is_empty() {
            store.hdel(meta, &unset)?;
        }
        let shown: Vec<String> = values.iter().map(i64::to_string).collect();
        let mut fields: Vec<&[u8]> = vec![b"event", b"retention_set"];
        for ((_, name, _), value) in RETENTION.iter().zip(&shown) {
            fields.extend([name.as_bytes(), value.as_bytes()]);
        }
        store.emit(conf.events_max, &fields)?;
    }
    let reply = RETENTION
        .iter()
        .zip(values)
        .flat_map(|(&(_, name, _), value)| [bulk(name), int(value)])
        .collect();
    Ok(ValkeyValue::Array(reply))
}
