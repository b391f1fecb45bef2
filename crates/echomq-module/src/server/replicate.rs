//! How wire 6 replicates: one command per call, never its effects.
//!
//! Every `EMQ.*` command runs through [`serve`]. A call that changed a key
//! is replicated (to replicas and the AOF) as one command,
//!
//! ```text
//! EMQ.REPLAY <base> <command> <now> <event> <left> <the call's arguments after base…>
//! ```
//!
//! carrying what the call read or chose outside the keyspace: `now`, the
//! clock it read (`-` when it read none); `event`, the id of the first
//! event it added to the queue's stream (`-` when none; the call's other
//! events take the ids after it, in order); `left`, the stream's length
//! after its last event when its `MAXLEN ~` trim removed entries (`-`
//! otherwise). Everything else a call does follows from the keyspace, its
//! arguments and `now` (a token from the job's fields and `now`, an id `*`
//! the next counter value), so the replay is the same call, with the same effects, the way `EXPIRE`
//! replicates as `PEXPIREAT`.
//!
//! But for one thing: the order the server lists a hashtable-encoded hash
//! in follows its hash seed, which each server process draws. A call that
//! took a job's own-queue dependents in the order of a dependents hash of
//! more than one field ([`record_order`]) replicates as
//!
//! ```text
//! EMQ.REPLAY.ORDER <base> <command> <now> <event> <left> <n> (<id> <cursor> <k> <field>…)… <args…>
//! ```
//!
//! and its replay takes those fields in that order ([`carried_order`]);
//! `cursor` is the `HSCAN` cursor a FLOW.SETTLE wrote (`-` for none),
//! which means nothing to a replica's own table.
//!
//! [`replay`] serves `EMQ.REPLAY`: only to the primary's replication link
//! or an AOF being loaded (a client's is refused before it is read, so no
//! client forges the clock). It runs the named command's handler with the
//! carried clock, adds its events at the carried ids without trimming, then
//! trims the stream to exactly `left`, and replicates itself verbatim (a
//! replica's own AOF). A call that changed nothing (a read, a refusal, an
//! empty claim) replicates nothing.
#![allow(unsafe_code)]

use crate::server::args::{refuse, reply_text};
use crate::server::key::{EventId, Handle, Str};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::ffi::CString;
use std::os::raw::c_int;
use std::sync::Mutex;
use valkey_module::{
    Context, ContextFlags, ValkeyError, ValkeyResult, ValkeyString, decode_args, raw,
};

/// A command's handler, as the registration table names it.
pub(crate) type Handler = fn(&Context, Vec<ValkeyString>) -> ValkeyResult;

/// The server's entry point of a command.
pub(crate) type Entry =
    extern "C" fn(*mut raw::RedisModuleCtx, *mut *mut raw::RedisModuleString, c_int) -> c_int;

/// The internal command a call replicates as.
pub(crate) const REPLAY: &str = "EMQ.REPLAY";
/// The internal command a call replicates as when it carries the order it
/// took dependents' fields in.
pub(crate) const REPLAY_ORDER: &str = "EMQ.REPLAY.ORDER";
/// Its flags: it writes; `deny-oom` is not needed (a primary's stream and
/// an AOF are never refused for memory).
pub(crate) const REPLAY_FLAGS: &str = "write";

/// What the running call read and chose, and whether it wrote.
#[derive(Default)]
struct Call {
    /// A replay: the clock and the event ids are the carried ones, and the
    /// stream is not trimmed by length as events are added.
    replay: bool,
    /// The clock, once read (or carried).
    now: Option<u64>,
    /// The id of the call's first event.
    first_event: Option<EventId>,
    /// The id the call's next event takes (after its first, or carried).
    next_event: Option<EventId>,
    /// Whether an event's `MAXLEN ~` trim removed entries.
    trimmed: bool,
    /// The stream's length after the last event.
    events_len: usize,
    /// Whether the call changed a key.
    wrote: bool,
    /// The orders the call took dependents hashes' fields in (recorded by
    /// a live call, carried to a replay), first taken first.
    orders: VecDeque<Order>,
}

/// The fields of job `id`'s dependents hash a call looked at, in the order
/// it looked at them, and the cursor FLOW.SETTLE left in its resolution.
pub(crate) struct Order {
    id: Vec<u8>,
    /// FLOW.SETTLE's next `HSCAN` cursor; `None` for COMPLETE.
    pub cursor: Option<Vec<u8>>,
    /// The fields, in the order the call looked at them.
    pub fields: Vec<Vec<u8>>,
}

