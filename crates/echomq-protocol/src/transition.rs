//! The registry of controls: one row per control of `docs/protocol.md`.
//!
//! A row names the control's verb and scope, the library functions that
//! send it, the keys it touches, its one-line effect, its commands (the
//! single form and any bulk form: Lua script, native command, arguments,
//! reply, refusals, module flags) and its events. Adding a control is one
//! row here plus its two implementations (a script in
//! `crates/echomq/scripts/`, a handler in `crates/echomq-module/`); the
//! tests that hold the rest to this table fail until both exist and
//! `docs/protocol.md` has its row (see `docs/development.md`).

use crate::arg::MAX_INT;
use crate::arg::MAX_PRIORITY;
use crate::arg::{MAX_FLOW_ID, MAX_REF};
use crate::control::{
    Arg, Command, Control, Form, JobKey, Kind, Opt, Refuses, Scope, Tail, registry,
};
use crate::keyspace::QueueKey::{self, *};
use std::fmt;

const ID: Kind = Kind::Id { generate: false };
const NEW_ID: Kind = Kind::Id { generate: true };
const TEXT: Kind = Kind::Text;
const PRIORITY: Kind = Kind::Int {
    min: 0,
    max: MAX_PRIORITY as u64,
};

const fn int(min: u64) -> Kind {
    Kind::Int { min, max: MAX_INT }
}

const fn arg(name: &'static str, kind: Kind) -> Arg {
    Arg { name, kind }
}

const fn opt(word: &'static str, placeholder: &'static str, kind: Kind) -> Opt {
    Opt {
        word,
        value: Some((placeholder, kind)),
    }
}

const fn flag(word: &'static str) -> Opt {
    Opt { word, value: None }
}

const fn refuses(code: &'static str, when: &'static str) -> Refuses {
    Refuses { code, when }
}

const NOTACTIVE: Refuses = refuses(
    "NOTACTIVE",
    "the job is absent, not active, or active under another token (its lease was lost)",
);
const NOJOB: Refuses = refuses("NOJOB", "no job has this id");

/// A single command with no options and no refusals of its own, to fill in.
const fn command(native: &'static str, script: &'static str, reply: &'static str) -> Command {
    Command {
        native,
        script,
        head: &[],
        args: &[],
        options: &[],
        tail: None,
        groups: None,
        exclusive: &[],
        requires: &[],
        together: &[],
        reply,
        refuses: &[],
        flags: "write deny-oom",
    }
}

const ATTEMPTS: Opt = opt("ATTEMPTS", "n", int(1));
const DEDUP: Opt = opt("DEDUP", "key", Kind::Key);
const DEDUP_FOR: Opt = opt("DEDUP_FOR", "ms", int(1));
const GROUP: Opt = opt("GROUP", "g", Kind::Group);
const TRACE: Opt = opt("TRACE", "tp", Kind::TraceParent);
const TIME_LIMIT: Opt = opt("TIME_LIMIT", "ms", int(1));
const START_BY: Opt = opt("START_BY", "ms", int(1));
const START_WITHIN: Opt = opt("START_WITHIN", "ms", int(1));
/// A start-by deadline is given one way or the other.
const START_BY_OR_WITHIN: &[&str] = &["START_BY", "START_WITHIN"];
const START_BY_LATE: Refuses = refuses(
    "BADARG start_by",
    "START_BY is not later than now (server clock), or on SCHEDULE not later than the run-at",
);
const DEBOUNCED_DEADLINE: Refuses = refuses(
    "SYNTAX",
    "DEBOUNCE with START_BY or START_WITHIN (a debounce moves the run-at the deadline is checked against)",
);
/// STALLED.CHECK's delays after the 1st, 2nd, … failure at a time limit.
const RETRY_IN_LIST: Opt = opt("RETRY_IN", "ms [ms …]", Kind::Delays);
const GROUP_ARG: Arg = arg("group", Kind::Group);
/// The keys every per-group control touches.
const GROUP_KEYS: &[QueueKey] = &[Base, Meta, Events, Signal, Groups, GroupsWait, GroupIndex];
const GROUP_JOB_KEYS: &[JobKey] = &[JobKey::Lane, JobKey::Group];
const ENQUEUED: &str =
    "[id, 1] created, [id, 0] when the id existed, [holder, 2] deduplicated, [holder, 3] debounced";
const SCHEDULED: &str = "[id, 1] created, [id, 0] when the id existed, [holder, 2] deduplicated";
const ENQUEUED_BULK: &str = "[id1, created1, id2, created2, …], created 1 or 0";
/// The bulk enqueues' closing word: every job created is marked waited
/// for (docs/protocol.md, "Outcome waits").
const WAITED_TAIL: Tail = Tail {
    word: "WAITED",
    args: &[],
    effect: "every job the call creates is marked waited for, as the single form's WAITED marks it",
};
const ALL_KEYS: &[QueueKey] = &QueueKey::ALL;
/// A flow id: the job-id rule, at most 127 bytes.
const FLOW_ARG: Arg = arg("flow", Kind::Name { max: MAX_FLOW_ID });
/// A job's name in its flow: the job-id rule, at most 128 bytes.
const REF_ARG: Arg = arg("ref", Kind::Name { max: MAX_REF });
/// A dependent's failure policy.
const ON_FAILURE: Kind = Kind::Word(&["fail", "ignore", "cancel"]);
/// The keys FLOW.ADD touches: ENQUEUE's and SCHEDULE's (no id counter, no
/// dedup keys: a flow job has its id, and no dedup key), and `blocked`.
const FLOW_ADD_KEYS: &[QueueKey] = &[
    Base,
    Seq,
    Pending,
    QueueKey::Schedule,
    Meta,
    Events,
    Signal,
    Groups,
    GroupsWait,
    GroupIndex,
    Fifo,
    Deadlines,
    QueueKey::Blocked,
];
const FLOW_CONFLICT: Refuses = refuses(
    "CONFLICT",
    "the id is held by a job of another flow (CONFLICT <flow>) or of none (CONFLICT -); the bulk form checks every id before it writes",
);
/// FLOW.DEPS's and FLOW.DEPENDENTS's page: HSCAN's cursor and count hint.
const FLOW_PAGE: &[Opt] = &[opt("CURSOR", "c", int(0)), opt("COUNT", "n", int(1))];

