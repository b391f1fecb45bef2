//! The queue's settings, read from its meta hash with their protocol
//! defaults (`settings` and `enqueue_settings` of
//! `scripts/include/settings.lua`).

use super::Store;
use crate::server::args::WRONGTYPE;
use crate::server::args::refuse;
use crate::server::key::Kind;
use echomq_protocol::arg::{
    DEFAULT_EVENTS_MAX, DEFAULT_KEEP_CANCELLED, DEFAULT_KEEP_COMPLETED, DEFAULT_KEEP_DEAD, MAX_INT,
};
use echomq_protocol::metrics::{self, Windows};
use echomq_protocol::{JobState, QueueKey};
use valkey_module::ValkeyError;

/// Queue settings from the meta hash, with their protocol defaults.
pub(crate) struct Settings {
    pub paused: bool,
    pub keep_completed: i64,
    pub keep_dead: i64,
    pub keep_cancelled: i64,
    /// The age rules of retention (`keep_<set>_for`), ms; 0 for none.
    pub keep_completed_for: i64,
    pub keep_dead_for: i64,
    pub keep_cancelled_for: i64,
    pub events_max: i64,
    /// The cap on active jobs; 0 for none.
    pub concurrency: i64,
    /// Whether a job of the queue ever took a dedup key (`dedup` of the
    /// meta hash): only then are jobs' dedup fields read.
    pub dedup: bool,
    /// Whether a job of the queue ever had a group (`groups` of the meta
    /// hash): only then are jobs' groups read and the lanes kept.
    pub groups: bool,
    /// Whether a group of the queue ever had a cap or a rate limit
    /// (`group_flow` of the meta hash): only then are groups' settings read
    /// by claims and finishing jobs.
    pub group_flow: bool,
    /// Whether a job of the queue ever had a waiter (`waited` of the meta
    /// hash): only then do the commands that decide or delete a job read
    /// its `waited` (docs/protocol.md, "Outcome waits").
    pub waited: bool,
    /// Whether the queue keeps metrics (`metrics` of the meta hash is not
    /// `0`), and the shape of its windows.
    pub metrics: bool,
    /// Whether a job of the queue may have log lines: false when the logs
    /// mark (`logs` of the meta hash) is `0`, so retention deletes no log
    /// keys (docs/protocol.md, "The logs mark").
    pub logs: bool,
    /// The metrics windows (docs/protocol.md "Metrics").
    pub windows: Windows,
    /// Whether a job of the queue was ever enqueued with a trace context
    /// (`traced` of the meta hash): only then does CLAIM read a job's
    /// `traceparent`. Read by [`Store::settings_with_limits`] only.
    pub traced: bool,
    /// Whether a job of the queue ever had a time limit or a start-by
    /// deadline (`timed` of the meta hash): only then do commands read
    /// them.
    pub timed: bool,
    /// Whether a job of the queue was ever enqueued with `LIFO` (`lifo` of
    /// the meta hash): only then do the paths into pending read a job's
    /// `lifo`.
    pub lifo: bool,
    /// Whether a job of the queue ever took part in a flow (`flows` of the
    /// meta hash): only then do the commands that decide or delete a job
    /// read its `dependents` and write resolutions (docs/protocol.md,
    /// "Deciding a job that has dependents").
    pub flows: bool,
    /// The rate limit and its state; read by
    /// [`Store::settings_with_limits`] only (all 0 otherwise).
    pub limit: Limit,
}

/// What an enqueue reads of the meta hash (`enqueue_settings`): nothing
/// else of the settings matters to ENQUEUE, SCHEDULE or their bulk forms
/// (and REPEAT.ADD), so they read no more (a queue with a meta hash pays
/// seven lookups, not ten).
pub(crate) struct EnqueueSettings {
    pub events_max: i64,
    /// As [`Settings::dedup`].
    pub dedup: bool,
    /// As [`Settings::groups`].
    pub groups: bool,
    /// As [`Settings::traced`].
    pub traced: bool,
    /// Whether the queue has a logs mark (any value): an enqueue that
    /// creates a job on a queue without one sets it.
    pub logs_marked: bool,
    /// Whether the queue is `timed`: a job of it had a time limit or a
    /// start-by deadline.
    pub timed: bool,
    /// Whether the queue has the `waited` mark: a job of it had a waiter.
    pub waited: bool,
}

/// The rate limit of a queue and its state (`limit_*` of the meta hash),
/// each a flow setting (see [`flow_setting`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Limit {
    pub max: i64,
    pub per: i64,
    pub window: i64,
    pub used: i64,
    pub hold: i64,
}

