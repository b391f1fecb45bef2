//! Argument rules every wire applies before reading a key.

/// Largest integer argument: 2^53 − 1, exact in a Lua double.
pub const MAX_INT: u64 = (1 << 53) - 1;
/// Digits of [`MAX_INT`]: a longer integer argument is refused unread.
pub const MAX_INT_DIGITS: u64 = digits(MAX_INT);
/// Largest priority (0 is most urgent).
pub const MAX_PRIORITY: u8 = 255;
/// Default attempts of a new job.
pub const DEFAULT_MAX_ATTEMPTS: u64 = 3;
/// Default number of completed jobs kept.
pub const DEFAULT_KEEP_COMPLETED: u64 = 1000;
/// Default number of dead jobs kept.
pub const DEFAULT_KEEP_DEAD: u64 = 10_000;
/// Default number of cancelled jobs kept.
pub const DEFAULT_KEEP_CANCELLED: u64 = 10_000;
/// Default approximate cap of the events stream, in jobs' events.
pub const DEFAULT_EVENTS_MAX: u64 = 10_000;
/// Most jobs `CLAIM` promotes from the schedule set per call.
pub const PROMOTE_PER_CLAIM: u64 = 1000;
/// A claim's token is its clock (ms) times this plus its count mod this
/// (the protocol's Fencing section): tokens of claims a ms apart never
/// meet, whatever a failover lost, nor do those of fewer claims than this
/// within one ms.
pub const TOKENS_PER_MS: u64 = 1000;
/// Most finished jobs one transition trims (retention is amortised).
pub const TRIM_PER_TRANSITION: u64 = 100;
/// Most jobs one entry of the events stream carries: a call writing the
/// same event for more jobs in a row starts another entry.
pub const EVENT_JOBS: u64 = 100;
/// Default `LIMIT` of `PROMOTE`: due jobs moved per call.
pub const DEFAULT_PROMOTE_LIMIT: u64 = 1000;
/// The `COUNT` of each `ZSCAN` page with which REPEAT.ADD finds a key's
/// occurrences on the schedule set.
pub const REPEAT_SCAN_COUNT: u64 = 1000;
/// Default `LIMIT` of `STALLED.CHECK`: expired leases taken back per call.
pub const DEFAULT_STALLED_LIMIT: u64 = 1000;
/// Default `COUNT` of `DRAIN` and `OBLITERATE`: jobs deleted per call.
pub const DEFAULT_DELETE_COUNT: u64 = 1000;
/// Default `KEEP` of `LOG`: the newest lines a job's log keeps.
pub const DEFAULT_LOG_KEEP: u64 = 1000;
/// Width of a priority band of the pending score: 2^44.
pub const PENDING_BAND: u64 = 1 << 44;
/// Half a priority band, 2^43: a band's LIFO jobs score below
/// `priority·2^44 + 2^43`, its other jobs from there up (docs/protocol.md,
/// "LIFO").
pub const LIFO_HALF: u64 = 1 << 43;
/// How much lower `pending` scores a job with a group than its lane does:
/// 2^52, so the members scored ≥ 0 are the ungrouped jobs.
pub const GROUPED_OFFSET: u64 = 1 << 52;
/// Groups `GROUPS` lists per call unless `COUNT` says otherwise.
pub const DEFAULT_GROUPS_PAGE: u64 = 100;
/// Hex digits of a traceparent's trace id.
pub const TRACE_ID_HEX: u64 = 32;
/// Hex digits of a traceparent's parent id.
pub const PARENT_ID_HEX: u64 = 16;
/// Leases from which a claim keeps the active set a skiplist, not a
/// listpack that every lease's `ZADD` and `ZREM` scans (an encoding of
/// the server's: the keyspace is the same either way).
pub const SKIPLIST_LEASES: u64 = 32;

