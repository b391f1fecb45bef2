//! A seeded random walk over the protocol's transitions: mostly
//! well-formed commands on jobs in the states they take, and a share of
//! wrong ones (stale tokens, absent ids, wrong states, malformed arguments,
//! keys of the wrong type), so refusals are walked too.
//!
//! The walk reads the keyspace it walks (one server, the "view") to choose
//! ids and tokens; it never depends on the clock: every delay, lease and
//! run-at is either 0 (now), minutes or more away, a fixed instant (long
//! past, or in 2100), or a few ms, after which the caller waits
//! ([`Planned::settle_ms`]) before the next step, so every server sees the
//! same jobs due. The caller also starts each step in a new millisecond, so
//! time-scored sets order their members the same on every server.

use super::grammar::{self, Call, MAX_INT, TRACEPARENTS, case};
use echomq_protocol::QueueKey;
use fastrand::Rng;
use redis::Value;
use redis::aio::MultiplexedConnection;
use std::collections::VecDeque;
use std::sync::LazyLock;

/// The queues walked: one with small retention (trimming at work), one with
/// events off and finished jobs deleted at once, one with the defaults.
pub(crate) const QUEUES: [&str; 3] = ["emq:{walk}", "emq:{quiet}", "emq:{plain}"];

/// The state sets, in `docs/protocol.md`'s order.
pub(crate) const SETS: [&str; 6] = [
    "schedule",
    "pending",
    "active",
    "completed",
    "dead",
    "cancelled",
];
const SCHEDULED: usize = 0;
const PENDING: usize = 1;
const ACTIVE: usize = 2;
const FINISHED: [usize; 3] = [3, 4, 5];

/// The fixed keys of a queue and the type each holds.
/// The keys a corruption may set to the wrong type, with the type each
/// should hold: every fixed key the commands touch (the registry's; the
/// base aside), and the lanes and hashes of
/// the groups the walk draws.
static FIXED: LazyLock<Vec<(String, &'static str)>> = LazyLock::new(|| {
    let fixed = QueueKey::ALL
        .iter()
        .filter(|key| !matches!(key, QueueKey::Base))
        .map(|key| {
            (
                key.name().to_string(),
                key.value_type().expect("a typed key"),
            )
        });
    let groups = GROUPS.iter().flat_map(|group| {
        [
            (format!("glane:{group}"), "zset"),
            (format!("group:{group}"), "hash"),
        ]
    });
    fixed.chain(groups).collect()
});

/// The queue name of base key `base` (`emq:{walk}` → `walk`).
fn queue_of(base: &str) -> &str {
    &base[base.find('{').map_or(0, |at| at + 1)..base.len() - 1]
}

/// How many ids the flow pool holds (`fj0`…).
const FLOW_POOL: u32 = 8;

/// Which list of a flow job an edge list is: its dependencies or its
/// dependents.
#[derive(Clone, Copy)]
enum Side {
    After,
    Before,
}

/// The repeat keys REPEAT.ADD draws: few, so adds replace each other.
const REPEAT_KEYS: [&str; 4] = ["r0", "r1", "a*", "r[0]"];

/// The groups the walk draws jobs and controls into.
const GROUPS: [&str; 4] = ["g0", "g1", "g2", "grupo:ü"];

/// 2100-01-01: a run-at that never comes during a test.
const FAR: u64 = 4_102_444_800_000;
/// What a corrupted key holds.
const MARKER: &str = "\u{0}corrupt";

/// One step of the walk.
#[derive(Debug, Clone)]
pub(crate) enum Step {
    /// An `EMQ.*` command (or its script); `malformed` when broken on purpose.
    Call { call: Call, malformed: bool },
    /// A plain command run on every server alike (settings, corrupting a
    /// key, restoring it).
    Raw {
        argv: Vec<Vec<u8>>,
        why: &'static str,
    },
}

impl Step {
    /// The command or raw step, quoted.
    pub(crate) fn show(&self) -> String {
        match self {
            Step::Call { call, malformed } => {
                format!(
                    "{}{}",
                    call.show(),
                    if *malformed { "  (malformed)" } else { "" }
                )
            }
            Step::Raw { argv, why } => format!(
                "{} ({why})",
                argv.iter()
                    .map(|a| grammar::quote(a))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        }
    }

    /// The verb, for the tally: `EMQ.CLAIM`, or `raw <why>`.
    pub(crate) fn verb(&self) -> String {
        match self {
            Step::Call {
                call,
                malformed: false,
            } => call.command.to_string(),
            Step::Call {
                call,
                malformed: true,
            } => format!("{} (malformed)", call.command),
            Step::Raw { why, .. } => format!("raw {why}"),
        }
    }

    /// The plain command of a raw step.
    pub(crate) fn raw(&self) -> Option<redis::Cmd> {
        let Step::Raw { argv, .. } = self else {
            return None;
        };
        let mut cmd = redis::cmd(std::str::from_utf8(&argv[0]).expect("ascii verb"));
        for arg in &argv[1..] {
            cmd.arg(arg.as_slice());
        }
        Some(cmd)
    }
}

/// A planned step and how long after it to wait before the next.
#[derive(Debug)]
pub(crate) struct Planned {
    pub step: Step,
    /// Ms after this step's end before anything may read the clock again:
    /// a lease, delay or run-at of a few ms must be past on every server.
    pub settle_ms: u64,
}

/// A key set to the wrong type, until `restore_at`.
#[derive(Debug)]
struct Corruption {
    key: Vec<u8>,
    hash: bool,
    restore_at: usize,
}

/// The ids in each state set of one queue.
struct View {
    sets: Vec<Vec<Vec<u8>>>,
}

impl View {
    fn all(&self) -> Vec<&Vec<u8>> {
        self.sets.iter().flatten().collect()
    }

