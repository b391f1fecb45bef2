//! The values that go in and come out of a queue.

use crate::error::{Error, Result};
use crate::outcome::Outcome;
use crate::queue::Queue;
use echomq_protocol::arg::DEFAULT_MAX_ATTEMPTS;
use echomq_protocol::{DedupMode, JobId, JobState, Transition};
use serde::de::DeserializeOwned;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A job to enqueue: its payload and options.
///
/// ```
/// use echomq::NewJob;
/// let job = NewJob::new("hello").id("greeting-1").unwrap().priority(2).attempts(5);
/// assert_eq!(job.priority_value(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct NewJob<T> {
    pub(crate) payload: T,
    pub(crate) id: Option<JobId>,
    pub(crate) priority: u8,
    pub(crate) attempts: u64,
    pub(crate) run_at: Option<RunAt>,
    /// The repeat definition that produced the job.
    pub(crate) repeat: Option<String>,
    /// The deduplication key (checked when the job is sent).
    pub(crate) dedup: Option<String>,
    /// How the key holds, when not until the job finishes.
    pub(crate) dedup_hold: Option<DedupHold>,
    /// The group it belongs to (checked when the job is sent).
    pub(crate) group: Option<String>,
    /// The W3C trace context of the enqueue (checked when the job is sent).
    pub(crate) traceparent: Option<String>,
    /// How long a run may last (checked when the job is sent).
    pub(crate) time_limit: Option<Duration>,
    /// When the job must have started by (checked when the job is sent).
    pub(crate) start_by: Option<crate::deadlines::StartBy>,
    /// Whether it enters pending at the front of its priority.
    pub(crate) lifo: bool,
    /// Whether the caller will wait for its outcome ([`NewJob::awaited`]).
    pub(crate) awaited: bool,
    /// The jobs of its flow it runs after, and its policy
    /// ([`NewJob::depends_on`]).
    pub(crate) dependencies: crate::flows::Dependencies,
}

/// How a job's deduplication key holds besides the simple mode (until the
/// job finishes): [`NewJob::dedup_for`] or [`NewJob::debounce`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DedupHold {
    /// Throttle: for this long from the enqueue that created the job.
    For(Duration),
    /// Debounce: the job waits this long, pushed back by each enqueue with
    /// the key while it waits.
    Debounce(Duration),
}

/// When a scheduled job becomes claimable: the wire form of
/// [`NewJob::at`] and [`NewJob::after`], which are the one way to say
/// "later" (crate-private, so there is no second one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunAt {
    /// An absolute instant, unix ms (the caller's clock).
    At(u64),
    /// After a delay, in ms, counted on the server's clock.
    In(u64),
}

impl RunAt {
    /// An absolute instant.
    pub(crate) fn at(at: std::time::SystemTime) -> Self {
        let ms = at
            .duration_since(std::time::UNIX_EPOCH)
            .map(|since| since.as_millis() as u64)
            .unwrap_or(0);
        RunAt::At(ms)
    }

    /// The protocol argument: `ms`, or `+ms` for a delay.
    pub(crate) fn arg(self) -> String {
        match self {
            RunAt::At(ms) => ms.to_string(),
            RunAt::In(ms) => format!("+{ms}"),
        }
    }
}

impl<T> NewJob<T> {
    /// A job with a generated id, priority 0 and 3 attempts.
    pub fn new(payload: T) -> Self {
        Self {
            payload,
            id: None,
            priority: 0,
            attempts: DEFAULT_MAX_ATTEMPTS,
            run_at: None,
            repeat: None,
            dedup: None,
            dedup_hold: None,
            group: None,
            traceparent: None,
            time_limit: None,
            start_by: None,
            lifo: false,
            awaited: false,
            dependencies: Default::default(),
        }
    }

    /// Whether the job has an option the bulk enqueues do not carry (a
    /// dedup key, a group, a trace context, a time limit or deadline,
    /// LIFO): such a job is sent alone.
    pub(crate) fn has_own_options(&self) -> bool {
        self.dedup.is_some()
            || self.dedup_hold.is_some()
            || self.group.is_some()
            || self.traceparent.is_some()
            || self.has_deadlines()
            || self.lifo
    }

