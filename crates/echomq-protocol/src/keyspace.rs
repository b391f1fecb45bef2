//! The keyspace of one queue: every key name is built here and nowhere else.
//!
//! All keys of queue `q` live under the base key `<prefix>:{q}`. The braces
//! are a hash tag, so every key of one queue hashes to one cluster slot and
//! each transition is a single-slot atomic operation, on a cluster too.

use crate::name::{JobId, NameError, QueueName, is_queue_name};

/// The default key prefix.
pub const DEFAULT_PREFIX: &str = "emq";

/// Infix between the base key and a job id for the job hash (`<base>:job:<id>`).
/// The Lua scripts build job keys from the base with the same infix; a test
/// in the client crate holds them together.
pub const JOB_INFIX: &str = ":job:";
/// Infix between the base key and a job id for the job's log list.
pub const LOGS_INFIX: &str = ":logs:";
/// Infix between the base key and a group for the group's lane (its
/// pending jobs).
pub const LANE_INFIX: &str = ":glane:";
/// Infix between the base key and a group for the group's hash (its
/// `active` count and settings).
pub const GROUP_INFIX: &str = ":group:";
/// Infix between the base key and a job id for the job's dependencies
/// (`<base>:deps:<id>`: field `<queue> <id>` → `wait` or a resolution).
pub const DEPS_INFIX: &str = ":deps:";
/// Infix between the base key and a job id for the job's dependents
/// (`<base>:dependents:<id>`: field `<queue> <id>` → `0` or `1`, told).
pub const DEPENDENTS_INFIX: &str = ":dependents:";
/// Infix between the base key and a job id for the job's resolution in the
/// outbox (`<base>:resolution:<id>`: `text`, `flow`, `left`).
pub const RESOLUTION_INFIX: &str = ":resolution:";
/// The lane of the ungrouped jobs in `groups` (no group can have this
/// name: groups follow the job-id rule, which forbids braces).
pub const UNGROUPED: &str = "{}";

/// A fixed (not per-job) key of a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueKey {
    /// The base key itself, `<prefix>:{q}`; holds no value, it names the queue.
    Base,
    /// String: counter for generated job ids.
    Id,
    /// String: counter that orders pending jobs (FIFO inside a priority).
    Seq,
    /// Sorted set: scheduled jobs scored by run-at (ms).
    Schedule,
    /// Sorted set: claimable jobs scored by priority and sequence (on a
    /// queue without groups, those of priority 1 and up).
    Pending,
    /// List: on a queue without groups, the claimable jobs of priority 0,
    /// first in, first out (claims take them before `Pending`'s).
    Fifo,
    /// Sorted set: claimed jobs scored by lease deadline (ms).
    Active,
    /// Sorted set: completed jobs scored by finished-at (ms).
    Completed,
    /// Sorted set: dead-lettered jobs scored by died-at (ms).
    Dead,
    /// Sorted set: cancelled jobs scored by cancelled-at (ms).
    Cancelled,
    /// Hash: queue settings (`paused`, `keep_completed`, …).
    Meta,
    /// Stream: lifecycle events.
    Events,
    /// Sorted set: wake-up markers for idle workers.
    Signal,
    /// Hash: repeat definitions.
    Repeat,
    /// Sorted set: the throttle keys among the deduplication keys, scored by
    /// the ms (server clock) until which each holds.
    Dedup,
    /// Hash: every deduplication key held → the id of the job holding it
    /// (a key is held while it has an entry here, unless it is a throttle
    /// key whose time is up).
    DedupOwner,
    /// Sorted set: the ready lanes of a queue with groups (each group a
    /// claim may take jobs from now, and `{}` for the ungrouped jobs),
    /// scored by turn.
    Groups,
    /// Sorted set: groups with pending jobs held only by their rate
    /// window, scored by the ms the window reopens.
    GroupsWait,
    /// Sorted set: every group that has keys, score 0, listed by name.
    GroupIndex,
    /// Sorted set: the waiting jobs (pending or scheduled) that have a
    /// start-by deadline, scored by it (ms); a member may be stale.
    Deadlines,
    /// Sorted set: the blocked jobs (waiting for dependencies, issue 43),
    /// scored by the ms (server clock) of each one's next check-up.
    Blocked,
    /// Sorted set: the outbox (flows, issue 43), the ids of jobs decided or
    /// deleted with a dependent not told yet, scored by the ms of the
    /// decision; each has its `resolution:<id>`.
    Resolutions,
}

