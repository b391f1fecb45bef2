//! One async connection type over a single server or a cluster.
//!
//! Both reconnect on their own: a connection the server closed (a restart,
//! a failover, `CLIENT KILL`, a network cut) is replaced in the background
//! and the next command goes out on the new one. A command in flight when
//! the connection dropped fails with an I/O error and may or may not have
//! been applied; the library never sends it again by itself. A server host
//! that vanishes without closing its connections (a partition, a power
//! loss) is found out by TCP keepalive probes and a limit on
//! unacknowledged data ([`tcp_settings`](crate::transport::reconnect::tcp_settings)).

use crate::transport::sentinel::SentinelLink;
use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};
use std::sync::Arc;

/// A multiplexed connection to one server (kept up by a connection
/// manager), or a cluster connection that routes each command by its first
/// key's slot.
#[derive(Clone)]
pub(crate) enum Link {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
    /// The primary Sentinel names, found again after a failover.
    Sentinel(Arc<SentinelLink>),
}

impl Link {
    /// Closes the shared connection to one server (`QUIT`), so that the
    /// next command goes out on a new one: for a server that answered
    /// `READONLY`, a primary that a failover demoted to a replica and that
    /// the connection opened before it still reaches. The new connection
    /// goes wherever the URL leads now (a failover endpoint's new primary).
    /// A cluster connection follows a failover by itself.
    pub(crate) async fn reopen(&self) {
        match self {
            Link::Single(conn) => {
                let mut conn = conn.clone();
                let _ = redis::cmd("QUIT").query_async::<Value>(&mut conn).await;
                // Fails on the closed connection, which starts the reconnect.
                let _ = redis::cmd("PING").query_async::<Value>(&mut conn).await;
                tracing::warn!(target: "echomq::link",
                    "the server answered READONLY (a primary demoted by a failover?); connecting again"
                );
            }
            Link::Sentinel(link) => {
                if let Err(err) = link.find_primary().await {
                    tracing::warn!(target: "echomq::link", error = %err, "asking Sentinel for the primary failed");
                }
            }
            Link::Cluster(_) => {}
        }
    }

    /// Whether a call that could not reach the server should make the link
    /// look for it elsewhere ([`Link::reopen`]): behind Sentinel, where a
    /// primary that is gone has been replaced by another.
    pub(crate) fn finds_a_new_primary(&self) -> bool {
        matches!(self, Link::Sentinel(_))
    }
}

impl ConnectionLike for Link {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Link::Single(conn) => conn.req_packed_command(cmd),
            Link::Cluster(conn) => conn.req_packed_command(cmd),
            Link::Sentinel(link) => {
                let mut conn = link.connection();
                Box::pin(async move { conn.req_packed_command(cmd).await })
            }
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Link::Single(conn) => conn.req_packed_commands(pipeline, offset, count),
            Link::Cluster(conn) => conn.req_packed_commands(pipeline, offset, count),
            Link::Sentinel(link) => {
                let mut conn = link.connection();
                Box::pin(async move { conn.req_packed_commands(pipeline, offset, count).await })
            }
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Link::Single(conn) => conn.get_db(),
            Link::Cluster(conn) => conn.get_db(),
            Link::Sentinel(link) => link.connection().get_db(),
        }
    }
}