registry! {
    /// New job → pending.
    Enqueue => Control {
        verb: "ENQUEUE",
        scope: Scope::Spine,
        functions: &["Queue::enqueue", "Queue::enqueue_bulk"],
        keys: &[Base, Id, Seq, Pending, QueueKey::Schedule, Meta, Events, Signal, Dedup, DedupOwner, Groups, GroupsWait, GroupIndex, Fifo, Deadlines],
        job_keys: &[JobKey::Hash, JobKey::Lane, JobKey::Group],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "new job → pending (also while paused); an id that exists changes nothing; a held dedup key creates nothing",
        command: Command {
            args: &[arg("id", NEW_ID), arg("payload", TEXT)],
            options: &[
                opt("PRIORITY", "p", PRIORITY),
                ATTEMPTS,
                DEDUP,
                DEDUP_FOR,
                opt("DEBOUNCE", "ms", int(1)),
                GROUP,
                TRACE,
                TIME_LIMIT,
                START_BY,
                START_WITHIN,
                flag("LIFO"),
                flag("WAITED"),
            ],
            exclusive: &[&["DEDUP_FOR", "DEBOUNCE"], START_BY_OR_WITHIN],
            requires: &[("DEDUP_FOR", "DEDUP"), ("DEBOUNCE", "DEDUP")],
            refuses: &[START_BY_LATE, DEBOUNCED_DEADLINE],
            ..command("EMQ.ENQUEUE", "enqueue", ENQUEUED)
        },
        bulk: Some(Command {
            args: &[arg("id", NEW_ID), arg("payload", TEXT), arg("priority", PRIORITY), arg("attempts", int(1))],
            tail: Some(WAITED_TAIL),
            ..command("EMQ.ENQUEUE.BULK", "enqueue_bulk", ENQUEUED_BULK)
        }),
        events: &["enqueued", "scheduled", "deduplicated", "debounced"],
    },
    /// Pending → active, with a fencing token.
    Claim => Control {
        verb: "CLAIM",
        scope: Scope::Spine,
        functions: &["Queue::claim", "Queue::claim_one", "Queue::claim_with_wait", "Worker::start"],
        keys: &[Base, Seq, Schedule, Pending, Active, Meta, Events, Signal, DedupOwner, Groups, GroupsWait, GroupIndex, Fifo, Cancelled, Deadlines, Resolutions],
        job_keys: &[JobKey::Hash, JobKey::Logs, JobKey::Lane, JobKey::Group, JobKey::Metrics, JobKey::Deps, JobKey::Dependents, JobKey::Resolution],
        publishes_cancel: false,
        publishes_outcome: true,
        durable: false,
        effect: "promotes due scheduled jobs, then unless paused pending → active under a lease (round robin across groups, within the rate limit and the concurrency cap); token = ++claims; a debounced job frees its dedup key; a job past its start-by deadline is expired (→ cancelled) instead",
        command: Command {
            args: &[arg("worker", TEXT), arg("lease_ms", int(1))],
            options: &[opt("COUNT", "n", int(1))],
            ..command(
                "EMQ.CLAIM",
                "claim",
                "array of [id, token, payload, failures, max_attempts] (and the traceparent, for a job that has one; on a timed queue always the traceparent, empty when none, and the time_limit, 0 when none), then wait_ms when flow control withheld pending jobs; empty when none or paused",
            )
        },
        bulk: None,
        events: &["promoted", "expired", "claimed"],
    },
    /// Active → completed.
    Complete => Control {
        verb: "COMPLETE",
        scope: Scope::Spine,
        functions: &["Queue::complete", "Queue::complete_many", "Worker::start"],
        keys: &[Base, Pending, Active, Completed, Meta, Events, Signal, DedupOwner, Groups, GroupsWait, GroupIndex, Seq, QueueKey::Schedule, Fifo, Cancelled, Deadlines, Resolutions, Blocked],
        job_keys: &[JobKey::Hash, JobKey::Logs, JobKey::Lane, JobKey::Group, JobKey::Metrics, JobKey::Deps, JobKey::Dependents, JobKey::Resolution],
        publishes_cancel: false,
        publishes_outcome: true,
        durable: true,
        effect: "the job in hand → completed (fenced by its token); its dependents in this queue take its resolution in the same call (the last edge unblocks them); trims completed jobs to keep_completed; the bulk form may then claim the next batch",
        command: Command {
            args: &[arg("id", ID), arg("token", int(0))],
            options: &[opt("RESULT", "r", TEXT)],
            refuses: &[NOTACTIVE],
            ..command("EMQ.COMPLETE", "complete", "OK")
        },
        bulk: Some(Command {
            args: &[arg("id", ID), arg("token", int(0)), arg("result", TEXT)],
            tail: Some(Tail {
                word: "CLAIM",
                args: &[arg("worker", TEXT), arg("lease_ms", int(1)), arg("count", int(1))],
                effect: "then, in the same call and at the same clock, CLAIM worker lease_ms COUNT count",
            }),
            ..command(
                "EMQ.COMPLETE.BULK",
                "complete_bulk",
                "one OK or NOTACTIVE per job, in order (an empty result stores none); with CLAIM, then the claim's reply as one more element (its refusal, an error, when it was refused)",
            )
        }),
        events: &["completed", "dependency_resolved", "unblocked", "promoted", "expired", "claimed"],
    },
    /// Active → retry (pending or scheduled), dead or cancelled.
    Fail => Control {
        verb: "FAIL",
        scope: Scope::Spine,
        functions: &["Queue::fail", "Worker::start"],
        keys: &[Base, Seq, Schedule, Pending, Active, Dead, Cancelled, Meta, Events, Signal, DedupOwner, Groups, GroupsWait, GroupIndex, Fifo, Deadlines, Resolutions],
        job_keys: &[JobKey::Hash, JobKey::Logs, JobKey::Lane, JobKey::Group, JobKey::Metrics, JobKey::Deps, JobKey::Dependents, JobKey::Resolution],
        publishes_cancel: false,
        publishes_outcome: true,
        durable: true,
        effect: "the job in hand failed: retried while attempts remain, else dead; cancelled when asked to stop; rate limited: back to pending, the queue held",
        command: Command {
            args: &[arg("id", ID), arg("token", int(0)), arg("error", TEXT)],
            options: &[
                opt("RETRY_IN", "ms", int(0)),
                flag("DEAD"),
                flag("CANCELLED"),
                opt("RATE_LIMITED", "ms", int(0)),
            ],
            exclusive: &[&["RETRY_IN", "DEAD", "CANCELLED", "RATE_LIMITED"]],
            refuses: &[NOTACTIVE],
            ..command("EMQ.FAIL", "fail", "retry, dead, cancelled or rate_limited")
        },
        bulk: None,
        events: &["retried", "dead", "cancelled", "rate_limited"],
    },
    /// New job → scheduled (or pending when already due).
    Schedule => Control {
        verb: "SCHEDULE",
        scope: Scope::Time,
        functions: &["Queue::enqueue", "Queue::enqueue_bulk", "RepeatScheduler::start"],
        keys: &[Base, Id, Seq, Pending, QueueKey::Schedule, Meta, Events, Signal, Dedup, DedupOwner, Groups, GroupsWait, GroupIndex, Fifo, Deadlines],
        job_keys: &[JobKey::Hash, JobKey::Lane, JobKey::Group],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "new job → scheduled at run_at (→ pending at once when due); a held dedup key creates nothing",
        command: Command {
            args: &[arg("id", NEW_ID), arg("payload", TEXT), arg("run_at", Kind::RunAt)],
            options: &[opt("PRIORITY", "p", PRIORITY), ATTEMPTS, opt("REPEAT", "key", TEXT), DEDUP, DEDUP_FOR, GROUP, TRACE, TIME_LIMIT, START_BY, START_WITHIN, flag("LIFO"), flag("WAITED")],
            exclusive: &[START_BY_OR_WITHIN],
            requires: &[("DEDUP_FOR", "DEDUP")],
            refuses: &[
                START_BY_LATE,
                refuses("BADARG start_within", "now (server clock) + START_WITHIN is not later than the run-at"),
            ],
            ..command("EMQ.SCHEDULE", "schedule", SCHEDULED)
        },
        bulk: Some(Command {
            args: &[
                arg("id", NEW_ID),
                arg("payload", TEXT),
                arg("run_at", Kind::RunAt),
                arg("priority", PRIORITY),
                arg("attempts", int(1)),
            ],
            tail: Some(WAITED_TAIL),
            ..command("EMQ.SCHEDULE.BULK", "schedule_bulk", ENQUEUED_BULK)
        }),
        events: &["scheduled", "enqueued", "deduplicated"],
    },
    /// Due scheduled jobs → pending.
    Promote => Control {
        verb: "PROMOTE",
        scope: Scope::Time,
        functions: &["Queue::promote"],
        keys: &[Base, Seq, QueueKey::Schedule, Pending, Meta, Events, Signal, Groups, GroupsWait, GroupIndex, Fifo],
        job_keys: &[JobKey::Hash, JobKey::Lane, JobKey::Group],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: false,
        effect: "due scheduled jobs → pending now, oldest first",
        command: Command {
            options: &[opt("LIMIT", "n", int(1))],
            ..command("EMQ.PROMOTE", "promote", "count promoted")
        },
        bulk: None,
        events: &["promoted"],
    },
    /// Active → scheduled, not a failure.
    Delay => Control {
        verb: "DELAY",
        scope: Scope::Time,
        functions: &["Queue::delay", "JobContext::delay"],
        keys: &[Base, QueueKey::Schedule, Pending, Active, Meta, Events, Signal, Groups, GroupsWait, GroupIndex, Fifo, Deadlines],
        job_keys: &[JobKey::Hash, JobKey::Lane, JobKey::Group],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "the job in hand → scheduled at now+ms; not a failure, no attempt used",
        command: Command {
            args: &[arg("id", ID), arg("token", int(0)), arg("ms", int(0))],
            refuses: &[NOTACTIVE],
            ..command("EMQ.DELAY", "delay", "OK")
        },
        bulk: None,
        events: &["delayed"],
    },
    /// Rescores a scheduled job.
    Reschedule => Control {
        verb: "RESCHEDULE",
        scope: Scope::Time,
        functions: &["Jobs::reschedule"],
        keys: &[Base, QueueKey::Schedule, Meta, Events, Signal],
        job_keys: &[JobKey::Hash],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "moves a scheduled job's run-at",
        command: Command {
            args: &[arg("id", ID), arg("run_at", int(0))],
            refuses: &[NOJOB, refuses("BADSTATE", "the job is not scheduled (the reply names its state)")],
            ..command("EMQ.RESCHEDULE", "reschedule", "OK")
        },
        bulk: None,
        events: &["rescheduled"],
    },
    /// Stores a repeat definition, replacing its key's occurrence.
    RepeatAdd => Control {
        verb: "REPEAT.ADD",
        scope: Scope::Time,
        functions: &["Queue::repeat", "Queue::repeat_with"],
        keys: &[Base, Repeat, Id, Seq, Pending, QueueKey::Schedule, Meta, Events, Signal, DedupOwner, Groups, GroupsWait, GroupIndex, Fifo],
        job_keys: &[JobKey::Hash, JobKey::Logs],
        publishes_cancel: false,
        publishes_outcome: true,
        durable: true,
        effect: "stores a repeat definition; the key's scheduled occurrences → deleted, the new first one → scheduled, in one step",
        command: Command {
            args: &[arg("key", Kind::RepeatKey), arg("definition", TEXT), arg("payload", TEXT)],
            options: &[opt("FIRST", "run_at", int(0)), opt("PRIORITY", "p", PRIORITY), ATTEMPTS],
            ..command("EMQ.REPEAT.ADD", "repeat_add", "[replaced definition or nil, occurrences deleted]")
        },
        bulk: None,
        events: &["removed", "scheduled", "enqueued"],
    },
    /// Lease checkpoint of an active job.
    Extend => Control {
        verb: "EXTEND",
        scope: Scope::InHand,
        functions: &["Queue::extend", "JobContext::extend", "Worker::start"],
        keys: &[Base, Active],
        job_keys: &[JobKey::Hash],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: false,
        effect: "lease checkpoint of the job in hand: deadline = now+ms, at most its claim + its time limit; tells whether cancellation was asked",
        command: Command {
            args: &[arg("id", ID), arg("token", int(0)), arg("ms", int(1))],
            refuses: &[
                NOTACTIVE,
                refuses("TIMELIMIT", "the job's time limit has passed (now ≥ claimed_at + time_limit); nothing is written"),
            ],
            flags: "write deny-oom fast",
            ..command("EMQ.EXTEND", "extend", "[deadline_ms, cancel_requested 0|1]")
        },
        bulk: None,
        events: &[],
    },
    /// Recovers or dead-letters jobs whose lease ran out.
    StalledCheck => Control {
        verb: "STALLED.CHECK",
        scope: Scope::InHand,
        functions: &["Queue::sweep_stalled", "Queue::sweep_if_due", "Worker::start"],
        keys: &[Base, Seq, Pending, Active, Dead, Cancelled, Meta, Events, Signal, DedupOwner, Groups, GroupsWait, GroupIndex, Fifo, Completed, QueueKey::Schedule, Deadlines, Resolutions, Blocked],
        job_keys: &[JobKey::Hash, JobKey::Logs, JobKey::Lane, JobKey::Group, JobKey::Metrics, JobKey::Deps, JobKey::Dependents, JobKey::Resolution],
        publishes_cancel: false,
        publishes_outcome: true,
        durable: false,
        effect: "active jobs whose lease ran out → pending, or dead once stalled more than max_stalls times; a job at its time limit fails (retried after RETRY_IN's delay, or dead); a waiting job past its start-by deadline → cancelled (expired)",
        command: Command {
            args: &[arg("max_stalls", int(0))],
            options: &[opt("LIMIT", "n", int(1)), RETRY_IN_LIST],
            ..command("EMQ.STALLED.CHECK", "stalled_check", "[recovered, dead, timed_out, expired]")
        },
        bulk: None,
        events: &["stalled", "cancelled", "retried", "dead", "expired"],
    },
    /// Cancels a waiting job, or requests cancellation of an active one.
    Cancel => Control {
        verb: "CANCEL",
        scope: Scope::InHand,
        functions: &["Jobs::cancel"],
        keys: &[Base, QueueKey::Schedule, Pending, Cancelled, Meta, Events, DedupOwner, Groups, GroupsWait, GroupIndex, Fifo, Blocked, Resolutions],
        job_keys: &[JobKey::Hash, JobKey::Logs, JobKey::Lane, JobKey::Group, JobKey::Metrics, JobKey::Deps, JobKey::Dependents, JobKey::Resolution],
        publishes_cancel: true,
        publishes_outcome: true,
        durable: true,
        effect: "a waiting or blocked job → cancelled; a running one is asked to stop (cancel channel)",
        command: Command {
            args: &[arg("id", ID)],
            refuses: &[NOJOB, refuses("BADSTATE", "the job is finished (the reply names its state)")],
            ..command("EMQ.CANCEL", "cancel", "cancelled or requested")
        },
        bulk: None,
        events: &["cancelled", "cancel_requested"],
    },
    /// Stops claims on the queue.
    Pause => Control {
        verb: "PAUSE",
        scope: Scope::Queue,
        functions: &["Admin::pause"],
        keys: &[Base, Meta, Events],
        job_keys: &[],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "claims hand out nothing; running jobs run on",
        command: Command {
            flags: "write deny-oom fast",
            ..command("EMQ.PAUSE", "pause", "OK")
        },
        bulk: None,
        events: &["paused"],
    },
    /// Resumes claims on the queue.
    Resume => Control {
        verb: "RESUME",
        scope: Scope::Queue,
        functions: &["Admin::resume"],
        keys: &[Base, Meta, Events, Signal],
        job_keys: &[],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "claims hand out jobs again",
        command: Command {
            flags: "write deny-oom fast",
            ..command("EMQ.RESUME", "resume", "OK")
        },
        bulk: None,
        events: &["resumed"],
    },
    /// Deletes pending (and optionally scheduled) jobs.
    Drain => Control {
        verb: "DRAIN",
        scope: Scope::Queue,
        functions: &["Admin::drain"],
        keys: &[Base, Pending, QueueKey::Schedule, Meta, Events, DedupOwner, Groups, GroupsWait, GroupIndex, Fifo, Blocked, Resolutions],
        job_keys: &[JobKey::Hash, JobKey::Logs, JobKey::Lane, JobKey::Group, JobKey::Deps, JobKey::Dependents, JobKey::Resolution],
        publishes_cancel: false,
        publishes_outcome: true,
        durable: true,
        effect: "deletes up to n pending (and with SCHEDULED scheduled, with BLOCKED blocked) jobs per call",
        command: Command {
            options: &[flag("SCHEDULED"), flag("BLOCKED"), opt("COUNT", "n", int(1))],
            ..command("EMQ.DRAIN", "drain", "count deleted")
        },
        bulk: None,
        events: &["drained"],
    },
    /// Deletes the whole queue.
    Obliterate => Control {
        verb: "OBLITERATE",
        scope: Scope::Queue,
        functions: &["Admin::obliterate", "Admin::obliterate_with"],
        keys: ALL_KEYS,
        job_keys: &[JobKey::Hash, JobKey::Logs, JobKey::Lane, JobKey::Group, JobKey::Metrics, JobKey::Deps, JobKey::Dependents, JobKey::Resolution],
        publishes_cancel: true,
        publishes_outcome: true,
        durable: true,
        effect: "deletes a paused queue, n jobs per call, then every key; FORCE stops running jobs",
        command: Command {
            options: &[flag("FORCE"), opt("COUNT", "n", int(1))],
            refuses: &[
                refuses("NOTPAUSED", "the queue is not paused"),
                refuses("BADSTATE", "active: jobs are running and FORCE was not given"),
            ],
            flags: "write",
            ..command("EMQ.OBLITERATE", "obliterate", "job hashes and groups left; 0 when the queue is gone")
        },
        bulk: None,
        events: &[],
    },
    /// Reads the size of every state set.
    Counts => Control {
        verb: "COUNTS",
        scope: Scope::Queue,
        functions: &["Admin::counts"],
        keys: &[Base, QueueKey::Schedule, Pending, Active, Completed, Dead, Cancelled, Meta, Fifo, QueueKey::Blocked],
        job_keys: &[],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: false,
        effect: "reads the size of every state set, and whether the queue is paused",
        command: Command {
            flags: "readonly fast",
            ..command(
                "EMQ.COUNTS",
                "counts",
                "flat [scheduled n pending n active n completed n dead n cancelled n blocked n paused 0|1]",
            )
        },
        bulk: None,
        events: &[],
    },
    /// Reads or sets how many finished jobs the queue keeps, and for how long.
    Retention => Control {
        verb: "RETENTION",
        scope: Scope::Queue,
        functions: &["Admin::set_retention", "Admin::retention"],
        keys: &[Base, Meta, Events],
        job_keys: &[],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "sets how many finished jobs each set keeps and for how long (an age of 0 removes the age rule); trims nothing itself",
        command: Command {
            options: &[
                opt("COMPLETED", "n", int(0)),
                opt("COMPLETED_FOR", "ms", int(0)),
                opt("DEAD", "n", int(0)),
                opt("DEAD_FOR", "ms", int(0)),
                opt("CANCELLED", "n", int(0)),
                opt("CANCELLED_FOR", "ms", int(0)),
            ],
            flags: "write deny-oom fast",
            ..command(
                "EMQ.RETENTION",
                "retention",
                "flat [completed n completed_for ms dead n dead_for ms cancelled n cancelled_for ms], after the change",
            )
        },
        bulk: None,
        events: &["retention_set"],
    },
    /// Replaces a job's payload.
    Update => Control {
        verb: "UPDATE",
        scope: Scope::Job,
        functions: &["Jobs::update", "Jobs::update_raw"],
        keys: &[Base, Meta, Events],
        job_keys: &[JobKey::Hash],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "replaces a job's payload, whatever its state",
        command: Command {
            args: &[arg("id", ID), arg("payload", TEXT)],
            refuses: &[NOJOB],
            flags: "write deny-oom fast",
            ..command("EMQ.UPDATE", "update", "OK")
        },
        bulk: None,
        events: &["updated"],
    },
    /// Writes the holder's progress.
    Progress => Control {
        verb: "PROGRESS",
        scope: Scope::Job,
        functions: &["JobContext::progress", "Jobs::progress"],
        keys: &[Base, Meta, Events],
        job_keys: &[JobKey::Hash],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: false,
        effect: "the holder of a job writes its progress (fenced by its token)",
        command: Command {
            args: &[arg("id", ID), arg("token", int(0)), arg("value", TEXT)],
            refuses: &[NOTACTIVE],
            flags: "write deny-oom fast",
            ..command("EMQ.PROGRESS", "progress", "OK")
        },
        bulk: None,
        events: &["progress"],
    },
    /// Appends a log line.
    Log => Control {
        verb: "LOG",
        scope: Scope::Job,
        functions: &["Jobs::log", "JobContext::log"],
        keys: &[Base],
        job_keys: &[JobKey::Hash, JobKey::Logs],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: false,
        effect: "appends a line to a job's log, keeping the newest n",
        command: Command {
            args: &[arg("id", ID), arg("line", TEXT)],
            options: &[opt("KEEP", "n", int(1))],
            refuses: &[NOJOB],
            ..command("EMQ.LOG", "log", "the log's length")
        },
        bulk: None,
        events: &[],
    },
    /// Deletes a job.
    Remove => Control {
        verb: "REMOVE",
        scope: Scope::Job,
        functions: &["Jobs::remove"],
        keys: &[Base, QueueKey::Schedule, Pending, Active, Completed, Dead, Cancelled, Meta, Events, Signal, DedupOwner, Groups, GroupsWait, GroupIndex, Fifo, Blocked, Resolutions],
        job_keys: &[JobKey::Hash, JobKey::Logs, JobKey::Lane, JobKey::Group, JobKey::Deps, JobKey::Dependents, JobKey::Resolution],
        publishes_cancel: true,
        publishes_outcome: true,
        durable: true,
        effect: "deletes a job and its logs; an active one only with FORCE, which stops its handler",
        command: Command {
            args: &[arg("id", ID)],
            options: &[flag("FORCE")],
            refuses: &[refuses("BADSTATE", "active: the job is running and FORCE was not given")],
            ..command("EMQ.REMOVE", "remove", "1, or 0 when absent")
        },
        bulk: None,
        events: &["removed"],
    },
    /// Finished → pending.
    Reprocess => Control {
        verb: "REPROCESS",
        scope: Scope::Job,
        functions: &["Jobs::reprocess"],
        keys: &[Base, Seq, Pending, Completed, Dead, Cancelled, Meta, Events, Signal, Groups, GroupsWait, GroupIndex, Fifo, Deadlines, Blocked],
        job_keys: &[JobKey::Hash, JobKey::Lane, JobKey::Group],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "a completed, dead or cancelled job → pending (blocked while dependencies wait), its failures, result and reason cleared",
        command: Command {
            args: &[arg("id", ID)],
            refuses: &[NOJOB, refuses("BADSTATE", "the job is not finished (the reply names its state)")],
            ..command("EMQ.REPROCESS", "reprocess", "OK")
        },
        bulk: None,
        events: &["reprocessed", "blocked"],
    },
    /// Scheduled or active → pending now.
    Requeue => Control {
        verb: "REQUEUE",
        scope: Scope::Job,
        functions: &["Jobs::requeue", "WorkerHandle::shutdown"],
        keys: &[Base, Seq, QueueKey::Schedule, Pending, Active, Meta, Events, Signal, Groups, GroupsWait, GroupIndex, Fifo, Deadlines],
        job_keys: &[JobKey::Hash, JobKey::Lane, JobKey::Group],
        publishes_cancel: true,
        publishes_outcome: false,
        durable: true,
        effect: "a scheduled or active job → pending now; an active job's lease is voided and its handler told to stop",
        command: Command {
            args: &[arg("id", ID)],
            refuses: &[
                NOJOB,
                refuses("BADSTATE", "the job is neither scheduled nor active (the reply names its state)"),
            ],
            ..command("EMQ.REQUEUE", "requeue", "OK")
        },
        bulk: None,
        events: &["requeued"],
    },
    /// Reads a job.
    Get => Control {
        verb: "GET",
        scope: Scope::Job,
        functions: &["Jobs::get", "Jobs::list"],
        keys: &[Base],
        job_keys: &[JobKey::Hash, JobKey::Logs],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: false,
        effect: "reads a job's fields and the length of its log",
        command: Command {
            args: &[arg("id", ID)],
            flags: "readonly fast",
            ..command("EMQ.GET", "get", "flat field/value array, then id and logs; nil when absent")
        },
        bulk: None,
        events: &[],
    },
    /// Reads a job's outcome; marks an unfinished one as waited for.
    Outcome => Control {
        verb: "OUTCOME",
        scope: Scope::Job,
        functions: &[
            "Queue::outcome",
            "Queue::outcomes",
            "Enqueued::outcome",
            "Jobs::outcome_now",
        ],
        keys: &[Base, Meta],
        job_keys: &[JobKey::Hash],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: false,
        effect: "reads a finished job's outcome; an unfinished job and its queue are marked waited for",
        command: Command {
            args: &[arg("id", ID)],
            flags: "write deny-oom fast",
            ..command(
                "EMQ.OUTCOME",
                "outcome",
                "[completed, result], [dead, error, failures] or [cancelled]; [state] when unfinished; nil when absent",
            )
        },
        bulk: Some(Command {
            args: &[arg("id", ID)],
            flags: "write deny-oom",
            ..command("EMQ.OUTCOME.BULK", "outcome_bulk", "one OUTCOME reply per id, in order")
        }),
        events: &[],
    },
    /// Reads which job holds a deduplication key.
    DedupOwner => Control {
        verb: "DEDUP.OWNER",
        scope: Scope::Flow,
        functions: &["Jobs::dedup_owner"],
        keys: &[Base, Dedup, DedupOwner],
        job_keys: &[],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: false,
        effect: "reads which job holds a deduplication key (held: scored above now)",
        command: Command {
            args: &[arg("dedup", Kind::Key)],
            flags: "readonly fast",
            ..command("EMQ.DEDUP.OWNER", "dedup_owner", "the holder's id; nil when the key is not held")
        },
        bulk: None,
        events: &[],
    },
    /// Frees a held deduplication key.
    DedupRelease => Control {
        verb: "DEDUP.RELEASE",
        scope: Scope::Flow,
        functions: &["Jobs::release_dedup"],
        keys: &[Base, Dedup, DedupOwner, Meta, Events],
        job_keys: &[],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "frees a held deduplication key, whatever its mode",
        command: Command {
            args: &[arg("dedup", Kind::Key)],
            flags: "write deny-oom fast",
            ..command("EMQ.DEDUP.RELEASE", "dedup_release", "1 released, 0 when the key was not held")
        },
        bulk: None,
        events: &["dedup_released"],
    },
    /// Reads, sets or clears the queue's rate limit.
    Limit => Control {
        verb: "LIMIT",
        scope: Scope::Flow,
        functions: &["Admin::set_rate_limit", "Admin::clear_rate_limit", "Admin::rate_limit"],
        keys: &[Base, Meta, Events],
        job_keys: &[],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "at most max jobs start per window of per ms, across every worker; OFF clears it (and any hold)",
        command: Command {
            options: &[opt("MAX", "n", int(1)), opt("PER", "ms", int(1)), flag("OFF")],
            exclusive: &[&["MAX", "OFF"]],
            together: &[("PER", "MAX")],
            flags: "write deny-oom fast",
            ..command(
                "EMQ.LIMIT",
                "limit",
                "flat [max n per ms used n reset_ms n hold_ms n], after the change; 0s when no limit",
            )
        },
        bulk: None,
        events: &["limit_set"],
    },
    /// Reads, sets or clears the queue's cap on active jobs.
    Concurrency => Control {
        verb: "CONCURRENCY",
        scope: Scope::Flow,
        functions: &["Admin::set_concurrency_cap", "Admin::clear_concurrency_cap", "Admin::concurrency_cap"],
        keys: &[Base, Pending, Active, Meta, Events, Signal, Fifo],
        job_keys: &[],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "at most max jobs active at once, across every worker; OFF clears it",
        command: Command {
            options: &[opt("MAX", "n", int(1)), flag("OFF")],
            exclusive: &[&["MAX", "OFF"]],
            flags: "write deny-oom fast",
            ..command("EMQ.CONCURRENCY", "concurrency", "flat [max n active n], after the change; max 0 when no cap")
        },
        bulk: None,
        events: &["concurrency_set"],
    },
    /// Reads, sets or clears a group's cap on active jobs.
    GroupConcurrency => Control {
        verb: "GROUP.CONCURRENCY",
        scope: Scope::Group,
        functions: &["Group::set_concurrency_cap", "Group::clear_concurrency_cap", "Group::concurrency_cap"],
        keys: &[Base, Meta, Events, Signal, Groups, GroupsWait, GroupIndex, Active],
        job_keys: &[JobKey::Hash, JobKey::Lane, JobKey::Group],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "at most max jobs of the group active at once, across every worker; OFF clears it",
        command: Command {
            args: &[GROUP_ARG],
            options: &[opt("MAX", "n", int(1)), flag("OFF")],
            exclusive: &[&["MAX", "OFF"]],
            flags: "write deny-oom fast",
            ..command(
                "EMQ.GROUP.CONCURRENCY",
                "group_concurrency",
                "flat [max n active n], after the change; max 0 when no cap",
            )
        },
        bulk: None,
        events: &["group_concurrency_set"],
    },
    /// Reads, sets or clears a group's rate limit.
    GroupLimit => Control {
        verb: "GROUP.LIMIT",
        scope: Scope::Group,
        functions: &["Group::set_rate_limit", "Group::clear_rate_limit", "Group::rate_limit"],
        keys: GROUP_KEYS,
        job_keys: GROUP_JOB_KEYS,
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "at most max jobs of the group start per window of per ms, across every worker; OFF clears it",
        command: Command {
            args: &[GROUP_ARG],
            options: &[opt("MAX", "n", int(1)), opt("PER", "ms", int(1)), flag("OFF")],
            exclusive: &[&["MAX", "OFF"]],
            together: &[("PER", "MAX")],
            flags: "write deny-oom fast",
            ..command(
                "EMQ.GROUP.LIMIT",
                "group_limit",
                "flat [max n per ms used n reset_ms n], after the change; 0s when no limit",
            )
        },
        bulk: None,
        events: &["group_limit_set"],
    },
    /// Holds a group's jobs back; the rest of the queue flows.
    GroupPause => Control {
        verb: "GROUP.PAUSE",
        scope: Scope::Group,
        functions: &["Group::pause"],
        keys: GROUP_KEYS,
        job_keys: GROUP_JOB_KEYS,
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "claims take none of the group's jobs; its running jobs run on",
        command: Command {
            args: &[GROUP_ARG],
            flags: "write deny-oom fast",
            ..command("EMQ.GROUP.PAUSE", "group_pause", "OK")
        },
        bulk: None,
        events: &["group_paused"],
    },
    /// Lets a paused group's jobs be claimed again.
    GroupResume => Control {
        verb: "GROUP.RESUME",
        scope: Scope::Group,
        functions: &["Group::resume"],
        keys: GROUP_KEYS,
        job_keys: GROUP_JOB_KEYS,
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "claims take the group's jobs again",
        command: Command {
            args: &[GROUP_ARG],
            flags: "write deny-oom fast",
            ..command("EMQ.GROUP.RESUME", "group_resume", "OK")
        },
        bulk: None,
        events: &["group_resumed"],
    },
    /// Reads one group's counts and settings.
    GroupCounts => Control {
        verb: "GROUP.COUNTS",
        scope: Scope::Group,
        functions: &["Group::counts"],
        keys: &[Base, Active],
        job_keys: &[JobKey::Hash, JobKey::Lane, JobKey::Group],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: false,
        effect: "reads a group's pending and active jobs, whether it is paused, and its cap and rate limit",
        command: Command {
            args: &[GROUP_ARG],
            flags: "readonly fast",
            ..command(
                "EMQ.GROUP.COUNTS",
                "group_counts",
                "flat [pending n active n paused 0|1 concurrency n max n per n]",
            )
        },
        bulk: None,
        events: &[],
    },
    /// Lists the queue's groups by name, a page at a time.
    Groups => Control {
        verb: "GROUPS",
        scope: Scope::Group,
        functions: &["Admin::groups"],
        keys: &[Base, GroupIndex, Active],
        job_keys: &[JobKey::Hash, JobKey::Lane, JobKey::Group],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: false,
        effect: "lists the groups that have keys or jobs running, by name, with each one's counts and settings",
        command: Command {
            options: &[opt("AFTER", "g", Kind::Group), opt("COUNT", "n", int(1))],
            flags: "readonly",
            ..command(
                "EMQ.GROUPS",
                "groups",
                "array of [group, pending, active, paused, concurrency, max, per], by name, at most n (default 100) after g",
            )
        },
        bulk: None,
        events: &[],
    },

    /// A new job of a flow: blocked until its dependencies end, or waiting.
    FlowAdd => Control {
        verb: "FLOW.ADD",
        scope: Scope::Dependencies,
        functions: &["Connector::submit", "JobContext::spawn_and_wait"],
        keys: FLOW_ADD_KEYS,
        job_keys: &[JobKey::Hash, JobKey::Lane, JobKey::Group, JobKey::Deps, JobKey::Dependents, JobKey::Resolution],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "new job of a flow → blocked on its dependencies (after), else pending or scheduled; its dependents (before) listed; an id of the same flow changes nothing",
        command: Command {
            args: &[
                FLOW_ARG,
                arg("id", ID),
                REF_ARG,
                arg("payload", TEXT),
                arg("after", Kind::Edges),
                arg("before", Kind::Edges),
            ],
            options: &[
                opt("PRIORITY", "p", PRIORITY),
                ATTEMPTS,
                opt("ON_FAILURE", "fail|ignore|cancel", ON_FAILURE),
                opt("RUN_AT", "ms", Kind::RunAt),
                GROUP,
                TRACE,
                TIME_LIMIT,
                START_BY,
                START_WITHIN,
                flag("LIFO"),
            ],
            exclusive: &[START_BY_OR_WITHIN],
            refuses: &[
                FLOW_CONFLICT,
                refuses("BADARG start_by", "START_BY is not later than now (server clock), nor than a future RUN_AT"),
                refuses("BADARG start_within", "now (server clock) + START_WITHIN is not later than a future RUN_AT"),
            ],
            ..command("EMQ.FLOW.ADD", "flow_add", "[id, 1] created, [id, 0] when the id exists in the same flow")
        },
        bulk: Some(Command {
            head: &[FLOW_ARG],
            args: &[
                arg("id", ID),
                REF_ARG,
                arg("payload", TEXT),
                arg("after", Kind::Edges),
                arg("before", Kind::Edges),
                arg("priority", PRIORITY),
                arg("attempts", int(1)),
                arg("on_failure", ON_FAILURE),
            ],
            refuses: &[FLOW_CONFLICT],
            ..command("EMQ.FLOW.ADD.BULK", "flow_add_bulk", ENQUEUED_BULK)
        }),
        events: &["blocked", "enqueued", "scheduled"],
    },
    /// The job in hand waits for jobs it names: → blocked, or ready.
    FlowWait => Control {
        verb: "FLOW.WAIT",
        scope: Scope::Dependencies,
        functions: &["JobContext::spawn_and_wait"],
        keys: &[Base, Pending, Active, Blocked, Meta, Events, Signal, Groups, GroupsWait, GroupIndex, Fifo, Deadlines],
        job_keys: &[JobKey::Hash, JobKey::Lane, JobKey::Group, JobKey::Deps],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "the job in hand (fenced by its token) waits for the named jobs: each new edge added wait; with deps_left above 0 it leaves active as DELAY does → blocked, else nothing changes",
        command: Command {
            head: &[arg("id", ID), arg("token", int(0))],
            args: &[arg("queue", Kind::Queue), arg("dependency", ID)],
            groups: Some("edges"),
            refuses: &[
                NOTACTIVE,
                refuses("BADARG edges", "the new edges would take the job past FLOW_EDGES_MAX dependencies"),
            ],
            ..command("EMQ.FLOW.WAIT", "flow_wait", "blocked, or ready: every named edge already resolved")
        },
        bulk: None,
        events: &["blocked"],
    },
    /// Applies dependencies' resolutions to their dependents' edges.
    FlowResolve => Control {
        verb: "FLOW.RESOLVE",
        scope: Scope::Dependencies,
        functions: &["Connector::submit", "Queue::relay", "Worker::start"],
        keys: &[Base, Seq, Pending, QueueKey::Schedule, Blocked, Dead, Cancelled, Meta, Events, Signal, DedupOwner, Groups, GroupsWait, GroupIndex, Fifo, Deadlines, Resolutions],
        job_keys: &[JobKey::Hash, JobKey::Logs, JobKey::Lane, JobKey::Group, JobKey::Metrics, JobKey::Deps, JobKey::Dependents, JobKey::Resolution],
        publishes_cancel: false,
        publishes_outcome: true,
        durable: true,
        effect: "on the dependents' queue, each edge still wait takes its dependency's resolution (deps_left − 1); a blocked dependent is unblocked at its last edge (→ pending or scheduled), or decided by its failure policy (→ dead or cancelled)",
        command: Command {
            args: &[
                arg("queue", Kind::Queue),
                arg("dependency", ID),
                arg("resolution", Kind::Resolution),
                arg("dependent", ID),
            ],
            groups: Some("edges"),
            ..command(
                "EMQ.FLOW.RESOLVE",
                "flow_resolve",
                "one word per group: resolved, unblocked, dead, cancelled, relay_dead, relay_cancelled, already or gone",
            )
        },
        bulk: None,
        events: &["dependency_resolved", "unblocked", "dead", "cancelled"],
    },
    /// Reads a job's dependencies, a page at a time.
    FlowDeps => Control {
        verb: "FLOW.DEPS",
        scope: Scope::Dependencies,
        functions: &["JobContext::dependencies"],
        keys: &[Base],
        job_keys: &[JobKey::Hash, JobKey::Deps],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: false,
        effect: "reads a job's dependencies and each edge's value (wait, or the resolution that resolved it), HSCAN's page",
        command: Command {
            args: &[arg("id", ID)],
            options: FLOW_PAGE,
            refuses: &[NOJOB],
            flags: "readonly",
            ..command("EMQ.FLOW.DEPS", "flow_deps", "[next_cursor, [queue, dependency, value, …]]")
        },
        bulk: None,
        events: &[],
    },
    /// Reads a job's dependents, a page at a time.
    FlowDependents => Control {
        verb: "FLOW.DEPENDENTS",
        scope: Scope::Dependencies,
        functions: &["Jobs::dependents"],
        keys: &[Base],
        job_keys: &[JobKey::Hash, JobKey::Dependents],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: false,
        effect: "reads a job's dependents and whether each was told, HSCAN's page",
        command: Command {
            args: &[arg("id", ID)],
            options: FLOW_PAGE,
            refuses: &[refuses("NOJOB", "neither the job nor its dependents exist")],
            flags: "readonly",
            ..command("EMQ.FLOW.DEPENDENTS", "flow_dependents", "[next_cursor, [queue, dependent, told 0|1, …]]")
        },
        bulk: None,
        events: &[],
    },
    /// Reads the outbox: the resolutions still to deliver.
    FlowOutbox => Control {
        verb: "FLOW.OUTBOX",
        scope: Scope::Dependencies,
        functions: &["Queue::relay", "Worker::start"],
        keys: &[Base, Resolutions],
        job_keys: &[JobKey::Dependents, JobKey::Resolution],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: false,
        effect: "reads the outbox: resolutions oldest first (with JOBS, those of the ids named, in their order), each with its dependents not told, at most n dependents in all",
        command: Command {
            options: &[opt("COUNT", "n", int(1)), opt("JOBS", "id [id …]", Kind::Ids)],
            flags: "readonly",
            ..command(
                "EMQ.FLOW.OUTBOX",
                "flow_outbox",
                "array of [id, text, [queue, dependent, queue, dependent, …]]",
            )
        },
        bulk: None,
        events: &[],
    },
    /// Acknowledges delivered edges of the outbox.
    FlowAck => Control {
        verb: "FLOW.ACK",
        scope: Scope::Dependencies,
        functions: &["Queue::relay", "Worker::start"],
        keys: &[Base, Resolutions],
        job_keys: &[JobKey::Hash, JobKey::Dependents, JobKey::Resolution],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: false,
        effect: "marks each named dependent told (0 → 1), lowering its resolution's left; at 0 deletes the resolution, its outbox member, and the dependents hash when the job is gone or has no dependents",
        command: Command {
            args: &[arg("id", ID), arg("queue", Kind::Queue), arg("dependent", ID)],
            groups: Some("edges"),
            flags: "write",
            ..command("EMQ.FLOW.ACK", "flow_ack", "the number of fields changed")
        },
        bulk: None,
        events: &[],
    },
    /// Takes a completed resolution's dependents in its own queue, past
    /// the completion's budget.
    FlowSettle => Control {
        verb: "FLOW.SETTLE",
        scope: Scope::Dependencies,
        functions: &["Queue::relay", "Worker::start"],
        keys: &[Base, Seq, Pending, QueueKey::Schedule, Blocked, Meta, Events, Signal, Groups, GroupsWait, GroupIndex, Fifo, Deadlines, Resolutions],
        job_keys: &[JobKey::Hash, JobKey::Lane, JobKey::Group, JobKey::Deps, JobKey::Dependents, JobKey::Resolution],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "on a dependency's queue, for a job in the outbox with a completed resolution: each of its dependents in this queue not told yet, at most n, takes the resolution as the completion's own did (deps_left − 1, a blocked dependent unblocked at its last edge) and is told; at left 0 the resolution is acknowledged whole",
        command: Command {
            args: &[arg("id", ID)],
            options: &[opt("COUNT", "n", int(1))],
            ..command(
                "EMQ.FLOW.SETTLE",
                "flow_settle",
                "[told, resolved, unblocked]: the dependents told, those whose edge took the resolution, those unblocked",
            )
        },
        bulk: None,
        events: &["dependency_resolved", "unblocked"],
    },
    /// Links dependents to a job of this queue, or tells them again.
    FlowLink => Control {
        verb: "FLOW.LINK",
        scope: Scope::Dependencies,
        functions: &["Connector::submit", "Queue::checkup", "Worker::start"],
        keys: &[Base, Meta, Events, Resolutions],
        job_keys: &[JobKey::Hash, JobKey::Dependents, JobKey::Resolution],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: true,
        effect: "on a dependency's queue, each named dependent's field of its dependents hash := 0 (a new one raises dependents, event linked); a job in the outbox raises its resolution's left, a decided one not in it writes its resolution; answers whether the caller has a resolution to deliver",
        command: Command {
            head: &[arg("id", ID)],
            args: &[arg("queue", Kind::Queue), arg("dependent", ID)],
            groups: Some("edges"),
            refuses: &[refuses("NOJOB", "neither the job nor its resolution exists; nothing is written")],
            ..command("EMQ.FLOW.LINK", "flow_link", "[waiting] while the job is undecided, [decided, text] otherwise")
        },
        bulk: None,
        events: &["linked"],
    },
    /// Lists the blocked jobs due for a check-up, and scores them again.
    FlowCheckup => Control {
        verb: "FLOW.CHECKUP",
        scope: Scope::Dependencies,
        functions: &["Queue::checkup", "Worker::start"],
        keys: &[Base, Blocked],
        job_keys: &[JobKey::Deps],
        publishes_cancel: false,
        publishes_outcome: false,
        durable: false,
        effect: "lists the blocked jobs whose check-up is due, lowest score first, each with its wait edges, while the edges listed stay within n (the first whatever its count); scores each one listed now + AGAIN",
        command: Command {
            options: &[opt("COUNT", "n", int(1)), opt("AGAIN", "ms", int(1))],
            ..command("EMQ.FLOW.CHECKUP", "flow_checkup", "array of [id, [queue, dependency, queue, dependency, …]]")
        },
        bulk: None,
        events: &[],
    },
}

