//! Flow control: DEDUP.OWNER, DEDUP.RELEASE, LIMIT and CONCURRENCY —
//! each the native twin of its script in `crates/echomq/scripts/`, same
//! checks in the same order, same writes, replies and events — and the
//! option checks GROUP.LIMIT and GROUP.CONCURRENCY share with LIMIT and
//! CONCURRENCY. What every family shares of flow control (the rate
//! window, the room under the cap, the dedup keys) is in
//! `server/store/flow.rs` and `server/store/dedup.rs`.

use crate::server::args::{Args, Opt, refuse};
use crate::server::clock::now_ms;
use crate::server::key::Kind;
use crate::server::reply::{bulk, int};
use crate::server::store::dedup::Hold;
use crate::server::store::flow::rate_window;
use crate::server::store::{Limit, Store};
use echomq_protocol::QueueKey;
use valkey_module::{Context, ValkeyError, ValkeyResult, ValkeyString, ValkeyValue};

/// What LIMIT and GROUP.LIMIT were asked (options from ARGV `first` on):
/// `None` to read only, `Some(None)` for OFF, `Some(Some((max, per)))` to
/// set. `MAX` and `PER` go together, and either excludes `OFF`.
pub(crate) fn limit_change(
    args: &Args,
    first: usize,
) -> Result<Option<Option<(u64, u64)>>, ValkeyError> {
    let opts = args.options(
        first,
        &[
            ("MAX", Opt::int("max", 1)),
            ("PER", Opt::int("per", 1)),
            ("OFF", Opt::Flag),
        ],
    )?;
    if opts.has("OFF") && (opts.has("MAX") || opts.has("PER")) {
        return Err(refuse("SYNTAX MAX and OFF exclude each other"));
    }
    if opts.has("MAX") && !opts.has("PER") {
        return Err(refuse("BADARG per"));
    }
    if opts.has("PER") && !opts.has("MAX") {
        return Err(refuse("BADARG max"));
    }
    let set = opts.int("MAX").zip(opts.int("PER"));
    Ok((set.is_some() || opts.has("OFF")).then_some(set))
}

/// What CONCURRENCY and GROUP.CONCURRENCY were asked: `None` to read only,
/// `Some(None)` for OFF, `Some(Some(max))` to set.
pub(crate) fn cap_change(args: &Args, first: usize) -> Result<Option<Option<u64>>, ValkeyError> {
    let opts = args.options(first, &[("MAX", Opt::int("max", 1)), ("OFF", Opt::Flag)])?;
    if opts.has("MAX") && opts.has("OFF") {
        return Err(refuse("SYNTAX MAX and OFF exclude each other"));
    }
    let max = opts.int("MAX");
    Ok((max.is_some() || opts.has("OFF")).then_some(max))
}

/// `EMQ.LIMIT base [MAX n PER ms | OFF]` → `[max n per ms used n reset_ms n
/// hold_ms n]` after the change.
pub(crate) fn limit(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let change = limit_change(&args, 1)?;

    let store = Store::new(ctx, args.base());
    let mut conf = store.settings_with_limits()?;
    let meta = store.key(QueueKey::Meta);
    if let Some(set) = change {
        store.expect_types(&[(QueueKey::Events, Kind::Stream)])?;
        match set {
            None => {
                store.hdel(
                    meta,
                    &[
                        b"limit_max",
                        b"limit_per",
                        b"limit_window",
                        b"limit_used",
                        b"limit_hold",
                    ],
                )?;
                conf.limit = Limit::default();
            }
            Some((max, per)) => {
                let (max_s, per_s) = (max.to_string(), per.to_string());
                store.hset(
                    meta,
                    &[
                        b"limit_max",
                        max_s.as_bytes(),
                        b"limit_per",
                        per_s.as_bytes(),
                    ],
                )?;
                conf.limit.max = max as i64;
                conf.limit.per = per as i64;
            }
        }
        let (max_s, per_s) = (conf.limit.max.to_string(), conf.limit.per.to_string());
        store.emit(
            conf.events_max,
            &[
                b"event",
                b"limit_set",
                b"max",
                max_s.as_bytes(),
                b"per",
                per_s.as_bytes(),
            ],
        )?;
    }
    let now = now_ms();
    let mut reply = limit_reply(&conf.limit, now);
    reply.extend([bulk("hold_ms"), int((conf.limit.hold - now as i64).max(0))]);
    Ok(ValkeyValue::Array(reply))
}

