//! What one claim answered: the jobs handed out, and whether flow control
//! (`flow.rs`) withheld pending ones. Here, beside the job types, rather
//! than in `flow.rs`: the queue decodes every claim with it, and `flow.rs`
//! adds verbs to [`Admin`](crate::Admin), which is built on the queue, so
//! the two would import each other.

use crate::error::Result;
use crate::job::Claimed;
use crate::transport::decode;
use echomq_protocol::Transition;
use redis::Value;
use std::time::Duration;

/// Why a claim handed out fewer jobs than it asked for while more were
/// pending: flow control withheld them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Withheld {
    /// The rate limit's window reopens, or the queue's hold ends, after
    /// this long: claim again then (sooner hands out nothing).
    For(Duration),
    /// The cap on active jobs is full: a job leaving `active` signals the
    /// queue (as an enqueue does), so wait for that wake-up.
    CapFull,
}

/// What one claim answered ([`Queue::claim_with_wait`]): the jobs, and
/// whether flow control withheld pending ones.
///
/// [`Queue::claim_with_wait`]: crate::Queue::claim_with_wait
#[derive(Debug, Clone)]
pub struct ClaimBatch<T> {
    /// The jobs claimed, in order.
    pub jobs: Vec<Claimed<T>>,
    /// Set when flow control withheld pending jobs from this claim.
    pub withheld: Option<Withheld>,
}

impl<T> ClaimBatch<T> {
    /// A claim's reply: the job entries, then `wait_ms` when flow control
    /// withheld pending jobs.
    pub(crate) fn decode(reply: Value, entry: fn(Value) -> Result<Claimed<T>>) -> Result<Self> {
        let mut items = decode::array(Transition::Claim, reply)?;
        let withheld = match items.last() {
            Some(Value::Int(0)) => Some(Withheld::CapFull),
            Some(Value::Int(ms)) if *ms > 0 => {
                Some(Withheld::For(Duration::from_millis(*ms as u64)))
            }
            Some(Value::Int(ms)) => {
                return Err(decode::unexpected(Transition::Claim, &Value::Int(*ms)));
            }
            _ => None,
        };
        if withheld.is_some() {
            items.pop();
        }
        Ok(Self {
            jobs: items.into_iter().map(entry).collect::<Result<_>>()?,
            withheld,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(_: Value) -> Result<Claimed<()>> {
        Ok(Claimed {
            id: echomq_protocol::JobId::new("j").unwrap(),
            token: 1,
            failures: 0,
            max_attempts: 3,
            payload: Vec::new(),
            traceparent: None,
            time_limit: None,
            _type: std::marker::PhantomData,
        })
    }

    #[test]
    fn a_trailing_integer_is_the_wait_and_not_a_job() {
        let job = Value::Array(vec![]);
        let batch =
            ClaimBatch::decode(Value::Array(vec![job.clone(), Value::Int(250)]), entry).unwrap();
        assert_eq!(
            (batch.jobs.len(), batch.withheld),
            (1, Some(Withheld::For(Duration::from_millis(250))))
        );
        let batch = ClaimBatch::decode(Value::Array(vec![Value::Int(0)]), entry).unwrap();
        assert_eq!(
            (batch.jobs.len(), batch.withheld),
            (0, Some(Withheld::CapFull))
        );
        let batch = ClaimBatch::decode(Value::Array(vec![job]), entry).unwrap();
        assert_eq!((batch.jobs.len(), batch.withheld), (1, None));
        assert!(ClaimBatch::decode(Value::Array(vec![Value::Int(-1)]), entry).is_err());
    }
}
