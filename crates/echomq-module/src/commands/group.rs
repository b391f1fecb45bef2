//! Over a group: GROUP.CONCURRENCY, GROUP.LIMIT, GROUP.PAUSE,
//! GROUP.RESUME, GROUP.COUNTS and GROUPS — each the native twin of its
//! script in `crates/echomq/scripts/`, same checks in the same order, same
//! writes, replies and events (`docs/protocol.md`, "Groups"). The lanes
//! every transition keeps are in `server/store/groups.rs`.

use crate::commands::flow::{cap_change, limit_change, limit_reply};
use crate::server::args::group_rule;
use crate::server::args::{Args, Opt};
use crate::server::clock::now_ms;
use crate::server::fast_hash::FastSet;
use crate::server::key::Kind;
use crate::server::reply::{bulk, int};
use crate::server::store::groups::GroupState;
use crate::server::store::{Limit, Reply, Settings, Store};
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
) -> Result<(Store<'a>, Vec<u8>, GroupState, Settings), ValkeyError> {
    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    let group = group_rule(args.get(1), "group")?;
    let st = store.group_state(&group)?;
    if changes {
        store.expect_types(&[(QueueKey::Events, Kind::Stream)])?;
        store.expect_group_keys(false, true)?;
    }
    Ok((store, group, st, conf))
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
    let (store, group, mut st, conf) = open(ctx, &args, change.is_some())?;
    // Without a cap (before or after the change), the group's active jobs
    // are counted in the active set, before any write.
    let counted = if st.concurrency == 0 || change == Some(None) {
        store.active_by_group()?.get(&group).copied().unwrap_or(0)
    } else {
        0
    };
    if let Some(max) = change {
        let key = store.group_key(&group);
        match max {
            None => {
                store.hdel(&key, &[b"concurrency", b"active"])?;
                st.active = 0;
            }
            Some(max) => {
                // A new cap counts the group's active jobs once.
                if st.concurrency == 0 {
                    st.active = counted;
                }
                let (max_s, active_s) = (max.to_string(), st.active.to_string());
                let mut fields: Vec<&[u8]> = vec![b"concurrency", max_s.as_bytes()];
                if st.active > 0 {
                    fields.extend([b"active".as_slice(), active_s.as_bytes()]);
                }
                store.hset(&key, &fields)?;
                store.mark_group_flow(conf.group_flow)?;
            }
        }
        st.concurrency = max.unwrap_or(0) as i64;
        let max_s = st.concurrency.to_string();
        store.emit(
            conf.events_max,
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
    let active = if st.concurrency == 0 {
        counted
    } else {
        st.active
    };
    Ok(ValkeyValue::Array(vec![
        bulk("max"),
        int(st.concurrency),
        bulk("active"),
        int(active),
    ]))
}

/// `EMQ.GROUP.LIMIT base group [MAX n PER ms | OFF]` → `[max n per ms used
/// n reset_ms n]`.
pub(crate) fn limit(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    group_rule(args.get(1), "group")?;
    let change = limit_change(&args, 2)?;
    let (store, group, mut st, conf) = open(ctx, &args, change.is_some())?;
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
                store.mark_group_flow(conf.group_flow)?;
            }
        }
        let (max_s, per_s) = (st.limit.max.to_string(), st.limit.per.to_string());
        store.emit(
            conf.events_max,
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
    let (store, group, mut st, conf) = open(ctx, &args, true)?;
    let key = store.group_key(&group);
    let event: &[u8] = if paused {
        store.hset(&key, &[b"paused", b"1"])?;
        b"group_paused"
    } else {
        store.hdel(&key, &[b"paused"])?;
        b"group_resumed"
    };
    st.paused = paused;
    store.emit(conf.events_max, &[b"event", event, b"group", &group])?;
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
    let active = store.group_active(&group, &st)?;
    let pending = store.zcard(&store.lane_key(&group))?;
    Ok(ValkeyValue::Array(vec![
        bulk("pending"),
        int(pending),
        bulk("active"),
        int(active),
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
/// paused, concurrency, max, per]` per group with keys or jobs running, by
/// name.
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
    let after = opts.text("AFTER");
    let from = after.map_or_else(|| b"-".to_vec(), |after| [b"(", after].concat());
    let count = opts.int("COUNT").unwrap_or(DEFAULT_GROUPS_PAGE);
    let count_s = count.to_string();
    // The page's candidates: the index's first `count` after AFTER, and
    // every group with jobs running after AFTER, in byte order.
    let running = store.active_by_group()?;
    let mut names: Vec<Vec<u8>> = store
        .read(
            "ZRANGE",
            &[
                store.key(QueueKey::GroupIndex),
                &from,
                b"+",
                b"BYLEX",
                b"LIMIT",
                b"0",
                count_s.as_bytes(),
            ],
        )?
        .items()
        .into_iter()
        .filter_map(Reply::bytes)
        .collect();
    let listed: FastSet<Vec<u8>> = names.iter().cloned().collect();
    for group in running.keys() {
        if !listed.contains(group) && after.is_none_or(|after| after < group.as_slice()) {
            names.push(group.clone());
        }
    }
    names.sort();
    names.truncate(usize::try_from(count).unwrap_or(usize::MAX));
    let mut reply = Vec::with_capacity(names.len());
    for group in names {
        let st = store.group_state(&group)?;
        let active = if st.concurrency > 0 {
            st.active
        } else {
            running.get(&group).copied().unwrap_or(0)
        };
        let pending = store.zcard(&store.lane_key(&group))?;
        reply.push(ValkeyValue::Array(vec![
            bulk(group),
            int(pending),
            int(active),
            int(i64::from(st.paused)),
            int(st.concurrency),
            int(st.limit.max),
            int(st.limit.per),
        ]));
    }
    Ok(ValkeyValue::Array(reply))
}
