//! Over the worker in hand: CANCEL, EXTEND, STALLED.CHECK — each the
//! native twin of its script in `crates/echomq/scripts/`, same checks in the
//! same order, same writes, replies and events.

use crate::server::args::{Args, Opt, bad_state, job_state, refuse};
use crate::server::clock::{after, now_ms};
use crate::server::key::{Bound, Kind};
use crate::server::reply::{bulk, int};
use crate::server::store::metrics::Tally;
use crate::server::store::{Store, number};
use echomq_protocol::arg::{DEFAULT_STALLED_LIMIT, TRIM_PER_TRANSITION};
use echomq_protocol::metrics::Outcome;
use echomq_protocol::{JobState, QueueKey};
use valkey_module::{Context, ValkeyResult, ValkeyString, ValkeyValue};

/// `EMQ.CANCEL base id` → `cancelled` (was waiting) or `requested` (is active).
pub(crate) fn cancel(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    args.no_options(1)?;

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    let key = store.job_key(&id);
    let ([state, dedup, mode, group], waited) = store.job_fields_waited(
        conf.waited,
        &key,
        [b"state", b"dedup", b"dedup_mode", b"group"],
    )?;
    let Some(state) = state else {
        return Err(refuse("NOJOB"));
    };
    // A pending job may leave by `fifo`, whatever the queue's groups.
    store.expect_types(&[
        (QueueKey::Cancelled, Kind::Zset),
        (QueueKey::Events, Kind::Stream),
        (QueueKey::Fifo, Kind::List),
    ])?;
    if state == b"active" {
        store.hset(&key, &[b"cancel", b"1"])?;
        store.publish_cancel(&id)?;
        store.emit(
            conf.events_max,
            &[b"event", b"cancel_requested", b"id", &id],
        )?;
        return Ok(bulk("requested"));
    }
    let from = match job_state(&state) {
        Some(waiting @ (JobState::Scheduled | JobState::Pending)) => waiting.set_key(),
        _ => return Err(bad_state(&state)),
    };
    if dedup.is_some() {
        store.expect_owner_type()?;
    }
    let group = group.filter(|_| conf.groups && from == QueueKey::Pending);
    store.read_group(conf.groups, false, group.as_deref())?;
    let now = now_ms();
    let now_s = now.to_string();
    store.expect_metrics_types(&conf, now)?;
    if from == QueueKey::Pending {
        store.leave_pending(conf.groups, &id, group.as_deref())?;
    } else {
        store.zrem(store.key(from), &[&id])?;
    }
    store.zadd(store.key(QueueKey::Cancelled), &[(now as i64, &id)])?;
    store.hset(
        &key,
        &[b"state", b"cancelled", b"finished_at", now_s.as_bytes()],
    )?;
    store.emit(conf.events_max, &[b"event", b"cancelled", b"id", &id])?;
    store.publish_outcome(waited.as_deref(), &id, &[b"cancelled"])?;
    store.release_dedup(&id, dedup.as_deref(), mode.as_deref())?;
    store.trim_finished(&conf, QueueKey::Cancelled, TRIM_PER_TRANSITION as i64, now)?;
    if conf.metrics {
        // A waiting job: counted, with no wait or run sample.
        let mut tally = Tally::default();
        tally.outcome(Outcome::Cancelled);
        store.record_metrics(&conf, &tally, now)?;
    }
    Ok(bulk("cancelled"))
}

/// `EMQ.EXTEND base id token ms` → `[deadline_ms, cancel 0|1]`.
pub(crate) fn extend(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    let token = args.int(2, "token", 0)?;
    let lease = args.int(3, "ms", 1)?;
    args.no_options(3)?;

    let store = Store::new(ctx, args.base());
    let key = store.fenced(&id, token)?;
    store.expect_types(&[(QueueKey::Active, Kind::Zset)])?;
    let deadline = after(now_ms(), lease);
    store.zadd(store.key(QueueKey::Active), &[(deadline as i64, &id)])?;
    let cancel = store.hget(&key, b"cancel")?.as_deref() == Some(b"1");
    Ok(ValkeyValue::Array(vec![
        int(deadline as i64),
        int(i64::from(cancel)),
    ]))
}

