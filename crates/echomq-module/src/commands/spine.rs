//! The spine: ENQUEUE, CLAIM, COMPLETE, FAIL and the bulk forms
//! ENQUEUE.BULK and COMPLETE.BULK (with its riding CLAIM) — each the native
//! twin of its script in `crates/echomq/scripts/`, same checks in the same
//! order, same writes, replies and events. The bodies they share with
//! other commands are in `server/store/` (`batch.rs`: enqueue and
//! complete for many jobs; `claim.rs`: the claim).

use crate::server::args::bulk_groups;
use crate::server::args::{ATTEMPTS, Args, GROUP, Opt, PRIORITY, RunAt, TRACE, refuse};
use crate::server::args::{WAITED, waited_tail};
use crate::server::clock::now_ms;
use crate::server::key::Kind;
use crate::server::reply::error_entry;
use crate::server::reply::{bulk, enqueued_reply};
use crate::server::store::batch::{Completed, Completion};
use crate::server::store::deadlines::Retry;
use crate::server::store::deadlines::{
    Deadlines, START_BY, START_WITHIN, TIME_LIMIT, deadline_options,
};
use crate::server::store::dedup::{DEBOUNCE, DEDUP, DEDUP_FOR, dedup_options};
use crate::server::store::lifo::LIFO;
use crate::server::store::outbox::dead_tail;
use crate::server::store::{NewJob, Store, number};
use echomq_protocol::arg::MAX_PRIORITY;
use echomq_protocol::arg::{DEFAULT_MAX_ATTEMPTS, TRIM_PER_TRANSITION};
use echomq_protocol::metrics::Outcome;
use echomq_protocol::{DedupMode, QueueKey};
use valkey_module::{Context, ValkeyError, ValkeyResult, ValkeyString, ValkeyValue};

/// `EMQ.ENQUEUE base id payload [PRIORITY p] [ATTEMPTS n] [DEDUP key
/// [DEDUP_FOR ms | DEBOUNCE ms]] [GROUP g] [TRACE tp] [TIME_LIMIT ms]
/// [START_BY ms | START_WITHIN ms] [LIFO] [WAITED]`.
pub(crate) fn enqueue(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, true)?;
    let payload = args.text(2, "payload")?;
    let opts = args.options(
        3,
        &[
            PRIORITY,
            ATTEMPTS,
            DEDUP,
            DEDUP_FOR,
            DEBOUNCE,
            GROUP,
            TRACE,
            TIME_LIMIT,
            START_BY,
            START_WITHIN,
            LIFO,
            WAITED,
        ],
    )?;
    let priority = opts.int("PRIORITY").unwrap_or(0);
    let attempts = opts.int("ATTEMPTS").unwrap_or(DEFAULT_MAX_ATTEMPTS);
    let dedup = dedup_options(&opts)?;
    let deadlines = deadline_options(&opts, None)?;
    // Only a debounced job is scheduled: now + its ms.
    let run_at = dedup
        .as_ref()
        .filter(|dedup| dedup.mode == DedupMode::Debounce)
        .map(|dedup| RunAt::In(dedup.ms));
    let store = Store::new(ctx, args.base());
    let created = store.enqueue_checked(
        vec![NewJob {
            id,
            payload,
            priority,
            attempts,
            run_at,
            repeat: None,
            dedup,
            group: opts.text("GROUP").map(<[u8]>::to_vec),
            traceparent: opts.text("TRACE").map(<[u8]>::to_vec),
            deadlines,
            lifo: opts.has("LIFO"),
            waited: opts.has("WAITED"),
            extra: Vec::new(),
        }],
        run_at.is_some(),
    )?;
    Ok(enqueued_reply(created))
}

/// `EMQ.CLAIM base worker lease_ms [COUNT n]`.
pub(crate) fn claim(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let worker = args.text(1, "worker")?;
    let lease = args.int(2, "lease_ms", 1)?;
    let opts = args.options(3, &[("COUNT", Opt::int("count", 1))])?;
    let count = opts.int("COUNT").unwrap_or(1);
    Store::new(ctx, args.base()).claim_checked(&worker, lease, count)
}

/// `EMQ.COMPLETE base id token [RESULT r]`.
pub(crate) fn complete(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    let token = args.int(2, "token", 0)?;
    let opts = args.options(3, &[("RESULT", Opt::Text { arg: "result" })])?;

    let store = Store::new(ctx, args.base());
    let done = store.complete_checked(
        &store.settings()?,
        &[Completion {
            id,
            token,
            result: opts.text("RESULT").map(<[u8]>::to_vec),
        }],
    )?;
    match done[..] {
        [Completed::Done] => Ok(ValkeyValue::SimpleStringStatic("OK")),
        [Completed::Relay] => Ok(bulk("relay_completed")),
        _ => Err(refuse("NOTACTIVE")),
    }
}

