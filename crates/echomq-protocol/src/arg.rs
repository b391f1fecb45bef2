//! Argument rules every wire applies before reading a key.

/// Largest integer argument: 2^53 − 1, exact in a Lua double.
pub const MAX_INT: u64 = (1 << 53) - 1;
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
/// Default approximate length of the events stream.
pub const DEFAULT_EVENTS_MAX: u64 = 10_000;
/// Most jobs `CLAIM` promotes from the schedule set per call.
pub const PROMOTE_PER_CLAIM: u64 = 1000;
/// Most finished jobs one transition trims (retention is amortised).
pub const TRIM_PER_TRANSITION: u64 = 100;

/// The pending-set score of a job: priority·2^44 + (seq mod 2^44), an
/// integer below 2^52.
///
/// ```
/// use echomq_protocol::arg::pending_score;
/// assert!(pending_score(0, 5) < pending_score(1, 1));
/// assert!(pending_score(255, u64::MAX) < 1 << 52);
/// ```
pub fn pending_score(priority: u8, seq: u64) -> u64 {
    (u64::from(priority) << 44) + (seq % (1 << 44))
}
