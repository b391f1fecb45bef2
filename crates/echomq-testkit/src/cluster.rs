//! [`TestCluster`]: `n` masters forming a cluster on loopback.

mod failover;

use std::path::PathBuf;
use std::time::Duration;

use echomq_server::{ServerBinary, ServerError, free_loopback_port};

use crate::TestServer;
use crate::transport::{ClientAuth, TestCertificates, TlsFiles, tls_binary};
use crate::wait::{SETUP_EVERY, Wait};

/// Number of hash slots in a cluster.
const SLOTS: usize = 16384;
/// How long [`TestCluster::start`] waits for the cluster to become healthy.
const FORM_TIMEOUT: Duration = Duration::from_secs(20);
/// Attempts at starting one node when its ports get taken.
const NODE_ATTEMPTS: usize = 5;

/// Masters forming a Valkey cluster on loopback, slots split evenly, no
/// replicas. Each node lives in its own temp dir and is stopped on drop.
#[derive(Debug)]
pub struct TestCluster {
    nodes: Vec<TestServer>,
    bus_ports: Vec<u16>,
    /// For a TLS cluster: its certificates, and each node's TLS port.
    tls: Option<(TlsFiles, Vec<u16>)>,
    /// Replica `i` follows master `i` ([`TestCluster::start_with_replicas`]).
    replicas: Vec<TestServer>,
    /// The replicas' cluster bus ports.
    replica_buses: Vec<u16>,
    /// The node [`TestCluster::kill_master_of`] killed, not yet restarted.
    killed: Option<failover::NodeAt>,
}

/// How each node of a cluster runs.
#[derive(Debug, Clone)]
struct NodeSettings {
    /// An AOF with `appendfsync always`.
    appendonly: bool,
    /// Modules loaded on every node.
    modules: Vec<PathBuf>,
    /// `cluster-node-timeout`, in ms.
    node_timeout_ms: u64,
    /// `cluster-replica-validity-factor`: 0 makes any replica fit to be
    /// promoted, however long ago it last heard from its master.
    validity_factor: u32,
}

impl NodeSettings {
    /// No AOF, no module, a node counted down after 5 s.
    fn plain() -> Self {
        Self {
            appendonly: false,
            modules: Vec::new(),
            node_timeout_ms: 5000,
            validity_factor: 10,
        }
    }
}

impl TestCluster {
    /// Start `masters` nodes (Valkey, via [`ServerBinary::locate`]) with
    /// `--cluster-enabled yes`, give each an even share of the slots, join
    /// them with `CLUSTER MEET`, and wait (up to 20 s) until every node
    /// reports `cluster_state:ok` and sees all 16384 slots covered. Panics
    /// with the nodes' state when that does not happen.
    pub fn start(masters: usize) -> Self {
        let binary = ServerBinary::locate().unwrap_or_else(|e| panic!("TestCluster: {e}"));
        Self::form_of(masters, &binary, None, &NodeSettings::plain())
    }

    /// Like [`TestCluster::start`], with Debian's Redis speaking TLS on a
    /// port of each node besides its plain one, and on the cluster bus
    /// (`tls-cluster yes`, so `CLUSTER SLOTS` names the TLS ports): see
    /// [`TestCluster::tls_urls`] and [`TestCluster::certificates`]. Clients
    /// need no certificate of their own.
    pub fn start_tls(masters: usize) -> Self {
        Self::form_of(
            masters,
            &tls_binary(),
            Some(TlsFiles::generate()),
            &NodeSettings::plain(),
        )
    }

    /// Like [`TestCluster::start`], and one replica per master
    /// ([`TestCluster::replicas`]: replica `i` follows master `i`), waited
    /// for until each has synced with its master. For failover tests
    /// (`CLUSTER FAILOVER` on a replica).
    pub fn start_with_replicas(masters: usize) -> Self {
        let binary = ServerBinary::locate().unwrap_or_else(|e| panic!("TestCluster: {e}"));
        Self::with_replicas(masters, &binary, &NodeSettings::plain())
    }