/// LIMIT's and GROUP.LIMIT's reply but the hold: `[max n per ms used n
/// reset_ms n]` of the current window at `now`, all 0 without a limit.
pub(crate) fn limit_reply(limit: &Limit, now: u64) -> Vec<ValkeyValue> {
    let (max, per, used, reset) = match rate_window(limit, now) {
        Some((window, used)) => (limit.max, limit.per, used, window + limit.per - now as i64),
        None => (0, 0, 0, 0),
    };
    vec![
        bulk("max"),
        int(max),
        bulk("per"),
        int(per),
        bulk("used"),
        int(used),
        bulk("reset_ms"),
        int(reset),
    ]
}

/// `EMQ.CONCURRENCY base [MAX n | OFF]` → `[max n active n]` after the
/// change.
pub(crate) fn concurrency(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let change = cap_change(&args, 1)?;

    let store = Store::new(ctx, args.base());
    let mut conf = store.settings()?;
    store.expect_types(&[(QueueKey::Active, Kind::Zset)])?;
    if let Some(max) = change {
        store.expect_types(&[
            (QueueKey::Pending, Kind::Zset),
            (QueueKey::Events, Kind::Stream),
            (QueueKey::Signal, Kind::Zset),
        ])?;
        let meta = store.key(QueueKey::Meta);
        match max {
            None => {
                store.hdel(meta, &[b"concurrency"])?;
                conf.concurrency = 0;
            }
            Some(max) => {
                let max_s = max.to_string();
                store.hset(meta, &[b"concurrency", max_s.as_bytes()])?;
                conf.concurrency = max as i64;
            }
        }
        let max_s = conf.concurrency.to_string();
        store.emit(
            conf.events_max,
            &[b"event", b"concurrency_set", b"max", max_s.as_bytes()],
        )?;
        if store.pending_count()? > 0 {
            store.signal(0)?;
        }
    }
    let active = store.zcard(store.key(QueueKey::Active))?;
    Ok(ValkeyValue::Array(vec![
        bulk("max"),
        int(conf.concurrency),
        bulk("active"),
        int(active),
    ]))
}

/// `EMQ.DEDUP.OWNER base dedup` → the holder's id, or nil.
pub(crate) fn dedup_owner(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let key = args.key(1, "dedup")?;
    args.no_options(1)?;
    let store = Store::reader(ctx, args.base());
    Ok(match store.dedup_holder(&store.text(&key), now_ms())? {
        Hold::By(id) => bulk(id),
        Hold::Free | Hold::Expired => ValkeyValue::Null,
    })
}

/// `EMQ.DEDUP.RELEASE base dedup` → 1 released, 0 not held (an expired
/// throttle entry met here is removed).
pub(crate) fn dedup_release(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let key = args.key(1, "dedup")?;
    args.no_options(1)?;
    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    let (dedup, owners) = (store.key(QueueKey::Dedup), store.key(QueueKey::DedupOwner));
    let holder = match store.dedup_holder(&store.text(&key), now_ms())? {
        Hold::By(holder) => holder,
        Hold::Free => return Ok(int(0)),
        Hold::Expired => {
            store.zrem(dedup, &[&key])?;
            store.hdel_values(owners, &[&key])?;
            return Ok(int(0));
        }
    };
    store.expect_types(&[(QueueKey::Events, Kind::Stream)])?;
    store.zrem(dedup, &[&key])?;
    store.hdel_values(owners, &[&key])?;
    store.emit(
        conf.events_max,
        &[b"event", b"dedup_released", b"id", &holder, b"key", &key],
    )?;
    Ok(int(1))
}