impl QueueKey {
    /// Every fixed key, in a stable order.
    pub const ALL: [QueueKey; 22] = [
        QueueKey::Base,
        QueueKey::Id,
        QueueKey::Seq,
        QueueKey::Schedule,
        QueueKey::Pending,
        QueueKey::Active,
        QueueKey::Completed,
        QueueKey::Dead,
        QueueKey::Cancelled,
        QueueKey::Meta,
        QueueKey::Events,
        QueueKey::Signal,
        QueueKey::Repeat,
        QueueKey::Dedup,
        QueueKey::DedupOwner,
        QueueKey::Groups,
        QueueKey::GroupsWait,
        QueueKey::GroupIndex,
        QueueKey::Fifo,
        QueueKey::Deadlines,
        QueueKey::Blocked,
        QueueKey::Resolutions,
    ];

    /// The key's name as it appears after the base (`""` for the base), and
    /// in the header of every Lua script.
    pub fn name(self) -> &'static str {
        match self {
            QueueKey::Base => "base",
            QueueKey::Id => "id",
            QueueKey::Seq => "seq",
            QueueKey::Schedule => "schedule",
            QueueKey::Pending => "pending",
            QueueKey::Active => "active",
            QueueKey::Completed => "completed",
            QueueKey::Dead => "dead",
            QueueKey::Cancelled => "cancelled",
            QueueKey::Meta => "meta",
            QueueKey::Events => "events",
            QueueKey::Signal => "signal",
            QueueKey::Repeat => "repeat",
            QueueKey::Dedup => "dedup",
            QueueKey::DedupOwner => "dedup_owner",
            QueueKey::Groups => "groups",
            QueueKey::GroupsWait => "groups_wait",
            QueueKey::GroupIndex => "group_index",
            QueueKey::Fifo => "fifo",
            QueueKey::Deadlines => "deadlines",
            QueueKey::Blocked => "blocked",
            QueueKey::Resolutions => "resolutions",
        }
    }

    /// The type of value the key holds, as `TYPE` names it (`string`,
    /// `zset`, `hash`, `stream`); `None` for the base, which holds none.
    pub fn value_type(self) -> Option<&'static str> {
        match self {
            QueueKey::Base => None,
            QueueKey::Id | QueueKey::Seq => Some("string"),
            QueueKey::Schedule
            | QueueKey::Pending
            | QueueKey::Active
            | QueueKey::Completed
            | QueueKey::Dead
            | QueueKey::Cancelled
            | QueueKey::Signal
            | QueueKey::Dedup
            | QueueKey::Groups
            | QueueKey::GroupsWait
            | QueueKey::GroupIndex
            | QueueKey::Deadlines
            | QueueKey::Blocked
            | QueueKey::Resolutions => Some("zset"),
            QueueKey::Meta | QueueKey::Repeat | QueueKey::DedupOwner => Some("hash"),
            QueueKey::Fifo => Some("list"),
            QueueKey::Events => Some("stream"),
        }
    }
}

/// The keys of one queue under one prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyspace {
    base: String,
    queue: QueueName,
}

impl Keyspace {
    /// The keyspace of `queue` under `prefix` (validated like a queue name).
    ///
    /// ```
    /// use echomq_protocol::{Keyspace, QueueName};
    /// let ks = Keyspace::new("emq", &QueueName::new("mail").unwrap()).unwrap();
    /// assert_eq!(ks.base(), "emq:{mail}");
    /// assert_eq!(ks.pending(), "emq:{mail}:pending");
    /// ```
    pub fn new(prefix: &str, queue: &QueueName) -> Result<Self, NameError> {
        let prefix = QueueName::new(prefix).map_err(|err| NameError::Prefix {
            reason: err.to_string(),
        })?;
        Ok(Self {
            base: format!("{prefix}:{{{queue}}}"),
            queue: queue.clone(),
        })
    }

