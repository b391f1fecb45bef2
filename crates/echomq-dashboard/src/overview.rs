//! The queues overview as read: every queue under the prefix with its
//! snapshot, its jobs finished per minute over the last hour and its
//! first groups, or why it could not be read. Read once for the queues
//! page (`pages/queues.rs`, which draws it) and once per wake of its live
//! rows (`live/part.rs` keeps the reading, `feed/` reads and draws it);
//! it imports no other part of the dashboard.

use echomq::prometheus::QueueSnapshot;
use echomq::{Connector, GroupCounts, MetricsRange, QueueName, Result, Unreadable};
use serde_json::Value;
use std::time::Duration;

/// Groups read per queue for the overview: past this it says "N+".
pub(crate) const GROUPS_SHOWN: u64 = 100;

/// One row of the overview: a queue as read, or one that could not be
/// read, named with its key and what that holds.
pub(crate) enum Overview {
    /// A queue read (boxed: a reading is far larger than a problem).
    Read(Box<QueueOverview>),
    /// A queue (or registry member) that could not be read, and why.
    Unreadable(Unreadable),
}

impl Overview {
    /// The queue's name (a registry member's, as stored, when it is none).
    pub(crate) fn name(&self) -> &str {
        match self {
            Overview::Read(q) => &q.snapshot.queue,
            Overview::Unreadable(unreadable) => &unreadable.queue,
        }
    }
}

/// What the overview shows of a queue it read.
pub(crate) struct QueueOverview {
    pub(crate) snapshot: QueueSnapshot,
    /// Jobs finished per minute over the last hour, oldest first.
    pub(crate) per_minute: Vec<u64>,
    pub(crate) groups: Vec<GroupCounts>,
}

impl QueueOverview {
    async fn read(connector: &Connector, name: QueueName) -> Result<Self> {
        let name = name.as_str();
        let queue = connector.queue::<Value>(name)?;
        let admin = queue.admin();
        let (snapshot, metrics, groups) = tokio::join!(
            QueueSnapshot::read(connector, name),
            queue.metrics(MetricsRange::Last(Duration::from_secs(3600))),
            admin.groups(None, GROUPS_SHOWN),
        );
        let per_minute = metrics?
            .windows
            .iter()
            .map(|w| w.completed + w.dead + w.cancelled + w.failed)
            .collect();
        Ok(Self {
            snapshot: snapshot?,
            per_minute,
            groups: groups?,
        })
    }
}

/// Every queue under the prefix, read concurrently, in name order; a queue
/// that cannot be read is a row naming why, and the others show.
pub(crate) async fn read_all(connector: &Connector) -> Result<Vec<Overview>> {
    let listed = connector
        .read_queues(|name| QueueOverview::read(connector, name))
        .await?;
    Ok(listed
        .into_iter()
        .map(|row| match row {
            Ok(read) => Overview::Read(Box::new(read)),
            Err(unreadable) => Overview::Unreadable(unreadable),
        })
        .collect())
}