    fn of(&self, states: &[usize]) -> Vec<&Vec<u8>> {
        states.iter().flat_map(|&s| &self.sets[s]).collect()
    }
}

/// The walk's generator.
pub(crate) struct Walker {
    rng: Rng,
    commands: Vec<&'static str>,
    fresh: u64,
    corrupted: Vec<Corruption>,
    step: usize,
    settle: u64,
    /// Whether a job was drawn with a time limit of a few ms: from then on
    /// every claim waits those ms out, as a short lease does, so the
    /// leases it caps end in the claims' order on both servers.
    short_limits: bool,
    /// Steps already drawn to follow the next one, in order (an
    /// obliterate after the pause it needs; a flow job's link and its
    /// dependency's completion).
    then: VecDeque<Step>,
    /// Whether raw steps may write scores (`checkup_due`'s ZADD): not in
    /// a walk whose AOF must hold no ZADD of its own.
    raw_scores: bool,
}

/// The resolution texts FLOW.RESOLVE's draws carry: every outcome, so
/// each failure policy and each unblocking meets them.
const RESOLUTIONS: &[&str] = &[
    "completed ref0 2 ok",
    "completed - 0 ",
    "completed big 70000 ",
    "dead ref1 3 boom",
    "cancelled ref2",
    "removed -",
];

/// (command, weight): how often each verb is drawn.
const WEIGHTS: &[(&str, u32)] = &[
    ("EMQ.ENQUEUE", 24),
    ("EMQ.SCHEDULE", 12),
    ("EMQ.CLAIM", 24),
    ("EMQ.COMPLETE", 16),
    ("EMQ.FAIL", 16),
    ("EMQ.DELAY", 6),
    ("EMQ.EXTEND", 6),
    ("EMQ.CANCEL", 8),
    ("EMQ.REQUEUE", 6),
    ("EMQ.REPROCESS", 6),
    ("EMQ.REMOVE", 6),
    ("EMQ.UPDATE", 4),
    ("EMQ.PROGRESS", 6),
    ("EMQ.LOG", 8),
    ("EMQ.PAUSE", 2),
    ("EMQ.RESUME", 6),
    ("EMQ.DRAIN", 2),
    ("EMQ.OBLITERATE", 2),
    ("EMQ.PROMOTE", 4),
    ("EMQ.RESCHEDULE", 6),
    ("EMQ.REPEAT.ADD", 4),
    ("EMQ.STALLED.CHECK", 5),
    ("EMQ.GET", 8),
    ("EMQ.OUTCOME", 6),
    ("EMQ.OUTCOME.BULK", 3),
    ("EMQ.COUNTS", 4),
    ("EMQ.RETENTION", 3),
    ("EMQ.ENQUEUE.BULK", 3),
    ("EMQ.SCHEDULE.BULK", 3),
    ("EMQ.COMPLETE.BULK", 3),
    ("EMQ.DEDUP.OWNER", 3),
    ("EMQ.DEDUP.RELEASE", 3),
    ("EMQ.LIMIT", 3),
    ("EMQ.CONCURRENCY", 3),
    ("EMQ.GROUP.CONCURRENCY", 3),
    ("EMQ.GROUP.LIMIT", 3),
    ("EMQ.GROUP.PAUSE", 3),
    ("EMQ.GROUP.RESUME", 4),
    ("EMQ.GROUP.COUNTS", 2),
    ("EMQ.GROUPS", 2),
    ("EMQ.FLOW.ADD", 6),
    ("EMQ.FLOW.ADD.BULK", 4),
    ("EMQ.FLOW.DEPS", 2),
    ("EMQ.FLOW.DEPENDENTS", 2),
    ("EMQ.FLOW.OUTBOX", 3),
    ("EMQ.FLOW.ACK", 4),
    ("EMQ.FLOW.SETTLE", 4),
    ("EMQ.FLOW.RESOLVE", 6),
    ("EMQ.FLOW.WAIT", 4),
    ("EMQ.FLOW.LINK", 4),
    ("EMQ.FLOW.CHECKUP", 3),
    ("checkup_due", 2),
    ("dependents", 3),
    ("corrupt", 2),
    ("configure", 1),
    ("unmark", 1),
];

/// Whether the walk draws `command` (it has a weight, and a generator in
/// `step_for`): every command of the registry must.
pub(crate) fn draws(command: &str) -> bool {
    WEIGHTS
        .iter()
        .any(|(verb, weight)| *verb == command && *weight > 0)
}

impl Walker {
    /// A walk drawn from `seed` over `commands` (the `EMQ.*` names it may send).
    pub(crate) fn new(seed: u64, commands: Vec<&'static str>) -> Self {
        Self {
            rng: Rng::with_seed(seed),
            commands,
            fresh: 0,
            corrupted: Vec::new(),
            step: 0,
            settle: 0,
            short_limits: false,
            then: VecDeque::new(),
            raw_scores: true,
        }
    }

    /// The walker without the raw steps that write scores: its AOF holds
    /// the calls and the walk's HSET, SET and DEL only.
    pub(crate) fn without_raw_scores(mut self) -> Self {
        self.raw_scores = false;
        self
    }

    /// The settings each queue starts with.
    pub(crate) fn setup() -> Vec<Step> {
        QUEUES.iter().filter_map(|base| configure(base)).collect()
    }

    /// Restores every corrupted key that still holds its marker.
    pub(crate) async fn restore_all(&mut self, view: &mut MultiplexedConnection) -> Vec<Step> {
        let mut steps = Vec::new();
        for corruption in std::mem::take(&mut self.corrupted) {
            if still_marked(view, &corruption).await {
                steps.push(restore(&corruption));
            }
        }
        steps
    }

    /// The next step, chosen from the keyspace on `view`.
    pub(crate) async fn plan(&mut self, view: &mut MultiplexedConnection) -> Planned {
        self.step += 1;
        self.settle = 0;
        if let Some(step) = self.then.pop_front() {
            return Planned { step, settle_ms: 0 };
        }
        if let Some(i) = self
            .corrupted
            .iter()
            .position(|c| c.restore_at <= self.step)
        {
            let corruption = self.corrupted.remove(i);
            if still_marked(view, &corruption).await {
                return Planned {
                    step: restore(&corruption),
                    settle_ms: 0,
                };
            }
        }
        let base = match self.rng.u32(..10) {
            0..6 => QUEUES[0],
            6..8 => QUEUES[1],
            _ => QUEUES[2],
        };
        let state = read_view(view, base).await;
        let step = loop {
            let verb = self.draw();
            if let Some(step) = self.step_for(verb, base, &state, view).await {
                break self.paused_first(verb, base, step);
            }
        };
        Planned {
            step,
            settle_ms: self.settle,
        }
    }

    /// Half of the obliterates are sent right after a pause of their
    /// queue: drawn alone, one in four finds its queue paused, and a walk
    /// could end without a single obliterate going through.
    fn paused_first(&mut self, verb: &str, base: &str, step: Step) -> Step {
        let pausing = self.commands.contains(&"EMQ.PAUSE");
        if verb != "EMQ.OBLITERATE" || !pausing || !self.rng.bool() {
            return step;
        }
        self.then.push_back(step);
        Step::Call {
            call: Call::new("EMQ.PAUSE", base),
            malformed: false,
        }
    }

    fn draw(&mut self) -> &'static str {
        loop {
            let total: u32 = WEIGHTS.iter().map(|(_, w)| w).sum();
            let mut pick = self.rng.u32(..total);
            let verb = WEIGHTS
                .iter()
                .find(|(_, w)| {
                    if pick < *w {
                        true
                    } else {
                        pick -= w;
                        false
                    }
                })
                .map(|(verb, _)| *verb)
                .expect("a weight");
            if verb == "checkup_due" && !self.raw_scores {
                continue;
            }
            if !verb.starts_with("EMQ.") || self.commands.contains(&verb) {
                return verb;
            }
        }
    }

