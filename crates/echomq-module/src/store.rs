//! The keyspace of one queue as the module sees it, and the helpers of
//! `scripts/include/prelude.lua` every command family shares.
//!
//! Every write goes through [`Store::write`]: `RM_Call` with the `!` flag,
//! so the server replicates (and appends to the AOF) the effect command with
//! the explicit values computed here (scores, timestamps, tokens), never the
//! `EMQ.*` command itself; a replica or an AOF replay never reads a clock.
//! The server wraps the effects of one command in MULTI/EXEC.

use crate::args::{RunAt, refuse};
use crate::clock::now_ms;
use echomq_protocol::QueueKey;
use echomq_protocol::arg::{
    DEFAULT_EVENTS_MAX, DEFAULT_KEEP_CANCELLED, DEFAULT_KEEP_COMPLETED, DEFAULT_KEEP_DEAD,
    pending_score,
};
use echomq_protocol::keyspace::{JOB_INFIX, LOGS_INFIX};
use valkey_module::{CallOptions, CallOptionsBuilder, CallReply, CallResult, Context, ValkeyError};

/// The message of Valkey's own WRONGTYPE error.
pub(crate) const WRONGTYPE: &str =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

/// A reply of a called command, copied out of the server's reply object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Reply {
    Int(i64),
    Bytes(Vec<u8>),
    Array(Vec<Reply>),
    Null,
}

impl Reply {
    fn from_call(reply: &CallReply) -> Self {
        match reply {
            CallReply::I64(n) => Reply::Int(n.to_i64()),
            CallReply::String(s) => Reply::Bytes(s.as_bytes().to_vec()),
            CallReply::Array(items) => Reply::Array(
                items
                    .iter()
                    .map(|item| item.map_or(Reply::Null, |item| Reply::from_call(&item)))
                    .collect(),
            ),
            _ => Reply::Null,
        }
    }

    /// The integer of an integer reply (0 otherwise).
    pub(crate) fn int(&self) -> i64 {
        match self {
            Reply::Int(n) => *n,
            _ => 0,
        }
    }

    /// The items of an array reply (none otherwise).
    pub(crate) fn items(self) -> Vec<Reply> {
        match self {
            Reply::Array(items) => items,
            _ => Vec::new(),
        }
    }

    /// The bytes of a string reply.
    pub(crate) fn bytes(self) -> Option<Vec<u8>> {
        match self {
            Reply::Bytes(bytes) => Some(bytes),
            _ => None,
        }
    }
}

/// Lua's `tonumber` on a stored integer field; `None` when absent or not
/// a number.
pub(crate) fn number(value: Option<&[u8]>) -> Option<i64> {
    let text = std::str::from_utf8(value?).ok()?.trim();
    text.parse::<i64>()
        .ok()
        .or_else(|| text.parse::<f64>().ok().map(|f| f as i64))
}

/// Queue settings from the meta hash, with their protocol defaults.
pub(crate) struct Settings {
    pub paused: bool,
    pub keep_completed: i64,
    pub keep_dead: i64,
    pub keep_cancelled: i64,
    pub events_max: i64,
}

/// A job to create (`enqueue_jobs`): due at once unless `run_at` is later.
pub(crate) struct NewJob {
    /// The id, or `*` for the next free counter value.
    pub id: Vec<u8>,
    pub payload: Vec<u8>,
    pub priority: u64,
    pub attempts: u64,
    /// `Some` for SCHEDULE, which also checks the schedule set's type.
    pub run_at: Option<RunAt>,
    /// The repeat definition that produced the job.
    pub repeat: Option<Vec<u8>>,
}

/// One command's view of its queue: the base key, the context, the clock.
pub(crate) struct Store<'a> {
    ctx: &'a Context,
    base: &'a [u8],
    read: CallOptions,
    write: CallOptions,
}

impl<'a> Store<'a> {
    pub(crate) fn new(ctx: &'a Context, base: &'a [u8]) -> Self {
        Self {
            ctx,
            base,
            read: CallOptionsBuilder::new().errors_as_replies().build(),
            write: CallOptionsBuilder::new()
                .errors_as_replies()
                .replicate()
                .build(),
        }
    }

