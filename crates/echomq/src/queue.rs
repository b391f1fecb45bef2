//! A queue handle: the spine (enqueue, claim, complete, fail) and reads.

mod bulk;
mod complete_many;

pub(crate) use complete_many::{
    BULK_COMPLETIONS, add_completion, bulk_complete_call, completion_word,
};

use crate::acl;
use crate::awaited::EarlyTicket;
use crate::claim_batch::ClaimBatch;
use crate::error::{Error, Result};
use crate::job::{
    Claimed, EnqueueOutcome, Enqueued, Extended, FailAction, FailOutcome, NewJob, QueueSettings,
    Swept,
};
use crate::transport::connector::Connector;
use crate::transport::decode;
use crate::transport::dispatch::Call;
use crate::transport::outcome_channel::EarlyWaits;
use echomq_protocol::{JobId, Keyspace, QueueKey, QueueName, Transition};
use redis::{Cmd, FromRedisValue, Pipeline, Value};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

/// Jobs one `STALLED.CHECK` call takes back at most.
const SWEEP_LIMIT: u64 = 1000;

/// The handle family has not put its queue in the registry of queues yet.
const UNREGISTERED: u8 = 0;
/// The queue is in the registry.
const REGISTERED: u8 = 1;
/// The server's ACL does not let this user write the registry: skipped.
const NOT_PERMITTED: u8 = 2;

/// A handle on one queue whose payloads are `T` (JSON on the wire).
/// Cloning is cheap.
pub struct Queue<T = serde_json::Value> {
    connector: Connector,
    keys: Keyspace,
    /// Whether this handle (and its clones) put the queue in the registry
    /// of queues yet ([`UNREGISTERED`], [`REGISTERED`], [`NOT_PERMITTED`]).
    registered: Arc<AtomicU8>,
    /// The ids of jobs whose decision answered `relay_*`, for the relay
    /// (see `outbox.rs`), shared by this handle's clones.
    unrelayed: Arc<crate::outbox::Unrelayed>,
    _payload: PhantomData<fn() -> T>,
}

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Self {
            connector: self.connector.clone(),
            keys: self.keys.clone(),
            registered: self.registered.clone(),
            unrelayed: self.unrelayed.clone(),
            _payload: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("base", &self.keys.base())
            .finish()
    }
}

impl<T> Queue<T> {
    pub(crate) fn new(connector: Connector, keys: Keyspace) -> Self {
        Self {
            connector,
            keys,
            registered: Arc::default(),
            unrelayed: Arc::default(),
            _payload: PhantomData,
        }
    }

    /// Puts the queue in the registry of queues, once per handle family,
    /// after one of its transitions succeeded: a refused command writes
    /// nothing, the registry included. A failed registry write does not
    /// fail the enqueue before it (the job exists, and a caller sending it
    /// again would enqueue it twice): it is logged, and the handle stays
    /// unregistered so its next enqueue tries again. A user the server's
    /// ACL does not let write the registry (one limited to its queue's
    /// keys) skips it from then on, said once at debug level.
    pub(crate) async fn register(&self) {
        if self.registered.load(Ordering::Relaxed) != UNREGISTERED {
            return;
        }
        match self.add_to_registry().await {
            Ok(()) => self.registered.store(REGISTERED, Ordering::Relaxed),
            Err(error @ Error::NotPermitted { .. }) => {
                self.registered.store(NOT_PERMITTED, Ordering::Relaxed);
                tracing::debug!(queue = %self.keys.queue(), %error,
                    "the registry of queues is not this user's to write: skipped; a listing finds the queue by its keys");
            }
            Err(error) => tracing::warn!(
                queue = %self.keys.queue(),
                %error,
                "enqueued, but the queue is not in the registry of queues; the next enqueue tries again"
            ),
        }
    }