    async fn step_for(
        &mut self,
        verb: &'static str,
        base: &str,
        view: &View,
        conn: &mut MultiplexedConnection,
    ) -> Option<Step> {
        let call = match verb {
            "corrupt" => return self.corrupt(base, view, conn).await,
            "configure" => return configure(base),
            "unmark" => return Some(unmark(base)),
            "checkup_due" => return Some(checkup_due(base)),
            "dependents" => {
                let id = self.pick_id(view, &[SCHEDULED, PENDING, ACTIVE]);
                let dependent = self.dependent();
                return Some(give_dependent(base, &id, &dependent));
            }
            "EMQ.ENQUEUE" => {
                let call = Call::new(verb, base)
                    .arg(self.new_id(view))
                    .arg(self.payload());
                let call = self.job_options(call);
                let call = self.dedup_options(call, true);
                let call = self.group_option(call, base);
                let call = self.trace_option(call, base);
                let call = self.lifo_option(call, base);
                self.deadline_options(call, base)
            }
            "EMQ.SCHEDULE" => {
                let run_at = self.run_at();
                let call = Call::new(verb, base)
                    .arg(self.new_id(view))
                    .arg(self.payload())
                    .arg(run_at);
                let mut call = self.job_options(call);
                if self.rng.u32(..5) == 0 {
                    let key = format!("every-{}", self.rng.u32(..3));
                    call = call.opt("REPEAT", key);
                }
                let call = self.dedup_options(call, false);
                let call = self.group_option(call, base);
                let call = self.trace_option(call, base);
                let call = self.lifo_option(call, base);
                self.deadline_options(call, base)
            }
            "EMQ.CLAIM" => {
                self.settle_capped_leases();
                let worker = self.worker();
                let lease = self.lease();
                let mut call = Call::new(verb, base).arg(worker).arg(lease);
                if self.rng.u32(..10) < 7 {
                    call = {
                        let n = 1 + self.rng.u32(..5);
                        self.opt(call, "COUNT", n.to_string())
                    };
                }
                call
            }
            "EMQ.COMPLETE" => {
                let id = self.pick_id(view, &[ACTIVE]);
                let token = self.token(&id);
                let mut call = Call::new(verb, base).arg(id).arg(token);
                if self.rng.bool() {
                    let result = self.text();
                    call = self.opt(call, "RESULT", result);
                }
                call
            }
            "EMQ.FAIL" => {
                let id = self.pick_id(view, &[ACTIVE]);
                let token = self.token(&id);
                let error = self.text();
                let call = Call::new(verb, base).arg(id).arg(token).arg(error);
                match self.rng.u32(..21) {
                    0..5 => call,
                    5..9 => self.opt(call, "RETRY_IN", "0"),
                    9..12 => {
                        let delay = self.delay();
                        self.opt(call, "RETRY_IN", delay)
                    }
                    12..16 => self.flag(call, "DEAD"),
                    16..20 => self.flag(call, "CANCELLED"),
                    _ => {
                        let hold = self.hold();
                        self.opt(call, "RATE_LIMITED", hold)
                    }
                }
            }
            "EMQ.DELAY" => {
                let id = self.pick_id(view, &[ACTIVE]);
                let token = self.token(&id);
                let delay = self.delay();
                Call::new(verb, base).arg(id).arg(token).arg(delay)
            }
            "EMQ.EXTEND" => {
                let id = self.pick_id(view, &[ACTIVE]);
                let token = self.token(&id);
                let lease = self.lease();
                Call::new(verb, base).arg(id).arg(token).arg(lease)
            }
            "EMQ.PROGRESS" => {
                let id = self.pick_id(view, &[ACTIVE]);
                let token = self.token(&id);
                let value = self.text();
                Call::new(verb, base).arg(id).arg(token).arg(value)
            }
            "EMQ.CANCEL" => {
                let id = self.pick_id(view, &[PENDING, SCHEDULED, ACTIVE]);
                Call::new(verb, base).arg(id)
            }
            "EMQ.REQUEUE" => {
                let id = self.pick_id(view, &[SCHEDULED, ACTIVE]);
                Call::new(verb, base).arg(id)
            }
            "EMQ.REPROCESS" => {
                let id = self.pick_id(view, &FINISHED);
                Call::new(verb, base).arg(id)
            }
            "EMQ.REMOVE" => {
                let id = self.pick_id(view, &[0, 1, 2, 3, 4, 5]);
                let call = Call::new(verb, base).arg(id);
                if self.rng.u32(..3) == 0 {
                    self.flag(call, "FORCE")
                } else {
                    call
                }
            }
            "EMQ.UPDATE" => {
                let id = self.pick_id(view, &[0, 1, 2, 3, 4, 5]);
                Call::new(verb, base).arg(id).arg(self.payload())
            }
            "EMQ.LOG" => {
                let id = self.pick_id(view, &[0, 1, 2, 3, 4, 5]);
                let line = self.text();
                let call = Call::new(verb, base).arg(id).arg(line);
                if self.rng.bool() {
                    {
                        let n = 1 + self.rng.u32(..4);
                        self.opt(call, "KEEP", n.to_string())
                    }
                } else {
                    call
                }
            }
            "EMQ.PAUSE" | "EMQ.RESUME" | "EMQ.COUNTS" => Call::new(verb, base),
            "EMQ.DRAIN" | "EMQ.OBLITERATE" => {
                let mut call = Call::new(verb, base);
                if self.rng.bool() {
                    let word = if verb == "EMQ.DRAIN" {
                        "SCHEDULED"
                    } else {
                        "FORCE"
                    };
                    call = self.flag(call, word);
                }
                if verb == "EMQ.DRAIN" && self.rng.bool() {
                    call = self.flag(call, "BLOCKED");
                }
                if self.rng.u32(..10) < 6 {
                    call = {
                        let n = 1 + self.rng.u32(..5);
                        self.opt(call, "COUNT", n.to_string())
                    };
                }
                call
            }
            "EMQ.PROMOTE" => {
                let call = Call::new(verb, base);
                if self.rng.bool() {
                    {
                        let n = 1 + self.rng.u32(..3);
                        self.opt(call, "LIMIT", n.to_string())
                    }
                } else {
                    call
                }
            }
            "EMQ.RESCHEDULE" => {
                let id = self.pick_id(view, &[SCHEDULED]);
                let at = match self.rng.u32(..10) {
                    0..4 => (FAR + u64::from(self.rng.u32(..100_000))).to_string(),
                    4..8 => ["0", "1000", "1600000000000"][self.rng.usize(..3)].to_string(),
                    8 => MAX_INT.to_string(),
                    _ => (FAR - 1).to_string(),
                };
                Call::new(verb, base).arg(id).arg(at)
            }
            "EMQ.REPEAT.ADD" => {
                // Keys from a pool, `a*` and `r[0]` among them (their glob
                // characters must not match the others' occurrences).
                let key = REPEAT_KEYS[self.rng.usize(..REPEAT_KEYS.len())];
                let definition = format!("{{\"every\":{}}}", self.rng.u32(..3));
                let mut call = Call::new(verb, base)
                    .arg(key.as_bytes())
                    .arg(definition.into_bytes())
                    .arg(self.payload());
                if self.rng.u32(..4) > 0 {
                    let first = match self.rng.u32(..10) {
                        0..6 => (FAR + u64::from(self.rng.u32(..4))).to_string(),
                        6..9 => ["0", "1000", "1600000000000"][self.rng.usize(..3)].to_string(),
                        _ => MAX_INT.to_string(),
                    };
                    call = self.opt(call, "FIRST", first);
                }
                self.job_options(call)
            }
            "EMQ.STALLED.CHECK" => {
                let call = Call::new(verb, base).arg(self.rng.u32(..4).to_string());
                let mut call = if self.rng.bool() {
                    {
                        let n = 1 + self.rng.u32(..4);
                        self.opt(call, "LIMIT", n.to_string())
                    }
                } else {
                    call
                };
                // The delays of jobs failed at their time limit: one to
                // three, the first as the option's value, the rest after.
                if self.rng.bool() {
                    let extra = self.rng.usize(..3);
                    let rng = &mut self.rng;
                    let mut delay = || [0u64, 0, 600_000][rng.usize(..3)].to_string();
                    let first = delay();
                    let more: Vec<Vec<u8>> = (0..extra).map(|_| delay().into_bytes()).collect();
                    call = self.opt(call, "RETRY_IN", first);
                    call.tail.extend(more);
                }
                call
            }
            "EMQ.ENQUEUE.BULK" | "EMQ.SCHEDULE.BULK" => {
                let mut call = Call::new(verb, base);
                for _ in 0..1 + self.rng.usize(..4) {
                    call.pos.push(self.new_id(view));
                    call.pos.push(self.payload());
                    if verb == "EMQ.SCHEDULE.BULK" {
                        let run_at = self.run_at();
                        call.pos.push(run_at.into_bytes());
                    }
                    let priority = [0, 1, 2, 7, 255][self.rng.usize(..5)];
                    call.pos.push(priority.to_string().into_bytes());
                    let attempts = 1 + self.rng.u32(..4);
                    call.pos.push(attempts.to_string().into_bytes());
                }
                call
            }
            "EMQ.COMPLETE.BULK" => {
                let mut call = Call::new(verb, base);
                for _ in 0..1 + self.rng.usize(..4) {
                    let id = self.pick_id(view, &[ACTIVE]);
                    let token = self.token(&id);
                    let result = if self.rng.bool() {
                        self.text()
                    } else {
                        Vec::new()
                    };
                    call = call.arg(id).arg(token).arg(result);
                }
                // Half of them claim the next batch in the same call.
                if self.rng.bool() {
                    let (worker, lease) = (self.worker(), self.lease());
                    let count = 1 + self.rng.u32(..5);
                    self.settle_capped_leases();
                    let word = case(&mut self.rng, "CLAIM");
                    call = call.arg(word).arg(worker).arg(lease).arg(count.to_string());
                }
                call
            }
            "EMQ.GET" | "EMQ.OUTCOME" => {
                let id = self.pick_id(view, &[0, 1, 2, 3, 4, 5]);
                Call::new(verb, base).arg(id)
            }
            "EMQ.OUTCOME.BULK" => {
                let mut call = Call::new(verb, base);
                for _ in 0..1 + self.rng.usize(..4) {
                    call = call.arg(self.pick_id(view, &[0, 1, 2, 3, 4, 5]));
                }
                call
            }
            "EMQ.DEDUP.OWNER" | "EMQ.DEDUP.RELEASE" => {
                let key = self.dedup_key();
                Call::new(verb, base).arg(key)
            }
            "EMQ.LIMIT" => {
                let call = Call::new(verb, base);
                match self.rng.u32(..10) {
                    0..2 => call,
                    // Windows that never end during a walk (the window of
                    // every now is the one starting at 0): which window a
                    // claim counts in must not hang on the ms each server
                    // read. Until an OFF, claims share what it lets out.
                    2..6 => {
                        let max = [1, 3, 20, 100][self.rng.usize(..4)];
                        let per = [10_000_000_000_000, MAX_INT][self.rng.usize(..2)];
                        let call = self.opt(call, "MAX", max.to_string());
                        self.opt(call, "PER", per.to_string())
                    }
                    _ => self.flag(call, "OFF"),
                }
            }
            "EMQ.RETENTION" => {
                // Ages that never depend on the ms a server read: 0 (off),
                // 1 (every job finished in an earlier step is past it, as
                // each step starts in a new ms), or more than a walk lasts.
                let mut call = Call::new(verb, base);
                for set in ["COMPLETED", "DEAD", "CANCELLED"] {
                    if self.rng.u32(..3) == 0 {
                        let n = [0, 2, 5, 1000][self.rng.usize(..4)];
                        call = self.opt(call, set, n.to_string());
                    }
                    if self.rng.u32(..3) == 0 {
                        let ms = [0, 1, 3_600_000, MAX_INT][self.rng.usize(..4)];
                        call = self.opt(call, &format!("{set}_FOR"), ms.to_string());
                    }
                }
                call
            }
            "EMQ.CONCURRENCY" => {
                let call = Call::new(verb, base);
                match self.rng.u32(..10) {
                    0..2 => call,
                    2..6 => {
                        let max = [1, 2, 5, 20][self.rng.usize(..4)];
                        self.opt(call, "MAX", max.to_string())
                    }
                    _ => self.flag(call, "OFF"),
                }
            }
            "EMQ.GROUP.CONCURRENCY" => {
                let call = Call::new(verb, base).arg(self.group());
                match self.rng.u32(..10) {
                    0..2 => call,
                    2..7 => {
                        let max = [1, 2, 5][self.rng.usize(..3)];
                        self.opt(call, "MAX", max.to_string())
                    }
                    _ => self.flag(call, "OFF"),
                }
            }
            "EMQ.GROUP.LIMIT" => {
                let call = Call::new(verb, base).arg(self.group());
                match self.rng.u32(..10) {
                    0..2 => call,
                    // Windows that never end during a walk, as LIMIT's.
                    2..7 => {
                        let max = [1, 2, 10][self.rng.usize(..3)];
                        let per = [10_000_000_000_000, MAX_INT][self.rng.usize(..2)];
                        let call = self.opt(call, "MAX", max.to_string());
                        self.opt(call, "PER", per.to_string())
                    }
                    _ => self.flag(call, "OFF"),
                }
            }
            "EMQ.GROUP.PAUSE" | "EMQ.GROUP.RESUME" | "EMQ.GROUP.COUNTS" => {
                Call::new(verb, base).arg(self.group())
            }
            "EMQ.GROUPS" => {
                let mut call = Call::new(verb, base);
                if self.rng.bool() {
                    let after = self.group_name();
                    call = self.opt(call, "AFTER", after);
                }
                if self.rng.bool() {
                    let count = 1 + self.rng.u32(..4);
                    call = self.opt(call, "COUNT", count.to_string());
                }
                call
            }
            "EMQ.FLOW.ADD" => {
                let id = self.flow_job_id(view);
                let after = match self.after_a_job_in_hand(base, view, &id) {
                    Some(after) => after,
                    None => self.edges(base, &id, Side::After),
                };
                let call = Call::new(verb, base)
                    .arg(self.flow_id())
                    .arg(&id)
                    .arg(self.flow_ref())
                    .arg(self.payload())
                    .arg(after)
                    .arg(self.edges(base, &id, Side::Before));
                let mut call = self.job_options(call);
                if self.rng.u32(..3) == 0 {
                    let policy = ["fail", "ignore", "cancel"][self.rng.usize(..3)];
                    call = self.opt(call, "ON_FAILURE", policy);
                }
                if self.rng.u32(..4) == 0 {
                    let run_at = self.run_at();
                    call = self.opt(call, "RUN_AT", run_at);
                }
                let call = self.group_option(call, base);
                let call = self.trace_option(call, base);
                let call = self.lifo_option(call, base);
                self.deadline_options(call, base)
            }
            "EMQ.FLOW.ADD.BULK" => {
                let mut call = Call::new(verb, base).arg(self.flow_id());
                for _ in 0..1 + self.rng.usize(..4) {
                    let id = self.flow_job_id(view);
                    call = call
                        .arg(&id)
                        .arg(self.flow_ref())
                        .arg(self.payload())
                        .arg(self.edges(base, &id, Side::After))
                        .arg(self.edges(base, &id, Side::Before))
                        .arg([0, 1, 2, 7, 255][self.rng.usize(..5)].to_string())
                        .arg((1 + self.rng.u32(..4)).to_string())
                        .arg(["fail", "ignore", "cancel"][self.rng.usize(..3)]);
                }
                call
            }
            "EMQ.FLOW.DEPS" | "EMQ.FLOW.DEPENDENTS" => {
                let mut call = Call::new(verb, base).arg(self.flow_job_id(view));
                if self.rng.bool() {
                    call = self.opt(call, "CURSOR", "0");
                }
                if self.rng.bool() {
                    let count = 1 + self.rng.u32(..3);
                    call = self.opt(call, "COUNT", count.to_string());
                }
                call
            }
            "EMQ.FLOW.OUTBOX" => {
                let mut call = Call::new(verb, base);
                if self.rng.bool() {
                    let count = 1 + self.rng.u32(..4);
                    call = self.opt(call, "COUNT", count.to_string());
                }
                if self.rng.u32(..3) == 0 {
                    let id = self.pick_id(view, &FINISHED);
                    call = self.opt(call, "JOBS", id);
                    if self.rng.bool() {
                        let more = self.pick_id(view, &[]);
                        call.tail.push(more);
                    }
                }
                call
            }
            "EMQ.FLOW.SETTLE" => {
                let mut call = Call::new(verb, base).arg(self.pick_id(view, &FINISHED));
                if self.rng.bool() {
                    let count = 1 + self.rng.u32(..4);
                    call = self.opt(call, "COUNT", count.to_string());
                }
                call
            }
            "EMQ.FLOW.LINK" => {
                let mut call = Call::new(verb, base).arg(self.pick_id(view, &[]));
                for _ in 0..1 + self.rng.usize(..3) {
                    let dependent = self.dependent();
                    let (queue, job) = dependent.split_once(' ').expect("a space");
                    call = call.arg(queue).arg(job);
                }
                call
            }
            "EMQ.FLOW.CHECKUP" => {
                let mut call = Call::new(verb, base);
                if self.rng.bool() {
                    let count = 1 + self.rng.u32(..4);
                    call = self.opt(call, "COUNT", count.to_string());
                }
                if self.rng.bool() {
                    // Minutes away: no check-up falls due again during the
                    // walk, whatever each server's clock reads.
                    let again = [60_000, 600_000][self.rng.usize(..2)];
                    call = self.opt(call, "AGAIN", again.to_string());
                }
                call
            }
            "EMQ.FLOW.ACK" => {
                let mut call = Call::new(verb, base);
                for _ in 0..1 + self.rng.usize(..3) {
                    let id = self.pick_id(view, &FINISHED);
                    let dependent = self.dependent();
                    let (queue, job) = dependent.split_once(' ').expect("a space");
                    call = call.arg(id).arg(queue).arg(job);
                }
                call
            }
            "EMQ.FLOW.WAIT" => {
                // The job in hand waits for jobs of another queue or of
                // the flow pool (itself now and then: BADARG), so
                // FLOW.RESOLVE's draws find its edges and run it again.
                let id = self.pick_id(view, &[ACTIVE]);
                let token = self.token(&id);
                let mut call = Call::new(verb, base).arg(&id).arg(token);
                let mut edges = self.edges(base, &id, Side::After);
                if edges.is_empty() {
                    edges = b"elsewhere e1".to_vec();
                }
                for word in edges.split(|b| *b == b' ') {
                    call = call.arg(word);
                }
                call
            }
            "EMQ.FLOW.RESOLVE" => {
                let mut call = Call::new(verb, base);
                for _ in 0..1 + self.rng.usize(..3) {
                    let [queue, dependency, dependent] = self.resolved_edge(base, view, conn).await;
                    let resolution = RESOLUTIONS[self.rng.usize(..RESOLUTIONS.len())];
                    call = call
                        .arg(queue)
                        .arg(dependency)
                        .arg(resolution)
                        .arg(dependent);
                }
                call
            }
            other => unreachable!("no generator for {other}"),
        };
        let mut call = call;
        let malformed = self.rng.u32(..20) == 0;
        if malformed {
            let g = grammar::grammar(call.command).expect("a grammar");
            grammar::break_call(&mut self.rng, g, &mut call);
        }
        Some(Step::Call { call, malformed })
    }

