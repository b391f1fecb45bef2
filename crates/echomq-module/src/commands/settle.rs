//! `EMQ.FLOW.SETTLE` (docs/protocol.md, "Deciding a job that has
//! dependents"): the native twin of `crates/echomq/scripts/flow_settle.lua`,
//! same checks in the same order, same writes, reply and events. A
//! completed job's dependents in its own queue past COMPLETE's budget,
//! taken as COMPLETE takes the first (`Store::complete_own_edges`).

use crate::server::args::{Args, Opt};
use crate::server::clock::now_ms;
use crate::server::key::Kind;
use crate::server::reply::int;
use crate::server::store::outbox::Due;
use crate::server::store::{DependentsRead, Store, number};
use echomq_protocol::QueueKey;
use echomq_protocol::arg::FLOW_INLINE_EDGES;
use valkey_module::{Context, ValkeyResult, ValkeyString, ValkeyValue};

/// What a resolution's text starts with when FLOW.SETTLE may take it.
const COMPLETED: &[u8] = b"completed ";

/// `EMQ.FLOW.SETTLE base id [COUNT n]` → `[told, resolved, unblocked]`.
pub(crate) fn flow_settle(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    let opts = args.options(2, &[("COUNT", Opt::int("count", 1))])?;
    let count = opts.int("COUNT").unwrap_or(FLOW_INLINE_EDGES);

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    let (resolution, told) = (store.resolution_key(&id), store.dependents_key(&id));
    store.expect_type_of(store.key(QueueKey::Resolutions), Kind::Zset)?;
    store.expect_type_of(&resolution, Kind::Hash)?;
    store.expect_type_of(&told, Kind::Hash)?;
    store.expect_type_of(&store.job_key(&id), Kind::Hash)?;
    store.expect_types(&[
        (QueueKey::Seq, Kind::String),
        (QueueKey::Events, Kind::Stream),
    ])?;
    // COMPLETE's checks on a flows queue (a queue without the mark has no
    // resolution to settle, and writes nothing below).
    store.expect_own_edge_types(&conf)?;
    if conf.groups {
        store.expect_group_keys(true, true)?;
    }
    if !conf.flows || !store.in_outbox(&id)? {
        return Ok(counts(0, 0, 0));
    }
    let [text, left] = store.hmget_n(&resolution, [b"text", b"left"])?;
    let Some(text) = text.filter(|text| text.starts_with(COMPLETED)) else {
        return Ok(counts(0, 0, 0));
    };
    let fields = store.hgetall(&told)?;
    let mut due = Due::written(number(left.as_deref()).unwrap_or(0), fields);
    let (mut budget, mut held) = (count, Vec::new());
    let taking = (&mut held, &mut DependentsRead::default());
    let took = store.complete_own_edges(&conf, &id, &mut due, &text, &mut budget, taking)?;
    let unblocked = held.len() as u64;
    store.unblock_held(&conf, held, now_ms())?;
    let told = count - budget;
    if told > 0 {
        store.acknowledged(&id, due.left())?;
    }
    Ok(counts(told, took, unblocked))
}

/// The reply: `[told, resolved, unblocked]`.
fn counts(told: u64, resolved: u64, unblocked: u64) -> ValkeyValue {
    ValkeyValue::Array([told, resolved, unblocked].map(|n| int(n as i64)).to_vec())
}