    /// `SADD <prefix>:queues <queue>`.
    async fn add_to_registry(&self) -> Result<()> {
        let registry = Keyspace::registry(self.connector.prefix())?;
        let mut sadd = redis::cmd("SADD");
        sadd.arg(&registry).arg(self.keys.queue().as_str());
        let acl = acl::Target {
            key: &registry,
            ..self.acl()
        };
        sadd.query_async::<()>(&mut self.connector.link().clone())
            .await
            .map_err(|err| acl.refusal(err))
    }

    /// This queue's calls as the server's ACL sees them: the connection's
    /// user, the queue's base key, the queue.
    pub(crate) fn acl(&self) -> acl::Target<'_> {
        self.connector.dispatch().target(&self.keys)
    }

    /// Runs `cmd` on the shared connection; the server's ACL refusing it is
    /// [`Error::NotPermitted`] naming this queue.
    pub(crate) async fn query<R: FromRedisValue>(&self, cmd: &Cmd) -> Result<R> {
        cmd.query_async(&mut self.connector.link().clone())
            .await
            .map_err(|err| self.acl().refusal(err))
    }

    /// [`Queue::query`] for a pipeline (one round trip).
    pub(crate) async fn query_pipe<R: FromRedisValue>(&self, pipe: &Pipeline) -> Result<R> {
        pipe.query_async(&mut self.connector.link().clone())
            .await
            .map_err(|err| self.acl().refusal(err))
    }

    /// The queue's name.
    pub fn name(&self) -> &QueueName {
        self.keys.queue()
    }

    /// The queue's keys.
    pub fn keys(&self) -> &Keyspace {
        &self.keys
    }

    /// The connector this queue talks through.
    pub fn connector(&self) -> &Connector {
        &self.connector
    }

    /// The same queue through `connector` (the same servers and settings,
    /// another connection).
    pub(crate) fn through(&self, connector: Connector) -> Queue<T> {
        Queue {
            connector,
            keys: self.keys.clone(),
            registered: self.registered.clone(),
            unrelayed: self.unrelayed.clone(),
            _payload: PhantomData,
        }
    }

    /// The same queue with another payload type.
    pub fn typed<U>(&self) -> Queue<U> {
        Queue {
            connector: self.connector.clone(),
            keys: self.keys.clone(),
            registered: self.registered.clone(),
            unrelayed: self.unrelayed.clone(),
            _payload: PhantomData,
        }
    }

    pub(crate) async fn call(&self, call: Call) -> Result<Value> {
        self.connector.call(&self.keys, &call).await
    }

    pub(crate) async fn call_many(&self, calls: &[Call]) -> Result<Vec<Result<Value>>> {
        self.connector.call_many(&self.keys, calls).await
    }

    /// Claims up to `count` pending jobs for `worker` under a lease of
    /// `lease` (promoting due scheduled jobs first). Empty when nothing is
    /// pending or the queue is paused; under a rate limit or a cap on
    /// active jobs, at most what they let out ([`Queue::claim_with_wait`]
    /// also says how long to wait for more).
    pub async fn claim(
        &self,
        worker: &str,
        lease: Duration,
        count: usize,
    ) -> Result<Vec<Claimed<T>>> {
        Ok(self.claim_with_wait(worker, lease, count).await?.jobs)
    }

    /// [`Queue::claim`], and whether flow control withheld pending jobs:
    /// [`Withheld::For`](crate::Withheld::For) a duration until the rate
    /// limit's window reopens or the queue's hold ends (claim again then,
    /// not sooner), [`Withheld::CapFull`](crate::Withheld::CapFull) while
    /// the cap on active jobs is full (a job leaving `active` signals the
    /// queue, as an enqueue does).
    pub async fn claim_with_wait(
        &self,
        worker: &str,
        lease: Duration,
        count: usize,
    ) -> Result<ClaimBatch<T>> {
        let call = claim_call(worker, lease, count);
        ClaimBatch::decode(self.call(call).await?, decode_claimed)
    }

    /// The claim's part of a reply that carries one (`COMPLETE.BULK`'s
    /// CLAIM tail): its jobs, or its refusal (an error entry) as
    /// [`Error::Refused`].
    pub(crate) fn claimed_part(&self, part: Value) -> Result<ClaimBatch<T>> {
        let part = self
            .connector
            .nested(&self.keys, &Call::new(Transition::Claim, None), part)?;
        ClaimBatch::decode(part, decode_claimed)
    }

    /// Completes the job in hand, storing `result` (as JSON; `()` stores none).
    pub async fn complete<R: Serialize + ?Sized>(
        &self,
        id: &JobId,
        token: u64,
        result: &R,
    ) -> Result<()> {
        let reply = self.call(complete_call(id, token, result)?).await?;
        if let Ok(word) = decode::text(Transition::Complete, reply.clone())
            && crate::outbox::relay_word(&word) == ("completed", true)
        {
            self.note_relay(id);
            self.relay_noted().await;
            return Ok(());
        }
        decode::ok(Transition::Complete, reply)
    }

    /// Keeps `id`, whose decision answered `relay_*`, for the relay.
    pub(crate) fn note_relay(&self, id: &JobId) {
        self.unrelayed.note(id);
    }

    /// The ids whose decision answered `relay_*` since the last call,
    /// oldest first: what the relay delivers first (`FLOW.OUTBOX … JOBS`).
    pub(crate) fn take_unrelayed(&self) -> Vec<JobId> {
        self.unrelayed.take()
    }

    /// Reports a failed attempt of the job in hand.
    pub async fn fail(
        &self,
        id: &JobId,
        token: u64,
        error: &str,
        action: FailAction,
    ) -> Result<FailOutcome> {
        let reply = self.call(fail_call(id, token, error, action)).await?;
        let (outcome, relay) = decode_fail_relay(reply)?;
        if relay {
            self.note_relay(id);
            self.relay_noted().await;
        }
        Ok(outcome)
    }

    /// Moves due scheduled jobs to pending now (at most `limit`); returns
    /// how many moved. Claims do this too; this is for operators and tests.
    pub async fn promote(&self, limit: u64) -> Result<u64> {
        let reply = self
            .call(
                Call::new(Transition::Promote, None)
                    .arg("LIMIT")
                    .int(limit.max(1)),
            )
            .await?;
        decode::int(Transition::Promote, reply)
    }

    /// Sends the job in hand back to the schedule set for `delay` (server
    /// clock); not a failure, no attempt used. Fenced by `token`.
    pub async fn delay(&self, id: &JobId, token: u64, delay: Duration) -> Result<()> {
        let reply = self.call(delay_call(id, token, delay)).await?;
        decode::ok(Transition::Delay, reply)
    }

    /// A lease checkpoint of the job in hand: its deadline becomes now +
    /// `lease` (server clock). Answers the new deadline and whether a
    /// cancellation was requested; `NOTACTIVE` once the lease was lost.
    pub async fn extend(&self, id: &JobId, token: u64, lease: Duration) -> Result<Extended> {
        decode_extended(self.call(extend_call(id, token, lease)).await?)
    }

    /// One stalled sweep: up to `limit` active jobs whose lease ran out go
    /// back to pending, or to dead (error `stalled`) once they stalled more
    /// than `max_stalls` times; one whose lease ran out at its time limit
    /// fails, retried at once while attempts remain (see
    /// [`Queue::sweep_stalled_retrying`]).
    pub async fn sweep_stalled(&self, max_stalls: u64, limit: u64) -> Result<Swept> {
        self.sweep_stalled_retrying(max_stalls, limit, &[]).await
    }

    /// [`Queue::sweep_stalled`], a job failed at its time limit retried
    /// after `retry_in[failures − 1]` (the last repeating; none: at once),
    /// as a worker's backoff would.
    pub async fn sweep_stalled_retrying(
        &self,
        max_stalls: u64,
        limit: u64,
        retry_in: &[Duration],
    ) -> Result<Swept> {
        let mut call = Call::new(Transition::StalledCheck, None)
            .int(max_stalls)
            .arg("LIMIT")
            .int(limit.max(1));
        if !retry_in.is_empty() {
            call = call.arg("RETRY_IN");
            for delay in retry_in {
                call = call.int(
                    delay
                        .as_millis()
                        .min(u128::from(echomq_protocol::arg::MAX_INT)) as u64,
                );
            }
        }
        let counts = decode::array(Transition::StalledCheck, self.call(call).await?)?;
        let int = |value: &Value| decode::int(Transition::StalledCheck, value.clone());
        match counts.as_slice() {
            [recovered, dead, timed_out, expired] => Ok(Swept {
                recovered: int(recovered)?,
                dead: int(dead)?,
                timed_out: int(timed_out)?,
                expired: int(expired)?,
            }),
            _ => Err(Error::UnexpectedReply {
                transition: Transition::StalledCheck,
                detail: format!("{counts:?}"),
            }),
        }
    }

    /// The stalled sweep as workers run it: only if this caller wins the
    /// queue's sweep guard for `interval` (`SET <base>:sweep NX PX`), so
    /// one sweep runs per interval however many workers try. `None` when
    /// another sweeper holds the guard.
    pub async fn sweep_if_due(
        &self,
        sweeper: &str,
        interval: Duration,
        max_stalls: u64,
    ) -> Result<Option<Swept>> {
        self.sweep_guarded(sweeper, interval, max_stalls, &[]).await
    }

    /// [`Queue::sweep_if_due`] whose sweeps retry a job failed at its time
    /// limit after `retry_in` (see [`Queue::sweep_stalled_retrying`]): a
    /// worker sends its backoff's delays.
    pub(crate) async fn sweep_guarded(
        &self,
        sweeper: &str,
        interval: Duration,
        max_stalls: u64,
        retry_in: &[Duration],
    ) -> Result<Option<Swept>> {
        let won: Option<String> = self
            .query(
                redis::cmd("SET")
                    .arg(self.keys.sweep_guard())
                    .arg(sweeper)
                    .arg("NX")
                    .arg("PX")
                    .arg((interval.as_millis() as u64).max(1)),
            )
            .await?;
        if won.is_none() {
            return Ok(None);
        }
        let mut total = Swept::default();
        loop {
            let swept = self
                .sweep_stalled_retrying(max_stalls, SWEEP_LIMIT, retry_in)
                .await?;
            total.recovered += swept.recovered;
            total.dead += swept.dead;
            total.timed_out += swept.timed_out;
            total.expired += swept.expired;
            if swept.recovered + swept.dead + swept.timed_out < SWEEP_LIMIT {
                return Ok(Some(total));
            }
        }
    }

    /// The server's clock and the earliest instant work becomes due — a
    /// run-at on the schedule set, or a group's window reopening — in ms,
    /// read in one round trip (how an idle worker knows when to wake).
    pub(crate) async fn next_due(&self) -> Result<(u64, Option<u64>)> {
        type Firsts = Vec<(String, f64)>;
        let (time, first, reopens): ((u64, u64), Firsts, Firsts) = self
            .query_pipe(
                redis::pipe()
                    .cmd("TIME")
                    .cmd("ZRANGE")
                    .arg(self.keys.schedule())
                    .arg(0)
                    .arg(0)
                    .arg("WITHSCORES")
                    .cmd("ZRANGE")
                    .arg(self.keys.key(QueueKey::GroupsWait))
                    .arg(0)
                    .arg(0)
                    .arg("WITHSCORES"),
            )
            .await?;
        let now = server_ms(time);
        let due = first
            .iter()
            .chain(&reopens)
            .map(|(_, score)| *score as u64)
            .min();
        Ok((now, due))
    }

    /// Stores retention and event settings in the queue's meta hash.
    pub async fn configure(&self, settings: &QueueSettings) -> Result<()> {
        self.query(
            redis::cmd("HSET")
                .arg(self.keys.meta())
                .arg("keep_completed")
                .arg(settings.keep_completed)
                .arg("keep_dead")
                .arg(settings.keep_dead)
                .arg("keep_cancelled")
                .arg(settings.keep_cancelled)
                .arg("events_max")
                .arg(settings.events_max),
        )
        .await
    }
}