    /// The same job with `payload` in place of its own.
    pub(crate) fn with_payload<U>(self, payload: U) -> NewJob<U> {
        NewJob {
            payload,
            id: self.id,
            priority: self.priority,
            attempts: self.attempts,
            run_at: self.run_at,
            repeat: self.repeat,
            dedup: self.dedup,
            dedup_hold: self.dedup_hold,
            group: self.group,
            traceparent: self.traceparent,
            time_limit: self.time_limit,
            start_by: self.start_by,
            lifo: self.lifo,
            awaited: self.awaited,
            dependencies: self.dependencies,
        }
    }

    /// Schedules the job for an absolute instant (the caller's clock); a
    /// past instant makes it claimable at once.
    pub fn at(mut self, at: std::time::SystemTime) -> Self {
        self.run_at = Some(RunAt::at(at));
        self
    }

    /// Schedules the job `delay` from now, counted on the server's clock
    /// (one round trip, whatever the caller's clock says).
    ///
    /// ```
    /// use echomq::NewJob;
    /// use std::time::Duration;
    /// let job = NewJob::new("reminder").after(Duration::from_secs(3600));
    /// ```
    pub fn after(mut self, delay: Duration) -> Self {
        self.run_at = Some(RunAt::In(delay.as_millis() as u64));
        self
    }

    /// Gives the job an id: enqueueing an id that exists changes nothing
    /// (idempotent enqueue).
    pub fn id(mut self, id: impl Into<String>) -> Result<Self> {
        self.id = Some(JobId::new(id)?);
        Ok(self)
    }

    /// Priority 0–255; 0 (the default) is claimed first.
    pub fn priority(mut self, priority: u8) -> Self {
        self.priority = priority;
        self
    }

    /// Attempts before the job is dead-lettered (at least 1; default 3).
    pub fn attempts(mut self, attempts: u64) -> Self {
        self.attempts = attempts;
        self
    }

    /// Deduplicates the job by `key` (1–256 bytes, no whitespace, braces
    /// or control characters, not `*`; checked when it is sent,
    /// [`Error::BadArgument`] otherwise): while another job enqueued with
    /// the key holds it, enqueueing this one creates nothing and answers the holder ([`EnqueueOutcome`]).
    /// Alone, the key holds until the job finishes or is removed; with
    /// [`NewJob::dedup_for`] for a time; with [`NewJob::debounce`] while
    /// the job waits. See `docs/flow-control.md`.
    ///
    /// ```
    /// use echomq::NewJob;
    /// use std::time::Duration;
    /// let job = NewJob::new("sync").dedup("sync:account-7").dedup_for(Duration::from_secs(10));
    /// ```
    pub fn dedup(mut self, key: impl Into<String>) -> Self {
        self.dedup = Some(key.into());
        self
    }

    /// Throttle: the dedup key holds for `period` (≥ 1 ms) from the enqueue
    /// that created the job, whether or not the job has finished. Needs
    /// [`NewJob::dedup`].
    pub fn dedup_for(mut self, period: Duration) -> Self {
        self.dedup_hold = Some(DedupHold::For(period));
        self
    }

    /// Debounce: the job runs `wait` (≥ 1 ms) after the last enqueue with
    /// its dedup key: each enqueue with the key while the job still waits
    /// replaces its payload and pushes its run-at to now + `wait` (server
    /// clock); once it runs, the next enqueue makes the next job. Needs
    /// [`NewJob::dedup`]; takes no run-at of its own ([`NewJob::at`],
    /// [`NewJob::after`]).
    pub fn debounce(mut self, wait: Duration) -> Self {
        self.dedup_hold = Some(DedupHold::Debounce(wait));
        self
    }

    /// The priority set on this job.
    pub fn priority_value(&self) -> u8 {
        self.priority
    }