    fn call(&self, options: &CallOptions, cmd: &str, args: &[&[u8]]) -> Result<Reply, ValkeyError> {
        let result: CallResult<'static> = self.ctx.call_ext(cmd, options, args);
        match result {
            Ok(reply) => Ok(Reply::from_call(&reply)),
            Err(err) => Err(refuse(String::from_utf8_lossy(err.as_bytes()).into_owned())),
        }
    }

    /// A read: not replicated.
    pub(crate) fn read(&self, cmd: &str, args: &[&[u8]]) -> Result<Reply, ValkeyError> {
        self.call(&self.read, cmd, args)
    }

    /// A write: replicated as the effect it is.
    pub(crate) fn write(&self, cmd: &str, args: &[&[u8]]) -> Result<Reply, ValkeyError> {
        self.call(&self.write, cmd, args)
    }

    /// A fixed key of the queue: `<base>:<name>`.
    pub(crate) fn key(&self, key: QueueKey) -> Vec<u8> {
        let mut out = self.base.to_vec();
        out.push(b':');
        out.extend_from_slice(key.name().as_bytes());
        out
    }

    /// `<base>:job:<id>`.
    pub(crate) fn job_key(&self, id: &[u8]) -> Vec<u8> {
        [self.base, JOB_INFIX.as_bytes(), id].concat()
    }

    /// `<base>:logs:<id>`.
    pub(crate) fn logs_key(&self, id: &[u8]) -> Vec<u8> {
        [self.base, LOGS_INFIX.as_bytes(), id].concat()
    }

    /// Refuses with WRONGTYPE unless `key` is absent or a `want` (`expect_type`).
    pub(crate) fn expect_type(&self, key: QueueKey, want: &str) -> Result<(), ValkeyError> {
        self.expect_type_of(&self.key(key), want)
    }

    /// [`Store::expect_type`] for any key.
    pub(crate) fn expect_type_of(&self, key: &[u8], want: &str) -> Result<(), ValkeyError> {
        let found = self.read("TYPE", &[key])?.bytes().unwrap_or_default();
        if found != b"none" && found != want.as_bytes() {
            return Err(refuse(WRONGTYPE));
        }
        Ok(())
    }

    /// The queue's settings (`settings`).
    pub(crate) fn settings(&self) -> Result<Settings, ValkeyError> {
        let meta = self.key(QueueKey::Meta);
        let values = self
            .read(
                "HMGET",
                &[
                    &meta,
                    b"paused",
                    b"keep_completed",
                    b"keep_dead",
                    b"keep_cancelled",
                    b"events_max",
                ],
            )?
            .items();
        let field = |i: usize| match values.get(i) {
            Some(Reply::Bytes(bytes)) => Some(bytes.as_slice()),
            _ => None,
        };
        let or =
            |i: usize, default: u64| field(i).map_or(Some(default as i64), |v| number(Some(v)));
        Ok(Settings {
            paused: field(0) == Some(b"1"),
            keep_completed: or(1, DEFAULT_KEEP_COMPLETED).unwrap_or(0),
            keep_dead: or(2, DEFAULT_KEEP_DEAD).unwrap_or(0),
            keep_cancelled: or(3, DEFAULT_KEEP_CANCELLED).unwrap_or(0),
            events_max: or(4, DEFAULT_EVENTS_MAX).unwrap_or(0),
        })
    }

    /// Appends one lifecycle event (`emit`; events_max 0 turns them off).
    pub(crate) fn emit(&self, max: i64, fields: &[&[u8]]) -> Result<(), ValkeyError> {
        if max > 0 {
            let events = self.key(QueueKey::Events);
            let max = max.to_string();
            let mut args: Vec<&[u8]> = vec![&events, b"MAXLEN", b"~", max.as_bytes(), b"*"];
            args.extend_from_slice(fields);
            self.write("XADD", &args)?;
        }
        Ok(())
    }

    /// Wakes an idle worker: a marker on the signal set, scored by when work
    /// is due (`signal`).
    pub(crate) fn signal(&self, due_ms: u64) -> Result<(), ValkeyError> {
        let due = due_ms.to_string();
        self.write(
            "ZADD",
            &[&self.key(QueueKey::Signal), b"LT", due.as_bytes(), b"wake"],
        )?;
        Ok(())
    }

