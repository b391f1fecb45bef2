//! Over the worker in hand: CANCEL, EXTEND, STALLED.CHECK — each the
//! native twin of its script in `crates/echomq/scripts/`, same checks in the
//! same order, same writes, replies and events.

use crate::server::args::{Args, Opt, bad_state, job_state, refuse};
use crate::server::clock::{after, now_ms};
use crate::server::key::{Bound, Kind};
use crate::server::reply::{bulk, int};
use crate::server::store::deadlines::{AtLimit, at_time_limit};
use crate::server::store::flow_resolve::{Decision, WaitingJob};
use crate::server::store::metrics::Tally;
use crate::server::store::outbox::dead_tail;
use crate::server::store::{Store, number, same_token};
use echomq_protocol::arg::{DEFAULT_STALLED_LIMIT, TRIM_PER_TRANSITION};
use echomq_protocol::metrics::Outcome;
use echomq_protocol::{JobState, QueueKey};
use valkey_module::{Context, ValkeyResult, ValkeyString, ValkeyValue};

/// `EMQ.CANCEL base id` → `cancelled` (was waiting or blocked) or `requested`
/// (is active).
pub(crate) fn cancel(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    args.no_options(1)?;

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    let key = store.job_key(&id);
    let ([state, dedup, mode, group], waited, dependents) = store.job_fields_waited(
        (conf.waited, conf.flows),
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
        Some(waiting @ (JobState::Scheduled | JobState::Pending | JobState::Blocked)) => {
            waiting.set_key()
        }
        _ => return Err(bad_state(&state)),
    };
    if dedup.is_some() {
        store.expect_owner_type()?;
    }
    let group = group.filter(|_| conf.groups && from == QueueKey::Pending);
    store.read_group(conf.groups, false, group.as_deref())?;
    let now = now_ms();
    store.expect_metrics_types(&conf, now)?;
    store.open_outbox(&conf)?;
    let due = store.resolution_due(conf.flows, &id, dependents.as_deref(), false)?;
    if from == QueueKey::Pending {
        store.leave_pending(conf.groups, &id, group.as_deref())?;
    } else {
        store.zrem(store.key(from), &[&id])?;
    }
    let job = WaitingJob {
        waited: waited.as_deref(),
        dedup: dedup.as_deref(),
        dedup_mode: mode.as_deref(),
        ..WaitingJob::default()
    };
    let decision = Decision {
        to: QueueKey::Cancelled,
        error: b"",
        reason: None,
        due: due.as_ref(),
    };
    let relay = store.decide_waiting(&conf, &id, &job, decision, now)?;
    if conf.metrics {
        // A waiting job: counted, with no wait or run sample.
        let mut tally = Tally::default();
        tally.outcome(Outcome::Cancelled);
        store.record_metrics(&conf, &tally, now)?;
    }
    Ok(bulk(if relay {
        "relay_cancelled"
    } else {
        "cancelled"
    }))
}

/// `EMQ.EXTEND base id token ms` → `[deadline_ms, cancel 0|1]`.
pub(crate) fn extend(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    let token = args.int(2, "token", 0)?;
    let lease = args.int(3, "ms", 1)?;
    args.no_options(3)?;

    let store = Store::new(ctx, args.base());
    // One HMGET: the fence, the cancel flag and the time limit.
    let [state, claims, claimed_at, cancel, time_limit] = store.hmget_n(
        &store.job_key(&id),
        [b"state", b"claims", b"claimed_at", b"cancel", b"time_limit"],
    )?;
    if state.as_deref() != Some(b"active")
        || !same_token(claims.as_deref(), claimed_at.as_deref(), token)
    {
        return Err(refuse("NOTACTIVE"));
    }
    store.expect_types(&[(QueueKey::Active, Kind::Zset)])?;
    let now = now_ms();
    let mut deadline = after(now, lease);
    if let (Some(limit), Some(claimed_at)) =
        (number(time_limit.as_deref()), number(claimed_at.as_deref()))
    {
        let ends = (claimed_at as f64 + limit as f64) as u64;
        if now >= ends {
            return Err(refuse("TIMELIMIT"));
        }
        deadline = deadline.min(ends);
    }
    store.zadd(store.key(QueueKey::Active), &[(deadline as i64, &id)])?;
    let cancel = cancel.as_deref() == Some(b"1");
    Ok(ValkeyValue::Array(vec![
        int(deadline as i64),
        int(i64::from(cancel)),
    ]))
}

