//! Field names of the job hash, in the order `GET` returns them.

/// `scheduled`, `pending`, …: the job's [`crate::JobState`].
pub const STATE: &str = "state";
/// The opaque payload bytes (the Rust client writes JSON).
pub const PAYLOAD: &str = "payload";
/// 0–255, 0 is most urgent.
pub const PRIORITY: &str = "priority";
/// Attempts allowed before the job is dead-lettered (default 3).
pub const MAX_ATTEMPTS: &str = "max_attempts";
/// Times claimed; its current value is the fencing token.
pub const CLAIMS: &str = "claims";
/// Failed attempts so far.
pub const FAILURES: &str = "failures";
/// Times the stalled sweep took the job back.
pub const STALLS: &str = "stalls";
/// When the job was created (ms, server clock).
pub const CREATED_AT: &str = "created_at";
/// When the job became (or becomes) runnable (ms).
pub const RUN_AT: &str = "run_at";
/// When the job was last claimed (ms, server clock).
pub const CLAIMED_AT: &str = "claimed_at";
/// When the job finished (ms, server clock).
pub const FINISHED_AT: &str = "finished_at";
/// The worker that last claimed the job.
pub const WORKER: &str = "worker";
/// The holder's last progress value.
pub const PROGRESS: &str = "progress";
/// The handler's result (JSON from the Rust client).
pub const RESULT: &str = "result";
/// The last error message.
pub const ERROR: &str = "error";
/// 1 when a cancellation was requested while the job was active.
pub const CANCEL: &str = "cancel";
/// The repeat key that produced the job.
pub const REPEAT: &str = "repeat";
/// The deduplication key the job was enqueued with (only when it has one).
pub const DEDUP: &str = "dedup";
/// `simple`, `throttle` or `debounce`: the job's [`crate::DedupMode`].
pub const DEDUP_MODE: &str = "dedup_mode";
/// The group the job belongs to (only when it has one).
pub const GROUP: &str = "group";
/// The W3C trace context of the enqueue (only for a job enqueued with one).
pub const TRACEPARENT: &str = "traceparent";
/// Ms a run may last from its claim (only for a job enqueued with one).
pub const TIME_LIMIT: &str = "time_limit";
/// Ms (unix, server clock) after which the job is never claimed (only for
/// a job enqueued with a start-by deadline).
pub const START_BY: &str = "start_by";

/// `expired` for a job a claim or the sweep cancelled because its
/// `start_by` passed (only then).
pub const REASON: &str = "reason";
/// `1` for a job enqueued with `LIFO` (only then).
pub const LIFO: &str = "lifo";

/// The flow id, for a job `FLOW.ADD` created (docs/protocol.md, "Flows").
pub const FLOW: &str = "flow";
/// The job's ref in its flow.
pub const REF: &str = "ref";
/// `ignore` or `cancel`: the job's failure policy (absent is `fail`).
pub const ON_FAILURE: &str = "on_failure";
/// The number of the job's dependencies (only when above 0).
pub const DEPS: &str = "deps";
/// The number of its dependencies still unresolved (with `deps`).
pub const DEPS_LEFT: &str = "deps_left";
/// The number of the job's dependents (only when above 0).
pub const DEPENDENTS: &str = "dependents";

/// Every stored field, in `GET` order. `GET` appends `id` and `logs`.
pub const ALL: [&str; 31] = [
    STATE,
    PAYLOAD,
    PRIORITY,
    MAX_ATTEMPTS,
    CLAIMS,
    FAILURES,
    STALLS,
    CREATED_AT,
    RUN_AT,
    CLAIMED_AT,
    FINISHED_AT,
    WORKER,
    PROGRESS,
    RESULT,
    ERROR,
    CANCEL,
    REPEAT,
    DEDUP,
    DEDUP_MODE,
    GROUP,
    TRACEPARENT,
    TIME_LIMIT,
    START_BY,
    REASON,
    LIFO,
    FLOW,
    REF,
    ON_FAILURE,
    DEPS,
    DEPS_LEFT,
    DEPENDENTS,
];
