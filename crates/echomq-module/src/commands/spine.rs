//! The spine: ENQUEUE, CLAIM, COMPLETE, FAIL, GET, COUNTS — each the native
//! twin of its script in `crates/echomq/scripts/`, same checks in the same
//! order, same writes, replies and events.

use crate::commands::flow::Flow;
use crate::server::args::{ATTEMPTS, Args, GROUP, Opt, PRIORITY, RunAt, TRACE, refuse};
use crate::server::clock::{after, now_ms};
use crate::server::fast_hash::FastMap;
use crate::server::key::{Digits, Kind};
use crate::server::reply::{bulk, enqueued_reply, int};
use crate::server::store::batch::Completion;
use crate::server::store::dedup::{DEBOUNCE, DEDUP, DEDUP_FOR, dedup_options};
use crate::server::store::{NewJob, Reply, Settings, Store, number};
use echomq_protocol::arg::job_token;
use echomq_protocol::arg::{DEFAULT_MAX_ATTEMPTS, PROMOTE_PER_CLAIM, TRIM_PER_TRANSITION};
use echomq_protocol::metrics::Outcome;
use echomq_protocol::{DedupMode, JobState, QueueKey};
use valkey_module::{Context, ValkeyError, ValkeyResult, ValkeyString, ValkeyValue};

/// The most jobs a claim's map of the jobs it read is sized for at first
/// (a larger claim grows it).
const CLAIM_MAP_MAX: usize = 1024;