impl<T: Serialize> Queue<T> {
    /// Enqueues a job: a payload, or a [`NewJob`] with options. A job with
    /// a run-at ([`NewJob::at`], [`NewJob::after`]) goes to the schedule set
    /// until it is due.
    ///
    /// When the connection drops under the call ([`Error::is_connection`])
    /// the job may or may not be enqueued: give it an id ([`NewJob::id`])
    /// and sending it again is safe, as an existing id is left as it is.
    ///
    /// With the `otel` feature, the enqueue runs in a span `emq enqueue
    /// <queue>` (a producer span, child of the current OpenTelemetry
    /// context), and the job records that span's context as its
    /// traceparent unless [`NewJob::traceparent`] set one.
    pub async fn enqueue(&self, job: impl Into<NewJob<T>>) -> Result<Enqueued> {
        #[cfg(feature = "otel")]
        {
            let mut job = job.into();
            let span = crate::otel::EnqueueSpan::start(self.name().as_str());
            if job.traceparent.is_none() {
                job.traceparent = span.traceparent();
            }
            let outcome = self.enqueue_one(&job).await;
            span.end(&outcome);
            outcome
        }
        #[cfg(not(feature = "otel"))]
        self.enqueue_one(&job.into()).await
    }

    /// One ENQUEUE (or SCHEDULE), then the registry; an awaited job's
    /// wait begins before the call and registers with its reply.
    async fn enqueue_one(&self, job: &NewJob<T>) -> Result<Enqueued> {
        let call = single_call(job)?;
        let early = match job.awaited {
            true => Some(EarlyWaits::begin(self.connector(), self.keys()).await?),
            false => None,
        };
        let reply = self.call(call).await?;
        self.register().await;
        let mut enqueued = decode_enqueued(reply, &Arc::new(self.typed()))?;
        if let Some(early) = &early {
            enqueued.early = Some(EarlyTicket::register(early, &enqueued));
        }
        Ok(enqueued)
    }
}