impl Settings {
    /// The retention rules of a finished set: how many it keeps
    /// (`keep_<set>`) and the age past which a member goes
    /// (`keep_<set>_for`, ms; 0 for none).
    pub(crate) fn retention(&self, set: QueueKey) -> (i64, i64) {
        match set {
            QueueKey::Completed => (self.keep_completed, self.keep_completed_for),
            QueueKey::Dead => (self.keep_dead, self.keep_dead_for),
            _ => (self.keep_cancelled, self.keep_cancelled_for),
        }
    }

    /// A queue with no meta hash.
    const DEFAULT: Settings = Settings {
        paused: false,
        keep_completed: DEFAULT_KEEP_COMPLETED as i64,
        keep_dead: DEFAULT_KEEP_DEAD as i64,
        keep_cancelled: DEFAULT_KEEP_CANCELLED as i64,
        keep_completed_for: 0,
        keep_dead_for: 0,
        keep_cancelled_for: 0,
        events_max: DEFAULT_EVENTS_MAX as i64,
        concurrency: 0,
        dedup: false,
        groups: false,
        group_flow: false,
        waited: false,
        metrics: true,
        logs: true,
        windows: Windows {
            fine_ms: metrics::DEFAULT_FINE_MS,
            fine_keep: metrics::DEFAULT_FINE_KEEP,
            coarse_ms: metrics::DEFAULT_COARSE_MS,
            coarse_keep: metrics::DEFAULT_COARSE_KEEP,
        },
        traced: false,
        timed: false,
        lifo: false,
        flows: false,
        limit: Limit {
            max: 0,
            per: 0,
            window: 0,
            used: 0,
            hold: 0,
        },
    };
}

/// A stored count setting (`count_setting`): the whole number >= 0, else
/// `default`.
fn count_setting(value: Option<&[u8]>, default: i64) -> i64 {
    let text = value.and_then(|v| std::str::from_utf8(v).ok());
    match text.and_then(|t| t.trim().parse::<f64>().ok()) {
        Some(n) if n.is_finite() && n >= 0.0 && n.fract() == 0.0 => n as i64,
        _ => default,
    }
}

/// A flow setting or its state (`flow_setting`): the stored whole number in
/// [0, MAX_INT], else 0 (off).
pub(crate) fn flow_setting(value: Option<&[u8]>) -> i64 {
    match count_setting(value, 0) {
        n if n > MAX_INT as i64 => 0,
        n => n,
    }
}

