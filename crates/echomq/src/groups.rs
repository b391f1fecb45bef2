//! Fair groups (`docs/groups.md`): one group's controls — its cap on
//! active jobs, its rate limit, pause and resume, its counts — and the
//! list of a queue's groups.

use crate::admin::Admin;
use crate::error::{Error, Result};
use crate::flow::{
    ConcurrencyCap, RateLimit, as_ms, decode_concurrency, decode_rate_limit, field, numbers,
};
use crate::queue::Queue;
use crate::transport::decode;
use crate::transport::dispatch::Call;
use echomq_protocol::{GroupName, Transition};
use redis::Value;
use std::time::Duration;

/// One group of a queue ([`Admin::group`]): its controls. Each is a
/// transition of its own (`GROUP.*` in `docs/protocol.md`) and applies
/// under the queue's: the queue's pause, hold, rate limit and cap bind
/// first, then the group's.
#[derive(Debug, Clone)]
pub struct Group<T> {
    queue: Queue<T>,
    name: GroupName,
}

/// A group's counts and settings ([`Group::counts`], [`Admin::groups`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct GroupCounts {
    /// The group.
    pub group: String,
    /// Its jobs waiting to be claimed (its lane).
    pub pending: u64,
    /// Its jobs running.
    pub active: u64,
    /// Whether it is paused ([`Group::pause`]).
    pub paused: bool,
    /// Its cap on active jobs; 0 for none.
    pub concurrency: u64,
    /// Its rate limit: jobs per window; 0 for none.
    pub limit_max: u64,
    /// Its rate limit's window; zero for none (`limit_per_ms` in JSON).
    #[serde(rename = "limit_per_ms", serialize_with = "as_ms")]
    pub limit_per: Duration,
}

impl<T> Admin<T> {
    /// The controls of group `name` (1–128 bytes, no whitespace, braces
    /// or control characters; [`Error::BadArgument`] otherwise). The group needs no job to
    /// be configured: its settings wait for its jobs.
    pub fn group(&self, name: impl Into<String>) -> Result<Group<T>> {
        let name = GroupName::new(name.into()).map_err(|err| Error::BadArgument {
            name: "group",
            reason: err.to_string(),
        })?;
        Ok(Group {
            queue: self.queue.clone(),
            name,
        })
    }

    /// The queue's groups that have keys (jobs pending or running, or
    /// settings), by name: at most `count` (≥ 1) whose names sort after
    /// `after` (from the first with `None`). Page on by passing the last
    /// name of a page as the next `after`.
    pub async fn groups(&self, after: Option<&str>, count: u64) -> Result<Vec<GroupCounts>> {
        let mut call = Call::new(Transition::Groups, None);
        if let Some(after) = after {
            GroupName::new(after).map_err(|err| Error::BadArgument {
                name: "after",
                reason: err.to_string(),
            })?;
            call = call.arg("AFTER").arg(after);
        }
        let reply = self.queue.call(call.arg("COUNT").int(count)).await?;
        decode::array(Transition::Groups, reply)?
            .into_iter()
            .map(decode_listed)
            .collect()
    }
}

impl<T> Group<T> {
    /// The group's name.
    pub fn name(&self) -> &str {
        self.name.as_str()
    }

    fn call(&self, transition: Transition) -> Call {
        Call::new(transition, None).arg(self.name.as_str())
    }

    /// Caps the group's active jobs at `max` (at least 1), across every
    /// worker. Answers the cap as set.
    pub async fn set_concurrency_cap(&self, max: u64) -> Result<ConcurrencyCap> {
        let call = self.call(Transition::GroupConcurrency).arg("MAX").int(max);
        self.cap(call).await
    }

    /// Removes the group's cap on active jobs.
    pub async fn clear_concurrency_cap(&self) -> Result<ConcurrencyCap> {
        self.cap(self.call(Transition::GroupConcurrency).arg("OFF"))
            .await
    }

    /// The group's cap on active jobs, and how many of its jobs are active.
    pub async fn concurrency_cap(&self) -> Result<ConcurrencyCap> {
        self.cap(self.call(Transition::GroupConcurrency)).await
    }

    async fn cap(&self, call: Call) -> Result<ConcurrencyCap> {
        decode_concurrency(Transition::GroupConcurrency, self.queue.call(call).await?)
    }

    /// Sets the group's rate limit: at most `max` of its jobs start per
    /// `per` (whole ms, at least 1), across every worker; windows are
    /// aligned on the server clock. Answers the rate limit as set.
    pub async fn set_rate_limit(&self, max: u64, per: Duration) -> Result<RateLimit> {
        let call = self
            .call(Transition::GroupLimit)
            .arg("MAX")
            .int(max)
            .arg("PER")
            .int(per.as_millis() as u64);
        self.limit(call).await
    }

    /// Removes the group's rate limit and its window's count.
    pub async fn clear_rate_limit(&self) -> Result<RateLimit> {
        self.limit(self.call(Transition::GroupLimit).arg("OFF"))
            .await
    }

    /// The group's rate limit and the current window's use.
    pub async fn rate_limit(&self) -> Result<RateLimit> {
        self.limit(self.call(Transition::GroupLimit)).await
    }

    async fn limit(&self, call: Call) -> Result<RateLimit> {
        decode_rate_limit(Transition::GroupLimit, self.queue.call(call).await?)
    }

    /// Holds the group's jobs back: claims take none of them until
    /// [`Group::resume`]; its running jobs run on, and the rest of the
    /// queue flows.
    pub async fn pause(&self) -> Result<()> {
        let reply = self.queue.call(self.call(Transition::GroupPause)).await?;
        decode::ok(Transition::GroupPause, reply)
    }

    /// Lets claims take the group's jobs again.
    pub async fn resume(&self) -> Result<()> {
        let reply = self.queue.call(self.call(Transition::GroupResume)).await?;
        decode::ok(Transition::GroupResume, reply)
    }

    /// The group's pending and active jobs, whether it is paused, its cap
    /// and its rate limit.
    pub async fn counts(&self) -> Result<GroupCounts> {
        let t = Transition::GroupCounts;
        let map = numbers(t, self.queue.call(self.call(t)).await?)?;
        Ok(GroupCounts {
            group: self.name.to_string(),
            pending: field(t, &map, "pending")?,
            active: field(t, &map, "active")?,
            paused: field(t, &map, "paused")? == 1,
            concurrency: field(t, &map, "concurrency")?,
            limit_max: field(t, &map, "max")?,
            limit_per: Duration::from_millis(field(t, &map, "per")?),
        })
    }
}

/// One entry of GROUPS: `[group, pending, active, paused, concurrency,
/// max, per]`.
fn decode_listed(entry: Value) -> Result<GroupCounts> {
    let t = Transition::Groups;
    let items = decode::array(t, entry)?;
    let [group, pending, active, paused, concurrency, max, per] = <[Value; 7]>::try_from(items)
        .map_err(|items| decode::unexpected(t, &Value::Array(items)))?;
    let number = |value: Value| decode::int(t, value);
    Ok(GroupCounts {
        group: decode::text(t, group)?,
        pending: number(pending)?,
        active: number(active)?,
        paused: number(paused)? == 1,
        concurrency: number(concurrency)?,
        limit_max: number(max)?,
        limit_per: Duration::from_millis(number(per)?),
    })
}

/// `docs/groups.md`, whose example compiles as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/groups.md")]
pub struct GroupsGuide;