    /// A dependent, `<queue> <id>`, of a few.
    fn dependent(&mut self) -> String {
        format!("q{} d{}", self.rng.u32(..2), self.rng.u32(..3))
    }

    /// PRIORITY and ATTEMPTS, each maybe, sometimes twice (the later wins).
    fn job_options(&mut self, mut call: Call) -> Call {
        for _ in 0..1 + usize::from(self.rng.u32(..10) == 0) {
            if self.rng.bool() {
                let priority = [0, 1, 2, 7, 255][self.rng.usize(..5)].to_string();
                call = self.opt(call, "PRIORITY", priority);
            }
            if self.rng.u32(..3) == 0 {
                let attempts = match self.rng.u32(..20) {
                    0 => MAX_INT,
                    n => u64::from(1 + n % 4),
                };
                call = self.opt(call, "ATTEMPTS", attempts.to_string());
            }
        }
        call
    }

    /// DEDUP maybe, its key from a pool of four so enqueues collide, alone
    /// (simple), with DEDUP_FOR (throttle) or, on ENQUEUE, DEBOUNCE; held
    /// for a few ms (waited out), minutes, or the largest argument.
    fn dedup_options(&mut self, call: Call, debounce: bool) -> Call {
        if self.rng.u32(..5) >= 2 {
            return call;
        }
        let key = self.dedup_key();
        let call = self.opt(call, "DEDUP", key);
        let word = match self.rng.u32(..10) {
            0..4 => return call,
            4..7 => "DEDUP_FOR",
            _ if debounce => "DEBOUNCE",
            _ => return call,
        };
        let ms = match self.rng.u32(..10) {
            0..3 => self.short(),
            3 => self.huge(),
            4..7 => 600_000,
            _ => 3_600_000,
        };
        self.opt(call, word, ms.to_string())
    }