    /// Publishes `id` on the queue's cancel channel, `<base>:cancel`
    /// (`SPUBLISH`, replicated like the script's).
    pub(crate) fn publish_cancel(&self, id: &[u8]) -> Result<(), ValkeyError> {
        let channel = [self.base, b":cancel"].concat();
        self.write("SPUBLISH", &[&channel, id])?;
        Ok(())
    }

    /// Adds `id` to pending with a fresh seq (`push_pending`).
    pub(crate) fn push_pending(&self, id: &[u8], priority: i64) -> Result<(), ValkeyError> {
        let seq = self.write("INCR", &[&self.key(QueueKey::Seq)])?.int();
        let score = score(priority, seq).to_string();
        self.write(
            "ZADD",
            &[&self.key(QueueKey::Pending), score.as_bytes(), id],
        )?;
        Ok(())
    }

    /// Keeps at most `keep` members of a finished set, deleting the oldest
    /// (at most `limit`) with their hashes and logs (`trim_finished`).
    pub(crate) fn trim_finished(
        &self,
        set: QueueKey,
        keep: i64,
        limit: i64,
    ) -> Result<(), ValkeyError> {
        let set = self.key(set);
        let excess = self.read("ZCARD", &[&set])?.int() - keep;
        if excess <= 0 {
            return Ok(());
        }
        let last = (excess.min(limit) - 1).to_string();
        let ids = self.read("ZRANGE", &[&set, b"0", last.as_bytes()])?.items();
        let mut doomed = Vec::with_capacity(ids.len() * 2);
        for id in ids.into_iter().filter_map(Reply::bytes) {
            doomed.push(self.job_key(&id));
            doomed.push(self.logs_key(&id));
        }
        if !doomed.is_empty() {
            let args: Vec<&[u8]> = doomed.iter().map(Vec::as_slice).collect();
            self.write("DEL", &args)?;
        }
        self.write("ZREMRANGEBYRANK", &[&set, b"0", last.as_bytes()])?;
        Ok(())
    }

    /// Moves due scheduled jobs (score <= now) to pending, oldest first, at
    /// most `limit`; each takes a fresh seq (`promote_due`). Returns how
    /// many moved.
    pub(crate) fn promote_due(
        &self,
        events_max: i64,
        now: u64,
        limit: u64,
    ) -> Result<usize, ValkeyError> {
        let schedule = self.key(QueueKey::Schedule);
        let now = now.to_string();
        let limit = limit.to_string();
        let due: Vec<Vec<u8>> = self
            .read(
                "ZRANGE",
                &[
                    &schedule,
                    b"-inf",
                    now.as_bytes(),
                    b"BYSCORE",
                    b"LIMIT",
                    b"0",
                    limit.as_bytes(),
                ],
            )?
            .items()
            .into_iter()
            .filter_map(Reply::bytes)
            .collect();
        for id in &due {
            let key = self.job_key(id);
            let priority = match self.read("HGET", &[&key, b"priority"])? {
                Reply::Bytes(p) => number(Some(&p)).unwrap_or(0),
                _ => 0,
            };
            self.push_pending(id, priority)?;
            self.write("HSET", &[&key, b"state", b"pending"])?;
            self.emit(events_max, &[b"event", b"promoted", b"id", id])?;
        }
        if !due.is_empty() {
            let mut args: Vec<&[u8]> = vec![&schedule];
            args.extend(due.iter().map(Vec::as_slice));
            self.write("ZREM", &args)?;
        }
        Ok(due.len())
    }

