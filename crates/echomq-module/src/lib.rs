//! EchoMQ's native Valkey module (wire 6): the `EMQ.*` commands of
//! PROTOCOL.md, each the exact twin of its Lua script.
//!
//! One file per command family, thin command functions, and one
//! registration table below. The families are the scopes of the controls:
//! the spine (`spine.rs`), time (`time.rs`), the worker in hand
//! (`in_hand.rs`), one job's row (`row.rs`) and the whole queue
//! (`admin.rs`, named as the client's `admin.rs` that sends them);
//! `batch.rs` holds the bulk forms. Every write is replicated as its effect
//! (see `store.rs`); the clock is read once per command (`clock.rs`).
//!
//! Load arguments: `EXCLUDE name…` leaves the named commands unregistered
//! and out of `EMQ.VERSION`'s list (how the tests exercise a client's
//! `Wire6Unsupported`, and how an operator withholds a verb from a server).

mod admin;
mod args;
mod batch;
mod clock;
mod fast_hash;
mod in_hand;
mod key;
mod reply;
mod row;
mod spine;
mod store;
mod time;

use std::ffi::CString;
use std::os::raw::c_int;
use std::sync::OnceLock;
use valkey_module::{Context, Status, ValkeyResult, ValkeyString, ValkeyValue, raw, valkey_module};

/// Declares the registration table: name, handler, flags, first/last key and
/// step. It defines [`COMMANDS`] (what `EMQ.VERSION` lists, in this order)
/// and `register`, so the two never drift apart.
macro_rules! served {
    ($([$name:literal, $handler:expr, $flags:literal, $first:literal, $last:literal, $step:literal]),* $(,)?) => {
        /// Every command this module can serve, in registration order.
        const COMMANDS: &[&str] = &[$($name),*];

        /// Registers every command of the table that is not `excluded`.
        fn register(ctx: *mut raw::RedisModuleCtx, excluded: &[String]) -> c_int {
            $(
                if !excluded.iter().any(|name| name == $name) {
                    valkey_module::redis_command!(ctx, $name, $handler, $flags, $first, $last, $step);
                }
            )*
            raw::Status::Ok as c_int
        }
    };
}

// Every queue command declares its base key as its first key, so cluster
// clients route it to the queue's slot. `fast` only where the work is
// O(1) or O(log N) whatever the queue holds. OBLITERATE only deletes (its
// script calls no deny-oom command either), so like DEL it runs at
// maxmemory, where freeing a queue matters most.
served! {
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
    ["EMQ.PAUSE", admin::pause, "write deny-oom fast", 1, 1, 1],
    ["EMQ.RESUME", admin::resume, "write deny-oom fast", 1, 1, 1],
    ["EMQ.DRAIN", admin::drain, "write deny-oom", 1, 1, 1],
    ["EMQ.OBLITERATE", admin::obliterate, "write", 1, 1, 1],
    ["EMQ.UPDATE", row::update, "write deny-oom fast", 1, 1, 1],
    ["EMQ.PROGRESS", row::progress, "write deny-oom fast", 1, 1, 1],
    ["EMQ.LOG", row::log, "write deny-oom", 1, 1, 1],
    ["EMQ.REMOVE", row::remove, "write deny-oom", 1, 1, 1],
    ["EMQ.REPROCESS", row::reprocess, "write deny-oom", 1, 1, 1],
    ["EMQ.ENQUEUE.BULK", batch::enqueue_bulk, "write deny-oom", 1, 1, 1],
    ["EMQ.SCHEDULE.BULK", batch::schedule_bulk, "write deny-oom", 1, 1, 1],
    ["EMQ.COMPLETE.BULK", batch::complete_bulk, "write deny-oom", 1, 1, 1],
}

/// The commands the load arguments excluded (set once, at load).
static EXCLUDED: OnceLock<Vec<String>> = OnceLock::new();

/// `EMQ.VERSION` → `[version, [names…]]`: the commands registered.
fn version(_: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    if let Some(extra) = args.get(1) {
        return Err(args::refuse(format!(
            "SYNTAX unknown option {}",
            args::reply_text(extra.as_slice())
        )));
    }
    let excluded = EXCLUDED.get().map_or(&[][..], Vec::as_slice);
    Ok(ValkeyValue::Array(vec![
        ValkeyValue::BulkString(env!("CARGO_PKG_VERSION").to_string()),
        ValkeyValue::Array(
            COMMANDS
                .iter()
                .filter(|name| !excluded.iter().any(|ex| ex == *name))
                .map(|name| ValkeyValue::BulkString((*name).to_string()))
                .collect(),
        ),
    ]))
}

/// The load arguments: nothing, or `EXCLUDE name [name …]` naming served
/// commands other than `EMQ.VERSION` (case-insensitive). Anything else is
/// refused, so a typo never loads a module that serves more than meant.
fn excluded_by(args: &[ValkeyString]) -> Result<Vec<String>, String> {
    let mut words = args
        .iter()
        .map(|arg| arg.to_string_lossy().to_ascii_uppercase());
    let Some(first) = words.next() else {
        return Ok(Vec::new());
    };
    if first != "EXCLUDE" {
        return Err(format!(
            "unknown load argument {first}; expected EXCLUDE name…"
        ));
    }
    let names: Vec<String> = words.collect();
    if names.is_empty() {
        return Err("EXCLUDE names no command".into());
    }
    for name in &names {
        if name == "EMQ.VERSION" || !COMMANDS.contains(&name.as_str()) {
            return Err(format!("EXCLUDE {name}: not a command it can leave out"));
        }
    }
    Ok(names)
}

/// Reads the load arguments, then registers the commands.
fn init(ctx: &Context, args: &[ValkeyString]) -> Status {
    let excluded = match excluded_by(args) {
        Ok(excluded) => excluded,
        Err(message) => {
            ctx.log_warning(&message);
            return Status::Err;
        }
    };
    let excluded = EXCLUDED.get_or_init(|| excluded);
    key::signal_only_writes(ctx);
    if register(ctx.ctx, excluded) == Status::Ok as c_int {
        Status::Ok
    } else {
        Status::Err
    }
}

/// The module's entry point (`RedisModule_OnLoad`); `init` registers the
/// commands of the table above.
#[allow(missing_docs)]
mod table {
    use super::{init, valkey_module};

    // The module's own allocations (argument copies, the reply being
    // built) live for one command; the server's wrapper would count each
    // in `used_memory` at the cost of a `malloc_usable_size` call, for
    // memory freed before the command returns. What the keyspace keeps is
    // allocated by the server itself.
    valkey_module! {
        name: "echomq",
        version: 1,
        allocator: (std::alloc::System, std::alloc::System),
        data_types: [],
        init: init,
        commands: [],
    }
}
