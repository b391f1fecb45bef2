//! Over time: SCHEDULE (and SCHEDULE.BULK), PROMOTE, DELAY, RESCHEDULE
//! and REPEAT.ADD — each the native twin of its script in
//! `crates/echomq/scripts/`, same checks in the same order, same writes,
//! replies and events. REPEAT.ADD stores a repeat definition, deletes its
//! key's scheduled occurrences and schedules its first one, in one
//! command.

use crate::server::args::{
    ATTEMPTS, Args, GROUP, Opt, PRIORITY, TRACE, bad_state, bulk_groups, refuse,
};
use crate::server::args::{WAITED, waited_tail};
use crate::server::clock::{after, now_ms};
use crate::server::key::Kind;
use crate::server::reply::{bulk, enqueued_reply, int};
use crate::server::store::deadlines::{
    Deadlines, START_BY, START_WITHIN, TIME_LIMIT, deadline_options,
};
use crate::server::store::dedup::{DEDUP, DEDUP_FOR, dedup_options};
use crate::server::store::lifo::LIFO;
use crate::server::store::{NewJob, Store, number};
use echomq_protocol::QueueKey;
use echomq_protocol::arg::{
    DEFAULT_MAX_ATTEMPTS, DEFAULT_PROMOTE_LIMIT, MAX_PRIORITY, REPEAT_SCAN_COUNT,
};
use valkey_module::{Context, ValkeyError, ValkeyResult, ValkeyString, ValkeyValue};

/// `EMQ.SCHEDULE base id payload run_at_ms [PRIORITY p] [ATTEMPTS n] [REPEAT key]
/// [DEDUP key [DEDUP_FOR ms]] [GROUP g] [TRACE tp] [TIME_LIMIT ms] [START_BY ms |
/// START_WITHIN ms] [LIFO]`.
pub(crate) fn schedule(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, true)?;
    let payload = args.text(2, "payload")?;
    let run_at = args.run_at(3)?;
    let opts = args.options(
        4,
        &[
            PRIORITY,
            ATTEMPTS,
            ("REPEAT", Opt::Text { arg: "repeat" }),
            DEDUP,
            DEDUP_FOR,
            GROUP,
            TRACE,
            TIME_LIMIT,
            START_BY,
            START_WITHIN,
            LIFO,
            WAITED,
        ],
    )?;
    let dedup = dedup_options(&opts)?;
    let deadlines = deadline_options(&opts, Some(run_at))?;
    let store = Store::new(ctx, args.base());
    let created = store.enqueue_checked(
        vec![NewJob {
            id,
            payload,
            priority: opts.int("PRIORITY").unwrap_or(0),
            attempts: opts.int("ATTEMPTS").unwrap_or(DEFAULT_MAX_ATTEMPTS),
            run_at: Some(run_at),
            repeat: opts.text("REPEAT").map(<[u8]>::to_vec),
            dedup,
            group: opts.text("GROUP").map(<[u8]>::to_vec),
            traceparent: opts.text("TRACE").map(<[u8]>::to_vec),
            deadlines,
            lifo: opts.has("LIFO"),
            waited: opts.has("WAITED"),
            extra: Vec::new(),
        }],
        true,
    )?;
    Ok(enqueued_reply(created))
}

/// `EMQ.PROMOTE base [LIMIT n]` → how many moved.
pub(crate) fn promote(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let opts = args.options(1, &[("LIMIT", Opt::int("limit", 1))])?;

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    store.expect_types(&[
        (QueueKey::Seq, Kind::String),
        (QueueKey::Schedule, Kind::Zset),
        (QueueKey::Pending, Kind::Zset),
        (QueueKey::Events, Kind::Stream),
        (QueueKey::Signal, Kind::Zset),
    ])?;
    if conf.groups {
        store.expect_group_keys(true, true)?;
    }
    let now = now_ms();
    let limit = opts.int("LIMIT").unwrap_or(DEFAULT_PROMOTE_LIMIT);
    let due = store.due_ids(now, limit)?;
    let mut jobs = Vec::with_capacity(due.len());
    for id in &due {
        let [priority, group] = store.hmget_n(&store.job_key(id), [b"priority", b"group"])?;
        let group = group.filter(|_| conf.groups);
        if let Some(group) = &group {
            store.read_lane(group)?;
        }
        jobs.push((number(priority.as_deref()).unwrap_or(0), group));
    }
    let moved = store.promote((conf.events_max, conf.groups, conf.lifo), &due, &jobs, now)?;
    if moved > 0 {
        store.signal(0)?;
    }
    Ok(int(moved as i64))
}