    /// Whether `base` is a base key, `<prefix>:{<queue>}` with the prefix
    /// and the queue each following the queue-name rule
    /// ([`is_queue_name`]): what the native module and the scripts check of
    /// the base key they are given before anything else, answering
    /// `BADARG queue` for any other.
    ///
    /// ```
    /// use echomq_protocol::Keyspace;
    /// assert!(Keyspace::is_base(b"a:b:{mail.high-priority}"));
    /// assert!(!Keyspace::is_base(b"emq:{bad queue}"));
    /// assert!(!Keyspace::is_base(b"emq:{q}:pending"));
    /// ```
    pub fn is_base(base: &[u8]) -> bool {
        let Some(inner) = base.strip_suffix(b"}") else {
            return false;
        };
        let Some(open) = inner.iter().position(|b| *b == b'{') else {
            return false;
        };
        let (head, queue) = (&inner[..open], &inner[open + 1..]);
        head.strip_suffix(b":")
            .is_some_and(|prefix| is_queue_name(prefix) && is_queue_name(queue))
    }

    /// `<prefix>:queues`: the set of known queue names under `prefix`. It
    /// has no hash tag (it spans queues), so no script touches it: the
    /// client adds a queue after its first successful enqueue and removes
    /// it after obliterate, each a plain single-key command.
    pub fn registry(prefix: &str) -> Result<String, NameError> {
        let prefix = QueueName::new(prefix).map_err(|err| NameError::Prefix {
            reason: err.to_string(),
        })?;
        Ok(format!("{prefix}:queues"))
    }

    /// `<prefix>:{*}:meta`: the `SCAN MATCH` pattern of every queue's meta
    /// hash under `prefix`, the key every queue that ever held a job has
    /// (the enqueue that creates its first job sets the logs mark there),
    /// on both wires, whoever sent the enqueue. A prefix follows the
    /// queue-name rule, so it holds no glob character.
    ///
    /// ```
    /// use echomq_protocol::Keyspace;
    /// assert_eq!(Keyspace::meta_pattern("emq").unwrap(), "emq:{*}:meta");
    /// ```
    pub fn meta_pattern(prefix: &str) -> Result<String, NameError> {
        let prefix = QueueName::new(prefix).map_err(|err| NameError::Prefix {
            reason: err.to_string(),
        })?;
        Ok(format!("{prefix}:{{*}}:{}", QueueKey::Meta.name()))
    }

    /// The queue whose meta hash `key` is under `prefix`; `None` for any
    /// other key [`Keyspace::meta_pattern`] matches (a group's hash named
    /// `…:group:x}:meta`, whose braces no queue name holds).
    ///
    /// ```
    /// use echomq_protocol::Keyspace;
    /// let queue = Keyspace::queue_of_meta("emq", b"emq:{mail}:meta").unwrap();
    /// assert_eq!(queue.as_str(), "mail");
    /// assert!(Keyspace::queue_of_meta("emq", b"emq:{q}:group:x}:meta").is_none());
    /// ```
    pub fn queue_of_meta(prefix: &str, key: &[u8]) -> Option<QueueName> {
        let suffix = format!("}}:{}", QueueKey::Meta.name());
        let queue = key
            .strip_prefix(prefix.as_bytes())?
            .strip_prefix(b":{")?
            .strip_suffix(suffix.as_bytes())?;
        if !is_queue_name(queue) {
            return None;
        }
        QueueName::new(std::str::from_utf8(queue).ok()?).ok()
    }

    /// The queue this keyspace belongs to.
    pub fn queue(&self) -> &QueueName {
        &self.queue
    }

    /// `<prefix>:{q}`: the base key every other key extends.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The name of a fixed key.
    pub fn key(&self, key: QueueKey) -> String {
        match key {
            QueueKey::Base => self.base.clone(),
            other => format!("{}:{}", self.base, other.name()),
        }
    }