/// `EMQ.FAIL base id token error [RETRY_IN ms | DEAD | CANCELLED]`.
pub(crate) fn fail(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, false)?;
    let token = args.int(2, "token", 0)?;
    let message = args.text(3, "error")?;
    let opts = args.options(
        4,
        &[
            ("RETRY_IN", Opt::int("retry_in", 0)),
            ("DEAD", Opt::Flag),
            ("CANCELLED", Opt::Flag),
            ("RATE_LIMITED", Opt::int("rate_limited", 0)),
        ],
    )?;
    let chosen = ["RETRY_IN", "DEAD", "CANCELLED", "RATE_LIMITED"]
        .iter()
        .filter(|name| opts.has(name))
        .count();
    if chosen > 1 {
        return Err(refuse(
            "SYNTAX RETRY_IN, DEAD, CANCELLED and RATE_LIMITED exclude each other",
        ));
    }

    let store = Store::new(ctx, args.base());
    let conf = store.settings()?;
    let key = store.fenced(&id, token)?;
    store.open_outbox(&conf)?;
    store.expect_types(&[
        (QueueKey::Seq, Kind::String),
        (QueueKey::Schedule, Kind::Zset),
        (QueueKey::Pending, Kind::Zset),
        (QueueKey::Active, Kind::Zset),
        (QueueKey::Dead, Kind::Zset),
        (QueueKey::Cancelled, Kind::Zset),
        (QueueKey::Events, Kind::Stream),
        (QueueKey::Signal, Kind::Zset),
    ])?;
    store.expect_deadlines_type(conf.timed)?;
    let now = now_ms();
    let now_s = now.to_string();
    let (
        [failures, max_attempts, priority, cancel],
        [dedup, mode, group, waited, dependents],
        timing,
    ) = store.job_fields_timed(
        &conf,
        &key,
        [b"failures", b"max_attempts", b"priority", b"cancel"],
    )?;
    if dedup.is_some() {
        store.expect_owner_type()?;
    }
    store.expect_metrics_types(&conf, now)?;
    // A cancel or a death decides the job: its resolution is read now,
    // before the first write.
    let failures = number(failures.as_deref()).unwrap_or(0) + 1;
    let max_attempts = number(max_attempts.as_deref()).unwrap_or(DEFAULT_MAX_ATTEMPTS as i64);
    let cancelling = opts.has("CANCELLED") || cancel.as_deref() == Some(b"1");
    let deciding =
        cancelling || (!opts.has("RATE_LIMITED") && (opts.has("DEAD") || failures >= max_attempts));
    let due = match deciding {
        true => store.resolution_due(conf.flows, &id, dependents.as_deref(), false)?,
        false => None,
    };
    store.read_group(conf.groups, true, group.as_deref())?;
    store.zrem(store.key(QueueKey::Active), &[&id])?;
    if let Some(group) = &group {
        store.leave_active(conf.group_flow, group, now)?;
    }

    if cancelling {
        store.hset(
            &key,
            &[
                b"state",
                b"cancelled",
                b"finished_at",
                now_s.as_bytes(),
                b"error",
                &message,
            ],
        )?;
        store.zadd(store.key(QueueKey::Cancelled), &[(now as i64, &id)])?;
        store.emit(conf.events_max, &[b"event", b"cancelled", b"id", &id])?;
        store.publish_outcome(waited.as_deref(), &id, &[b"cancelled"])?;
        store.release_dedup(&id, dedup.as_deref(), mode.as_deref())?;
        let relay = store.write_resolution(&id, due.as_ref(), b"cancelled", None, now)?;
        store.trim_finished(&conf, QueueKey::Cancelled, TRIM_PER_TRANSITION as i64, now)?;
        store.freed(&conf)?;
        store.record_finished(&conf, Outcome::Cancelled, timing, now)?;
        return Ok(bulk(if relay {
            "relay_cancelled"
        } else {
            "cancelled"
        }));
    }

    if let Some(retry_in) = opts.int("RATE_LIMITED") {
        let priority = number(priority.as_deref()).unwrap_or(0);
        store.rate_limited(
            &conf,
            (&id, group.as_deref()),
            priority,
            &message,
            (now, retry_in),
        )?;
        return Ok(bulk("rate_limited"));
    }

    let failures_s = failures.to_string();
    if !opts.has("DEAD") && failures < max_attempts {
        let delay = opts.int("RETRY_IN").unwrap_or(0);
        store.retry(
            &conf,
            &id,
            Retry {
                priority: number(priority.as_deref()).unwrap_or(0),
                group: group.as_deref(),
                failures: &failures_s,
                error: &message,
                delay,
            },
            now,
        )?;
        if delay > 0 {
            store.freed(&conf)?;
        }
        store.record_finished(&conf, Outcome::Failed, timing, now)?;
        return Ok(bulk("retry"));
    }

    store.hset(
        &key,
        &[
            b"state",
            b"dead",
            b"failures",
            failures_s.as_bytes(),
            b"error",
            &message,
            b"finished_at",
            now_s.as_bytes(),
        ],
    )?;
    store.zadd(store.key(QueueKey::Dead), &[(now as i64, &id)])?;
    store.emit(
        conf.events_max,
        &[b"event", b"dead", b"id", &id, b"error", &message],
    )?;
    store.publish_outcome(
        waited.as_deref(),
        &id,
        &[b"dead", failures_s.as_bytes(), &message],
    )?;
    store.release_dedup(&id, dedup.as_deref(), mode.as_deref())?;
    let tail = dead_tail(failures, &message);
    let relay = store.write_resolution(&id, due.as_ref(), b"dead", Some(&tail), now)?;
    store.trim_finished(&conf, QueueKey::Dead, TRIM_PER_TRANSITION as i64, now)?;
    store.freed(&conf)?;
    store.record_finished(&conf, Outcome::Dead, timing, now)?;
    Ok(bulk(if relay { "relay_dead" } else { "dead" }))
}