/// `EMQ.STALLED.CHECK base max_stalls [LIMIT n] [RETRY_IN ms [ms …]]` →
/// `[recovered, dead, timed_out, expired]`.
pub(crate) fn stalled_check(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let max_stalls = args.int(1, "max_stalls", 0)?;
    let opts = args.options(
        2,
        &[
            ("LIMIT", Opt::int("limit", 1)),
            ("RETRY_IN", Opt::Delays { arg: "retry_in" }),
        ],
    )?;
    let delays = opts.delays("RETRY_IN").unwrap_or_default();

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    store.open_outbox(&conf)?;
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
    if conf.timed {
        store.expect_types(&[
            (QueueKey::Schedule, Kind::Zset),
            (QueueKey::Deadlines, Kind::Zset),
        ])?;
        if conf.flows {
            store.expect_types(&[(QueueKey::Blocked, Kind::Zset)])?;
        }
    }
    let now = now_ms();
    let now_s = now.to_string();
    let limit = opts.int("LIMIT").unwrap_or(DEFAULT_STALLED_LIMIT);
    let active = store.key(QueueKey::Active);
    let expired = store.zrange(active, Bound::LOWEST, Bound::below(now as f64), limit)?;
    let (mut recovered, mut dead, mut cancelled) = (0i64, 0i64, 0i64);
    let (mut timed_out, mut retried, mut limit_dead) = (0i64, 0i64, 0i64);
    // Every job hash is read before the first write: a key of the wrong
    // type refuses the whole call.
    if conf.groups {
        store.expect_group_keys(true, true)?;
    }
    let mut jobs = Vec::with_capacity(expired.len());
    for id in &expired {
        let key = store.job_key(id);
        // A dead job's outcome names its failures: read where someone waits
        // (or a resolution may).
        let (
            [stalls, priority, cancel, failures],
            [dedup, mode, group, waited, dependents],
            timing,
        ) = if conf.waited || conf.flows {
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
        // Its resolution, should the sweep decide it.
        let due = store.resolution_due(conf.flows, id, dependents.as_deref(), false)?;
        if let Some(group) = &group {
            store.read_lane(group)?;
        }
        // On a timed queue, whether its lease ran out at its time limit.
        let at_limit = if conf.timed {
            let [failures, max_attempts, time_limit, claimed_at] = store.hmget_n(
                &key,
                [b"failures", b"max_attempts", b"time_limit", b"claimed_at"],
            )?;
            let deadline = store.zscore(active, &store.text(id))?.unwrap_or(0.0);
            let time_limit = number(time_limit.as_deref()).map(|limit| limit as u64);
            at_time_limit(time_limit, number(claimed_at.as_deref()), deadline).then_some((
                failures,
                max_attempts,
                time_limit.unwrap_or(0),
            ))
        } else {
            None
        };
        let outcome = [failures, waited];
        jobs.push((
            [stalls, priority, cancel, dedup, mode, group],
            outcome,
            timing,
            at_limit,
            due,
        ));
    }
    let past = if conf.timed {
        store.read_past_deadlines(&conf, now, limit)?
    } else {
        Vec::new()
    };
    if jobs
        .iter()
        .any(|([_, _, _, dedup, _, _], _, _, _, _)| dedup.is_some())
        || past
            .iter()
            .any(|member| member.live && member.job.dedup.is_some())
    {
        store.expect_owner_type()?;
    }
    store.expect_metrics_types(&conf, now)?;
    let mut tally = Tally::default();
    // Past deadlines first: a job expired is waiting, none of the stalled.
    let gone = store.expire_past(&conf, &past, now)?;
    if conf.metrics {
        for _ in 0..gone {
            tally.outcome(Outcome::Cancelled);
        }
    }
    for (
        id,
        ([stalls, priority, cancel, dedup, mode, group], [failures, waited], timing, at_limit, due),
    ) in expired.iter().zip(jobs)
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
            store.write_resolution(id, due.as_ref(), b"cancelled", None, now)?;
            cancelled += 1;
            Outcome::Cancelled
        } else if let Some((failures, max_attempts, time_limit)) = &at_limit {
            let failed = store.fail_at_limit(
                &conf,
                id,
                AtLimit {
                    failures: failures.as_deref(),
                    max_attempts: max_attempts.as_deref(),
                    priority: number(priority.as_deref()).unwrap_or(0),
                    time_limit: *time_limit,
                    group: group.as_deref(),
                    dedup: [dedup.as_deref(), mode.as_deref()],
                    waited: waited.as_deref(),
                    due: due.as_ref(),
                },
                delays,
                now,
            )?;
            timed_out += 1;
            match failed.outcome {
                Outcome::Dead => limit_dead += 1,
                _ if failed.pending => retried += 1,
                _ => {}
            }
            failed.outcome
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
            let tail = dead_tail(number(Some(failures)).unwrap_or(0), b"stalled");
            store.write_resolution(id, due.as_ref(), b"dead", Some(&tail), now)?;
            dead += 1;
            Outcome::Dead
        } else {
            let priority = number(priority.as_deref()).unwrap_or(0);
            store.back_to_pending(&conf, id, priority, group.as_deref(), now)?;
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
    store.trim_finished(&conf, QueueKey::Dead, per * (dead + limit_dead).max(1), now)?;
    store.trim_finished(
        &conf,
        QueueKey::Cancelled,
        per * (cancelled + gone).max(1),
        now,
    )?;
    store.record_metrics(&conf, &tally, now)?;
    if recovered + retried > 0 {
        store.signal(0)?;
    } else if !expired.is_empty() {
        store.freed(&conf)?;
    }
    Ok(ValkeyValue::Array(vec![
        int(recovered),
        int(dead),
        int(timed_out),
        int(gone),
    ]))
}
