//! The time family: SCHEDULE, PROMOTE, DELAY, RESCHEDULE — each the native
//! twin of its script in `crates/echomq/scripts/`, same checks in the same
//! order, same writes, replies and events.

use crate::server::args::{ATTEMPTS, Args, GROUP, Opt, PRIORITY, TRACE, bad_state, refuse};
use crate::server::clock::{after, now_ms};
use crate::server::key::Kind;
use crate::server::reply::{enqueued_reply, int};
use crate::server::store::dedup::{DEDUP, DEDUP_FOR, dedup_options};
use crate::server::store::{NewJob, Store, number};
use echomq_protocol::QueueKey;
use echomq_protocol::arg::{DEFAULT_MAX_ATTEMPTS, DEFAULT_PROMOTE_LIMIT};
use valkey_module::{Context, ValkeyResult, ValkeyString, ValkeyValue};

/// `EMQ.SCHEDULE base id payload run_at_ms [PRIORITY p] [ATTEMPTS n] [REPEAT key]
/// [DEDUP key [DEDUP_FOR ms]] [GROUP g] [TRACE tp]`.
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
        ],
    )?;
    let dedup = dedup_options(&opts)?;
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
    let moved = store.promote((conf.events_max, conf.groups), &due, &jobs, now)?;
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
