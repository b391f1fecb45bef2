//! Failovers of a [`TestCluster`]: `SIGKILL` the master of a key's slot,
//! wait until the cluster promotes its replica, start the killed node
//! again and wait until it follows as a replica.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use echomq_server::ServerBinary;

use super::{NodeSettings, TestCluster, node_ready, slot_ranges};
use crate::TestServer;
use crate::wait::{SETUP_EVERY, Wait};

/// How long a promotion or a rejoin may take.
const SETTLE: Duration = Duration::from_secs(30);
/// `cluster-node-timeout` of a failover cluster: a master that does not
/// answer for 2 s is counted down (the replica's election follows within
/// about a second).
const NODE_TIMEOUT_MS: u64 = 2000;

/// One node of the cluster: a started master's or a started replica's
/// place (their roles change with each failover; the places do not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NodeAt {
    Master(usize),
    Replica(usize),
}

impl TestCluster {
    /// Like [`TestCluster::start_with_replicas`], for failovers: every
    /// node with an AOF (`appendfsync always`: a replica's `WAITAOF`
    /// needs one) and `modules` loaded (a replica applies wire 6's writes
    /// with the module), `cluster-node-timeout` 2000 ms, and any replica
    /// fit to be promoted (`cluster-replica-validity-factor 0`). See
    /// [`TestCluster::kill_master_of`] and [`TestCluster::restart_killed`].
    pub fn start_for_failover(masters: usize, modules: Vec<PathBuf>) -> Self {
        let binary = ServerBinary::locate().unwrap_or_else(|e| panic!("TestCluster: {e}"));
        let settings = NodeSettings {
            appendonly: true,
            modules,
            node_timeout_ms: NODE_TIMEOUT_MS,
            validity_factor: 0,
        };
        Self::with_replicas(masters, &binary, &settings)
    }

    /// `redis://127.0.0.1:PORT` of every node, masters and replicas as
    /// started (a client's seeds: whichever is down, another answers).
    pub fn all_urls(&self) -> Vec<String> {
        self.nodes
            .iter()
            .chain(&self.replicas)
            .map(TestServer::url)
            .collect()
    }

    /// The node that serves `key`'s slot now, as a live node's `CLUSTER
    /// SLOTS` says.
    pub fn master_of(&self, key: &str) -> &TestServer {
        let port = self
            .slot_master(key, None)
            .unwrap_or_else(|e| panic!("TestCluster: the master of {key:?}: {e}"));
        self.node(self.at_port(port).expect("a node of the cluster"))
    }

    /// `SIGKILL`s the master serving `key`'s slot and returns once a live
    /// node names another master for the slot, that node says it is a
    /// master and every live node says `cluster_state:ok`. Returns how
    /// long the promotion took. Panics when a killed node has not been
    /// restarted yet, or after 30 s.
    pub fn kill_master_of(&mut self, key: &str) -> Duration {
        assert!(
            self.killed.is_none(),
            "TestCluster: restart the killed node before killing another"
        );
        let victim_port = self
            .slot_master(key, None)
            .unwrap_or_else(|e| panic!("TestCluster: the master of {key:?}: {e}"));
        let victim = self.at_port(victim_port).expect("a node of the cluster");
        let killed_at = Instant::now();
        self.node_mut(victim).kill();
        self.killed = Some(victim);
        self.wait_until("the cluster to promote a replica", || {
            let master = self.slot_master(key, Some(victim))?;
            if master == victim_port {
                return Err(format!("the slot is still served by {victim_port}"));
            }
            let promoted = self.node(self.at_port(master).ok_or("an unknown node")?);
            let info = text(promoted, &["INFO", "replication"])?;
            if !info.contains("role:master") {
                return Err(format!("{master} is named but not yet a master"));
            }
            self.live_nodes(Some(victim))
                .try_for_each(|node| ready(node).map_err(|e| format!("{}: {e}", node.port())))
        });
        killed_at.elapsed()
    }