    /// GROUP maybe (two jobs in five), from the walk's groups; never on
    /// the queue of defaults, which thus keeps its jobs of priority 0 in
    /// `fifo` (the others move theirs into `pending` with their first
    /// grouped job).
    fn group_option(&mut self, call: Call, base: &str) -> Call {
        if base == QUEUES[2] || self.rng.u32(..5) >= 2 {
            return call;
        }
        let group = self.group();
        self.opt(call, "GROUP", group)
    }

    /// TRACE maybe (one job in three), a well-formed traceparent; never on
    /// the queue of defaults, whose claims thus never read a trace.
    fn trace_option(&mut self, call: Call, base: &str) -> Call {
        if base == QUEUES[2] || self.rng.u32(..3) != 0 {
            return call;
        }
        let tp = TRACEPARENTS[self.rng.usize(..TRACEPARENTS.len())];
        self.opt(call, "TRACE", tp)
    }

    /// LIFO maybe (one job in four); never on the queue of defaults, which
    /// thus never reads a job's `lifo`. Its jobs of priority 0 enter the
    /// head of `fifo` until the queue's first grouped job, then `pending`
    /// and their lanes scored from `lifo_seq`; retries and requeues put
    /// them at the front again.
    fn lifo_option(&mut self, call: Call, base: &str) -> Call {
        if base == QUEUES[2] || self.rng.u32(..4) != 0 {
            return call;
        }
        self.flag(call, "LIFO")
    }

    /// TIME_LIMIT and a start-by deadline, each maybe (one job in four);
    /// never on the queue of defaults, which thus never becomes `timed`.
    /// A deadline is START_BY (far off, or the largest argument) or
    /// START_WITHIN (minutes, a few ms that the next step waits out, so
    /// the sweep expires the job, or the largest: capped), now and then
    /// both (refused SYNTAX), or one that a later run-at refuses.
    fn deadline_options(&mut self, mut call: Call, base: &str) -> Call {
        if base == QUEUES[2] {
            return call;
        }
        if self.rng.u32(..4) == 0 {
            let limit = match self.rng.u32(..4) {
                0 => {
                    self.short_limits = true;
                    self.short()
                }
                1 => 1500,
                2 => 600_000,
                _ => self.huge(),
            };
            call = self.opt(call, "TIME_LIMIT", limit.to_string());
        }
        if self.rng.u32(..4) != 0 {
            return call;
        }
        let by = match self.rng.u32(..3) {
            0 => MAX_INT,
            _ => FAR + 3_600_000 * u64::from(self.rng.u32(..1000)),
        };
        let within = match self.rng.u32(..4) {
            0 => self.huge(),
            1 => self.short(),
            _ => 600_000 * u64::from(1 + self.rng.u32(..12)),
        };
        match self.rng.u32(..10) {
            0..5 => self.opt(call, "START_BY", by.to_string()),
            5..9 => self.opt(call, "START_WITHIN", within.to_string()),
            _ => {
                let call = self.opt(call, "START_WITHIN", within.to_string());
                self.opt(call, "START_BY", by.to_string())
            }
        }
    }

