//! One async connection type over a single server or a cluster.
//!
//! Both reconnect on their own: a connection the server closed (a restart,
//! a failover, `CLIENT KILL`, a network cut) is replaced in the background
//! and the next command goes out on the new one. A command in flight when
//! the connection dropped fails with an I/O error and may or may not have
//! been applied; the library never sends it again by itself.

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// A multiplexed connection to one server (kept up by a connection
/// manager), or a cluster connection that routes each command by its first
/// key's slot.
#[derive(Clone)]
pub(crate) enum Link {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Link {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Link::Single(conn) => conn.req_packed_command(cmd),
            Link::Cluster(conn) => conn.req_packed_command(cmd),
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
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Link::Single(conn) => conn.get_db(),
            Link::Cluster(conn) => conn.get_db(),
        }
    }
}