    /// `…:id`: counter for generated job ids.
    pub fn id_counter(&self) -> String {
        self.key(QueueKey::Id)
    }
    /// `…:seq`: counter that orders pending jobs.
    pub fn seq(&self) -> String {
        self.key(QueueKey::Seq)
    }
    /// `…:schedule`: scheduled jobs by run-at.
    pub fn schedule(&self) -> String {
        self.key(QueueKey::Schedule)
    }
    /// `…:pending`: claimable jobs.
    pub fn pending(&self) -> String {
        self.key(QueueKey::Pending)
    }
    /// `…:fifo`: on a queue without groups, the claimable jobs of
    /// priority 0, in claim order.
    pub fn fifo(&self) -> String {
        self.key(QueueKey::Fifo)
    }
    /// `…:deadlines`: waiting jobs with a start-by deadline, by it.
    pub fn deadlines(&self) -> String {
        self.key(QueueKey::Deadlines)
    }
    /// `…:active`: claimed jobs by lease deadline.
    pub fn active(&self) -> String {
        self.key(QueueKey::Active)
    }
    /// `…:completed`: completed jobs by finished-at.
    pub fn completed(&self) -> String {
        self.key(QueueKey::Completed)
    }
    /// `…:dead`: dead-lettered jobs by died-at.
    pub fn dead(&self) -> String {
        self.key(QueueKey::Dead)
    }
    /// `…:cancelled`: cancelled jobs by cancelled-at.
    pub fn cancelled(&self) -> String {
        self.key(QueueKey::Cancelled)
    }
    /// `…:meta`: queue settings.
    pub fn meta(&self) -> String {
        self.key(QueueKey::Meta)
    }
    /// `…:events`: the lifecycle event stream.
    pub fn events(&self) -> String {
        self.key(QueueKey::Events)
    }
    /// `…:signal`: wake-up markers for idle workers.
    pub fn signal(&self) -> String {
        self.key(QueueKey::Signal)
    }
    /// `…:repeat`: repeat definitions.
    pub fn repeat(&self) -> String {
        self.key(QueueKey::Repeat)
    }
    /// `…:dedup`: deduplication keys, scored by when each stops holding.
    pub fn dedup(&self) -> String {
        self.key(QueueKey::Dedup)
    }
    /// `…:dedup_owner`: deduplication key → the job holding it.
    pub fn dedup_owner(&self) -> String {
        self.key(QueueKey::DedupOwner)
    }
    /// `…:job:<id>`: the job hash.
    pub fn job(&self, id: &JobId) -> String {
        format!("{}{JOB_INFIX}{id}", self.base)
    }
    /// `…:logs:<id>`: the job's log lines.
    pub fn logs(&self, id: &JobId) -> String {
        format!("{}{LOGS_INFIX}{id}", self.base)
    }
    /// `…:deps:<id>`: the job's dependencies and their edges' values.
    pub fn deps(&self, id: &JobId) -> String {
        format!("{}{DEPS_INFIX}{id}", self.base)
    }
    /// `…:dependents:<id>`: the job's dependents, told or not.
    pub fn dependents(&self, id: &JobId) -> String {
        format!("{}{DEPENDENTS_INFIX}{id}", self.base)
    }
    /// `…:resolution:<id>`: the job's resolution while in the outbox.
    pub fn resolution(&self, id: &JobId) -> String {
        format!("{}{RESOLUTION_INFIX}{id}", self.base)
    }
    /// `…:glane:<group>`: the group's pending jobs.
    pub fn lane(&self, group: &str) -> String {
        format!("{}{LANE_INFIX}{group}", self.base)
    }
    /// `…:group:<group>`: the group's `active` count and settings.
    pub fn group(&self, group: &str) -> String {
        format!("{}{GROUP_INFIX}{group}", self.base)
    }
    /// `…:metrics:total`: the queue's metrics since it began.
    pub fn metrics_total(&self) -> String {
        utf8(crate::metrics::total_key(self.base.as_bytes()))
    }
    /// `…:metrics:<resolution>:<start>`: the queue's metrics of the window
    /// of that resolution starting at `start` (ms, server clock).
    pub fn metrics_window(&self, resolution: crate::metrics::Resolution, start: u64) -> String {
        utf8(crate::metrics::window_key(
            self.base.as_bytes(),
            resolution,
            start as i64,
        ))
    }
    /// `…:cancel`: the sharded pub/sub channel of ids that must stop.
    pub fn cancel_channel(&self) -> String {
        format!("{}:cancel", self.base)
    }
    /// `…:outcome`: the sharded pub/sub channel of the outcomes of jobs
    /// someone waits for (docs/protocol.md, "Outcome waits").
    pub fn outcome_channel(&self) -> String {
        format!("{}:outcome", self.base)
    }
    /// `…:sweep`: the stalled-sweep guard, a string set with `NX PX` by the
    /// worker that sweeps this interval (it expires by itself).
    pub fn sweep_guard(&self) -> String {
        format!("{}:sweep", self.base)
    }