/// `EMQ.ENQUEUE base id payload [PRIORITY p] [ATTEMPTS n] [DEDUP key
/// [DEDUP_FOR ms | DEBOUNCE ms]] [GROUP g] [TRACE tp]`.
pub(crate) fn enqueue(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    let id = args.id(1, true)?;
    let payload = args.text(2, "payload")?;
    let opts = args.options(
        3,
        &[PRIORITY, ATTEMPTS, DEDUP, DEDUP_FOR, DEBOUNCE, GROUP, TRACE],
    )?;
    let priority = opts.int("PRIORITY").unwrap_or(0);
    let attempts = opts.int("ATTEMPTS").unwrap_or(DEFAULT_MAX_ATTEMPTS);
    let dedup = dedup_options(&opts)?;
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

impl Store<'_> {
    /// The whole of CLAIM once its arguments are checked (`claim_checked`
    /// of the prelude: `EMQ.CLAIM`, and the CLAIM tail of
    /// `EMQ.COMPLETE.BULK`): settings and types, the due jobs promoted,
    /// then unless paused up to `count` pending jobs → active under a lease
    /// of `lease` ms. Returns CLAIM's reply.
    pub(crate) fn claim_checked(&self, worker: &[u8], lease: u64, count: u64) -> ValkeyResult {
        self.claim_with(&self.settings_with_limits()?, worker, lease, count)
    }

    /// CLAIM on the settings `conf` already read (with the rate limit's
    /// fields): the CLAIM tail of `EMQ.COMPLETE.BULK` shares its
    /// completions' read.
    pub(crate) fn claim_with(
        &self,
        conf: &Settings,
        worker: &[u8],
        lease: u64,
        count: u64,
    ) -> ValkeyResult {
        self.expect_types(&[
            (QueueKey::Seq, Kind::String),
            (QueueKey::Schedule, Kind::Zset),
            (QueueKey::Pending, Kind::Zset),
            (QueueKey::Active, Kind::Zset),
            (QueueKey::Events, Kind::Stream),
            (QueueKey::Signal, Kind::Zset),
        ])?;
        let grouped = conf.groups;
        if grouped {
            self.expect_group_keys(true, true)?;
        }
        let now = now_ms();
        // Every job hash this call may touch is read before its first write, so
        // a key of the wrong type refuses the call whole: the due jobs, and the
        // pending head (what the pop takes comes from these two), or on a queue
        // with groups the heads the round robin picks (and every group's hash
        // and lane it may write).
        let due = self.due_ids(now, PROMOTE_PER_CLAIM)?;
        // Sized for the batch: growing it would rehash it a few times.
        let expected = due.len() + usize::try_from(count).unwrap_or(0).min(CLAIM_MAP_MAX);
        let mut jobs: FastMap<Vec<u8>, [Option<Vec<u8>>; 9]> =
            FastMap::with_capacity_and_hasher(expected, Default::default());
        // [payload, failures, max_attempts, claims, dedup_mode, dedup,
        // priority, group, traceparent]: READ_MODE, READ_PRIORITY and
        // READ_GROUP name three of them.
        let read = |id: &[u8], due: bool| -> Result<[Option<Vec<u8>>; 9], ValkeyError> {
            let key = self.job_key(id);
            const FIELDS: [&[u8]; 4] = [b"payload", b"failures", b"max_attempts", b"claims"];
            // The priority matters only to a due job's promotion.
            let ([payload, failures, max_attempts, claims, priority], [dedup, mode, group]) = if due
            {
                let [p, f, m, c] = FIELDS;
                self.job_fields(conf, &key, [p, f, m, c, b"priority"])?
            } else {
                let ([p, f, m, c], extra) = self.job_fields(conf, &key, FIELDS)?;
                ([p, f, m, c, None], extra)
            };
            // A due job's group is read with it (its promotion writes the
            // group's lane); a pending job's lane the round robin reads itself.
            if let Some(group) = group.as_ref().filter(|_| due) {
                self.read_lane(group)?;
            }
            // A job's trace context only once a job of the queue had one.
            let traceparent = if conf.traced {
                self.hget(&key, b"traceparent")?
            } else {
                None
            };
            Ok([
                payload,
                failures,
                max_attempts,
                claims,
                mode,
                dedup,
                priority,
                group,
                traceparent,
            ])
        };
        for id in &due {
            jobs.insert(id.clone(), read(id, true)?);
        }
        let (flow, take) = if conf.paused {
            (Flow::OPEN, count)
        } else {
            let flow = self.flow(conf, now)?;
            let take = flow.bound.map_or(count, |bound| bound.min(count));
            (flow, take)
        };
        let (mut plan, mut reopened) = (None, Vec::new());
        // The head, and on a queue without groups how many of it are fifo's.
        let (mut head, mut from_fifo) = (Vec::new(), 0);
        if !conf.paused && grouped {
            reopened = self.reopened(conf.group_flow, now)?;
            if take > 0 {
                plan = Some(self.round_robin(conf.group_flow, (take, now), &reopened)?);
            }
            head = plan
                .iter()
                .flat_map(|plan| plan.picks.iter().map(|(_, id)| id.clone()))
                .collect();
        } else if !conf.paused && take > 0 {
            (head, from_fifo) = self.pending_head(take)?;
        }
        for id in &head {
            if let std::collections::hash_map::Entry::Vacant(entry) = jobs.entry(id.clone()) {
                let fields = read(entry.key(), false)?;
                entry.insert(fields);
            }
        }
        let promoting: Vec<(i64, Option<Vec<u8>>)> = due
            .iter()
            .map(|id| {
                (
                    number(jobs[id][READ_PRIORITY].as_deref()).unwrap_or(0),
                    jobs[id][READ_GROUP].clone(),
                )
            })
            .collect();
        if jobs
            .values()
            .any(|job| job[READ_MODE].as_deref() == Some(b"debounce"))
        {
            self.expect_owner_type()?;
        }
        let promoted = self.promote((conf.events_max, grouped), &due, &promoting, now)?;
        if conf.paused {
            return Ok(ValkeyValue::Array(Vec::new()));
        }

        let popped = if grouped {
            // Waiting groups whose window reopened are put where they belong.
            for group in &reopened {
                let st = self.group_state(group)?;
                let has_jobs = self.exists(&self.lane_key(group));
                self.place(group, &st, now, has_jobs)?;
            }
            if let Some(plan) = &plan {
                self.apply_round_robin(conf.group_flow, plan, now)?;
            }
            head
        } else {
            // LPOP fifo, then ZPOPMIN pending for the rest. With nothing
            // promoted they are the head read above.
            let (popped, from_fifo) = if due.is_empty() || take == 0 {
                (head, from_fifo)
            } else {
                self.pending_head(take)?
            };
            self.pop_pending_head(&popped, from_fifo)?;
            popped
        };
        let deadline = after(now, lease) as i64;
        let now_s = now.to_string();
        // Every claimed job's hash and event carry these two.
        self.share(now_s.as_bytes());
        self.share(worker);
        let mut claimed = Vec::new();
        let mut leased: Vec<Vec<u8>> = Vec::new();
        for id in popped {
            let key = self.job_key(&id);
            let Some(
                [
                    Some(payload),
                    failures,
                    max_attempts,
                    claims,
                    mode,
                    dedup,
                    _,
                    _,
                    traceparent,
                ],
            ) = jobs.remove(&id)
            else {
                continue;
            };
            let count = number(claims.as_deref()).unwrap_or(0) + 1;
            let token = job_token(count, now as i64);
            let token_s = Digits::signed(token);
            let claims_s = Digits::signed(count);
            self.hset(
                &key,
                &[
                    b"state",
                    b"active",
                    b"claims",
                    claims_s.as_bytes(),
                    b"claimed_at",
                    now_s.as_bytes(),
                    b"worker",
                    worker,
                ],
            )?;
            self.emit(
                conf.events_max,
                &[
                    b"event",
                    b"claimed",
                    b"id",
                    &id,
                    b"token",
                    token_s.as_bytes(),
                    b"worker",
                    worker,
                ],
            )?;
            let mut entry = vec![
                bulk(id.clone()),
                int(token),
                bulk(payload),
                int(number(failures.as_deref()).unwrap_or(0)),
                int(number(max_attempts.as_deref()).unwrap_or(DEFAULT_MAX_ATTEMPTS as i64)),
            ];
            entry.extend(traceparent.map(bulk));
            claimed.push(ValkeyValue::Array(entry));
            self.release_debounced(&id, [mode.as_deref(), dedup.as_deref()])?;
            leased.push(id);
        }
        let leases: Vec<(i64, &[u8])> = leased.iter().map(|id| (deadline, id.as_slice())).collect();
        self.add_leases(&leases)?;
        if let Some((window, used)) = flow.window
            && !claimed.is_empty()
        {
            let (window_s, used_s) = (
                window.to_string(),
                (used + claimed.len() as i64).to_string(),
            );
            self.hset(
                self.key(QueueKey::Meta),
                &[
                    b"limit_window",
                    window_s.as_bytes(),
                    b"limit_used",
                    used_s.as_bytes(),
                ],
            )?;
        }
        match flow.bound {
            // Flow control bound: pending jobs left behind were withheld.
            Some(bound) if bound < count => {
                if self.pending_count()? > 0 {
                    claimed.push(int(flow.wait));
                }
            }
            // A full batch may leave work behind: wake the next idle worker for
            // it. On a queue with groups, jobs this claim promoted are
            // claimable from the next claim on: wake one for them too.
            bound => {
                let full = claimed.len() as u64 == count && bound.is_none_or(|bound| bound > count);
                let left = || {
                    if grouped {
                        self.zcard(self.key(QueueKey::Groups))
                    } else {
                        self.pending_count()
                    }
                };
                if (full && left()? > 0) || (grouped && promoted > 0) {
                    self.signal(0)?;
                }
            }
        }
        Ok(ValkeyValue::Array(claimed))
    }
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
    if done != [true] {
        return Err(refuse("NOTACTIVE"));
    }
    Ok(ValkeyValue::SimpleStringStatic("OK"))
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
    let now = now_ms();
    let now_s = now.to_string();
    let ([failures, max_attempts, priority, cancel], [dedup, mode, group], timing) = store
        .job_fields_timed(
            &conf,
            &key,
            [b"failures", b"max_attempts", b"priority", b"cancel"],
        )?;
    if dedup.is_some() {
        store.expect_owner_type()?;
    }
    store.expect_metrics_types(&conf, now)?;
    store.read_group(conf.groups, true, group.as_deref())?;
    store.zrem(store.key(QueueKey::Active), &[&id])?;
    if let Some(group) = &group {
        store.leave_active(conf.group_flow, group, now)?;
    }

    if opts.has("CANCELLED") || cancel.as_deref() == Some(b"1") {
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
        store.release_dedup(&id, dedup.as_deref(), mode.as_deref())?;
        store.trim_finished(
            conf.logs,
            QueueKey::Cancelled,
            conf.keep_cancelled,
            TRIM_PER_TRANSITION as i64,
        )?;
        store.freed(&conf)?;
        store.record_finished(&conf, Outcome::Cancelled, timing, now)?;
        return Ok(bulk("cancelled"));
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

    let failures = number(failures.as_deref()).unwrap_or(0) + 1;
    let failures_s = failures.to_string();
    let max_attempts = number(max_attempts.as_deref()).unwrap_or(DEFAULT_MAX_ATTEMPTS as i64);
    if !opts.has("DEAD") && failures < max_attempts {
        let delay = opts.int("RETRY_IN").unwrap_or(0);
        if delay == 0 {
            let priority = number(priority.as_deref()).unwrap_or(0);
            store.push_pending(conf.groups, &id, priority, group.as_deref(), now)?;
            store.hset(
                &key,
                &[
                    b"state",
                    b"pending",
                    b"failures",
                    failures_s.as_bytes(),
                    b"error",
                    &message,
                    b"run_at",
                    now_s.as_bytes(),
                ],
            )?;
            store.signal(0)?;
        } else {
            let run_at = after(now, delay);
            let run_at_s = run_at.to_string();
            store.zadd(store.key(QueueKey::Schedule), &[(run_at as i64, &id)])?;
            store.hset(
                &key,
                &[
                    b"state",
                    b"scheduled",
                    b"failures",
                    failures_s.as_bytes(),
                    b"error",
                    &message,
                    b"run_at",
                    run_at_s.as_bytes(),
                ],
            )?;
            store.signal(run_at)?;
            store.freed(&conf)?;
        }
        let delay_s = delay.to_string();
        store.emit(
            conf.events_max,
            &[
                b"event",
                b"retried",
                b"id",
                &id,
                b"error",
                &message,
                b"delay",
                delay_s.as_bytes(),
            ],
        )?;
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
    store.release_dedup(&id, dedup.as_deref(), mode.as_deref())?;
    store.trim_finished(
        conf.logs,
        QueueKey::Dead,
        conf.keep_dead,
        TRIM_PER_TRANSITION as i64,
    )?;
    store.freed(&conf)?;
    store.record_finished(&conf, Outcome::Dead, timing, now)?;
    Ok(bulk("dead"))
}

/// Where a claim's read of a job holds its `dedup_mode`, `priority` and
/// `group` (see the claim's `read`).
const READ_MODE: usize = 4;
const READ_PRIORITY: usize = 6;
const READ_GROUP: usize = 7;

/// The job fields in protocol order, and which of them are integers.
const FIELDS: [(&str, bool); 21] = [
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

/// `EMQ.COUNTS base`.
pub(crate) fn counts(ctx: &Context, args: Vec<ValkeyString>) -> ValkeyResult {
    let args = Args::new(args)?;
    args.no_options(0)?;
    let store = Store::reader(ctx, args.base());
    let mut reply = Vec::new();
    for state in JobState::ALL {
        reply.push(bulk(state.as_str()));
        let n = match state {
            // The pending set is two keys.
            JobState::Pending => store.pending_count()?,
            _ => store.read("ZCARD", &[store.key(state.set_key())])?.int(),
        };
        reply.push(int(n));
    }
    let paused = store.read("HGET", &[store.key(QueueKey::Meta), b"paused"])?;
    reply.push(bulk("paused"));
    reply.push(int(i64::from(paused == Reply::Bytes(b"1".to_vec()))));
    Ok(ValkeyValue::Array(reply))
}