thread_local! {
    /// The running call (commands run on the server's main thread, one at a
    /// time; a module command never runs inside another).
    static CALL: RefCell<Call> = RefCell::new(Call::default());
}

/// The server's clock for this call, in unix ms: read once, at first use,
/// and the same for the rest of the call; a replay's is the carried one.
pub(crate) fn now() -> u64 {
    CALL.with(|call| {
        *call
            .borrow_mut()
            .now
            .get_or_insert_with(crate::server::clock::read)
    })
}

/// Records that the call changed a key: it will be replicated.
pub(crate) fn wrote() {
    CALL.with(|call| call.borrow_mut().wrote = true);
}

/// The id the call's next event must take (`None`: the stream's next,
/// `XADD *`, for a live call's first event), and whether events are trimmed
/// by length as they are added (a live call's).
pub(crate) fn next_event() -> (Option<EventId>, bool) {
    CALL.with(|call| {
        let call = call.borrow();
        (call.next_event, !call.replay)
    })
}

/// Records an event the call added at `id`: the next takes the id after
/// it. `trimmed` when its trim removed entries; `len` the stream's length.
pub(crate) fn event_added(id: EventId, trimmed: bool, len: usize) {
    CALL.with(|call| {
        let mut call = call.borrow_mut();
        call.first_event.get_or_insert(id);
        call.next_event = Some(id.next());
        call.trimmed |= trimmed;
        call.events_len = len;
        call.wrote = true;
    });
}

/// A live call took job `id`'s own-queue dependents by looking at
/// `fields` of its dependents hash, in this order (the server's listing,
/// which a replica's differs from), and FLOW.SETTLE left `cursor` in its
/// resolution: the call replicates them. Nothing on a replay, which
/// replicates itself verbatim.
pub(crate) fn record_order(id: &[u8], cursor: Option<Vec<u8>>, fields: Vec<Vec<u8>>) {
    CALL.with(|call| {
        let mut call = call.borrow_mut();
        if !call.replay {
            call.orders.push_back(Order {
                id: id.to_vec(),
                cursor,
                fields,
            });
        }
    });
}

/// On a replay, the fields of job `id`'s dependents hash its primary
/// looked at, in its order, and the cursor it left, when the next order it
/// carried is `id`'s; `None` otherwise (a live call, or a hash of one
/// field: list it).
pub(crate) fn carried_order(id: &[u8]) -> Option<Order> {
    CALL.with(|call| {
        let mut call = call.borrow_mut();
        if !call.replay || call.orders.front().is_none_or(|order| order.id != id) {
            return None;
        }
        call.orders.pop_front()
    })
}

/// Runs `handler` as the command the server called with `argv`, then
/// replicates the call as one `EMQ.REPLAY` (`EMQ.REPLAY.ORDER` with the
/// orders it recorded) when it changed a key.
pub(crate) fn serve(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: Handler,
) -> c_int {
    let context = Context::new(ctx);
    CALL.with(|call| *call.borrow_mut() = Call::default());
    let response = handler(&context, decode_args(ctx, argv, argc));
    let call = CALL.with(|call| std::mem::take(&mut *call.borrow_mut()));
    if call.wrote {
        replicate(&context, argv, argc, &call);
    }
    context.reply(response) as c_int
}

/// `EMQ.REPLAY base command now event left args…` of the call `argv`.
fn replicate(ctx: &Context, argv: *mut *mut raw::RedisModuleString, argc: c_int, call: &Call) {
    let args = arguments(argv, argc);
    // A call that wrote got past its base key.
    let [command, base, rest @ ..] = args else {
        return;
    };
    let dash = || Str::name(b"-");
    let now = call.now.map_or_else(dash, |now| Str::int(ctx, now as i64));
    let event = call
        .first_event
        .map_or_else(dash, |id| Str::new(ctx, id.to_string().as_bytes()));
    let left = if call.trimmed {
        Str::int(ctx, call.events_len as i64)
    } else {
        dash()
    };
    let orders = order_args(ctx, &call.orders);
    let mut ptrs = Vec::with_capacity(args.len() + 4 + orders.len());
    ptrs.extend([*base, *command, now.ptr(), event.ptr(), left.ptr()]);
    ptrs.extend(orders.iter().map(Str::ptr));
    ptrs.extend_from_slice(rest);
    let name = if orders.is_empty() {
        c"EMQ.REPLAY"
    } else {
        c"EMQ.REPLAY.ORDER"
    };
    // SAFETY: a live context, a command name, the `v` format and an array
    // of live strings (the call's own arguments, which the server keeps
    // until the command returns, and ours) with its length; the server
    // takes references.
    unsafe {
        api(raw::RedisModule_Replicate)(
            ctx.ctx,
            name.as_ptr(),
            c"v".as_ptr(),
            ptrs.as_ptr(),
            ptrs.len(),
        )
    };
}