/// `EMQ.STALLED.CHECK base max_stalls [LIMIT n]` → `[recovered, dead]`.
pub(crate) fn stalled_check(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let max_stalls = args.int(1, "max_stalls", 0)?;
    let opts = args.options(2, &[("LIMIT", Opt::int("limit", 1))])?;

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    store.expect_types(&[
        (QueueKey::Seq, Kind::String),
        (QueueKey::Pending, Kind::Zset),
        (QueueKey::Active, Kind::Zset),
        (QueueKey::Dead, Kind::Zset),
        (QueueKey::Cancelled, Kind::Zset),
        (QueueKey::Completed, Kind::Zset),
        (QueueKey::Events, Kind::Stream),
        (QueueKey::Signal, Kind::Zset),
    ])?;
    let now = now_ms();
    let now_s = now.to_string();
    let limit = opts.int("LIMIT").unwrap_or(DEFAULT_STALLED_LIMIT);
    let active = store.key(QueueKey::Active);
    let expired = store.zrange(active, Bound::LOWEST, Bound::below(now as f64), limit)?;
    let (mut recovered, mut dead, mut cancelled) = (0i64, 0i64, 0i64);
    // Every job hash is read before the first write: a key of the wrong
    // type refuses the whole call.
    if conf.groups {
        store.expect_group_keys(true, true)?;
    }
    let mut jobs = Vec::with_capacity(expired.len());
    for id in &expired {
        let key = store.job_key(id);
        // A dead job's outcome names its failures: read where someone waits.
        let ([stalls, priority, cancel, failures], [dedup, mode, group, waited], timing) =
            if conf.waited {
                store.job_fields_timed(
                    &conf,
                    &key,
                    [b"stalls", b"priority", b"cancel", b"failures"],
                )?
            } else {
                let ([stalls, priority, cancel], extra, timing) =
                    store.job_fields_timed(&conf, &key, [b"stalls", b"priority", b"cancel"])?;
                ([stalls, priority, cancel, None], extra, timing)
            };
        if let Some(group) = &group {
            store.read_lane(group)?;
        }
        let outcome = [failures, waited];
        jobs.push((
            [stalls, priority, cancel, dedup, mode, group],
            outcome,
            timing,
        ));
    }
    if jobs
        .iter()
        .any(|([_, _, _, dedup, _, _], _, _)| dedup.is_some())
    {
        store.expect_owner_type()?;
    }
    store.expect_metrics_types(&conf, now)?;
    let mut tally = Tally::default();
    for (id, ([stalls, priority, cancel, dedup, mode, group], [failures, waited], timing)) in
        expired.iter().zip(jobs)
    {
        let key = store.job_key(id);
        let stalls = number(stalls.as_deref()).unwrap_or(0) + 1;
        let stalls_s = stalls.to_string();
        store.zrem(active, &[id])?;
        if let Some(group) = &group {
            store.leave_active(conf.group_flow, group, now)?;
        }
        let outcome = if cancel.as_deref() == Some(b"1") {
            store.hset(
                &key,
                &[
                    b"state",
                    b"cancelled",
                    b"stalls",
                    stalls_s.as_bytes(),
                    b"finished_at",
                    now_s.as_bytes(),
                ],
            )?;
            store.zadd(store.key(QueueKey::Cancelled), &[(now as i64, id)])?;
            store.emit(conf.events_max, &[b"event", b"cancelled", b"id", id])?;
            store.publish_outcome(waited.as_deref(), id, &[b"cancelled"])?;
            store.release_dedup(id, dedup.as_deref(), mode.as_deref())?;
            cancelled += 1;
            Outcome::Cancelled
        } else if stalls > max_stalls as i64 {
            store.hset(
                &key,
                &[
                    b"state",
                    b"dead",
                    b"stalls",
                    stalls_s.as_bytes(),
                    b"error",
                    b"stalled",
                    b"finished_at",
                    now_s.as_bytes(),
                ],
            )?;
            store.zadd(store.key(QueueKey::Dead), &[(now as i64, id)])?;
            store.emit(
                conf.events_max,
                &[b"event", b"stalled", b"id", id, b"to", b"dead"],
            )?;
            let failures = failures.as_deref().unwrap_or(b"0");
            store.publish_outcome(waited.as_deref(), id, &[b"dead", failures, b"stalled"])?;
            store.release_dedup(id, dedup.as_deref(), mode.as_deref())?;
            dead += 1;
            Outcome::Dead
        } else {
            let priority = number(priority.as_deref()).unwrap_or(0);
            store.push_pending(conf.groups, id, priority, group.as_deref(), now)?;
            store.hset(
                &key,
                &[
                    b"state",
                    b"pending",
                    b"stalls",
                    stalls_s.as_bytes(),
                    b"run_at",
                    now_s.as_bytes(),
                ],
            )?;
            store.emit(
                conf.events_max,
                &[b"event", b"stalled", b"id", id, b"to", b"pending"],
            )?;
            recovered += 1;
            Outcome::Stalled
        };
        if conf.metrics {
            tally.finished(outcome, timing, now as i64);
        }
    }
    let per = TRIM_PER_TRANSITION as i64;
    // Every set, every call (docs/protocol.md, "Retention by age").
    store.trim_finished(&conf, QueueKey::Completed, per, now)?;
    store.trim_finished(&conf, QueueKey::Dead, per * dead.max(1), now)?;
    store.trim_finished(&conf, QueueKey::Cancelled, per * cancelled.max(1), now)?;
    store.record_metrics(&conf, &tally, now)?;
    if recovered > 0 {
        store.signal(0)?;
    } else if !expired.is_empty() {
        store.freed(&conf)?;
    }
    Ok(ValkeyValue::Array(vec![int(recovered), int(dead)]))
}