/// The server's clock in ms from a `TIME` reply (seconds, microseconds).
pub(crate) fn server_ms((secs, micros): (u64, u64)) -> u64 {
    secs * 1000 + micros / 1000
}

/// ENQUEUE, or SCHEDULE for a job with a run-at.
fn single_call<T: Serialize>(job: &NewJob<T>) -> Result<Call> {
    job.check_no_dependencies()?;
    let id = job.id.as_ref().map_or(JobId::GENERATE, JobId::as_str);
    let call = match job.run_at {
        None => Call::new(Transition::Enqueue, job.id.as_ref())
            .arg(id)
            .arg(serde_json::to_vec(&job.payload)?),
        Some(run_at) => Call::new(Transition::Schedule, job.id.as_ref())
            .arg(id)
            .arg(serde_json::to_vec(&job.payload)?)
            .arg(run_at.arg()),
    };
    let mut call = call
        .arg("PRIORITY")
        .int(u64::from(job.priority))
        .arg("ATTEMPTS")
        .int(check_attempts(job.attempts)?);
    if let (Some(key), Some(_)) = (&job.repeat, job.run_at) {
        call = call.arg("REPEAT").arg(key.as_str());
    }
    let options = job.dedup_args()?.into_iter().chain(job.group_args()?);
    let options = options.chain(job.trace_args()?);
    let options = options.chain(job.deadline_args()?);
    for arg in options.chain(job.lifo_args()).chain(job.waited_args()) {
        call = call.arg(arg);
    }
    Ok(call)
}