    fn with_replicas(masters: usize, binary: &ServerBinary, settings: &NodeSettings) -> Self {
        let mut cluster = Self::form_of(masters, binary, None, settings);
        for _ in 0..masters {
            let (replica, bus, _) = spawn_node(binary, None, settings);
            cluster.replicas.push(replica);
            cluster.replica_buses.push(bus);
        }
        cluster.attach_replicas();
        cluster
    }

    /// The replicas of a [`TestCluster::start_with_replicas`] cluster, in
    /// the order of the masters they follow.
    pub fn replicas(&self) -> &[TestServer] {
        &self.replicas
    }

    /// Joins the replicas to the cluster, makes replica `i` follow master
    /// `i`, and waits until each has synced.
    fn attach_replicas(&self) {
        let mut seed = sync_connection(&self.nodes[0]);
        let replicas = self.replicas.iter().zip(&self.replica_buses);
        for ((replica, bus), master) in replicas.zip(&self.nodes) {
            redis::cmd("CLUSTER")
                .arg("MEET")
                .arg("127.0.0.1")
                .arg(replica.port())
                .arg(*bus)
                .query::<()>(&mut seed)
                .unwrap_or_else(|e| panic!("TestCluster: MEET {}: {e}", replica.port()));
            let id: String = redis::cmd("CLUSTER")
                .arg("MYID")
                .query(&mut sync_connection(master))
                .unwrap_or_else(|e| panic!("TestCluster: MYID: {e}"));
            let mut con = sync_connection(replica);
            // The replica must have heard of its master first (gossip).
            wait_until(
                &format!("replica {} to follow {id}", replica.port()),
                || {
                    redis::cmd("CLUSTER")
                        .arg("REPLICATE")
                        .arg(&id)
                        .query::<()>(&mut con)
                        .map_err(|e| e.to_string())
                },
            );
        }
        for replica in &self.replicas {
            let mut con = sync_connection(replica);
            wait_until(&format!("replica {} to sync", replica.port()), || {
                let info: String = redis::cmd("INFO")
                    .arg("replication")
                    .query(&mut con)
                    .map_err(|e| e.to_string())?;
                if info.contains("master_link_status:up") {
                    node_ready(&mut con)
                } else {
                    Err("master link down".into())
                }
            });
        }
    }

    fn form_of(
        masters: usize,
        binary: &ServerBinary,
        tls: Option<TlsFiles>,
        settings: &NodeSettings,
    ) -> Self {
        assert!(
            (1..=SLOTS).contains(&masters),
            "TestCluster: masters must be in 1..={SLOTS}, got {masters}"
        );
        let mut nodes = Vec::with_capacity(masters);
        let mut bus_ports = Vec::with_capacity(masters);
        let mut tls_ports = Vec::with_capacity(masters);
        for _ in 0..masters {
            let (node, bus, tls_port) = spawn_node(binary, tls.as_ref(), settings);
            nodes.push(node);
            bus_ports.push(bus);
            tls_ports.extend(tls_port);
        }
        let cluster = TestCluster {
            nodes,
            bus_ports,
            tls: tls.map(|files| (files, tls_ports)),
            replicas: Vec::new(),
            replica_buses: Vec::new(),
            killed: None,
        };
        cluster.form();
        cluster
    }

