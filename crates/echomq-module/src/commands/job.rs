//! Over one job: UPDATE, PROGRESS, LOG, REMOVE, REPROCESS, REQUEUE, GET,
//! OUTCOME (and its bulk form) —
//! each the native twin of its script in `crates/echomq/scripts/`, same
//! checks in the same order, same writes, replies and events. The client
//! sends them from `Jobs` (`queue.jobs()`).

use crate::server::args::{Args, Opt, bulk_groups, job_state, refuse};
use crate::server::clock::now_ms;
use crate::server::key::Kind;
use crate::server::reply::bulk;
use crate::server::reply::int;
use crate::server::store::Store;
use crate::server::store::{Reply, number};
use echomq_protocol::arg::{DEFAULT_LOG_KEEP, FLOW_CHECKUP_MS};
use echomq_protocol::{JobState, QueueKey};
use valkey_module::{Context, ValkeyError, ValkeyResult, ValkeyString, ValkeyValue};

/// `EMQ.UPDATE base id payload`: replaces the payload, in any state.
pub(crate) fn update(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    let payload = args.text(2, "payload")?;
    args.no_options(2)?;

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    let key = store.job_key(&id);
    if store.hget(&key, b"state")?.is_none() {
        return Err(refuse("NOJOB"));
    }
    store.expect_types(&[(QueueKey::Events, Kind::Stream)])?;
    store.hset(&key, &[b"payload", &payload])?;
    store.emit(conf.events_max, &[b"event", b"updated", b"id", &id])?;
    Ok(ValkeyValue::SimpleStringStatic("OK"))
}

/// `EMQ.PROGRESS base id token value`: the holder writes progress (fenced).
pub(crate) fn progress(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    let token = args.int(2, "token", 0)?;
    let value = args.text(3, "value")?;
    args.no_options(3)?;

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    let key = store.fenced(&id, token)?;
    store.expect_types(&[(QueueKey::Events, Kind::Stream)])?;
    store.hset(&key, &[b"progress", &value])?;
    store.emit(
        conf.events_max,
        &[b"event", b"progress", b"id", &id, b"progress", &value],
    )?;
    Ok(ValkeyValue::SimpleStringStatic("OK"))
}

/// `EMQ.LOG base id line [KEEP n]` → the log's length; sets the queue's
/// logs mark to `1` (docs/protocol.md, "The logs mark").
pub(crate) fn log(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    let line = args.text(2, "line")?;
    let opts = args.options(3, &[("KEEP", Opt::int("keep", 1))])?;
    let keep = opts.int("KEEP").unwrap_or(DEFAULT_LOG_KEEP) as i64;

    let store = Store::new(ctx, args.base());
    if store.hget(&store.job_key(&id), b"state")?.is_none() {
        return Err(refuse("NOJOB"));
    }
    let logs = store.logs_key(&id);
    store.expect_type_of(&logs, Kind::List)?;
    // The queue's logs mark: retention deletes log keys from now on.
    let meta = store.key(QueueKey::Meta);
    store.expect_type_of(meta, Kind::Hash)?;
    if store.hget(meta, b"logs")?.as_deref() != Some(b"1") {
        store.hset(meta, &[b"logs", b"1"])?;
    }
    let mut length = store.write("RPUSH", &[&logs, &line])?.int();
    if length > keep {
        let start = (length - keep).to_string();
        store.write("LTRIM", &[&logs, start.as_bytes(), b"-1"])?;
        length = keep;
    }
    Ok(int(length))
}

/// `EMQ.REMOVE base id [FORCE]` → 1 removed, 0 when absent.
pub(crate) fn remove(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    let opts = args.options(2, &[("FORCE", Opt::Flag)])?;

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    let key = store.job_key(&id);
    let ([state, dedup, mode, group], waited, dependents) = store.job_fields_waited(
        (conf.waited, conf.flows),
        &key,
        [b"state", b"dedup", b"dedup_mode", b"group"],
    )?;
    let Some(state) = state else {
        return Ok(int(0));
    };
    let active = state == b"active";
    if active && !opts.has("FORCE") {
        return Err(refuse("BADSTATE active"));
    }
    // A pending job may leave by `fifo`, whatever the queue's groups.
    store.expect_types(&[
        (QueueKey::Events, Kind::Stream),
        (QueueKey::Fifo, Kind::List),
    ])?;
    if active {
        store.expect_freed_types(&conf)?;
    }
    if dedup.is_some() {
        store.expect_owner_type()?;
    }
    let pending = state == b"pending";
    let group = group.filter(|_| conf.groups && (pending || active));
    store.read_group(conf.groups, true, group.as_deref())?;
    store.open_outbox(&conf)?;
    let undecided = job_state(&state).is_some_and(|state| !state.is_finished());
    let due = match undecided {
        true => store.resolution_due(conf.flows, &id, dependents.as_deref(), false)?,
        false => None,
    };
    if pending {
        store.leave_pending(conf.groups, &id, group.as_deref())?;
    } else if let Some(set) = job_state(&state).map(JobState::set_key) {
        store.zrem(store.key(set), &[&id])?;
    }
    store.del(&[&key, &store.logs_key(&id)]);
    // A finished job's outcome was published when it was decided.
    if undecided {
        store.publish_outcome(waited.as_deref(), &id, &[b"removed"])?;
        store.write_resolution(&id, due.as_ref(), b"removed", None, now_ms())?;
    }
    store.forget_flow_keys(conf.flows, std::slice::from_ref(&id))?;
    if active {
        if let Some(group) = &group {
            store.leave_active(conf.group_flow, group, now_ms())?;
        }
        store.publish_cancel(&id)?;
        store.freed(&conf)?;
    }
    store.release_dedup(&id, dedup.as_deref(), mode.as_deref())?;
    store.emit(conf.events_max, &[b"event", b"removed", b"id", &id])?;
    Ok(int(1))
}