/// `EMQ.DELAY base id token ms`.
pub(crate) fn delay(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    let token = args.int(2, "token", 0)?;
    let delay = args.int(3, "ms", 0)?;
    args.no_options(3)?;

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    let key = store.fenced(&id, token)?;
    store.expect_types(&[
        (QueueKey::Schedule, Kind::Zset),
        (QueueKey::Active, Kind::Zset),
        (QueueKey::Events, Kind::Stream),
        (QueueKey::Signal, Kind::Zset),
    ])?;
    store.expect_freed_types(&conf)?;
    store.expect_deadlines_type(conf.timed)?;
    let group = if conf.groups {
        store.hget(&key, b"group")?
    } else {
        None
    };
    store.read_group(conf.groups, true, group.as_deref())?;
    let now = now_ms();
    let run_at = after(now, delay);
    let run_at_s = run_at.to_string();
    store.zrem(store.key(QueueKey::Active), &[&id])?;
    if let Some(group) = &group {
        store.leave_active(conf.group_flow, group, now)?;
    }
    store.zadd(store.key(QueueKey::Schedule), &[(run_at as i64, &id)])?;
    store.keep_deadline(conf.timed, &id)?;
    store.hset(
        &key,
        &[b"state", b"scheduled", b"run_at", run_at_s.as_bytes()],
    )?;
    store.hdel(&key, &[b"cancel"])?;
    let delay_s = delay.to_string();
    store.emit(
        conf.events_max,
        &[
            b"event",
            b"delayed",
            b"id",
            &id,
            b"delay",
            delay_s.as_bytes(),
        ],
    )?;
    store.signal(run_at)?;
    store.freed(&conf)?;
    Ok(ValkeyValue::SimpleStringStatic("OK"))
}

/// `EMQ.RESCHEDULE base id run_at_ms`.
pub(crate) fn reschedule(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    let run_at = args.int(2, "run_at", 0)?;
    args.no_options(2)?;

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    let key = store.job_key(&id);
    match store.hget(&key, b"state")? {
        Some(state) if state == b"scheduled" => {}
        Some(state) => return Err(bad_state(&state)),
        None => return Err(refuse("NOJOB")),
    }
    store.expect_types(&[
        (QueueKey::Schedule, Kind::Zset),
        (QueueKey::Events, Kind::Stream),
        (QueueKey::Signal, Kind::Zset),
    ])?;
    let run_at_s = run_at.to_string();
    store.zadd(store.key(QueueKey::Schedule), &[(run_at as i64, &id)])?;
    store.hset(&key, &[b"run_at", run_at_s.as_bytes()])?;
    store.emit(
        conf.events_max,
        &[
            b"event",
            b"rescheduled",
            b"id",
            &id,
            b"run_at",
            run_at_s.as_bytes(),
        ],
    )?;
    store.signal(run_at)?;
    Ok(ValkeyValue::SimpleStringStatic("OK"))
}

/// `EMQ.SCHEDULE.BULK base id payload run_at priority attempts […]
/// [WAITED]` →
/// `[id1, created1, …]`; `run_at` may be `+ms`.
pub(crate) fn schedule_bulk(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let (waited, given) = waited_tail(&args, 5);
    let mut jobs = Vec::with_capacity(bulk_groups(given, 5)?);
    for first in (1..=given).step_by(5) {
        jobs.push(NewJob {
            id: args.id(first, true)?,
            payload: args.text(first + 1, "payload")?,
            run_at: Some(args.run_at(first + 2)?),
            priority: args.int_in(first + 3, "priority", 0, u64::from(MAX_PRIORITY))?,
            attempts: args.int(first + 4, "attempts", 1)?,
            repeat: None,
            dedup: None,
            group: None,
            traceparent: None,
            deadlines: Deadlines::default(),
            lifo: false,
            waited,
            extra: Vec::new(),
        });
    }
    let store = Store::new(ctx, args.base());
    Ok(enqueued_reply(store.enqueue_checked(jobs, true)?))
}

/// `EMQ.REPEAT.ADD base key definition payload [FIRST run_at] [PRIORITY p]
/// [ATTEMPTS n]` → `[replaced definition or nil, occurrences deleted]`.
pub(crate) fn repeat_add(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let key = args.repeat_key(1)?;
    let definition = args.text(2, "definition")?;
    let payload = args.text(3, "payload")?;
    let opts = args.options(4, &[("FIRST", Opt::int("first", 0)), PRIORITY, ATTEMPTS])?;

    let store = Store::new(ctx, args.base());
    let conf = store.enqueue_settings()?;
    let waited = store.waited_mark()?;
    store.expect_types(&[
        (QueueKey::Repeat, Kind::Hash),
        (QueueKey::Schedule, Kind::Zset),
        (QueueKey::Events, Kind::Stream),
    ])?;
    let doomed = scheduled_occurrences(&store, &key)?;
    let mut held = Vec::with_capacity(doomed.len());
    for id in &doomed {
        let ([dedup, mode], waited, _) = store.job_fields_waited(
            (waited, false),
            &store.job_key(id),
            [b"dedup", b"dedup_mode"],
        )?;
        if dedup.is_some() {
            store.expect_owner_type()?;
        }
        held.push((dedup, mode, waited));
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
    for (id, (dedup, mode, waited)) in doomed.iter().zip(&held) {
        store.zrem(store.key(QueueKey::Schedule), &[id])?;
        store.del(&[&store.job_key(id), &store.logs_key(id)]);
        store.publish_outcome(waited.as_deref(), id, &[b"removed"])?;
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
        deadlines: Deadlines::default(),
        lifo: false,
        waited: false,
        extra: Vec::new(),
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