    /// `redis://127.0.0.1:PORT` of every node, in start order.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(TestServer::url).collect()
    }

    /// `rediss://127.0.0.1:TLS_PORT` of every node of a
    /// [`TestCluster::start_tls`] cluster (none for a plain one).
    pub fn tls_urls(&self) -> Vec<String> {
        self.tls.as_ref().map_or_else(Vec::new, |(_, ports)| {
            ports
                .iter()
                .map(|port| format!("rediss://127.0.0.1:{port}"))
                .collect()
        })
    }

    /// The certificates of a [`TestCluster::start_tls`] cluster: the CA a
    /// client must trust.
    pub fn certificates(&self) -> Option<&TestCertificates> {
        self.tls.as_ref().map(|(files, _)| files.certificates())
    }

    /// The nodes, in start order (node `i` owns the `i`-th share of slots).
    pub fn nodes(&self) -> &[TestServer] {
        &self.nodes
    }

    /// An async cluster connection over all nodes. The `redis` crate's
    /// cluster client has no response timeout unless one is set, and none is.
    pub async fn connection(&self) -> redis::cluster_async::ClusterConnection {
        redis::cluster::ClusterClient::builder(self.urls())
            .build()
            .unwrap_or_else(|e| panic!("TestCluster: building the client: {e}"))
            .get_async_connection()
            .await
            .unwrap_or_else(|e| panic!("TestCluster: connecting to {:?}: {e}", self.urls()))
    }

    fn form(&self) {
        let mut cons: Vec<redis::Connection> = self.nodes.iter().map(sync_connection).collect();
        let n = cons.len();
        for (i, con) in cons.iter_mut().enumerate() {
            let (first, last) = (i * SLOTS / n, (i + 1) * SLOTS / n - 1);
            redis::cmd("CLUSTER")
                .arg("ADDSLOTSRANGE")
                .arg(first)
                .arg(last)
                .query::<()>(con)
                .unwrap_or_else(|e| panic!("TestCluster: ADDSLOTSRANGE {first} {last}: {e}"));
        }
        for (node, bus) in self.nodes.iter().zip(&self.bus_ports).skip(1) {
            redis::cmd("CLUSTER")
                .arg("MEET")
                .arg("127.0.0.1")
                .arg(node.port())
                .arg(*bus)
                .query::<()>(&mut cons[0])
                .unwrap_or_else(|e| panic!("TestCluster: MEET {}: {e}", node.port()));
        }
        wait_until("the cluster to form", || {
            let states: Vec<Result<(), String>> = cons.iter_mut().map(node_ready).collect();
            if states.iter().all(Result::is_ok) {
                return Ok(());
            }
            let report: Vec<String> = self
                .nodes
                .iter()
                .zip(&states)
                .map(|(node, state)| match state {
                    Ok(()) => format!("  port {}: ok", node.port()),
                    Err(e) => format!("  port {}: {e}", node.port()),
                })
                .collect();
            Err(format!("\n{}", report.join("\n")))
        });
    }
}

/// Start one cluster node as `settings` say, with its own free bus port
/// (and TLS port, with `tls`), retrying with fresh ports when one was
/// taken between picking and binding.
fn spawn_node(
    binary: &ServerBinary,
    tls: Option<&TlsFiles>,
    settings: &NodeSettings,
) -> (TestServer, u16, Option<u16>) {
    let mut last = None;
    for _ in 0..NODE_ATTEMPTS {
        let port = || free_loopback_port().unwrap_or_else(|e| panic!("TestCluster: {e}"));
        let bus = port();
        let mut args = [
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            &settings.node_timeout_ms.to_string(),
            // A replica syncs at once (a primary waits 5 s for more by default).
            "--repl-diskless-sync-delay",
            "0",
            "--cluster-port",
            &bus.to_string(),
        ]
        .map(String::from)
        .to_vec();
        let tls_port = tls.map(|files| {
            let tls_port = port();
            args.extend(files.server_args(tls_port, ClientAuth::None));
            args.extend(["--tls-cluster".to_string(), "yes".into()]);
            tls_port
        });
        if settings.appendonly {
            args.extend(["--appendfsync".to_string(), "always".into()]);
        }
        args.extend([
            "--cluster-replica-validity-factor".to_string(),
            settings.validity_factor.to_string(),
        ]);
        match TestServer::spawn(binary, settings.appendonly, settings.modules.clone(), args) {
            Ok(node) => return (node, bus, tls_port),
            Err(e @ ServerError::Spawn { .. }) if e.to_string().contains("already in use") => {
                last = Some(e);
            }
            Err(e) => panic!("TestCluster: {e}"),
        }
    }
    panic!(
        "TestCluster: {}",
        last.map(|e| e.to_string()).unwrap_or_default()
    );
}

