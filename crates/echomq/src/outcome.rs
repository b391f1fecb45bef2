//! `OUTCOME`: a job's outcome as the server has it now, the building block
//! of outcome waits (docs/protocol.md, "Outcome waits"). The waiting API
//! comes later; [`Jobs::outcome_now`] is the one call under it.

use crate::error::{Error, Result};
use crate::jobs::Jobs;
use crate::transport::decode;
use crate::transport::dispatch::Call;
use echomq_protocol::{JobId, JobState, Transition};
use redis::Value;

/// A job's outcome as `OUTCOME` answered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutcomeNow {
    /// Completed: its stored result, raw (empty when it stored none).
    Completed {
        /// The result bytes (the Rust client writes JSON).
        result: Vec<u8>,
    },
    /// Dead: its last error and the failures it took.
    Dead {
        /// The last error's text.
        error: String,
        /// Its failures.
        failures: u64,
    },
    /// Cancelled.
    Cancelled,
    /// Not finished yet (scheduled, pending or active); the call marked it
    /// waited for, so its outcome will be published.
    Unfinished {
        /// The state it is in.
        state: JobState,
    },
    /// No such job: removed, drained, obliterated, trimmed by retention, or
    /// never enqueued.
    Absent,
}

impl<T> Jobs<T> {
    /// Reads a job's outcome now: a finished job's outcome, writing nothing;
    /// an unfinished job (and its queue) is marked waited for. Not yet the
    /// waiting API: hidden until it lands.
    #[doc(hidden)]
    pub async fn outcome_now(&self, id: &JobId) -> Result<OutcomeNow> {
        let call = Call::new(Transition::Outcome, Some(id)).arg(id.as_str());
        outcome_from(self.queue.call(call).await?)
    }
}

/// Decodes `OUTCOME`'s reply: nil, or an array of the exact length its
/// first word says.
fn outcome_from(reply: Value) -> Result<OutcomeNow> {
    const T: Transition = Transition::Outcome;
    if reply == Value::Nil {
        return Ok(OutcomeNow::Absent);
    }
    let detail = format!("{reply:?}");
    let short = || Error::UnexpectedReply {
        transition: T,
        detail: detail.clone(),
    };
    let mut items = decode::array(T, reply)?.into_iter();
    let state = decode::text(T, items.next().ok_or_else(short)?)?;
    let outcome = match state.as_str() {
        "completed" => OutcomeNow::Completed {
            result: decode::bytes(T, items.next().ok_or_else(short)?)?,
        },
        "dead" => OutcomeNow::Dead {
            error: decode::text(T, items.next().ok_or_else(short)?)?,
            failures: decode::int(T, items.next().ok_or_else(short)?)?,
        },
        "cancelled" => OutcomeNow::Cancelled,
        other => OutcomeNow::Unfinished {
            state: other.parse().map_err(|_| short())?,
        },
    };
    if items.next().is_some() {
        return Err(short());
    }
    Ok(outcome)
}
