//! EchoMQ's native Valkey module (wire 6): the `EMQ.*` commands of
//! `docs/protocol.md`, each the exact twin of its Lua script.
//!
//! # Layout
//!
//! Two layers, a folder each, and one registration table below, whose
//! names and flags come from the registry of controls in
//! `echomq-protocol`.
//!
//! - `commands/`: the command handlers, one file per scope of the
//!   registry (`Scope::name`): `spine.rs`, `time.rs`, `in_hand.rs`,
//!   `queue.rs` (the whole queue; the client sends these from its
//!   `admin.rs`), `job.rs` (over one job; the client's `Jobs`), `flow.rs`,
//!   `group.rs` and `dependencies.rs` (flows). A bulk form lives with its single form. Each handler
//!   checks its arguments and calls into `server/`.
//! - `server/`: what talks to the server and holds the queue's data: the
//!   open keys (`key/`), one command's view of its queue (`store/`: its
//!   keys, settings and calls, and the bookkeeping the families share,
//!   the twins of `scripts/include/`: the pending set and `fifo`, events,
//!   metrics, groups and the claim's round robin, deduplication, flow
//!   control, and the bodies of enqueue, claim and complete), the
//!   arguments and refusals (`args.rs`), the reply values (`reply.rs`),
//!   the clock read once per command (`clock.rs`), replication
//!   (`replicate.rs`: a call that writes is replicated as one
//!   `EMQ.REPLAY` of itself, carrying the clock it read, the event ids
//!   it took and, as `EMQ.REPLAY.ORDER`, the order it took a dependents
//!   hash's fields in) and the ACL categories (`acl.rs`).
//!
//! The dependencies point one way: `lib.rs` → `commands` → `server`.
//! Nothing in `server/` names `crate::commands` or calls a method defined
//! there (`commands/` holds no `impl` block), so
//! `grep -rn 'crate::commands' src/server` finds nothing; a family's
//! command file never uses another's, but for `group.rs` using the option
//! checks of `flow.rs`.
//!
//! Every command it serves joins the ACL category `emq`, and those its
//! flags imply, where the server has module ACL categories (`acl.rs`).
//!
//! Load arguments: `EXCLUDE name…` leaves the named commands unregistered
//! and out of `EMQ.VERSION`'s list (how the tests exercise a client's
//! `Wire6Unsupported`, and how an operator withholds a verb from a server).

mod commands;
mod server;

use commands::{dependencies, flow, group, in_hand, job, queue, settle, spine, time};
use server::{acl, args, key, replicate};

use echomq_protocol::{Command, Transition};
use std::ffi::CString;
use std::os::raw::c_int;
use std::sync::OnceLock;
use valkey_module::{Context, Status, ValkeyResult, ValkeyString, ValkeyValue, raw, valkey_module};

/// Declares the registration table: each control of the registry with its
/// handler, and its bulk form's handler where it has one. The command
/// names and flags come from the registry
/// (`echomq_protocol::Transition::control`); the match over the controls
/// is exhaustive, so a control without a handler does not compile, and the
/// module's tests hold the bulk forms and `EMQ.VERSION`'s list to the
/// registry.
macro_rules! served {
    ($($control:ident => $single:path $(, bulk $bulk:path)?;)*) => {
        /// Registers the commands of `transition` that are not `excluded`.
        fn register_control(
            ctx: *mut raw::RedisModuleCtx,
            transition: Transition,
            excluded: &[String],
        ) -> c_int {
            let control = transition.control();
            match transition {
                $(Transition::$control => {
                    register_command!(ctx, &control.command, $single, excluded);
                    $(
                        let bulk = control.bulk.as_ref().expect(concat!(
                            stringify!($control),
                            " has a bulk handler but no bulk form in the registry"
                        ));
                        register_command!(ctx, bulk, $bulk, excluded);
                    )?
                })*
            }
            raw::Status::Ok as c_int
        }
    };
}

/// Registers one command of the registry under its name and flags (its
/// base key is its first and only key), unless it is excluded. The server
/// calls it through `replicate::serve`, which replicates the call.
macro_rules! register_command {
    ($ctx:expr, $command:expr, $handler:path, $excluded:expr) => {
        let command: &Command = $command;
        if !$excluded.iter().any(|name| name == command.native) {
            extern "C" fn entry(
                ctx: *mut raw::RedisModuleCtx,
                argv: *mut *mut raw::RedisModuleString,
                argc: c_int,
            ) -> c_int {
                replicate::serve(ctx, argv, argc, $handler)
            }
            let registered =
                replicate::register($ctx, command.native, command.flags, entry, $handler);
            if registered.is_err() {
                return raw::Status::Err as c_int;
            }
        }
    };
}