/// A [`Wait`] for the cluster's setup, within [`FORM_TIMEOUT`].
#[track_caller]
fn wait_until(what: &str, attempt: impl FnMut() -> Result<(), String>) {
    Wait::new(&format!("TestCluster: {what}"), FORM_TIMEOUT)
        .every(SETUP_EVERY)
        .until(attempt);
}

fn sync_connection(node: &TestServer) -> redis::Connection {
    let con = node
        .client()
        .get_connection_with_timeout(Duration::from_secs(5))
        .unwrap_or_else(|e| panic!("TestCluster: connecting to {}: {e}", node.url()));
    con.set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap_or_else(|e| panic!("TestCluster: {e}"));
    con
}

/// `Ok` when the node says `cluster_state:ok` and its `CLUSTER SLOTS`
/// covers every slot; otherwise what is missing.
fn node_ready(con: &mut redis::Connection) -> Result<(), String> {
    let info: String = redis::cmd("CLUSTER")
        .arg("INFO")
        .query(con)
        .map_err(|e| format!("CLUSTER INFO: {e}"))?;
    let state = info
        .lines()
        .find_map(|l| l.trim().strip_prefix("cluster_state:"))
        .unwrap_or("?");
    if state != "ok" {
        return Err(format!("cluster_state:{state}"));
    }
    let slots: redis::Value = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query(con)
        .map_err(|e| format!("CLUSTER SLOTS: {e}"))?;
    let covered = covered_slots(&slots);
    if covered == SLOTS {
        Ok(())
    } else {
        Err(format!("CLUSTER SLOTS covers {covered} of {SLOTS} slots"))
    }
}

/// The ranges of a `CLUSTER SLOTS` reply: each range's first and last
/// slot and its fields (`[first, last, master, replicas…]`); entries of
/// another shape are skipped.
fn slot_ranges(reply: &redis::Value) -> impl Iterator<Item = (i64, i64, &[redis::Value])> {
    let ranges = match reply {
        redis::Value::Array(ranges) => ranges.as_slice(),
        _ => &[],
    };
    ranges.iter().filter_map(|range| {
        let redis::Value::Array(fields) = range else {
            return None;
        };
        match (fields.first(), fields.get(1)) {
            (Some(redis::Value::Int(first)), Some(redis::Value::Int(last))) => {
                Some((*first, *last, fields.as_slice()))
            }
            _ => None,
        }
    })
}

/// How many distinct slots a `CLUSTER SLOTS` reply covers.
fn covered_slots(reply: &redis::Value) -> usize {
    let mut seen = vec![false; SLOTS];
    for (first, last, _) in slot_ranges(reply) {
        let first = usize::try_from(first).unwrap_or(SLOTS);
        let last = usize::try_from(last).unwrap_or(0).min(SLOTS - 1);
        for slot in seen.iter_mut().take(last + 1).skip(first) {
            *slot = true;
        }
    }
    seen.iter().filter(|s| **s).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value;

    fn range(first: i64, last: i64) -> Value {
        Value::Array(vec![
            Value::Int(first),
            Value::Int(last),
            Value::Array(vec![]),
        ])
    }

    #[test]
    fn counts_covered_slots() {
        assert_eq!(covered_slots(&Value::Array(vec![])), 0);
        let all = Value::Array(vec![
            range(0, 5460),
            range(5461, 10922),
            range(10923, 16383),
        ]);
        assert_eq!(covered_slots(&all), SLOTS);
        let gap = Value::Array(vec![range(0, 99), range(50, 199), range(16383, 16383)]);
        assert_eq!(covered_slots(&gap), 201);
    }
}