    /// Puts the job in a group (1–128 bytes, no whitespace, braces or
    /// control characters): claims take jobs round robin across the groups
    /// that have claimable work, so one group's backlog does not hold the
    /// others back; each group can have its own cap, rate limit and pause
    /// ([`Admin::group`](crate::Admin::group)). See `docs/groups.md`.
    ///
    /// ```
    /// use echomq::NewJob;
    /// let job = NewJob::new("invoice").group("tenant-42");
    /// ```
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.group = Some(group.into());
        self
    }

    /// Carries a W3C trace context: `traceparent` is the value of a
    /// `traceparent` header (`00-<32 hex trace id>-<16 hex parent id>-<2
    /// hex flags>`, lowercase, version not `ff`, ids not all zeros; checked
    /// when the job is sent, [`Error::BadArgument`] otherwise). The job
    /// stores it (`TRACE`), and every claim of it hands it back
    /// ([`Claimed::traceparent`], [`JobContext::traceparent`](crate::JobContext::traceparent)),
    /// so the work a worker does can join the trace of the request that
    /// enqueued it. With the `otel` feature, [`Queue::enqueue`](crate::Queue::enqueue)
    /// records the current OpenTelemetry context by itself unless one is
    /// set here. See `docs/observability.md`.
    ///
    /// ```
    /// use echomq::NewJob;
    /// let job = NewJob::new("invoice")
    ///     .traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    /// ```
    pub fn traceparent(mut self, traceparent: impl Into<String>) -> Self {
        self.traceparent = Some(traceparent.into());
        self
    }

    /// The trace option as protocol arguments (`TRACE tp`), checked:
    /// [`Error::BadArgument`] for a value that breaks the rule.
    pub(crate) fn trace_args(&self) -> Result<Vec<Vec<u8>>> {
        let Some(traceparent) = &self.traceparent else {
            return Ok(Vec::new());
        };
        echomq_protocol::trace::check_traceparent(traceparent.as_bytes()).map_err(|reason| {
            Error::BadArgument {
                name: echomq_protocol::trace::BADARG,
                reason: reason.into(),
            }
        })?;
        Ok(vec![b"TRACE".to_vec(), traceparent.clone().into_bytes()])
    }

    /// The group option as protocol arguments (`GROUP g`), checked:
    /// [`Error::BadArgument`] for a group that breaks the rule.
    pub(crate) fn group_args(&self) -> Result<Vec<Vec<u8>>> {
        let Some(group) = &self.group else {
            return Ok(Vec::new());
        };
        echomq_protocol::GroupName::new(group.as_str()).map_err(|err| Error::BadArgument {
            name: "group",
            reason: err.to_string(),
        })?;
        Ok(vec![b"GROUP".to_vec(), group.clone().into_bytes()])
    }

    /// The dedup options as protocol arguments (`DEDUP key [DEDUP_FOR ms |
    /// DEBOUNCE ms]`), checked: [`Error::BadArgument`] for a key that breaks
    /// the rule, a period under 1 ms, a mode without a key, or a debounced
    /// job with a run-at.
    pub(crate) fn dedup_args(&self) -> Result<Vec<Vec<u8>>> {
        let bad = |name, reason: String| Error::BadArgument { name, reason };
        let Some(key) = &self.dedup else {
            return match self.dedup_hold {
                None => Ok(Vec::new()),
                Some(_) => Err(bad(
                    "dedup",
                    "dedup_for and debounce need a dedup key (NewJob::dedup)".into(),
                )),
            };
        };
        echomq_protocol::dedup::check_key(key).map_err(|reason| bad("dedup", reason))?;
        let mut args = vec![b"DEDUP".to_vec(), key.clone().into_bytes()];
        let (word, name, period) = match self.dedup_hold {
            None => return Ok(args),
            Some(DedupHold::For(period)) => ("DEDUP_FOR", "dedup_for", period),
            Some(DedupHold::Debounce(period)) => ("DEBOUNCE", "debounce", period),
        };
        let ms = period
            .as_millis()
            .min(u128::from(echomq_protocol::arg::MAX_INT)) as u64;
        if ms == 0 {
            return Err(bad(name, "must be at least 1 ms".into()));
        }
        if word == "DEBOUNCE" && self.run_at.is_some() {
            return Err(bad(
                name,
                "a debounced job runs at now + the debounce: it takes no run-at (at, after)".into(),
            ));
        }
        args.extend([word.as_bytes().to_vec(), ms.to_string().into_bytes()]);
        Ok(args)
    }
}