/// `EMQ.REPROCESS base id`: a finished job → pending, its counters cleared
/// (`claims` kept).
pub(crate) fn reprocess(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    args.no_options(1)?;

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    let (key, from, priority, group) = store.pending_again(
        (conf.groups, conf.timed),
        &id,
        &[JobState::Completed, JobState::Dead, JobState::Cancelled],
    )?;
    // On a flows queue, a job with dependencies still `wait` goes back to
    // blocked (docs/protocol.md, "The state blocked").
    let left = match conf.flows {
        true => number(store.hget(&key, b"deps_left")?.as_deref()).unwrap_or(0),
        false => 0,
    };
    if left > 0 {
        store.expect_types(&[(QueueKey::Blocked, Kind::Zset)])?;
    }
    let now = now_ms();
    store.zrem(store.key(from.set_key()), &[&id])?;
    if left > 0 {
        store.keep_deadline(conf.timed, &id)?;
    } else {
        store.back_to_pending(&conf, &id, priority, group.as_deref(), now)?;
    }
    store.hdel(
        &key,
        &[
            b"failures",
            b"stalls",
            b"error",
            b"result",
            b"progress",
            b"cancel",
            b"finished_at",
            b"reason",
        ],
    )?;
    let state: &[u8] = if left > 0 { b"blocked" } else { b"pending" };
    let now_s = now.to_string();
    store.hset(&key, &[b"state", state, b"run_at", now_s.as_bytes()])?;
    store.emit(conf.events_max, &[b"event", b"reprocessed", b"id", &id])?;
    if left > 0 {
        let checkup = now.saturating_add(FLOW_CHECKUP_MS) as i64;
        store.zadd(store.key(QueueKey::Blocked), &[(checkup, id.as_slice())])?;
        let deps = left.to_string();
        store.emit(
            conf.events_max,
            &[b"event", b"blocked", b"id", &id, b"deps", deps.as_bytes()],
        )?;
    } else {
        store.signal(0)?;
    }
    Ok(ValkeyValue::SimpleStringStatic("OK"))
}

/// The job fields in protocol order, and which of them are integers.
const FIELDS: [(&str, bool); 31] = [
    ("state", false),
    ("payload", false),
    ("priority", true),
    ("max_attempts", true),
    ("claims", true),
    ("failures", true),
    ("stalls", true),
    ("created_at", true),
    ("run_at", true),
    ("claimed_at", true),
    ("finished_at", true),
    ("worker", false),
    ("progress", false),
    ("result", false),
    ("error", false),
    ("cancel", true),
    ("repeat", false),
    ("dedup", false),
    ("dedup_mode", false),
    ("group", false),
    ("traceparent", false),
    ("time_limit", true),
    ("start_by", true),
    ("reason", false),
    ("lifo", true),
    ("flow", false),
    ("ref", false),
    ("on_failure", false),
    ("deps", true),
    ("deps_left", true),
    ("dependents", true),
];

/// `EMQ.GET base id`.
pub(crate) fn get(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    args.no_options(1)?;
    let store = Store::reader(ctx, args.base());
    let key = store.job_key(&id);
    let mut hmget: Vec<&[u8]> = vec![&key];
    hmget.extend(FIELDS.iter().map(|(name, _)| name.as_bytes()));
    let values = store.read("HMGET", &hmget)?.items();
    if !matches!(values.first(), Some(Reply::Bytes(_))) {
        return Ok(ValkeyValue::Null);
    }
    let mut reply = Vec::new();
    for ((name, integer), value) in FIELDS.iter().zip(values) {
        let Some(value) = value.bytes() else {
            continue;
        };
        reply.push(bulk(*name));
        match number(Some(&value)) {
            Some(n) if *integer => reply.push(int(n)),
            _ => reply.push(bulk(value)),
        }
    }
    let logs = store.read("LLEN", &[&store.logs_key(&id)])?.int();
    reply.extend([bulk("id"), bulk(id), bulk("logs"), int(logs)]);
    Ok(ValkeyValue::Array(reply))
}