    /// One of the walk's groups.
    fn group(&mut self) -> Vec<u8> {
        self.group_name().into_bytes()
    }

    fn group_name(&mut self) -> String {
        GROUPS[self.rng.usize(..GROUPS.len())].to_string()
    }

    /// A dedup key: mostly one of a pool of four, sometimes an odd valid one.
    fn dedup_key(&mut self) -> Vec<u8> {
        match self.rng.u32(..10) {
            0 => "ключ:ü".as_bytes().to_vec(),
            1 => vec![b'k'; 256],
            n => format!("k{}", n % 4).into_bytes(),
        }
    }

    fn opt(&mut self, mut call: Call, word: &str, value: impl AsRef<[u8]>) -> Call {
        call.opts
            .push((case(&mut self.rng, word), Some(value.as_ref().to_vec())));
        call
    }

    fn flag(&mut self, mut call: Call, word: &str) -> Call {
        call.opts.push((case(&mut self.rng, word), None));
        call
    }

    /// A claim that may cap a lease at a time limit of a few ms waits them
    /// out, as [`Walker::short`] does for a lease of a few ms.
    fn settle_capped_leases(&mut self) {
        if self.short_limits {
            self.settle = self.settle.max(5);
        }
    }

    /// A few ms (the next step waits them out), or the largest argument.
    fn short(&mut self) -> u64 {
        let ms = 1 + u64::from(self.rng.u32(..3));
        self.settle = self.settle.max(ms + 2);
        ms
    }

    fn huge(&mut self) -> u64 {
        // Two values near now + 2^53 must stay apart as doubles (spacing 2).
        self.settle = self.settle.max(3);
        MAX_INT
    }