impl<T> From<T> for NewJob<T> {
    fn from(payload: T) -> Self {
        NewJob::new(payload)
    }
}

/// What an enqueue did, and the handle to wait for the job's outcome
/// ([`Enqueued::outcome`]).
#[derive(Clone)]
pub struct Enqueued {
    /// The job's id (generated or given); for a deduplicated or debounced
    /// enqueue, the id of the job holding the key.
    pub id: JobId,
    /// `true` only when a job was created ([`EnqueueOutcome::Created`]).
    pub created: bool,
    /// What the enqueue did.
    pub effect: EnqueueOutcome,
    /// The queue the job is in, for [`Enqueued::outcome`] (shared by the
    /// jobs of one bulk enqueue).
    pub(crate) queue: Arc<Queue>,
    /// The wait registered at the enqueue of an awaited job
    /// ([`NewJob::awaited`]), until [`Enqueued::outcome`] takes it.
    pub(crate) early: Option<Arc<crate::awaited::EarlyTicket>>,
}

impl Enqueued {
    /// Waits at most `timeout` for the job to be decided, and returns how
    /// it ended, its result decoded to `R`: [`Queue::outcome`] for this
    /// job, with the same guarantees (nothing missed, nothing hung). For a
    /// job enqueued [`NewJob::awaited`], the first call takes the wait
    /// registered at the enqueue, which reads nothing on the server; a
    /// later call (after a timeout) waits as [`Queue::outcome`] does.
    pub async fn outcome<R: DeserializeOwned>(&self, timeout: Duration) -> Result<Outcome<R>> {
        match self.early.as_ref().and_then(|early| early.take()) {
            Some((waits, ticket)) => {
                self.queue
                    .outcome_of_ticket(&self.id, &waits, ticket, timeout)
                    .await
            }
            None => self.queue.outcome(&self.id, timeout).await,
        }
    }
}

impl fmt::Debug for Enqueued {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Enqueued")
            .field("id", &self.id)
            .field("created", &self.created)
            .field("effect", &self.effect)
            .field("queue", &self.queue.name())
            .finish()
    }
}

/// Two enqueues are equal when they name the same job of the same queue
/// and did the same.
impl PartialEq for Enqueued {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && self.created == other.created
            && self.effect == other.effect
            && self.queue.keys() == other.queue.keys()
    }
}

impl Eq for Enqueued {}

/// What an enqueue did: the second element of `ENQUEUE`'s reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnqueueOutcome {
    /// A new job (reply 1).
    Created,
    /// A job with this id existed; nothing changed (reply 0).
    Existed,
    /// Its dedup key is held by another job ([`Enqueued::id`]); nothing was
    /// created (reply 2).
    Deduplicated,
    /// Its dedup key is held by a debounced job that still waits
    /// ([`Enqueued::id`]): that job's payload was replaced and its run-at
    /// pushed (reply 3).
    Debounced,
}

impl EnqueueOutcome {
    /// The outcome of reply code `code`; `None` for a code the protocol
    /// does not have.
    pub fn from_code(code: u64) -> Option<Self> {
        match code {
            0 => Some(EnqueueOutcome::Existed),
            1 => Some(EnqueueOutcome::Created),
            2 => Some(EnqueueOutcome::Deduplicated),
            3 => Some(EnqueueOutcome::Debounced),
            _ => None,
        }
    }