    /// Starts the killed node again (it loads its AOF and `nodes.conf`)
    /// and waits until it follows a master with its link up and every
    /// node says `cluster_state:ok` and sees every slot served: the node
    /// rejoins as the replica of the one promoted in its place. Does
    /// nothing when no node is down.
    pub fn restart_killed(&mut self) {
        let Some(killed) = self.killed.take() else {
            return;
        };
        self.node_mut(killed).start_again();
        self.wait_until("the killed node to rejoin as a replica", || {
            let info = text(self.node(killed), &["INFO", "replication"])?;
            if !(info.contains("role:slave") && info.contains("master_link_status:up")) {
                return Err(format!(
                    "{} does not follow a master yet",
                    self.node(killed).port()
                ));
            }
            self.live_nodes(None)
                .try_for_each(|node| ready(node).map_err(|e| format!("{}: {e}", node.port())))
        });
    }

    /// The port of the master of `key`'s slot, as the first live node
    /// (other than `down`) that answers says.
    fn slot_master(&self, key: &str, down: Option<NodeAt>) -> Result<u16, String> {
        let mut last = String::from("no live node");
        for node in self.live_nodes(down) {
            match slot_master_at(node, key) {
                Ok(port) => return Ok(port),
                Err(e) => last = format!("{}: {e}", node.port()),
            }
        }
        Err(last)
    }

    fn live_nodes(&self, down: Option<NodeAt>) -> impl Iterator<Item = &TestServer> {
        let masters = (0..self.nodes.len()).map(NodeAt::Master);
        let replicas = (0..self.replicas.len()).map(NodeAt::Replica);
        masters
            .chain(replicas)
            .filter(move |at| Some(*at) != down)
            .map(|at| self.node(at))
    }

    fn at_port(&self, port: u16) -> Option<NodeAt> {
        let master = self.nodes.iter().position(|n| n.port() == port);
        let replica = self.replicas.iter().position(|n| n.port() == port);
        master.map(NodeAt::Master).or(replica.map(NodeAt::Replica))
    }

    fn node(&self, at: NodeAt) -> &TestServer {
        match at {
            NodeAt::Master(i) => &self.nodes[i],
            NodeAt::Replica(i) => &self.replicas[i],
        }
    }

    fn node_mut(&mut self, at: NodeAt) -> &mut TestServer {
        match at {
            NodeAt::Master(i) => &mut self.nodes[i],
            NodeAt::Replica(i) => &mut self.replicas[i],
        }
    }

    #[track_caller]
    fn wait_until(&self, what: &str, done: impl FnMut() -> Result<(), String>) {
        Wait::new(&format!("TestCluster: {what}"), SETTLE)
            .every(SETUP_EVERY)
            .until(done);
    }
}

/// The port `node`'s `CLUSTER SLOTS` names as the master of `key`'s slot.
fn slot_master_at(node: &TestServer, key: &str) -> Result<u16, String> {
    let mut con = connection(node)?;
    let slot: i64 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query(&mut con)
        .map_err(|e| e.to_string())?;
    let reply: redis::Value = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query(&mut con)
        .map_err(|e| e.to_string())?;
    for (first, last, fields) in slot_ranges(&reply) {
        if (first..=last).contains(&slot) {
            // The master: [host, port, id, …].
            let master = fields.get(2).cloned().ok_or("a range without a master")?;
            let master: Vec<redis::Value> =
                redis::from_redis_value(master).map_err(|e| e.to_string())?;
            let port = master.get(1).cloned().ok_or("a master without a port")?;
            return redis::from_redis_value(port).map_err(|e| e.to_string());
        }
    }
    Err(format!("no range holds slot {slot}"))
}

/// [`node_ready`] over a fresh connection that may fail.
fn ready(node: &TestServer) -> Result<(), String> {
    node_ready(&mut connection(node)?)
}

fn text(node: &TestServer, args: &[&str]) -> Result<String, String> {
    redis::cmd(args[0])
        .arg(&args[1..])
        .query(&mut connection(node)?)
        .map_err(|e| e.to_string())
}

fn connection(node: &TestServer) -> Result<redis::Connection, String> {
    let con = node
        .client()
        .get_connection_with_timeout(Duration::from_secs(2))
        .map_err(|e| e.to_string())?;
    con.set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| e.to_string())?;
    Ok(con)
}