    /// The whole of ENQUEUE and SCHEDULE once arguments are checked
    /// (`enqueue_checked` + `enqueue_jobs` for one job): reads the settings,
    /// checks the type of every key it may write, then creates the job
    /// unless its id exists. Returns the id and whether it was created.
    pub(crate) fn enqueue_checked(&self, job: NewJob) -> Result<(Vec<u8>, bool), ValkeyError> {
        let conf = self.settings()?;
        self.expect_type(QueueKey::Id, "string")?;
        self.expect_type(QueueKey::Seq, "string")?;
        self.expect_type(QueueKey::Pending, "zset")?;
        if job.run_at.is_some() {
            self.expect_type(QueueKey::Schedule, "zset")?;
        }
        self.expect_type(QueueKey::Events, "stream")?;
        self.expect_type(QueueKey::Signal, "zset")?;
        let now = now_ms();
        let now_s = now.to_string();

        let id = if job.id == b"*" {
            let counter = self.key(QueueKey::Id);
            let mut id = self.write("INCRBY", &[&counter, b"1"])?.int().to_string();
            while self.read("EXISTS", &[&self.job_key(id.as_bytes())])?.int() > 0 {
                id = self.write("INCR", &[&counter])?.int().to_string();
            }
            id.into_bytes()
        } else {
            let key = self.job_key(&job.id);
            if self.read("EXISTS", &[&key])?.int() > 0 {
                let found = self.read("TYPE", &[&key])?.bytes().unwrap_or_default();
                if found == b"hash" {
                    return Ok((job.id, false));
                } else if found != b"none" {
                    return Err(refuse(WRONGTYPE));
                }
            }
            job.id
        };

        let key = self.job_key(&id);
        let run_at = job.run_at.map(|run_at| run_at.at(now));
        let later = run_at.filter(|run_at| *run_at > now);
        let priority_s = job.priority.to_string();
        let attempts_s = job.attempts.to_string();
        let state: &[u8] = if later.is_some() {
            b"scheduled"
        } else {
            b"pending"
        };
        let run_at_s = later.map(|run_at| run_at.to_string());
        let mut fields: Vec<&[u8]> = vec![
            &key,
            b"state",
            state,
            b"payload",
            &job.payload,
            b"priority",
            priority_s.as_bytes(),
            b"max_attempts",
            attempts_s.as_bytes(),
            b"created_at",
            now_s.as_bytes(),
        ];
        if let Some(run_at) = &run_at_s {
            fields.extend([b"run_at".as_slice(), run_at.as_bytes()]);
        }
        if let Some(repeat) = &job.repeat {
            fields.extend([b"repeat".as_slice(), repeat]);
        }

        match (later, &run_at_s) {
            (Some(run_at), Some(run_at_s)) => {
                self.write("HSET", &fields)?;
                self.emit(
                    conf.events_max,
                    &[
                        b"event",
                        b"scheduled",
                        b"id",
                        &id,
                        b"run_at",
                        run_at_s.as_bytes(),
                    ],
                )?;
                self.write(
                    "ZADD",
                    &[&self.key(QueueKey::Schedule), run_at_s.as_bytes(), &id],
                )?;
                self.signal(run_at)?;
            }
            _ => {
                let seq = self
                    .write("INCRBY", &[&self.key(QueueKey::Seq), b"1"])?
                    .int();
                self.write("HSET", &fields)?;
                self.emit(conf.events_max, &[b"event", b"enqueued", b"id", &id])?;
                let score = score(job.priority as i64, seq).to_string();
                self.write(
                    "ZADD",
                    &[&self.key(QueueKey::Pending), score.as_bytes(), &id],
                )?;
                self.signal(0)?;
            }
        }
        Ok((id, true))
    }

    /// The fencing check: the job must be active and its claims equal the
    /// token (`fenced`). Returns the job key.
    pub(crate) fn fenced(&self, id: &[u8], token: u64) -> Result<Vec<u8>, ValkeyError> {
        let key = self.job_key(id);
        let found = self.read("HMGET", &[&key, b"state", b"claims"])?.items();
        let state = found.first().cloned().and_then(Reply::bytes);
        let claims = found.get(1).cloned().and_then(Reply::bytes);
        if state.as_deref() != Some(b"active") || !same_token(claims.as_deref(), token) {
            return Err(refuse("NOTACTIVE"));
        }
        Ok(key)
    }
}

/// `tonumber(claims) == token`.
pub(crate) fn same_token(claims: Option<&[u8]>, token: u64) -> bool {
    number(claims).is_some_and(|claims| u64::try_from(claims) == Ok(token))
}

/// A pending score: priority·2^44 + (seq mod 2^44).
pub(crate) fn score(priority: i64, seq: i64) -> i64 {
    let seq = seq.rem_euclid(1 << 44);
    match u8::try_from(priority) {
        Ok(priority) => pending_score(priority, seq as u64) as i64,
        Err(_) => priority * (1 << 44) + seq,
    }
}