    /// A worker name: mostly one of three, sometimes empty or odd bytes.
    fn worker(&mut self) -> &'static [u8] {
        match self.rng.u32(..20) {
            0 => b"",
            1 => b"w \xff\x00",
            n => ["w1", "w2", "w3"][n as usize % 3].as_bytes(),
        }
    }

    fn lease(&mut self) -> String {
        match self.rng.u32(..40) {
            0..4 => self.short(),
            4 => self.huge(),
            5..25 => 3_600_000,
            _ => 7_200_000,
        }
        .to_string()
    }

    fn delay(&mut self) -> String {
        match self.rng.u32(..40) {
            0..10 => 0,
            10..14 => self.short(),
            14 => self.huge(),
            15..30 => 600_000,
            _ => 1_200_000,
        }
        .to_string()
    }

    /// A rate-limited job's hold: none, a few ms (waited out), or ten
    /// minutes (the queue held until a LIMIT OFF).
    fn hold(&mut self) -> String {
        match self.rng.u32(..10) {
            0..3 => 0,
            3..8 => self.short(),
            _ => 600_000,
        }
        .to_string()
    }

    fn run_at(&mut self) -> String {
        match self.rng.u32(..40) {
            0..6 => "+0".to_string(),
            6..9 => format!("+{}", self.short()),
            9 => format!("+{}", self.huge()),
            10..22 => format!("+{}", [600_000, 1_200_000, 3_600_000][self.rng.usize(..3)]),
            22..30 => (FAR + u64::from(self.rng.u32(..100_000))).to_string(),
            30..36 => ["0", "1000", "1600000000000"][self.rng.usize(..3)].to_string(),
            36 => MAX_INT.to_string(),
            _ => format!("+{}", 600_000 * (1 + u64::from(self.rng.u32(..100)))),
        }
    }

    fn payload(&mut self) -> Vec<u8> {
        match self.rng.u32(..40) {
            0..24 => format!("{{\"n\":{}}}", self.rng.u32(..1000)).into_bytes(),
            24..26 => Vec::new(),
            26..28 => vec![0, 0xff, b'\n', b' ', 0x80, b'{', b'}'],
            28..32 => "héllo wörld 🦀".as_bytes().to_vec(),
            32..36 => "x".repeat(100).into_bytes(),
            36 => "y".repeat(3000).into_bytes(),
            _ => b"a payload\r\nwith lines".to_vec(),
        }
    }

    fn text(&mut self) -> Vec<u8> {
        match self.rng.u32(..10) {
            0 => Vec::new(),
            1 => b"two\nlines".to_vec(),
            2 => "ünïcode".as_bytes().to_vec(),
            3 => "z".repeat(200).into_bytes(),
            n => format!("text {n}").into_bytes(),
        }
    }

    /// An id for a new job: `*`, a fresh one (sometimes numeric, so a
    /// generated id must skip it), one that exists, or an odd valid one.
    fn new_id(&mut self, view: &View) -> Vec<u8> {
        match self.rng.u32(..20) {
            0..8 => b"*".to_vec(),
            8..13 => {
                self.fresh += 1;
                format!("j{}", self.fresh).into_bytes()
            }
            13..15 => {
                self.fresh += 1;
                // Near the counter: ids `*` will come to.
                (self.fresh % 40).to_string().into_bytes()
            }
            15..18 => {
                let all = view.all();
                match all.get(self.rng.usize(..all.len().max(1))) {
                    Some(id) => (*id).clone(),
                    None => b"*".to_vec(),
                }
            }
            _ => {
                let odd: [&[u8]; 6] = [
                    "ü".as_bytes(),
                    b"a:b:c",
                    b"*x",
                    b"job:1",
                    b"\x00\xff",
                    &[b'k'; 256],
                ];
                odd[self.rng.usize(..odd.len())].to_vec()
            }
        }
    }

    /// An edge for FLOW.RESOLVE to resolve, `[queue, dependency,
    /// dependent]`: when the queue at `base` has blocked jobs, mostly a
    /// `wait` edge of one of them
    /// (read on `conn`), else any of its edges; else one of the
    /// edges FLOW.ADD draws onto its pool's jobs (`gone` mostly).
    async fn resolved_edge(
        &mut self,
        base: &str,
        view: &View,
        conn: &mut MultiplexedConnection,
    ) -> [Vec<u8>; 3] {
        let blocked: Vec<Vec<u8>> = redis::cmd("ZRANGE")
            .arg(format!("{base}:blocked"))
            .arg(0)
            .arg(-1)
            .query_async(conn)
            .await
            .unwrap_or_default();
        if self.rng.u32(..10) > 0 && !blocked.is_empty() {
            let dependent = blocked[self.rng.usize(..blocked.len())].clone();
            let mut deps_key = format!("{base}:deps:").into_bytes();
            deps_key.extend_from_slice(&dependent);
            let edges: Vec<(Vec<u8>, Vec<u8>)> = redis::cmd("HGETALL")
                .arg(deps_key)
                .query_async(conn)
                .await
                .unwrap_or_default();
            let waiting: Vec<&Vec<u8>> = edges
                .iter()
                .filter(|(_, value)| value == b"wait")
                .map(|(field, _)| field)
                .collect();
            let field = if self.rng.u32(..5) > 0 && !waiting.is_empty() {
                Some(waiting[self.rng.usize(..waiting.len())].clone())
            } else {
                edges.first().map(|(field, _)| field.clone())
            };
            if let Some(field) = field {
                let gap = field.iter().position(|b| *b == b' ').expect("a space");
                return [field[..gap].to_vec(), field[gap + 1..].to_vec(), dependent];
            }
        }
        let dependent = self.flow_job_id(view);
        let mut edge = self.edges(base, &dependent, Side::After);
        if edge.is_empty() {
            edge = b"elsewhere e1".to_vec();
        }
        let mut words = edge.split(|b| *b == b' ');
        let queue = words.next().expect("a queue").to_vec();
        let dependency = words.next().expect("an id").to_vec();
        [queue, dependency, dependent]
    }

    /// An id: mostly one in `states`, else any job's, else an absent one.
    /// A flow id of a few, so flows' submits meet again.
    fn flow_id(&mut self) -> String {
        format!("flow{}", self.rng.u32(..3))
    }

    /// A ref: mostly short, now and then the longest.
    fn flow_ref(&mut self) -> String {
        match self.rng.u32(..10) {
            0 => "r".repeat(echomq_protocol::arg::MAX_REF),
            n => format!("ref{}", n % 4),
        }
    }

    /// A flow job's id: of a small pool, so a flow adds an id again
    /// (existed) or another flow's (CONFLICT), or a job of the view (a
    /// job of no flow: CONFLICT -).
    fn flow_job_id(&mut self, view: &View) -> Vec<u8> {
        let all = view.all();
        if self.rng.u32(..8) == 0 && !all.is_empty() {
            return all[self.rng.usize(..all.len())].clone();
        }
        format!("fj{}", self.rng.u32(..FLOW_POOL)).into_bytes()
    }

    /// An `after` (`side` [`Side::After`]) or `before` list for the job
    /// `id` of the queue at `base`: none, jobs of another queue, one of the
    /// flow pool of this one, or (the job itself now and then: BADARG)
    /// one or two of the pool on the job's side of the pool's order
    /// (`fj2` runs after `fj0` and `fj1`, before `fj3`…), so a flow's
    /// adds agree on an edge from both ends and a completion takes its
    /// own queue's edges.
    fn edges(&mut self, base: &str, id: &[u8], side: Side) -> Vec<u8> {
        let queue = queue_of(base);
        match self.rng.u32(..8) {
            0 | 1 => Vec::new(),
            2 => b"elsewhere e1".to_vec(),
            3 => format!("elsewhere e{} far.q e2", self.rng.u32(..3)).into_bytes(),
            4 => format!("{queue} fj{}", self.rng.u32(..8)).into_bytes(),
            5 | 6 => self.ordered_edges(queue, id, side),
            _ => [queue.as_bytes(), b" ", id].concat(),
        }
    }

    /// Now and then, an `after` list for the flow job `id` naming a job
    /// of its queue in hand (else pending), the job then linked to it
    /// (`FLOW.LINK`, as a submit links a dependency outside its flow)
    /// and, in hand, completed: the completion takes the edge in its own
    /// call (wire 4's `own_edges`, wire 6's `complete_own_edges`), which
    /// edges drawn at random seldom reach.
    fn after_a_job_in_hand(&mut self, base: &str, view: &View, id: &[u8]) -> Option<Vec<u8>> {
        let (active, pending) = (view.of(&[ACTIVE]), view.of(&[PENDING]));
        let in_hand = !active.is_empty();
        let pool = if in_hand { active } else { pending };
        if pool.is_empty() || !self.commands.contains(&"EMQ.FLOW.LINK") || !self.rng.bool() {
            return None;
        }
        let dependency = pool[self.rng.usize(..pool.len())].clone();
        let queue = queue_of(base);
        let link = Call::new("EMQ.FLOW.LINK", base)
            .arg(&dependency)
            .arg(queue)
            .arg(id);
        self.then.push_back(Step::Call {
            call: link,
            malformed: false,
        });
        if in_hand {
            let complete = Call::new("EMQ.COMPLETE", base)
                .arg(&dependency)
                .arg(token_ref(&dependency, 0));
            self.then.push_back(Step::Call {
                call: complete,
                malformed: false,
            });
        }
        Some([queue.as_bytes(), b" ", &dependency].concat())
    }

    /// One or two jobs of the flow pool of `queue` on `side` of `id` in
    /// the pool's order (`fj<n>`), none past its ends or for an id
    /// outside the pool.
    fn ordered_edges(&mut self, queue: &str, id: &[u8], side: Side) -> Vec<u8> {
        let own = std::str::from_utf8(id)
            .ok()
            .and_then(|id| id.strip_prefix("fj"))
            .and_then(|n| n.parse::<u32>().ok());
        let Some(own) = own else {
            return Vec::new();
        };
        let (low, high) = match side {
            Side::After => (0, own),
            Side::Before => (own + 1, FLOW_POOL),
        };
        if low >= high {
            return Vec::new();
        }
        let first = low + self.rng.u32(..high - low);
        let second = low + self.rng.u32(..high - low);
        let mut edges = format!("{queue} fj{first}");
        if second != first && self.rng.bool() {
            edges.push_str(&format!(" {queue} fj{second}"));
        }
        edges.into_bytes()
    }

    fn pick_id(&mut self, view: &View, states: &[usize]) -> Vec<u8> {
        let preferred = view.of(states);
        let all = view.all();
        let roll = self.rng.u32(..100);
        if roll < 75 && !preferred.is_empty() {
            return preferred[self.rng.usize(..preferred.len())].clone();
        }
        if roll < 90 && !all.is_empty() {
            return all[self.rng.usize(..all.len())].clone();
        }
        let ghosts: Vec<Vec<u8>> = self
            .corrupted
            .iter()
            .filter_map(|c| {
                c.key
                    .windows(5)
                    .position(|w| w == b":job:")
                    .map(|at| c.key[at + 5..].to_vec())
            })
            .collect();
        if !ghosts.is_empty() && self.rng.bool() {
            return ghosts[self.rng.usize(..ghosts.len())].clone();
        }
        format!("absent{}", self.rng.u32(..5)).into_bytes()
    }

    /// The job's current token, or a stale, future or odd one. Each
    /// server draws its own tokens from its clock, so the first three are
    /// [`token_ref`]s, read on each server just before the call is sent.
    fn token(&mut self, id: &[u8]) -> String {
        match self.rng.u32(..100) {
            0..82 => token_ref(id, 0),
            82..89 => token_ref(id, -1),
            89..96 => token_ref(id, 1),
            _ => self.rng.u32(..1000).to_string(),
        }
    }

    /// Sets an absent key of the queue to the wrong type for a while.
    async fn corrupt(
        &mut self,
        base: &str,
        view: &View,
        conn: &mut MultiplexedConnection,
    ) -> Option<Step> {
        // (key, the type it should hold)
        let mut candidates: Vec<(Vec<u8>, &str)> = Vec::new();
        let keys: Vec<String> = FIXED.iter().map(|(k, _)| format!("{base}:{k}")).collect();
        let mut pipe = redis::pipe();
        for key in &keys {
            pipe.cmd("EXISTS").arg(key);
        }
        let exists: Vec<u8> = pipe.query_async(conn).await.unwrap();
        for ((key, (_, kind)), found) in keys.iter().zip(FIXED.iter()).zip(exists) {
            if found == 0 {
                candidates.push((key.clone().into_bytes(), kind));
            }
        }
        self.fresh += 1;
        candidates.push((
            format!("{base}:job:ghost{}", self.fresh).into_bytes(),
            "hash",
        ));
        for id in view.all().into_iter().take(3) {
            let logs = [base.as_bytes(), b":logs:", id].concat();
            let len: u64 = redis::cmd("EXISTS")
                .arg(&logs)
                .query_async(conn)
                .await
                .unwrap();
            if len == 0 {
                candidates.push((logs, "list"));
            }
        }
        let (key, kind) = candidates.swap_remove(self.rng.usize(..candidates.len()));
        // A key that must hold a string gets a hash; any other a string.
        let hash = kind == "string";
        let argv = if hash {
            vec![b"HSET".to_vec(), key.clone(), MARKER.into(), b"1".to_vec()]
        } else {
            vec![b"SET".to_vec(), key.clone(), MARKER.into()]
        };
        self.corrupted.push(Corruption {
            key,
            hash,
            restore_at: self.step + 3 + self.rng.usize(..20),
        });
        Some(Step::Raw {
            argv,
            why: "corrupt",
        })
    }
}