/// `EMQ.REQUEUE base id`: a scheduled or active job → pending now.
pub(crate) fn requeue(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    args.no_options(1)?;

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    let (key, from, priority, group) = store.pending_again(
        (conf.groups, conf.timed),
        &id,
        &[JobState::Scheduled, JobState::Active],
    )?;
    let now = now_ms();
    store.zrem(store.key(from.set_key()), &[&id])?;
    if let Some(group) = group.as_deref().filter(|_| from == JobState::Active) {
        store.leave_active(conf.group_flow, group, now)?;
    }
    store.back_to_pending(&conf, &id, priority, group.as_deref(), now)?;
    let now = now.to_string();
    store.hset(&key, &[b"state", b"pending", b"run_at", now.as_bytes()])?;
    store.hdel(&key, &[b"cancel"])?;
    if from == JobState::Active {
        store.publish_cancel(&id)?;
    }
    store.emit(conf.events_max, &[b"event", b"requeued", b"id", &id])?;
    store.signal(0)?;
    Ok(ValkeyValue::SimpleStringStatic("OK"))
}

/// `EMQ.OUTCOME base id`: a finished job's outcome; an unfinished one is
/// marked waited for (the job and the queue), nil for an absent one.
pub(crate) fn outcome(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    args.no_options(1)?;
    let store = Store::new(ctx, args.base());
    let mut replies = outcomes_of(&store, &[id])?;
    Ok(replies.pop().unwrap_or(ValkeyValue::Null))
}

/// `EMQ.OUTCOME.BULK base id [id …]`: OUTCOME of each id, in order.
pub(crate) fn outcome_bulk(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let ids = (1..=bulk_groups(args.len(), 1)?)
        .map(|n| args.id(n, false))
        .collect::<Result<Vec<_>, _>>()?;
    let store = Store::new(ctx, args.base());
    Ok(ValkeyValue::Array(outcomes_of(&store, &ids)?))
}

/// OUTCOME's reply for each of `ids`, in order: a finished job's outcome,
/// nil for an absent one, `[state]` for an unfinished one, which gets
/// `waited` (when not 1) and the queue its mark (once, when not 1). Every
/// key is read before the first write, so a key of the wrong type refuses
/// the call with nothing written. A job's `state` and `waited` are read
/// first, and its outcome's fields only when it is finished: an unfinished
/// job (what a wait begun in time finds) costs two fields read, not five.
fn outcomes_of(store: &Store, ids: &[Vec<u8>]) -> Result<Vec<ValkeyValue>, ValkeyError> {
    let meta = store.key(QueueKey::Meta);
    let mut marked = store.hget(meta, b"waited")?.as_deref() == Some(b"1");
    let read = ids
        .iter()
        .map(|id| read_outcome(store, store.job_key(id)))
        .collect::<Result<Vec<_>, ValkeyError>>()?;
    let mut replies = Vec::with_capacity(ids.len());
    for (reply, unfinished) in read {
        if let Some(Unfinished { key, waited }) = unfinished {
            if !waited {
                store.hset(&key, &[b"waited", b"1"])?;
            }
            if !marked {
                store.hset(meta, &[b"waited", b"1"])?;
                marked = true;
            }
        }
        replies.push(reply);
    }
    Ok(replies)
}

/// An unfinished job [`read_outcome`] read: its key, and whether its
/// `waited` is 1 already.
struct Unfinished {
    key: Vec<u8>,
    waited: bool,
}

/// OUTCOME's reply for the job at `key`, and the job when it is unfinished
/// (it is then marked waited for); writes nothing.
fn read_outcome(
    store: &Store,
    key: Vec<u8>,
) -> Result<(ValkeyValue, Option<Unfinished>), ValkeyError> {
    let [state, waited] = store.hmget_n(&key, [b"state", b"waited"])?;
    let Some(state) = state else {
        return Ok((ValkeyValue::Null, None));
    };
    let reply = match job_state(&state) {
        Some(JobState::Completed) => {
            let [result] = store.hmget_n(&key, [b"result"])?;
            vec![bulk(state), bulk(result.unwrap_or_default())]
        }
        Some(JobState::Dead) => {
            let [error, failures] = store.hmget_n(&key, [b"error", b"failures"])?;
            vec![
                bulk(state),
                bulk(error.unwrap_or_default()),
                int(number(failures.as_deref()).unwrap_or(0)),
            ]
        }
        Some(JobState::Cancelled) => vec![bulk(state)],
        _ => {
            let waited = waited.as_deref() == Some(b"1");
            let reply = ValkeyValue::Array(vec![bulk(state)]);
            return Ok((reply, Some(Unfinished { key, waited })));
        }
    };
    Ok((ValkeyValue::Array(reply), None))
}