impl<T: DeserializeOwned> Queue<T> {
    /// Claims one job, if any is pending.
    pub async fn claim_one(&self, worker: &str, lease: Duration) -> Result<Option<Claimed<T>>> {
        Ok(self.claim(worker, lease, 1).await?.pop())
    }
}

pub(crate) fn check_attempts(attempts: u64) -> Result<u64> {
    if attempts == 0 {
        return Err(Error::BadArgument {
            name: "attempts",
            reason: "a job needs at least 1 attempt".into(),
        });
    }
    Ok(attempts)
}

pub(crate) fn complete_call<R: Serialize + ?Sized>(
    id: &JobId,
    token: u64,
    result: &R,
) -> Result<Call> {
    let json = serde_json::to_vec(result).map_err(Error::JobResult)?;
    Ok(complete_call_json(id, token, json))
}

/// COMPLETE with an already-encoded JSON result; `null` stores none.
pub(crate) fn complete_call_json(id: &JobId, token: u64, result: Vec<u8>) -> Call {
    let call = Call::new(Transition::Complete, Some(id))
        .arg(id.as_str())
        .int(token);
    if result == b"null" {
        call
    } else {
        call.arg("RESULT").arg(result)
    }
}

pub(crate) fn fail_call(id: &JobId, token: u64, error: &str, action: FailAction) -> Call {
    let call = Call::new(Transition::Fail, Some(id))
        .arg(id.as_str())
        .int(token)
        .arg(error);
    match action {
        FailAction::Retry(delay) => call.arg("RETRY_IN").int(delay.as_millis() as u64),
        FailAction::Dead => call.arg("DEAD"),
        FailAction::Cancelled => call.arg("CANCELLED"),
        FailAction::RateLimited(retry_after) => {
            call.arg("RATE_LIMITED").int(retry_after.as_millis() as u64)
        }
    }
}