    /// The outcome in a word: `created`, `existed`, `deduplicated`,
    /// `debounced`.
    pub fn as_str(self) -> &'static str {
        match self {
            EnqueueOutcome::Created => "created",
            EnqueueOutcome::Existed => "existed",
            EnqueueOutcome::Deduplicated => "deduplicated",
            EnqueueOutcome::Debounced => "debounced",
        }
    }
}

/// A job claimed by a worker, under a lease.
#[derive(Debug, Clone)]
pub struct Claimed<T> {
    /// The job's id.
    pub id: JobId,
    /// The fencing token: every verb on the job in hand must carry it.
    pub token: u64,
    /// Failed attempts before this one.
    pub failures: u64,
    /// Attempts allowed in all.
    pub max_attempts: u64,
    pub(crate) payload: Vec<u8>,
    /// The W3C trace context the job was enqueued with (CLAIM's sixth
    /// element).
    pub(crate) traceparent: Option<String>,
    /// How long a run may last (CLAIM's seventh element, on a timed queue).
    pub(crate) time_limit: Option<Duration>,
    pub(crate) _type: std::marker::PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned> Claimed<T> {
    /// Decodes the payload as `T`.
    pub fn payload(&self) -> Result<T> {
        Ok(serde_json::from_slice(&self.payload)?)
    }
}

impl<T> Claimed<T> {
    /// The payload bytes as stored.
    pub fn raw_payload(&self) -> &[u8] {
        &self.payload
    }

    /// The payload as text, as a [`JobRecord`] reads it: valid UTF-8 as it
    /// is, each other byte written `\xNN`.
    pub fn payload_text(&self) -> String {
        crate::transport::decode::escaped(self.payload.clone())
    }

    /// This attempt's number, from 1.
    pub fn attempt(&self) -> u64 {
        self.failures + 1
    }

    /// The W3C trace context the job was enqueued with
    /// ([`NewJob::traceparent`]), if it has one.
    pub fn traceparent(&self) -> Option<&str> {
        self.traceparent.as_deref()
    }

    /// How long this run may last from its claim
    /// ([`NewJob::time_limit`]), if the job has a limit.
    pub fn time_limit(&self) -> Option<Duration> {
        self.time_limit
    }
}

/// What to do with a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailAction {
    /// Retry after the delay (zero: pending at once) while attempts remain;
    /// dead-letter otherwise.
    Retry(Duration),
    /// Dead-letter now, whatever attempts remain.
    Dead,
    /// Cancel the job (not counted as a failure).
    Cancelled,
    /// The job met a rate limit (a 429): back to pending without counting
    /// a failure, and the whole queue held for this long (no claim hands
    /// out a job before; a longer hold already set stays).
    RateLimited(Duration),
}

/// Where a failed job went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOutcome {
    /// Back to pending or scheduled for another attempt.
    Retry,
    /// Dead-lettered.
    Dead,
    /// Cancelled.
    Cancelled,
    /// Back to pending, the queue held ([`FailAction::RateLimited`]).
    RateLimited,
}