impl Transition {
    /// The verb as written in `docs/protocol.md` (`STALLED.CHECK`,
    /// `COMPLETE`, …); the native command is `EMQ.` followed by it.
    pub fn verb(self) -> &'static str {
        self.control().verb
    }

    /// The control's name: its single form's script (`stalled_check`),
    /// what `emq controls` lists.
    pub fn name(self) -> &'static str {
        self.control().command.script
    }

    /// The native command of the single form, e.g. `EMQ.CLAIM`.
    pub fn native(self) -> &'static str {
        self.control().command.native
    }

    /// The command of `form`; `None` for a bulk form the control lacks.
    pub fn command(self, form: Form) -> Option<&'static Command> {
        self.control().form(form)
    }

    /// The control named `name`: its name (`stalled_check`), its verb
    /// (`STALLED.CHECK`) or its native command (`EMQ.STALLED.CHECK`), in
    /// any case, `-` taken for `_`.
    pub fn named(name: &str) -> Option<Transition> {
        let wanted = name.trim().to_ascii_lowercase().replace('-', "_");
        Transition::ALL.iter().copied().find(|t| {
            let verb = t.verb().to_ascii_lowercase();
            wanted == t.name()
                || wanted == verb
                || wanted == t.native().to_ascii_lowercase()
                || wanted.replace('.', "_") == t.name()
        })
    }

    /// The command whose native name is `native` (`EMQ.ENQUEUE.BULK`), with
    /// its control and form.
    pub fn by_native(native: &str) -> Option<(Transition, Form, &'static Command)> {
        Transition::ALL.iter().find_map(|t| {
            t.control()
                .commands()
                .find(|(_, c)| c.native.eq_ignore_ascii_case(native))
                .map(|(form, command)| (*t, form, command))
        })
    }
}

impl fmt::Display for Transition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.verb().to_ascii_lowercase())
    }
}

#[cfg(test)]
mod tests;