/// Ms after which a blocked job is due for a check-up, and between two
/// check-ups (docs/protocol.md, "The check-up").
pub const FLOW_CHECKUP_MS: u64 = 300_000;
/// Most pairs of one `after` or `before` list, and most dependencies of
/// one job (docs/protocol.md, "Flow commands").
pub const FLOW_EDGES_MAX: u64 = 10_000;
/// Most jobs of one flow a client submits (docs/protocol.md, "Submitting
/// a flow").
pub const FLOW_JOBS_MAX: u64 = 100_000;
/// Most edges of dependents in its own queue one `COMPLETE` (or bulk
/// form) resolves in its own call; the rest go through the outbox
/// (docs/protocol.md, "Deciding a job that has dependents").
pub const FLOW_INLINE_EDGES: u64 = 1000;
/// Fewest fields `FLOW.SETTLE` asks each `HSCAN` page for, however little
/// of its budget is left (docs/protocol.md, "Deciding a job that has
/// dependents").
pub const FLOW_SETTLE_PAGE_MIN: u64 = 100;
/// Most digits of the resolution's `cursor` `FLOW.SETTLE` starts from (any
/// number of 19 digits is an `HSCAN` cursor); another value reads as 0.
pub const SCAN_CURSOR_DIGITS: u64 = 19;
/// Most bytes of a result a resolution copies; a larger one is recorded
/// by its size only (docs/protocol.md, "The resolution text").
pub const FLOW_RESULT_MAX: u64 = 65_536;
/// Most bytes of an error a `dead` resolution copies.
pub const FLOW_ERROR_MAX: u64 = 4096;
/// Most bytes of a flow id (the job-id rule otherwise).
pub const MAX_FLOW_ID: usize = 127;
/// Most bytes of a ref (the job-id rule otherwise).
pub const MAX_REF: usize = 128;
/// Default `COUNT` of `FLOW.DEPS` and `FLOW.DEPENDENTS`: the `HSCAN` hint.
pub const DEFAULT_FLOW_PAGE: u64 = 100;

/// Milliseconds in a minute: a time limit shown in minutes
/// ([`crate::time_limit::shown`], the scripts' `fail_at_limit`).
pub const MS_PER_MINUTE: u64 = 60_000;
/// Milliseconds in an hour: a time limit shown in hours.
pub const MS_PER_HOUR: u64 = 3_600_000;

/// Dependents `FLOW.OUTBOX` lists per call unless `COUNT` says otherwise.
pub const DEFAULT_OUTBOX_COUNT: u64 = 1000;
/// Edges `FLOW.CHECKUP` lists per call unless `COUNT` says otherwise.
pub const DEFAULT_CHECKUP_COUNT: u64 = 1000;

/// The constants every wire shares, by the name the Lua scripts know them
/// by: wire 4's scripts get them as a generated prelude (`local NAME =
/// value`), never as numbers copied by hand; the module uses the Rust
/// constants themselves.
pub const SHARED: &[(&str, u64)] = &[
    ("MAX_INT", MAX_INT),
    ("MAX_INT_DIGITS", MAX_INT_DIGITS),
    ("MAX_PRIORITY", MAX_PRIORITY as u64),
    ("MAX_JOB_ID", crate::name::MAX_JOB_ID as u64),
    ("MAX_QUEUE_NAME", crate::name::MAX_QUEUE_NAME as u64),
    ("PENDING_BAND", PENDING_BAND),
    ("GROUPED_OFFSET", GROUPED_OFFSET),
    ("LIFO_HALF", LIFO_HALF),
    ("MAX_GROUP", crate::name::MAX_GROUP as u64),
    ("MAX_REPEAT_KEY", crate::name::MAX_REPEAT_KEY as u64),
    ("DEFAULT_GROUPS_PAGE", DEFAULT_GROUPS_PAGE),
    ("TRACE_ID_HEX", TRACE_ID_HEX),
    ("PARENT_ID_HEX", PARENT_ID_HEX),
    ("SKIPLIST_LEASES", SKIPLIST_LEASES),
    ("DEFAULT_MAX_ATTEMPTS", DEFAULT_MAX_ATTEMPTS),
    ("DEFAULT_KEEP_COMPLETED", DEFAULT_KEEP_COMPLETED),
    ("DEFAULT_KEEP_DEAD", DEFAULT_KEEP_DEAD),
    ("DEFAULT_KEEP_CANCELLED", DEFAULT_KEEP_CANCELLED),
    ("DEFAULT_EVENTS_MAX", DEFAULT_EVENTS_MAX),
    ("PROMOTE_PER_CLAIM", PROMOTE_PER_CLAIM),
    ("TOKENS_PER_MS", TOKENS_PER_MS),
    ("TRIM_PER_TRANSITION", TRIM_PER_TRANSITION),
    ("EVENT_JOBS", EVENT_JOBS),
    ("DEFAULT_PROMOTE_LIMIT", DEFAULT_PROMOTE_LIMIT),
    ("REPEAT_SCAN_COUNT", REPEAT_SCAN_COUNT),
    ("DEFAULT_STALLED_LIMIT", DEFAULT_STALLED_LIMIT),
    ("DEFAULT_DELETE_COUNT", DEFAULT_DELETE_COUNT),
    ("DEFAULT_LOG_KEEP", DEFAULT_LOG_KEEP),
    ("DEFAULT_METRICS_FINE_MS", crate::metrics::DEFAULT_FINE_MS),
    (
        "DEFAULT_METRICS_FINE_KEEP",
        crate::metrics::DEFAULT_FINE_KEEP,
    ),
    (
        "DEFAULT_METRICS_COARSE_MS",
        crate::metrics::DEFAULT_COARSE_MS,
    ),
    (
        "DEFAULT_METRICS_COARSE_KEEP",
        crate::metrics::DEFAULT_COARSE_KEEP,
    ),
    ("MAX_METRICS_KEEP", crate::metrics::MAX_KEEP),
    ("MS_PER_MINUTE", MS_PER_MINUTE),
    ("MS_PER_HOUR", MS_PER_HOUR),
    ("FLOW_CHECKUP_MS", FLOW_CHECKUP_MS),
    ("FLOW_EDGES_MAX", FLOW_EDGES_MAX),
    ("MAX_FLOW_ID", MAX_FLOW_ID as u64),
    ("MAX_REF", MAX_REF as u64),
    ("DEFAULT_FLOW_PAGE", DEFAULT_FLOW_PAGE),
    ("FLOW_INLINE_EDGES", FLOW_INLINE_EDGES),
    ("FLOW_SETTLE_PAGE_MIN", FLOW_SETTLE_PAGE_MIN),
    ("SCAN_CURSOR_DIGITS", SCAN_CURSOR_DIGITS),
    ("FLOW_RESULT_MAX", FLOW_RESULT_MAX),
    ("FLOW_ERROR_MAX", FLOW_ERROR_MAX),
    ("DEFAULT_OUTBOX_COUNT", DEFAULT_OUTBOX_COUNT),
    ("DEFAULT_CHECKUP_COUNT", DEFAULT_CHECKUP_COUNT),
];