/// A job as `GET` reads it: a view for reading and showing. Its fields are
/// opaque bytes on the server (a payload from another client need not be
/// UTF-8): bytes that are not UTF-8 are written `\xNN` (`\xff`) here, so
/// one such job never fails a page of them; a worker gets the exact bytes
/// ([`Claimed::raw_payload`]).
#[derive(Debug, Clone, PartialEq)]
pub struct JobRecord {
    /// The job's id.
    pub id: JobId,
    /// Its state.
    pub state: JobState,
    /// The payload (JSON from this client), bytes that are not UTF-8
    /// escaped.
    pub payload: String,
    /// Priority, 0 most urgent.
    pub priority: u64,
    /// Attempts allowed.
    pub max_attempts: u64,
    /// Times claimed.
    pub claims: u64,
    /// Failed attempts.
    pub failures: u64,
    /// Times recovered by the stalled sweep.
    pub stalls: u64,
    /// Created at (ms, server clock).
    pub created_at: Option<u64>,
    /// Runnable at (ms).
    pub run_at: Option<u64>,
    /// Last claimed at (ms).
    pub claimed_at: Option<u64>,
    /// Finished at (ms).
    pub finished_at: Option<u64>,
    /// The worker that last claimed it.
    pub worker: Option<String>,
    /// The holder's last progress.
    pub progress: Option<String>,
    /// The result (JSON).
    pub result: Option<String>,
    /// The last error.
    pub error: Option<String>,
    /// Whether a cancellation was requested while it ran.
    pub cancel_requested: bool,
    /// The repeat definition that produced it.
    pub repeat: Option<String>,
    /// The deduplication key it was enqueued with.
    pub dedup: Option<String>,
    /// How that key held (`simple`, `throttle`, `debounce`).
    pub dedup_mode: Option<DedupMode>,
    /// The group it belongs to.
    pub group: Option<String>,
    /// The W3C trace context it was enqueued with.
    pub traceparent: Option<String>,
    /// How long a run may last, ms ([`NewJob::time_limit`]).
    pub time_limit: Option<u64>,
    /// When it must have started by, ms (unix, server clock)
    /// ([`NewJob::start_by`], [`NewJob::start_within`]).
    pub start_by: Option<u64>,
    /// Why it was cancelled when the queue did it: `expired` (its
    /// start-by deadline passed).
    pub reason: Option<String>,
    /// Whether it was enqueued LIFO ([`NewJob::lifo`]).
    pub lifo: bool,
    /// The flow it was added in (docs/protocol.md, "Flows"); none for a
    /// job outside any flow.
    pub flow: Option<String>,
    /// Its name in that flow (the job field `ref`).
    pub flow_ref: Option<String>,
    /// What it does when a dependency ends dead, cancelled or removed
    /// ([`NewJob::on_dependency_failure`]; [`Policy::Fail`] when the job
    /// names none, or a word no policy has).
    ///
    /// [`Policy::Fail`]: crate::Policy::Fail
    pub on_failure: crate::Policy,
    /// How many dependencies it has; none without any.
    pub deps: Option<u64>,
    /// How many of them are still unresolved (with `deps`).
    pub deps_left: Option<u64>,
    /// How many dependents it has; none without any.
    pub dependents: Option<u64>,
    /// Number of log lines.
    pub logs: u64,
}

impl JobRecord {
    /// The last claim's fencing token, what its holder passes to complete,
    /// fail or extend the job (`claimed_at` × 1000 + `claims` mod 1000:
    /// the protocol's Fencing section); none before the first claim.
    pub fn token(&self) -> Option<u64> {
        let claimed_at = self.claimed_at.filter(|_| self.claims > 0)?;
        let token = echomq_protocol::arg::job_token(
            i64::try_from(self.claims).ok()?,
            i64::try_from(claimed_at).ok()?,
        );
        u64::try_from(token).ok()
    }

    /// Decodes the payload as `T`.
    pub fn payload_as<T: DeserializeOwned>(&self) -> Result<T> {
        Ok(serde_json::from_str(&self.payload)?)
    }

