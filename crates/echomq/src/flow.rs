//! Flow control over a whole queue: the rate limit (at most `max` jobs
//! start per window of `per`, across every worker) and the cap on active
//! jobs (at most `max` at once, across every worker), both enforced inside
//! `CLAIM` on the server clock. What a claim says when they withheld jobs
//! ([`Withheld`](crate::Withheld)) is in `claim_batch.rs`, beside the job
//! types. `docs/flow-control.md` has the semantics.

use crate::admin::Admin;
use crate::error::{Error, Result};
use crate::transport::decode;
use crate::transport::dispatch::Call;
use echomq_protocol::Transition;
use redis::Value;
use std::collections::HashMap;
use std::time::Duration;

/// A queue's rate limit as `LIMIT` reads it: at most `max` jobs start per
/// window of `per` (windows aligned on the server clock), across every
/// worker. As JSON, the durations are whole ms named as the protocol's
/// reply names them (`per_ms`, `reset_ms`, `hold_ms`). All zero when the queue has no rate limit, but `hold_for`, which a
/// handler's [`JobError::rate_limited`](crate::JobError::rate_limited) sets
/// with or without one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct RateLimit {
    /// Jobs that may start per window; 0 without a rate limit.
    pub max: u64,
    /// The window's length; zero without a rate limit.
    #[serde(rename = "per_ms", serialize_with = "as_ms")]
    pub per: Duration,
    /// Jobs started in the current window.
    pub used: u64,
    /// Until the current window ends (and `used` starts again from 0).
    #[serde(rename = "reset_ms", serialize_with = "as_ms")]
    pub reset_in: Duration,
    /// How long the queue is still held: no claim hands out a job before.
    #[serde(rename = "hold_ms", serialize_with = "as_ms")]
    pub hold_for: Duration,
}

impl RateLimit {
    /// Whether the queue has a rate limit.
    pub fn is_set(&self) -> bool {
        self.max > 0
    }
}

/// A queue's cap on active jobs as `CONCURRENCY` reads it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ConcurrencyCap {
    /// Jobs that may be active at once, across every worker; 0 without a cap.
    pub max: u64,
    /// Jobs active now.
    pub active: u64,
}

impl ConcurrencyCap {
    /// Whether the queue has a cap.
    pub fn is_set(&self) -> bool {
        self.max > 0
    }
}

pub(crate) fn as_ms<S: serde::Serializer>(
    duration: &Duration,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    serializer.serialize_u64(duration.as_millis() as u64)
}

impl<T> Admin<T> {
    /// Sets the queue's rate limit: at most `max` jobs start per `per`
    /// (whole ms, at least 1), across every worker; windows are aligned on
    /// the server clock. The current window's count carries over. Answers
    /// the rate limit as set.
    pub async fn set_rate_limit(&self, max: u64, per: Duration) -> Result<RateLimit> {
        let per_ms = per.as_millis() as u64;
        let call = Call::new(Transition::Limit, None)
            .arg("MAX")
            .int(max)
            .arg("PER")
            .int(per_ms);
        decode_limit(self.queue.call(call).await?)
    }

    /// Removes the queue's rate limit, its window's count and any hold.
    pub async fn clear_rate_limit(&self) -> Result<RateLimit> {
        let call = Call::new(Transition::Limit, None).arg("OFF");
        decode_limit(self.queue.call(call).await?)
    }

    /// The queue's rate limit, the current window's use, and any hold.
    pub async fn rate_limit(&self) -> Result<RateLimit> {
        decode_limit(self.queue.call(Call::new(Transition::Limit, None)).await?)
    }

    /// Caps the queue's active jobs at `max` (at least 1), across every
    /// worker. Answers the cap as set.
    pub async fn set_concurrency_cap(&self, max: u64) -> Result<ConcurrencyCap> {
        let call = Call::new(Transition::Concurrency, None).arg("MAX").int(max);
        decode_cap(self.queue.call(call).await?)
    }

    /// Removes the queue's cap on active jobs.
    pub async fn clear_concurrency_cap(&self) -> Result<ConcurrencyCap> {
        let call = Call::new(Transition::Concurrency, None).arg("OFF");
        decode_cap(self.queue.call(call).await?)
    }

    /// The queue's cap on active jobs, and how many are active.
    pub async fn concurrency_cap(&self) -> Result<ConcurrencyCap> {
        decode_cap(
            self.queue
                .call(Call::new(Transition::Concurrency, None))
                .await?,
        )
    }
}

/// The named integers of a flat `[name, n, …]` reply.
pub(crate) fn numbers(transition: Transition, reply: Value) -> Result<HashMap<String, u64>> {
    decode::flat_map(transition, reply)?
        .into_iter()
        .map(|(name, value)| match value.parse() {
            Ok(n) => Ok((name, n)),
            Err(_) => Err(Error::UnexpectedReply {
                transition,
                detail: format!("{name} is {value:?}"),
            }),
        })
        .collect()
}

/// One named integer of a flat reply.
pub(crate) fn field(transition: Transition, map: &HashMap<String, u64>, name: &str) -> Result<u64> {
    map.get(name)
        .copied()
        .ok_or_else(|| Error::UnexpectedReply {
            transition,
            detail: format!("no {name}"),
        })
}

fn decode_limit(reply: Value) -> Result<RateLimit> {
    decode_rate_limit(Transition::Limit, reply)
}

/// LIMIT's or GROUP.LIMIT's reply (a group has no hold: 0 without
/// `hold_ms`).
pub(crate) fn decode_rate_limit(t: Transition, reply: Value) -> Result<RateLimit> {
    let map = numbers(t, reply)?;
    let ms = |name| field(t, &map, name).map(Duration::from_millis);
    Ok(RateLimit {
        max: field(t, &map, "max")?,
        per: ms("per")?,
        used: field(t, &map, "used")?,
        reset_in: ms("reset_ms")?,
        hold_for: match t {
            Transition::Limit => ms("hold_ms")?,
            _ => Duration::ZERO,
        },
    })
}

fn decode_cap(reply: Value) -> Result<ConcurrencyCap> {
    decode_concurrency(Transition::Concurrency, reply)
}

/// CONCURRENCY's or GROUP.CONCURRENCY's reply.
pub(crate) fn decode_concurrency(t: Transition, reply: Value) -> Result<ConcurrencyCap> {
    let map = numbers(t, reply)?;
    Ok(ConcurrencyCap {
        max: field(t, &map, "max")?,
        active: field(t, &map, "active")?,
    })
}
