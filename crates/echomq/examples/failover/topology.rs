//! What the run kills: a primary behind Sentinel, or the master of the
//! queue's slot in a cluster; how the clients and the `emq` processes
//! reach it.

use echomq::{Connector, ConnectorBuilder};
use echomq_testkit::{SENTINEL_SERVICE, TestCluster, TestSentinelGroup};
use std::time::Duration;

/// The servers of a run.
#[derive(Debug)]
pub(crate) enum Topology {
    /// A primary, two replicas, three sentinels.
    Sentinel(TestSentinelGroup),
    /// Three masters with a replica each.
    Cluster(TestCluster),
}

impl Topology {
    /// A connector builder that reaches the queue through failovers.
    pub(crate) fn connector(&self) -> ConnectorBuilder {
        match self {
            Topology::Sentinel(group) => {
                Connector::sentinel(group.sentinel_urls(), SENTINEL_SERVICE)
            }
            Topology::Cluster(cluster) => Connector::cluster(cluster.all_urls()),
        }
    }

    /// The same for `emq`: its connection flags.
    pub(crate) fn emq_flags(&self) -> Vec<String> {
        match self {
            Topology::Sentinel(group) => vec![
                "--sentinel".into(),
                group.sentinel_urls().join(","),
                "--sentinel-service".into(),
                SENTINEL_SERVICE.into(),
            ],
            Topology::Cluster(cluster) => vec!["--cluster".into(), cluster.all_urls().join(",")],
        }
    }

    /// `SIGKILL`s the server that serves `queue` and waits until another
    /// is promoted; how long the promotion took.
    pub(crate) fn kill(&mut self, queue: &str) -> Duration {
        match self {
            Topology::Sentinel(group) => group.kill_primary(),
            Topology::Cluster(cluster) => cluster.kill_master_of(queue),
        }
    }

    /// Starts the killed server again and waits until it follows.
    pub(crate) fn restart_killed(&mut self) {
        match self {
            Topology::Sentinel(group) => group.restart_killed(),
            Topology::Cluster(cluster) => cluster.restart_killed(),
        }
    }

    /// Failovers the sentinels made, the kills and any of their own
    /// (their configuration epoch); `None` on a cluster.
    pub(crate) fn sentinel_failovers(&self) -> Option<u64> {
        match self {
            Topology::Sentinel(group) => Some(group.config_epoch()),
            Topology::Cluster(_) => None,
        }
    }
}
