//! EchoMQ's native Valkey module (wire 6): the `EMQ.*` commands of
//! PROTOCOL.md, each the exact twin of its Lua script.
//!
//! One file per command family (`spine.rs`, `time.rs`, …), thin command functions,
//! and one registration table below. Every write is replicated as its
//! effect (see `store.rs`); the clock is read once per command (`clock.rs`).

mod args;
mod clock;
mod in_hand;
mod spine;
mod store;
mod time;

use valkey_module::alloc::ValkeyAlloc;
use valkey_module::{Context, ValkeyResult, ValkeyString, ValkeyValue, valkey_module};

/// The commands this module serves, as `EMQ.VERSION` lists them; keep in
/// step with the registration table.
const COMMANDS: [&str; 15] = [
    "EMQ.VERSION",
    "EMQ.ENQUEUE",
    "EMQ.CLAIM",
    "EMQ.COMPLETE",
    "EMQ.FAIL",
    "EMQ.GET",
    "EMQ.COUNTS",
    "EMQ.SCHEDULE",
    "EMQ.PROMOTE",
    "EMQ.DELAY",
    "EMQ.RESCHEDULE",
    "EMQ.CANCEL",
    "EMQ.EXTEND",
    "EMQ.STALLED.CHECK",
    "EMQ.REQUEUE",
];

/// `EMQ.VERSION` → `[version, [names…]]`.
fn version(_: &Context, _: Vec<ValkeyString>) -> ValkeyResult {
    Ok(ValkeyValue::Array(vec![
        ValkeyValue::BulkString(env!("CARGO_PKG_VERSION").to_string()),
        ValkeyValue::Array(
            COMMANDS
                .iter()
                .map(|name| ValkeyValue::BulkString((*name).to_string()))
                .collect(),
        ),
    ]))
}

/// The registration table: name, handler, flags, first/last key and step.
/// Every queue command declares its base key as its first key, so cluster
/// clients route it to the queue's slot.
#[allow(missing_docs)]
mod table {
    use super::{ValkeyAlloc, in_hand, spine, time, valkey_module, version};

    valkey_module! {
        name: "echomq",
        version: 1,
        allocator: (ValkeyAlloc, ValkeyAlloc),
        data_types: [],
        commands: [
            ["EMQ.VERSION", version, "readonly fast", 0, 0, 0],
            ["EMQ.ENQUEUE", spine::enqueue, "write deny-oom", 1, 1, 1],
            ["EMQ.CLAIM", spine::claim, "write deny-oom", 1, 1, 1],
            ["EMQ.COMPLETE", spine::complete, "write deny-oom", 1, 1, 1],
            ["EMQ.FAIL", spine::fail, "write deny-oom", 1, 1, 1],
            ["EMQ.GET", spine::get, "readonly fast", 1, 1, 1],
            ["EMQ.COUNTS", spine::counts, "readonly fast", 1, 1, 1],
            ["EMQ.SCHEDULE", time::schedule, "write deny-oom", 1, 1, 1],
            ["EMQ.PROMOTE", time::promote, "write deny-oom", 1, 1, 1],
            ["EMQ.DELAY", time::delay, "write deny-oom", 1, 1, 1],
            ["EMQ.RESCHEDULE", time::reschedule, "write deny-oom", 1, 1, 1],
            ["EMQ.CANCEL", in_hand::cancel, "write deny-oom", 1, 1, 1],
            ["EMQ.EXTEND", in_hand::extend, "write deny-oom fast", 1, 1, 1],
            ["EMQ.STALLED.CHECK", in_hand::stalled_check, "write deny-oom", 1, 1, 1],
            ["EMQ.REQUEUE", in_hand::requeue, "write deny-oom", 1, 1, 1],
        ],
    }
}