    /// The state set a job in `state` is a member of.
    pub fn state_set(&self, state: crate::JobState) -> String {
        self.key(state.set_key())
    }
}

/// A key built from a base that is text (the queue-name rule): text.
fn utf8(key: Vec<u8>) -> String {
    String::from_utf8(key).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ks() -> Keyspace {
        Keyspace::new("emq", &QueueName::new("q").unwrap()).unwrap()
    }

    #[test]
    fn every_key_shares_the_hash_tag() {
        let ks = ks();
        let id = JobId::new("7").unwrap();
        let mut keys: Vec<String> = QueueKey::ALL.iter().map(|k| ks.key(*k)).collect();
        keys.extend([
            ks.job(&id),
            ks.logs(&id),
            ks.cancel_channel(),
            ks.outcome_channel(),
        ]);
        for key in keys {
            assert!(key.starts_with("emq:{q}"), "{key}");
            assert_eq!(key.matches('{').count(), 1, "{key}");
        }
    }

    #[test]
    fn names_match_the_protocol() {
        let ks = ks();
        let id = JobId::new("7").unwrap();
        assert_eq!(ks.id_counter(), "emq:{q}:id");
        assert_eq!(ks.seq(), "emq:{q}:seq");
        assert_eq!(ks.schedule(), "emq:{q}:schedule");
        assert_eq!(ks.job(&id), "emq:{q}:job:7");
        assert_eq!(ks.logs(&id), "emq:{q}:logs:7");
        assert_eq!(ks.cancel_channel(), "emq:{q}:cancel");
        assert_eq!(ks.outcome_channel(), "emq:{q}:outcome");
        assert_eq!(ks.key(QueueKey::Base), "emq:{q}");
    }

    #[test]
    fn a_base_key_is_prefix_colon_braced_queue_both_names() {
        let long = "q".repeat(128);
        for good in [
            "emq:{q}".to_string(),
            "a:b:{q}".into(),
            "a::{q}".into(),
            "emq:{a.b:c-d_e}".into(),
            format!("{long}:{{{long}}}"),
        ] {
            assert!(Keyspace::is_base(good.as_bytes()), "{good}");
        }
        let too_long = "q".repeat(129);
        for bad in [
            "emq:{bad queue}".to_string(),
            "emq:q".into(),
            "emq{q}".into(),
            "emq:{q".into(),
            "emq:{}".into(),
            ":{q}".into(),
            "bad prefix:{q}".into(),
            "emq:{".into(),
            "emq:{q}:pending".into(),
            "emq:{q}{r}".into(),
            "emq:{a{b}".into(),
            "".into(),
            format!("emq:{{{too_long}}}"),
            format!("{too_long}:{{q}}"),
        ] {
            assert!(!Keyspace::is_base(bad.as_bytes()), "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn every_keyspace_has_a_base_key_by_the_rule(
            prefix in "[A-Za-z0-9_.:-]{1,128}",
            queue in "[A-Za-z0-9_.:-]{1,128}",
        ) {
            let ks = Keyspace::new(&prefix, &QueueName::new(queue).unwrap()).unwrap();
            proptest::prop_assert!(Keyspace::is_base(ks.base().as_bytes()));
        }
    }

    #[test]
    fn a_bad_prefix_is_refused() {
        let q = QueueName::new("q").unwrap();
        assert!(matches!(
            Keyspace::new("a{b", &q),
            Err(NameError::Prefix { .. })
        ));
        assert!(matches!(
            Keyspace::new("", &q),
            Err(NameError::Prefix { .. })
        ));
    }
}