/// The pending-set score of a job that is not LIFO: priority·2^44 + 2^43
/// + (seq mod 2^43), an integer below 2^52 (the upper half of its band).
///
/// ```
/// use echomq_protocol::arg::pending_score;
/// assert!(pending_score(0, 5) < pending_score(1, 1));
/// assert!(pending_score(255, u64::MAX) < 1 << 52);
/// ```
pub fn pending_score(priority: u8, seq: u64) -> u64 {
    u64::from(priority) * PENDING_BAND + LIFO_HALF + seq % LIFO_HALF
}

/// The pending-set score of a LIFO job: priority·2^44 + 2^43 − 1 −
/// (lifo_seq mod 2^43), below every other job of its band, the newest
/// lowest.
///
/// ```
/// use echomq_protocol::arg::{lifo_score, pending_score};
/// assert!(lifo_score(0, 2) < lifo_score(0, 1));
/// assert!(lifo_score(0, 1) < pending_score(0, 1));
/// assert!(pending_score(0, u64::MAX) < lifo_score(1, u64::MAX));
/// ```
pub fn lifo_score(priority: u8, lifo_seq: u64) -> u64 {
    u64::from(priority) * PENDING_BAND + LIFO_HALF - 1 - lifo_seq % LIFO_HALF
}

/// A claim's fencing token from the job's `claims` (its count, this claim
/// included) and `claimed_at` (its clock, ms): `claimed_at` ×
/// [`TOKENS_PER_MS`] + `claims` mod [`TOKENS_PER_MS`] (the protocol's
/// Fencing section), saturating; what the scripts' `job_token` computes.
///
/// ```
/// use echomq_protocol::arg::job_token;
/// assert_eq!(job_token(1, 1_796_000_000_000), 1_796_000_000_000_001);
/// assert_eq!(job_token(1000, 5), 5000);
/// ```
pub fn job_token(claims: i64, claimed_at: i64) -> i64 {
    let per_ms = TOKENS_PER_MS as i64;
    claimed_at
        .saturating_mul(per_ms)
        .saturating_add(claims.rem_euclid(per_ms))
}

/// The number of decimal digits of `n`.
const fn digits(mut n: u64) -> u64 {
    let mut count = 1;
    while n >= 10 {
        n /= 10;
        count += 1;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_int_has_sixteen_digits() {
        assert_eq!(MAX_INT_DIGITS, 16);
        assert_eq!(MAX_INT_DIGITS as usize, MAX_INT.to_string().len());
    }

    #[test]
    fn shared_constants_have_one_value_per_name() {
        let mut names: Vec<&str> = SHARED.iter().map(|(name, _)| *name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SHARED.len());
        assert!(SHARED.contains(&("PENDING_BAND", 17_592_186_044_416)));
    }
}