pub(crate) fn extend_call(id: &JobId, token: u64, lease: Duration) -> Call {
    Call::new(Transition::Extend, Some(id))
        .arg(id.as_str())
        .int(token)
        .int((lease.as_millis() as u64).max(1))
}

pub(crate) fn decode_extended(reply: Value) -> Result<Extended> {
    let items = decode::array(Transition::Extend, reply)?;
    match items.as_slice() {
        [deadline, cancel] => Ok(Extended {
            deadline_ms: decode::int(Transition::Extend, deadline.clone())?,
            cancel_requested: decode::int(Transition::Extend, cancel.clone())? == 1,
        }),
        _ => Err(Error::UnexpectedReply {
            transition: Transition::Extend,
            detail: format!("{items:?}"),
        }),
    }
}

/// A claim's lease as CLAIM takes it: whole ms, at least 1.
pub(crate) fn lease_ms(lease: Duration) -> u64 {
    lease.as_millis().max(1) as u64
}

/// `CLAIM worker lease_ms COUNT count` (count at least 1).
pub(crate) fn claim_call(worker: &str, lease: Duration, count: usize) -> Call {
    Call::new(Transition::Claim, None)
        .arg(worker)
        .int(lease_ms(lease))
        .arg("COUNT")
        .int(count.max(1) as u64)
}

pub(crate) fn requeue_call(id: &JobId) -> Call {
    Call::new(Transition::Requeue, Some(id)).arg(id.as_str())
}

pub(crate) fn delay_call(id: &JobId, token: u64, delay: Duration) -> Call {
    Call::new(Transition::Delay, Some(id))
        .arg(id.as_str())
        .int(token)
        .int(delay.as_millis() as u64)
}

/// FAIL's outcome, `relay_dead` read as `dead` and `relay_cancelled` as
/// `cancelled`.
pub(crate) fn decode_fail(reply: Value) -> Result<FailOutcome> {
    decode_fail_relay(reply).map(|(outcome, _)| outcome)
}

/// FAIL's outcome, and whether it answered `relay_*` (the job's
/// resolution waits in the outbox: see `outbox.rs`).
pub(crate) fn decode_fail_relay(reply: Value) -> Result<(FailOutcome, bool)> {
    let word = decode::text(Transition::Fail, reply)?;
    let (word, relay) = crate::outbox::relay_word(&word);
    let outcome = match word {
        "retry" if !relay => FailOutcome::Retry,
        "dead" => FailOutcome::Dead,
        "cancelled" => FailOutcome::Cancelled,
        "rate_limited" if !relay => FailOutcome::RateLimited,
        _ => {
            return Err(Error::UnexpectedReply {
                transition: Transition::Fail,
                detail: word.to_string(),
            });
        }
    };
    Ok((outcome, relay))
}

