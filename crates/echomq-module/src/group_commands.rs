//! The per-group commands — GROUP.CONCURRENCY, GROUP.LIMIT, GROUP.PAUSE,
//! GROUP.RESUME, GROUP.COUNTS and GROUPS — each the native twin of its
//! script in `crates/echomq/scripts/`, same checks in the same order, same
//! writes, replies and events (`docs/protocol.md`, "Groups").

use crate::args::{Args, Opt};
use crate::clock::now_ms;
use crate::flow::{cap_change, limit_change, limit_reply};
use crate::groups::{GroupState, group_rule};
use crate::key::Kind;
use crate::reply::{bulk, int};
use crate::store::{Limit, Reply, Store};
use echomq_protocol::QueueKey;
use echomq_protocol::arg::DEFAULT_GROUPS_PAGE;
use valkey_module::{Context, ValkeyError, ValkeyResult, ValkeyString, ValkeyValue};

/// The group a command names (ARGV 1), and its store with the group's
/// state read; `changes` says whether it writes, which checks the events
/// stream's and the group keys' types first.
fn open<'a>(
    ctx: &'a Context,
    args: &'a Args,
    changes: bool,
) -> Result<(Store<'a>, Vec<u8>, GroupState, i64), ValkeyError> {
    let store = Store::new(ctx, args.base());
    let events_max = store.settings()?.events_max;
    let group = group_rule(args.get(1), "group")?;
    let st = store.group_state(&group)?;
    if changes {
        store.expect_types(&[(QueueKey::Events, Kind::Stream)])?;
        store.expect_group_keys(false, true)?;
    }
    Ok((store, group, st, events_max))
}

/// Refuses ARGV past the group (a command without options).
fn group_only(args: &Args) -> Result<Vec<u8>, ValkeyError> {
    let group = group_rule(args.get(1), "group")?;
    args.no_options(1)?;
    Ok(group)
}

/// `EMQ.GROUP.CONCURRENCY base group [MAX n | OFF]` → `[max n active n]`.
pub(crate) fn concurrency(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    group_rule(args.get(1), "group")?;
    let change = cap_change(&args, 2)?;
    let (store, group, mut st, events_max) = open(ctx, &args, change.is_some())?;
    if let Some(max) = change {
        let key = store.group_key(&group);
        match max {
            None => store.hdel(&key, &[b"concurrency"])?,
            Some(max) => store.hset(&key, &[b"concurrency", max.to_string().as_bytes()])?,
        }
        st.concurrency = max.unwrap_or(0) as i64;
        let max_s = st.concurrency.to_string();
        store.emit(
            events_max,
            &[
                b"event",
                b"group_concurrency_set",
                b"group",
                &group,
                b"max",
                max_s.as_bytes(),
            ],
        )?;
        store.group_changed(&group, &st, now_ms())?;
    }
    Ok(ValkeyValue::Array(vec![
        bulk("max"),
        int(st.concurrency),
        bulk("active"),
        int(st.active),
    ]))
}

/// `EMQ.GROUP.LIMIT base group [MAX n PER ms | OFF]` → `[max n per ms used
/// n reset_ms n]`.
pub(crate) fn limit(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    group_rule(args.get(1), "group")?;
    let change = limit_change(&args, 2)?;
    let (store, group, mut st, events_max) = open(ctx, &args, change.is_some())?;
    let now = now_ms();
    if let Some(set) = change {
        let key = store.group_key(&group);
        match set {
            None => {
                store.hdel(
                    &key,
                    &[b"limit_max", b"limit_per", b"limit_window", b"limit_used"],
                )?;
                st.limit = Limit::default();
            }
            Some((max, per)) => {
                let (max_s, per_s) = (max.to_string(), per.to_string());
                store.hset(
                    &key,
                    &[
                        b"limit_max",
                        max_s.as_bytes(),
                        b"limit_per",
                        per_s.as_bytes(),
                    ],
                )?;
                st.limit.max = max as i64;
                st.limit.per = per as i64;
            }
        }
        let (max_s, per_s) = (st.limit.max.to_string(), st.limit.per.to_string());
        store.emit(
            events_max,
            &[
                b"event",
                b"group_limit_set",
                b"group",
                &group,
                b"max",
                max_s.as_bytes(),
                b"per",
                per_s.as_bytes(),
            ],
        )?;
        store.group_changed(&group, &st, now)?;
    }
    Ok(ValkeyValue::Array(limit_reply(&st.limit, now)))
}

/// `EMQ.GROUP.PAUSE base group` → `OK`.
pub(crate) fn pause(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    set_paused(ctx, args, true)
}

/// `EMQ.GROUP.RESUME base group` → `OK`.
pub(crate) fn resume(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    set_paused(ctx, args, false)
}

fn set_paused(ctx: &Context, args: Vec<ValkeyString>, paused: bool) -> ValkeyResult {
    let args = Args::new(args)?;
    group_only(&args)?;
    let (store, group, mut st, events_max) = open(ctx, &args, true)?;
    let key = store.group_key(&group);
    let event: &[u8] = if paused {
        store.hset(&key, &[b"paused", b"1"])?;
        b"group_paused"
    } else {
        store.hdel(&key, &[b"paused"])?;
        b"group_resumed"
    };
    st.paused = paused;
    store.emit(events_max, &[b"event", event, b"group", &group])?;
    store.group_changed(&group, &st, now_ms())?;
    Ok(ValkeyValue::SimpleStringStatic("OK"))
}

/// `EMQ.GROUP.COUNTS base group` → `[pending n active n paused 0|1
/// concurrency n max n per n]`.
pub(crate) fn counts(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let group = group_only(&args)?;
    let store = Store::reader(ctx, args.base());
    let st = store.group_state(&group)?;
    let pending = store.zcard(&store.lane_key(&group))?;
    Ok(ValkeyValue::Array(vec![
        bulk("pending"),
        int(pending),
        bulk("active"),
        int(st.active),
        bulk("paused"),
        int(i64::from(st.paused)),
        bulk("concurrency"),
        int(st.concurrency),
        bulk("max"),
        int(st.limit.max),
        bulk("per"),
        int(st.limit.per),
    ]))
}

/// `EMQ.GROUPS base [AFTER g] [COUNT n]` → one `[group, pending, active,
/// paused, concurrency, max, per]` per group, by name.
pub(crate) fn list(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let opts = args.options(
        1,
        &[
            ("AFTER", Opt::Group { arg: "after" }),
            ("COUNT", Opt::int("count", 1)),
        ],
    )?;
    let store = Store::reader(ctx, args.base());
    let from = opts
        .text("AFTER")
        .map_or_else(|| b"-".to_vec(), |after| [b"(", after].concat());
    let count = opts.int("COUNT").unwrap_or(DEFAULT_GROUPS_PAGE).to_string();
    let names = store
        .read(
            "ZRANGE",
            &[
                store.key(QueueKey::GroupIndex),
                &from,
                b"+",
                b"BYLEX",
                b"LIMIT",
                b"0",
                count.as_bytes(),
            ],
        )?
        .items();
    let mut reply = Vec::with_capacity(names.len());
    for group in names.into_iter().filter_map(Reply::bytes) {
        let st = store.group_state(&group)?;
        let pending = store.zcard(&store.lane_key(&group))?;
        reply.push(ValkeyValue::Array(vec![
            bulk(group),
            int(pending),
            int(st.active),
            int(i64::from(st.paused)),
            int(st.concurrency),
            int(st.limit.max),
            int(st.limit.per),
        ]));
    }
    Ok(ValkeyValue::Array(reply))
}