impl Store<'_> {
    /// The queue's settings (`settings`).
    pub(crate) fn settings(&self) -> Result<Settings, ValkeyError> {
        self.read_settings(false, true)
    }

    /// The queue's settings with its rate limit and its state
    /// (`settings(meta, true)`), in the same read.
    pub(crate) fn settings_with_limits(&self) -> Result<Settings, ValkeyError> {
        self.read_settings(true, true)
    }

    /// [`Store::settings_with_limits`] for a plain CLAIM, which decides and
    /// deletes no job: without the waited mark (`waited` false), one
    /// lookup fewer in a hash that most often lacks the field.
    pub(crate) fn claim_settings(&self) -> Result<Settings, ValkeyError> {
        self.read_settings(true, false)
    }

    /// The queue's meta mark `waited` alone (REPEAT.ADD: the one enqueue
    /// that deletes jobs; `enqueue_settings` leaves it out).
    pub(crate) fn waited_mark(&self) -> Result<bool, ValkeyError> {
        let [waited] = self.hmget_n(self.key(QueueKey::Meta), [b"waited"])?;
        Ok(waited.as_deref() == Some(b"1"))
    }

    /// What an enqueue reads of the settings (`enqueue_settings`): the
    /// events cap, the dedup mark, the groups mark, the traced mark and
    /// whether the logs mark is set, in one `HMGET` (which also checks the
    /// meta hash's type). An enqueue decides and deletes no job, so it
    /// does not read the waited mark (REPEAT.ADD, which deletes, reads it
    /// with [`Store::waited_mark`]).
    pub(crate) fn enqueue_settings(&self) -> Result<EnqueueSettings, ValkeyError> {
        let [events_max, dedup, groups, traced, logs, timed, waited] = self.hmget_n(
            self.key(QueueKey::Meta),
            [
                b"events_max",
                b"dedup",
                b"groups",
                b"traced",
                b"logs",
                b"timed",
                b"waited",
            ],
        )?;
        Ok(EnqueueSettings {
            events_max: count_setting(events_max.as_deref(), DEFAULT_EVENTS_MAX as i64),
            dedup: dedup.as_deref() == Some(b"1"),
            groups: groups.as_deref() == Some(b"1"),
            traced: traced.as_deref() == Some(b"1"),
            logs_marked: logs.is_some(),
            timed: timed.as_deref() == Some(b"1"),
            waited: waited.as_deref() == Some(b"1"),
        })
    }

    /// Sets the logs mark of a queue without one (`mark_logs`), before the
    /// enqueue's jobs enter any set: `0` when the queue holds no job yet,
    /// else `1` (its jobs may have logs).
    pub(crate) fn mark_logs(&self) -> Result<(), ValkeyError> {
        // The seven state sets, and `fifo`, the rest of the pending set.
        let held = JobState::ALL
            .iter()
            .map(|state| state.set_key())
            .chain([QueueKey::Fifo])
            .any(|set| self.exists(self.key(set)));
        let mark: &[u8] = if held { b"1" } else { b"0" };
        self.hset(self.key(QueueKey::Meta), &[b"logs", mark])
    }

    /// The settings: the rate limit's fields with `limits`, the waited
    /// mark with `waited` (else read as unset).
    fn read_settings(&self, limits: bool, waited: bool) -> Result<Settings, ValkeyError> {
        let meta = self.key(QueueKey::Meta);
        match self.kind(meta) {
            Kind::None => return Ok(Settings::DEFAULT),
            Kind::Hash => {}
            _ => return Err(refuse(WRONGTYPE)),
        }
        const FIELDS: [&[u8]; 28] = [
            b"paused",
            b"keep_completed",
            b"keep_dead",
            b"keep_cancelled",
            b"events_max",
            b"concurrency",
            b"dedup",
            b"groups",
            b"group_flow",
            b"metrics",
            b"metrics_fine_ms",
            b"metrics_fine_keep",
            b"metrics_coarse_ms",
            b"metrics_coarse_keep",
            b"logs",
            b"keep_completed_for",
            b"keep_dead_for",
            b"keep_cancelled_for",
            b"limit_max",
            b"limit_per",
            b"limit_window",
            b"limit_used",
            b"limit_hold",
            b"traced",
            b"waited",
            b"timed",
            b"lifo",
            b"flows",
        ];
        // Read by every command: the fields before the rate limit's.
        const ALWAYS: usize = 18;
        const WAITED: usize = 24;
        // Read by every command, last.
        const TIMED: usize = 25;
        const LIFO: usize = 26;
        const FLOWS: usize = 27;
        let mut wanted: Vec<&[u8]> = FIELDS[..if limits { WAITED } else { ALWAYS }].to_vec();
        if waited {
            wanted.push(FIELDS[WAITED]);
        }
        wanted.push(FIELDS[TIMED]);
        wanted.push(FIELDS[LIFO]);
        wanted.push(FIELDS[FLOWS]);
        let values = self.hmget(meta, &wanted)?;
        let field = |i: usize| {
            let at = match i {
                WAITED => wanted.len() - 4,
                TIMED => wanted.len() - 3,
                LIFO => wanted.len() - 2,
                FLOWS => wanted.len() - 1,
                i => i,
            };
            let read = i < ALWAYS
                || i == TIMED
                || i == LIFO
                || i == FLOWS
                || (i == WAITED && waited)
                || (i != WAITED && limits);
            read.then(|| values.get(at).and_then(Option::as_deref))
                .flatten()
        };
        let or = |i: usize, default: u64| count_setting(field(i), default as i64);
        let flow = |i: usize| flow_setting(field(i));
        Ok(Settings {
            paused: field(0) == Some(b"1"),
            keep_completed: or(1, DEFAULT_KEEP_COMPLETED),
            keep_dead: or(2, DEFAULT_KEEP_DEAD),
            keep_cancelled: or(3, DEFAULT_KEEP_CANCELLED),
            keep_completed_for: or(15, 0),
            keep_dead_for: or(16, 0),
            keep_cancelled_for: or(17, 0),
            events_max: or(4, DEFAULT_EVENTS_MAX),
            concurrency: flow(5),
            dedup: field(6) == Some(b"1"),
            groups: field(7) == Some(b"1"),
            group_flow: field(8) == Some(b"1"),
            metrics: field(9) != Some(b"0"),
            logs: field(14) != Some(b"0"),
            waited: field(WAITED) == Some(b"1"),
            windows: Windows::from_settings(|name| {
                let at = FIELDS.iter().position(|f| *f == name.as_bytes())?;
                field(at)
            }),
            traced: field(23) == Some(b"1"),
            timed: field(TIMED) == Some(b"1"),
            lifo: field(LIFO) == Some(b"1"),
            flows: field(FLOWS) == Some(b"1"),
            limit: Limit {
                max: flow(18),
                per: flow(19),
                window: flow(20),
                used: flow(21),
                hold: flow(22),
            },
        })
    }
}