/// An ENQUEUE or SCHEDULE reply, `[id, code]`.
pub(crate) fn decode_enqueued(reply: Value, queue: &Arc<Queue>) -> Result<Enqueued> {
    decode_created(Transition::Enqueue, reply, queue)
}

/// A `[id, code]` reply of `transition` (an enqueue's, a flow job's).
pub(crate) fn decode_created(
    transition: Transition,
    reply: Value,
    queue: &Arc<Queue>,
) -> Result<Enqueued> {
    let mut items = decode::array(transition, reply)?.into_iter();
    match (items.next(), items.next()) {
        (Some(id), Some(code)) => {
            let code = decode::int(transition, code)?;
            let effect = EnqueueOutcome::from_code(code).ok_or_else(|| Error::UnexpectedReply {
                transition,
                detail: format!("created {code}"),
            })?;
            Ok(Enqueued {
                id: JobId::new(decode::text(transition, id)?)?,
                created: effect == EnqueueOutcome::Created,
                effect,
                queue: queue.clone(),
                early: None,
            })
        }
        _ => Err(Error::UnexpectedReply {
            transition,
            detail: "expected [id, created]".into(),
        }),
    }
}

/// One entry of CLAIM's reply: `[id, token, payload, failures,
/// max_attempts]`, and the traceparent sixth for a job that has one; on a
/// timed queue always seven, the traceparent (empty: none) and the time
/// limit (0: none).
fn decode_claimed<T>(entry: Value) -> Result<Claimed<T>> {
    let items = decode::array(Transition::Claim, entry)?;
    if !(5..=7).contains(&items.len()) {
        return Err(Error::UnexpectedReply {
            transition: Transition::Claim,
            detail: format!(
                "an entry of {} elements, not [id, token, payload, failures, max_attempts] and maybe a traceparent",
                items.len()
            ),
        });
    }
    let mut items = items.into_iter();
    let mut next = || items.next().unwrap_or(Value::Nil);
    Ok(Claimed {
        id: JobId::new(decode::text(Transition::Claim, next())?)?,
        token: decode::int(Transition::Claim, next())?,
        payload: decode::bytes(Transition::Claim, next())?,
        failures: decode::int(Transition::Claim, next())?,
        max_attempts: decode::int(Transition::Claim, next())?,
        traceparent: match next() {
            Value::Nil => None,
            tp => Some(decode::text(Transition::Claim, tp)?).filter(|tp| !tp.is_empty()),
        },
        time_limit: match next() {
            Value::Nil => None,
            ms => Some(decode::int(Transition::Claim, ms)?)
                .filter(|ms| *ms > 0)
                .map(Duration::from_millis),
        },
        _type: PhantomData,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(items: &[Value]) -> Result<Claimed<()>> {
        decode_claimed(Value::Array(items.to_vec()))
    }

    #[test]
    fn a_claimed_entry_has_five_elements_and_a_traceparent_sixth() {
        let five = [
            Value::BulkString(b"j".to_vec()),
            Value::Int(2),
            Value::BulkString(b"{}".to_vec()),
            Value::Int(1),
            Value::Int(3),
        ];
        let job = entry(&five).unwrap();
        assert_eq!((job.token, job.attempt(), job.traceparent()), (2, 2, None));
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let mut six = five.to_vec();
        six.push(Value::BulkString(tp.as_bytes().to_vec()));
        assert_eq!(entry(&six).unwrap().traceparent(), Some(tp));
        assert!(entry(&five[..4]).is_err());
        six.push(Value::Int(1500));
        let seven = entry(&six).unwrap();
        assert_eq!(seven.time_limit(), Some(Duration::from_millis(1500)));
        six[5] = Value::BulkString(Vec::new());
        six[6] = Value::Int(0);
        let untimed = entry(&six).unwrap();
        assert_eq!((untimed.traceparent(), untimed.time_limit()), (None, None));
        six.push(Value::Int(0));
        assert!(entry(&six).is_err());
    }
}