/// The CLAIM tail of `EMQ.COMPLETE.BULK`, its arguments checked.
struct ClaimTail {
    worker: Vec<u8>,
    lease: u64,
    count: u64,
}

/// The CLAIM tail, if the ARGV end with one, and how many ARGV the jobs
/// take (`claim_tail` of `complete_bulk.lua`): four ARGV are never a
/// whole number of groups of three, so a fourth-last word other than
/// `CLAIM` is a short group, not a tail.
fn claim_tail(args: &Args) -> Result<(Option<ClaimTail>, usize), ValkeyError> {
    let n = args.len();
    let opens = n
        .checked_sub(3)
        .and_then(|at| args.get(at))
        .is_some_and(|word| word.eq_ignore_ascii_case(b"CLAIM"));
    if n % 3 != 1 || n < 7 || !opens {
        return Ok((None, n));
    }
    let tail = ClaimTail {
        worker: args.text(n - 2, "worker")?,
        lease: args.int(n - 1, "lease_ms", 1)?,
        count: args.int(n, "count", 1)?,
    };
    Ok((Some(tail), n - 4))
}

/// `EMQ.ENQUEUE.BULK base id payload priority attempts [id payload …]
/// [WAITED]` →
/// `[id1, created1, id2, created2, …]`.
pub(crate) fn enqueue_bulk(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let (waited, given) = waited_tail(&args, 4);
    let mut jobs = Vec::with_capacity(bulk_groups(given, 4)?);
    for first in (1..=given).step_by(4) {
        jobs.push(NewJob {
            id: args.id(first, true)?,
            payload: args.text(first + 1, "payload")?,
            priority: args.int_in(first + 2, "priority", 0, u64::from(MAX_PRIORITY))?,
            attempts: args.int(first + 3, "attempts", 1)?,
            run_at: None,
            repeat: None,
            dedup: None,
            group: None,
            traceparent: None,
            deadlines: Deadlines::default(),
            lifo: false,
            waited,
            extra: Vec::new(),
        });
    }
    let store = Store::new(ctx, args.base());
    Ok(enqueued_reply(store.enqueue_checked(jobs, false)?))
}

/// `EMQ.COMPLETE.BULK base id token result [id token result …] [CLAIM
/// worker lease_ms count]` → one `OK` or `NOTACTIVE` per job (an empty
/// result stores none); with CLAIM, then the claim's reply, or its refusal
/// as an error entry (the completions stand).
pub(crate) fn complete_bulk(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let (tail, given) = claim_tail(&args)?;
    let mut jobs = Vec::with_capacity(bulk_groups(given, 3)?);
    for first in (1..=given).step_by(3) {
        let id = args.id(first, false)?;
        let token = args.int(first + 1, "token", 0)?;
        let result = args.text(first + 2, "result")?;
        jobs.push(Completion {
            id,
            token,
            result: (!result.is_empty()).then_some(result),
        });
    }
    let store = Store::new(ctx, args.base());
    // One read of the settings serves both halves, the rate limit's fields
    // only when there is a claim (`settings(meta, tail ~= nil)`).
    let conf = if tail.is_some() {
        store.settings_with_limits()?
    } else {
        store.settings()?
    };
    let outcome = store.complete_checked(&conf, &jobs)?;
    let mut reply: Vec<ValkeyValue> = outcome.into_iter().map(|done| bulk(done.word())).collect();
    if let Some(tail) = tail {
        let claimed = store.claim_with(&conf, &tail.worker, tail.lease, tail.count);
        reply.push(claimed.unwrap_or_else(error_entry));
    }
    Ok(ValkeyValue::Array(reply))
}