    pub(crate) fn from_fields(mut fields: HashMap<String, String>) -> Result<Self> {
        let bad = |detail: String| Error::UnexpectedReply {
            transition: Transition::Get,
            detail,
        };
        let mut take = |name: &str| fields.remove(name);
        let id = JobId::new(take("id").ok_or_else(|| bad("no id".into()))?)?;
        let state_word = take("state").ok_or_else(|| bad("no state".into()))?;
        let state = state_word.parse().map_err(|err| bad(format!("{err}")))?;
        let int = |value: Option<String>| value.and_then(|v| v.parse::<u64>().ok());
        let dedup = take("dedup");
        let dedup_mode = DedupMode::of_job(dedup.as_deref(), take("dedup_mode").as_deref());
        Ok(JobRecord {
            id,
            state,
            payload: take("payload").unwrap_or_default(),
            priority: int(take("priority")).unwrap_or(0),
            max_attempts: int(take("max_attempts")).unwrap_or(DEFAULT_MAX_ATTEMPTS),
            claims: int(take("claims")).unwrap_or(0),
            failures: int(take("failures")).unwrap_or(0),
            stalls: int(take("stalls")).unwrap_or(0),
            created_at: int(take("created_at")),
            run_at: int(take("run_at")),
            claimed_at: int(take("claimed_at")),
            finished_at: int(take("finished_at")),
            worker: take("worker"),
            progress: take("progress"),
            result: take("result"),
            error: take("error"),
            cancel_requested: take("cancel").as_deref() == Some("1"),
            repeat: take("repeat"),
            dedup,
            dedup_mode,
            group: take("group"),
            traceparent: take("traceparent"),
            time_limit: int(take("time_limit")),
            start_by: int(take("start_by")),
            reason: take("reason"),
            lifo: take("lifo").as_deref() == Some("1"),
            flow: take("flow"),
            flow_ref: take("ref"),
            on_failure: take("on_failure")
                .and_then(|word| crate::Policy::parse(&word))
                .unwrap_or_default(),
            deps: int(take("deps")),
            deps_left: int(take("deps_left")),
            dependents: int(take("dependents")),
            logs: int(take("logs")).unwrap_or(0),
        })
    }
}

/// The size of each state set, and whether the queue is paused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// Jobs waiting for their run-at.
    pub scheduled: u64,
    /// Claimable jobs.
    pub pending: u64,
    /// Jobs held by workers.
    pub active: u64,
    /// Completed jobs kept.
    pub completed: u64,
    /// Dead-lettered jobs kept.
    pub dead: u64,
    /// Cancelled jobs kept.
    pub cancelled: u64,
    /// Jobs waiting for their dependencies (flows).
    pub blocked: u64,
    /// Whether claims are paused.
    pub paused: bool,
}

impl Counts {
    /// The count of one state.
    pub fn get(&self, state: JobState) -> u64 {
        match state {
            JobState::Scheduled => self.scheduled,
            JobState::Pending => self.pending,
            JobState::Active => self.active,
            JobState::Completed => self.completed,
            JobState::Dead => self.dead,
            JobState::Cancelled => self.cancelled,
            JobState::Blocked => self.blocked,
        }
    }

    /// Jobs in every state together.
    pub fn total(&self) -> u64 {
        JobState::ALL.iter().map(|state| self.get(*state)).sum()
    }
}

/// Retention and event settings of a queue, stored in its meta hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueSettings {
    /// Completed jobs kept (oldest trimmed first); 0 deletes at once.
    pub keep_completed: u64,
    /// Dead jobs kept.
    pub keep_dead: u64,
    /// Cancelled jobs kept.
    pub keep_cancelled: u64,
    /// About how many jobs' events the events stream keeps (an approximate
    /// cap, `docs/protocol.md` "Events"); 0 turns events off.
    pub events_max: u64,
}

impl Default for QueueSettings {
    fn default() -> Self {
        use echomq_protocol::arg::*;
        Self {
            keep_completed: DEFAULT_KEEP_COMPLETED,
            keep_dead: DEFAULT_KEEP_DEAD,
            keep_cancelled: DEFAULT_KEEP_CANCELLED,
            events_max: DEFAULT_EVENTS_MAX,
        }
    }
}

/// The reply of a lease checkpoint (`EXTEND`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extended {
    /// The new lease deadline (ms, server clock).
    pub deadline_ms: u64,
    /// Whether a cancellation of the job was requested.
    pub cancel_requested: bool,
}

/// What one stalled sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Swept {
    /// Jobs whose lease ran out, sent back to pending.
    pub recovered: u64,
    /// Jobs that stalled more than `max_stalls` times, dead-lettered.
    pub dead: u64,
    /// Jobs whose lease ran out at their time limit, failed (retried or
    /// dead, as a failed attempt is).
    pub timed_out: u64,
    /// Waiting jobs past their start-by deadline, cancelled.
    pub expired: u64,
}