/// `EMQ.REPLAY.ORDER`'s part after `left`: `n`, then each order's id, its
/// cursor (`-` for none), its number of fields and the fields; nothing
/// when the call recorded none.
fn order_args(ctx: &Context, orders: &VecDeque<Order>) -> Vec<Str> {
    if orders.is_empty() {
        return Vec::new();
    }
    let mut out = vec![Str::int(ctx, orders.len() as i64)];
    for order in orders {
        out.push(Str::new(ctx, &order.id));
        out.push(Str::new(ctx, order.cursor.as_deref().unwrap_or(b"-")));
        out.push(Str::int(ctx, order.fields.len() as i64));
        out.extend(order.fields.iter().map(|field| Str::new(ctx, field)));
    }
    out
}

/// The call's arguments as the server passed them.
fn arguments<'a>(
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> &'a [*mut raw::RedisModuleString] {
    if argv.is_null() {
        return &[];
    }
    // SAFETY: the server passes `argc` live strings at `argv`, kept until
    // the command returns; the slice does not outlive the command.
    unsafe { std::slice::from_raw_parts(argv, usize::try_from(argc).unwrap_or(0)) }
}

/// One of the API's function pointers (filled in by `RedisModule_Init`
/// before any command runs).
fn api<T>(pointer: Option<T>) -> T {
    pointer.expect("a function of the server's module API is missing")
}

/// The handlers by command name, for [`replay`] (set at load).
static HANDLERS: Mutex<Vec<(&'static str, Handler)>> = Mutex::new(Vec::new());

/// Registers `name` with `flags` (its base key its first and only key),
/// served by `entry`, which calls [`serve`] with `handler`.
pub(crate) fn register(
    ctx: *mut raw::RedisModuleCtx,
    name: &'static str,
    flags: &str,
    entry: Entry,
    handler: Handler,
) -> Result<(), ()> {
    create(ctx, name, flags, entry)?;
    HANDLERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((name, handler));
    Ok(())
}

/// Registers `EMQ.REPLAY` and `EMQ.REPLAY.ORDER`.
pub(crate) fn register_replay(ctx: *mut raw::RedisModuleCtx) -> Result<(), ()> {
    create(ctx, REPLAY, REPLAY_FLAGS, replay)?;
    create(ctx, REPLAY_ORDER, REPLAY_FLAGS, replay)
}

fn create(ctx: *mut raw::RedisModuleCtx, name: &str, flags: &str, entry: Entry) -> Result<(), ()> {
    let name = CString::new(name).map_err(drop)?;
    let flags = CString::new(flags).map_err(drop)?;
    // SAFETY: called during `OnLoad` with its context; the server copies
    // the name and flags.
    let status = unsafe {
        api(raw::RedisModule_CreateCommand)(
            ctx,
            name.as_ptr(),
            Some(entry),
            flags.as_ptr(),
            1,
            1,
            1,
        )
    };
    if status == raw::Status::Ok as c_int {
        Ok(())
    } else {
        Err(())
    }
}

/// `EMQ.REPLAY base command now event left args…` and `EMQ.REPLAY.ORDER
/// base command now event left n (id cursor k field…)… args…`: see the
/// module's docs above.
extern "C" fn replay(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    let context = Context::new(ctx);
    let args = arguments(argv, argc);
    let ordered = args.first().is_some_and(|name| {
        let name = ValkeyString::new(None, *name);
        name.as_slice()
            .eq_ignore_ascii_case(REPLAY_ORDER.as_bytes())
    });
    let served = if ordered { REPLAY_ORDER } else { REPLAY };
    let response = replayed(&context, args, served);
    context.reply(response) as c_int
}

/// The orders at the head of `args` (`n`, then each one's id, cursor, `k`
/// and `k` fields), and the arguments after them.
fn carried_orders(
    args: &[*mut raw::RedisModuleString],
) -> Result<(VecDeque<Order>, &[*mut raw::RedisModuleString]), ValkeyError> {
    let bad = || refuse(format!("ERR {REPLAY_ORDER}: bad order"));
    let bytes = |ptr: *mut raw::RedisModuleString| ValkeyString::new(None, ptr).as_slice().to_vec();
    let count = |ptr: Option<&*mut raw::RedisModuleString>| {
        let text = bytes(*ptr.ok_or_else(bad)?);
        std::str::from_utf8(&text)
            .ok()
            .and_then(|t| t.parse::<usize>().ok())
            .ok_or_else(bad)
    };
    let mut rest = args;
    let n = count(rest.first())?;
    rest = &rest[1..];
    let mut orders = VecDeque::with_capacity(n.min(rest.len()));
    for _ in 0..n {
        let [id, cursor, k, tail @ ..] = rest else {
            return Err(bad());
        };
        // `-`, or an HSCAN cursor: digits.
        let cursor = match bytes(*cursor) {
            dash if dash == b"-" => None,
            digits if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) => Some(digits),
            _ => return Err(bad()),
        };
        let k = count(Some(k))?;
        if tail.len() < k {
            return Err(bad());
        }
        let fields: Vec<Vec<u8>> = tail[..k].iter().map(|ptr| bytes(*ptr)).collect();
        // Each a `<queue> <id>` field.
        if fields.iter().any(|field| !field.contains(&b' ')) {
            return Err(bad());
        }
        orders.push_back(Order {
            id: bytes(*id),
            cursor,
            fields,
        });
        rest = &tail[k..];
    }
    Ok((orders, rest))
}

