//! REPEAT.ADD, the native twin of `scripts/repeat_add.lua`: a repeat
//! definition stored, its key's scheduled occurrences deleted and its
//! first one scheduled, in one command (same checks in the same order,
//! same writes, reply and events).

use crate::server::args::{ATTEMPTS, Args, Opt, PRIORITY};
use crate::server::key::Kind;
use crate::server::reply::{bulk, int};
use crate::server::store::{NewJob, Store};
use echomq_protocol::QueueKey;
use echomq_protocol::arg::{DEFAULT_MAX_ATTEMPTS, REPEAT_SCAN_COUNT};
use valkey_module::{Context, ValkeyError, ValkeyResult, ValkeyString, ValkeyValue};

/// `EMQ.REPEAT.ADD base key definition payload [FIRST run_at] [PRIORITY p]
/// [ATTEMPTS n]` → `[replaced definition or nil, occurrences deleted]`.
pub(crate) fn add(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let key = args.repeat_key(1)?;
    let definition = args.text(2, "definition")?;
    let payload = args.text(3, "payload")?;
    let opts = args.options(4, &[("FIRST", Opt::int("first", 0)), PRIORITY, ATTEMPTS])?;

    let store = Store::new(ctx, args.base());
    let conf = store.enqueue_settings()?;
    store.expect_types(&[
        (QueueKey::Repeat, Kind::Hash),
        (QueueKey::Schedule, Kind::Zset),
        (QueueKey::Events, Kind::Stream),
    ])?;
    let doomed = scheduled_occurrences(&store, &key)?;
    let mut held = Vec::with_capacity(doomed.len());
    for id in &doomed {
        let [dedup, mode] = store.hmget_n(&store.job_key(id), [b"dedup", b"dedup_mode"])?;
        if dedup.is_some() {
            store.expect_owner_type()?;
        }
        held.push((dedup, mode));
    }
    let first = match opts.int("FIRST") {
        Some(run_at) => {
            let job = first_occurrence(&key, payload, run_at, &opts);
            // What enqueue_checked checks, checked here before the first write.
            store.expect_type_of(&store.job_key(&job.id), Kind::Hash)?;
            store.expect_types(&[
                (QueueKey::Id, Kind::String),
                (QueueKey::Seq, Kind::String),
                (QueueKey::Pending, Kind::Zset),
                (QueueKey::Signal, Kind::Zset),
            ])?;
            if conf.groups {
                store.expect_group_keys(true, true)?;
            }
            Some(job)
        }
        None => None,
    };

    let repeat = store.key(QueueKey::Repeat);
    let replaced = store.hget(repeat, &key)?;
    store.hset(repeat, &[&key, &definition])?;
    for (id, (dedup, mode)) in doomed.iter().zip(&held) {
        store.zrem(store.key(QueueKey::Schedule), &[id])?;
        store.del(&[&store.job_key(id), &store.logs_key(id)]);
        store.release_dedup(id, dedup.as_deref(), mode.as_deref())?;
        store.emit(conf.events_max, &[b"event", b"removed", b"id", id])?;
    }
    if let Some(job) = first {
        store.enqueue_checked(vec![job], true)?;
    }
    Ok(ValkeyValue::Array(vec![
        replaced.map_or(ValkeyValue::Null, bulk),
        int(doomed.len() as i64),
    ]))
}

/// The first occurrence as SCHEDULE would create it: id
/// `repeat:<key>:<run_at>`, the definition's key in its `repeat` field.
fn first_occurrence(
    key: &[u8],
    payload: Vec<u8>,
    run_at: u64,
    opts: &crate::server::args::Options,
) -> NewJob {
    NewJob {
        id: [b"repeat:", key, b":", run_at.to_string().as_bytes()].concat(),
        payload,
        priority: opts.int("PRIORITY").unwrap_or(0),
        attempts: opts.int("ATTEMPTS").unwrap_or(DEFAULT_MAX_ATTEMPTS),
        run_at: Some(crate::server::args::RunAt::At(run_at)),
        repeat: Some(key.to_vec()),
        dedup: None,
        group: None,
        traceparent: None,
    }
}

/// The ids of `key`'s occurrences on the schedule set,
/// `repeat:<key>:<digits>`, sorted (`scheduled_occurrences`): `ZSCAN`
/// with the key's glob characters escaped, so `a*` never matches `ab`'s.
fn scheduled_occurrences(store: &Store, key: &[u8]) -> Result<Vec<Vec<u8>>, ValkeyError> {
    let prefix = [b"repeat:", key, b":"].concat();
    let mut pattern = Vec::with_capacity(prefix.len() + 8);
    for &b in &prefix {
        if matches!(b, b'*' | b'?' | b'[' | b']' | b'\\') {
            pattern.push(b'\\');
        }
        pattern.push(b);
    }
    pattern.push(b'*');
    let schedule = store.key(QueueKey::Schedule).to_vec();
    let mut found: Vec<Vec<u8>> = Vec::new();
    let count = REPEAT_SCAN_COUNT.to_string();
    let mut cursor = b"0".to_vec();
    loop {
        let page = store
            .read(
                "ZSCAN",
                &[
                    &schedule,
                    &cursor,
                    b"MATCH",
                    &pattern,
                    b"COUNT",
                    count.as_bytes(),
                ],
            )?
            .items();
        let mut page = page.into_iter();
        cursor = page.next().and_then(|c| c.bytes()).unwrap_or_default();
        let members = page.next().map(|m| m.items()).unwrap_or_default();
        for id in members.into_iter().step_by(2).filter_map(|m| m.bytes()) {
            let at = &id[prefix.len().min(id.len())..];
            if id.starts_with(&prefix) && !at.is_empty() && at.iter().all(u8::is_ascii_digit) {
                found.push(id);
            }
        }
        if cursor == b"0" || cursor.is_empty() {
            break;
        }
    }
    found.sort();
    found.dedup();
    Ok(found)
}