/// The settings of a queue: small retention on the first (trimming at
/// work), events off and finished jobs deleted at once on the second.
fn configure(base: &str) -> Option<Step> {
    let values: &[&str] = if base == QUEUES[0] {
        &[
            "keep_completed",
            "6",
            "keep_dead",
            "5",
            "keep_cancelled",
            "4",
            "events_max",
            "1000000",
        ]
    } else if base == QUEUES[1] {
        &[
            "keep_completed",
            "0",
            "keep_dead",
            "3",
            "keep_cancelled",
            "0",
            "events_max",
            "0",
        ]
    } else {
        // The third queue keeps the defaults: no settings in its meta hash
        // (its marks only).
        return None;
    };
    let mut argv = vec![b"HSET".to_vec(), format!("{base}:meta").into_bytes()];
    argv.extend(values.iter().map(|v| v.as_bytes().to_vec()));
    Some(Step::Raw {
        argv,
        why: "configure",
    })
}

/// Makes every blocked job's check-up due (scored at a fixed instant long
/// past), on every server alike, so FLOW.CHECKUP lists them.
fn checkup_due(base: &str) -> Step {
    const SCRIPT: &str = "local due = {} \
        for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do \
        due[#due + 1] = 1000 due[#due + 1] = id end \
        if #due > 0 then redis.call('ZADD', KEYS[1], unpack(due)) end return #due / 2";
    Step::Raw {
        argv: vec![
            b"EVAL".to_vec(),
            SCRIPT.as_bytes().to_vec(),
            b"1".to_vec(),
            format!("{base}:blocked").into_bytes(),
        ],
        why: "checkup_due",
    }
}

/// Makes a waiting or running job a dependency of `dependent` (not told
/// yet), as `FLOW.ADD` will: its `dependents:<id>` field, its `dependents`
/// count and the queue's `flows` mark, on every server alike.
fn give_dependent(base: &str, id: &[u8], dependent: &str) -> Step {
    const SCRIPT: &str = "local state = redis.call('HGET', KEYS[2], 'state') \
        if state ~= 'pending' and state ~= 'scheduled' and state ~= 'active' then return 0 end \
        redis.call('HSET', KEYS[1], ARGV[1], '0') \
        redis.call('HSET', KEYS[2], 'dependents', redis.call('HLEN', KEYS[1])) \
        redis.call('HSET', KEYS[3], 'flows', '1') return 1";
    let key = |infix: &str| [base.as_bytes(), infix.as_bytes(), id].concat();
    Step::Raw {
        argv: vec![
            b"EVAL".to_vec(),
            SCRIPT.as_bytes().to_vec(),
            b"3".to_vec(),
            key(":dependents:"),
            key(":job:"),
            format!("{base}:meta").into_bytes(),
            dependent.as_bytes().to_vec(),
        ],
        why: "dependents",
    }
}

/// Takes the logs mark off a queue: as a queue from before the mark, its
/// next enqueue marks it again (docs/protocol.md, "The logs mark").
fn unmark(base: &str) -> Step {
    Step::Raw {
        argv: vec![
            b"HDEL".to_vec(),
            format!("{base}:meta").into_bytes(),
            b"logs".to_vec(),
        ],
        why: "unmark",
    }
}

fn restore(corruption: &Corruption) -> Step {
    Step::Raw {
        argv: vec![b"DEL".to_vec(), corruption.key.clone()],
        why: "restore",
    }
}

async fn still_marked(conn: &mut MultiplexedConnection, corruption: &Corruption) -> bool {
    let value: Value = if corruption.hash {
        redis::cmd("HGET")
            .arg(&corruption.key)
            .arg(MARKER)
            .query_async(conn)
            .await
            .unwrap_or(Value::Nil)
    } else {
        redis::cmd("GET")
            .arg(&corruption.key)
            .query_async(conn)
            .await
            .unwrap_or(Value::Nil)
    };
    value != Value::Nil
        && (corruption.hash || value == Value::BulkString(MARKER.as_bytes().to_vec()))
}

async fn read_view(conn: &mut MultiplexedConnection, base: &str) -> View {
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for set in SETS {
        pipe.cmd("ZRANGE")
            .arg(format!("{base}:{set}"))
            .arg(0)
            .arg(-1);
    }
    // The pending set's other key (docs/protocol.md, "The fifo").
    pipe.cmd("LRANGE")
        .arg(format!("{base}:fifo"))
        .arg(0)
        .arg(-1);
    let mut replies: Vec<Value> = pipe.query_async(conn).await.unwrap();
    let fifo = replies.pop();
    let mut view = View {
        sets: replies
            .into_iter()
            .map(|reply| match reply {
                Value::Array(ids) => ids
                    .into_iter()
                    .filter_map(|id| match id {
                        Value::BulkString(id) => Some(id),
                        _ => None,
                    })
                    .collect(),
                // A state set corrupted for a while holds no ids.
                _ => Vec::new(),
            })
            .collect(),
    };
    if let Some(Value::Array(ids)) = fifo {
        let queued = ids.into_iter().filter_map(|id| match id {
            Value::BulkString(id) => Some(id),
            _ => None,
        });
        view.sets[PENDING].extend(queued);
    }
    view
}

/// Marks an argument that stands for a job's token (see [`token_ref`]).
const TOKEN_REF: &[u8] = b"@token:";

/// An argument standing for job `id`'s current token plus `offset`
/// (`@token:<id in hex>:<offset>`), which [`resolve_tokens`] replaces.
fn token_ref(id: &[u8], offset: i64) -> String {
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    format!("@token:{hex}:{offset}")
}

/// `call` with each [`token_ref`] replaced by the token `read(job key)`
/// gives (the job's current token on that server, else 0), plus its offset
/// (at least 0).
pub(crate) fn resolve_tokens(call: &Call, mut read: impl FnMut(&[u8]) -> u64) -> Call {
    let mut call = call.clone();
    let base = call.base.clone();
    let mut resolve = |arg: &mut Vec<u8>| {
        let Some(rest) = arg.strip_prefix(TOKEN_REF) else {
            return;
        };
        let rest = std::str::from_utf8(rest).expect("a token ref is text");
        let (hex, offset) = rest.rsplit_once(':').expect("@token:<hex>:<offset>");
        let id: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
            .collect();
        let held = read(&[base.as_slice(), b":job:", &id].concat());
        let offset: i64 = offset.parse().expect("an offset");
        *arg = held.saturating_add_signed(offset).to_string().into_bytes();
    };
    call.pos.iter_mut().for_each(&mut resolve);
    call.tail.iter_mut().for_each(&mut resolve);
    for (_, value) in &mut call.opts {
        if let Some(value) = value {
            resolve(value);
        }
    }
    call
}