fn replayed(ctx: &Context, args: &[*mut raw::RedisModuleString], served: &str) -> ValkeyResult {
    let from = ContextFlags::REPLICATED | ContextFlags::LOADING;
    if !ctx.get_flags().intersects(from) {
        return Err(refuse(format!(
            "ERR {served} is how a primary replicates an EMQ command: \
             only its replicas and an AOF being loaded may send it"
        )));
    }
    let [_, base, command, now, event, left, rest @ ..] = args else {
        return Err(ValkeyError::WrongArity);
    };
    let (orders, rest) = if served == REPLAY_ORDER {
        carried_orders(rest)?
    } else {
        (VecDeque::new(), rest)
    };
    let text = |ptr: *mut raw::RedisModuleString| ValkeyString::new(None, ptr);
    let command_name = text(*command);
    let handler = {
        let name = command_name.to_string_lossy();
        HANDLERS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|(served, _)| served.eq_ignore_ascii_case(&name))
            .map(|(_, handler)| *handler)
    };
    let Some(handler) = handler else {
        return Err(refuse(format!(
            "ERR {served} of a command this module does not serve: {}",
            reply_text(command_name.as_slice())
        )));
    };
    let number = |ptr: *mut raw::RedisModuleString, what: &str| {
        let value = text(ptr);
        match value.as_slice() {
            b"-" => Ok(None),
            bytes => std::str::from_utf8(bytes)
                .ok()
                .and_then(|t| t.parse::<u64>().ok())
                .map(Some)
                .ok_or_else(|| refuse(format!("ERR {served}: bad {what}"))),
        }
    };
    let now = number(*now, "now")?;
    let left = number(*left, "left")?;
    let event = match text(*event).as_slice() {
        b"-" => None,
        bytes => {
            Some(EventId::parse(bytes).ok_or_else(|| refuse(format!("ERR {served}: bad event")))?)
        }
    };
    CALL.with(|call| {
        *call.borrow_mut() = Call {
            replay: true,
            now,
            next_event: event,
            orders,
            ..Call::default()
        }
    });
    let mut call_args = Vec::with_capacity(rest.len() + 2);
    call_args.push(command_name);
    call_args.push(text(*base));
    call_args.extend(rest.iter().map(|ptr| ValkeyString::new(None, *ptr)));
    let response = handler(ctx, call_args);
    CALL.with(|call| *call.borrow_mut() = Call::default());
    if let Some(left) = left {
        let mut events = text(*base).as_slice().to_vec();
        events.extend_from_slice(b":");
        events.extend_from_slice(echomq_protocol::QueueKey::Events.name().as_bytes());
        Handle::open(ctx, &events, true).stream_trim_exact(left);
    }
    ctx.replicate_verbatim();
    response
}