// Every queue command declares its base key as its first key, so cluster
// clients route it to the queue's slot. The flags are the registry's:
// `fast` only where the work is O(1) or O(log N) whatever the queue holds;
// OBLITERATE only deletes, so like DEL it runs at maxmemory, where freeing
// a queue matters most.
served! {
    Enqueue => spine::enqueue, bulk spine::enqueue_bulk;
    Claim => spine::claim;
    Complete => spine::complete, bulk spine::complete_bulk;
    Fail => spine::fail;
    Schedule => time::schedule, bulk time::schedule_bulk;
    Promote => time::promote;
    Delay => time::delay;
    Reschedule => time::reschedule;
    RepeatAdd => time::repeat_add;
    Extend => in_hand::extend;
    StalledCheck => in_hand::stalled_check;
    Cancel => in_hand::cancel;
    Pause => queue::pause;
    Resume => queue::resume;
    Drain => queue::drain;
    Obliterate => queue::obliterate;
    Counts => queue::counts;
    Retention => queue::retention;
    Update => job::update;
    Progress => job::progress;
    Log => job::log;
    Remove => job::remove;
    Reprocess => job::reprocess;
    Requeue => job::requeue;
    Get => job::get;
    Outcome => job::outcome, bulk job::outcome_bulk;
    DedupOwner => flow::dedup_owner;
    DedupRelease => flow::dedup_release;
    Limit => flow::limit;
    Concurrency => flow::concurrency;
    GroupConcurrency => group::concurrency;
    GroupLimit => group::limit;
    GroupPause => group::pause;
    GroupResume => group::resume;
    GroupCounts => group::counts;
    Groups => group::list;
    FlowAdd => dependencies::flow_add, bulk dependencies::flow_add_bulk;
    FlowDeps => dependencies::flow_deps;
    FlowDependents => dependencies::flow_dependents;
    FlowOutbox => dependencies::flow_outbox;
    FlowAck => dependencies::flow_ack;
    FlowSettle => settle::flow_settle;
    FlowWait => dependencies::flow_wait;
    FlowResolve => dependencies::flow_resolve;
    FlowLink => dependencies::flow_link;
    FlowCheckup => dependencies::flow_checkup;
}

/// `EMQ.VERSION`'s name and flags: the one command that is no control.
const VERSION: &str = "EMQ.VERSION";
/// `EMQ.VERSION`'s flags.
const VERSION_FLAGS: &str = "readonly fast";

/// Every command this module can serve, as (name, flags): `EMQ.VERSION`,
/// then each command of the registry in its order (single form, then bulk
/// form).
fn commands() -> impl Iterator<Item = (&'static str, &'static str)> {
    std::iter::once((VERSION, VERSION_FLAGS)).chain(Transition::ALL.iter().flat_map(|t| {
        t.control()
            .commands()
            .map(|(_, command)| (command.native, command.flags))
    }))
}

/// Registers `EMQ.VERSION`, `EMQ.REPLAY` and `EMQ.REPLAY.ORDER`, then
/// every command of the registry that is not `excluded`.
fn register(ctx: *mut raw::RedisModuleCtx, excluded: &[String]) -> c_int {
    valkey_module::redis_command!(ctx, VERSION, version, VERSION_FLAGS, 0, 0, 0);
    if replicate::register_replay(ctx).is_err() {
        return raw::Status::Err as c_int;
    }
    for transition in Transition::ALL {
        let status = register_control(ctx, *transition, excluded);
        if status != raw::Status::Ok as c_int {
            return status;
        }
    }
    raw::Status::Ok as c_int
}

/// The commands the load arguments excluded (set once, at load).
static EXCLUDED: OnceLock<Vec<String>> = OnceLock::new();

/// The commands registered, as (name, flags): every command this module
/// can serve but the `excluded`, in `EMQ.VERSION`'s order.
fn served(excluded: &[String]) -> impl Iterator<Item = (&'static str, &'static str)> {
    commands().filter(|(name, _)| !excluded.iter().any(|ex| ex == name))
}

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
            served(excluded)
                .map(|(name, _)| ValkeyValue::BulkString(name.to_string()))
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
        if name == VERSION || !commands().any(|(served, _)| served == name) {
            return Err(format!("EXCLUDE {name}: not a command it can leave out"));
        }
    }
    Ok(names)
}

/// Reads the load arguments, registers the commands, then puts them in
/// the ACL category `emq`.
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
    if register(ctx.ctx, excluded) != Status::Ok as c_int {
        return Status::Err;
    }
    match acl::categorise(
        ctx,
        served(excluded),
        &[
            (replicate::REPLAY, replicate::REPLAY_FLAGS),
            (replicate::REPLAY_ORDER, replicate::REPLAY_FLAGS),
        ],
    ) {
        Ok(()) => Status::Ok,
        Err(message) => {
            ctx.log_warning(&message);
            Status::Err
        }
    }
}

/// The module's entry point (`RedisModule_OnLoad`); `init` registers the
/// commands of the table above.
#[allow(missing_docs)]
mod table {
    use super::{init, valkey_module};

    // The module's own allocations (argument copies, the reply being
    // built, handles) live for one command; what the keyspace keeps is
    // allocated by the server itself. The server's wrapper (`ValkeyAlloc`)
    // would count each in `used_memory` at the cost of a
    // `malloc_usable_size` call, for memory freed before the command
    // returns; the system allocator is glibc's malloc even under a
    // preloaded jemalloc (the server loads modules with RTLD_DEEPBIND), and
    // cost about a sixth of the server's CPU. mimalloc, linked in, cut
    // wire 6's server CPU per job by 8% (docs/benchmarks/2026-12-02.md, "A dedup key's cost").
    valkey_module! {
        name: "echomq",
        version: 1,
        allocator: (mimalloc::MiMalloc, mimalloc::MiMalloc),
        data_types: [],
        init: init,
        commands: [],
    }
}
