//! [`TestSentinelGroup`]: a primary, two replicas and three sentinels
//! (quorum 2), every server with an AOF, on loopback: the topology a
//! failover chaos run kills the primary of.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::TestServer;
use crate::sentinel::{SENTINEL_SERVICE, query_as};
use crate::sentinel_process::{SentinelProcess, sentinel_value};
use crate::server::default_binary;
use crate::wait::{SETUP_EVERY, Wait};

/// Servers in the group: a primary and two replicas.
const SERVERS: usize = 3;
/// Sentinels in the group; two must agree that the primary is down.
const SENTINELS: usize = 3;
const QUORUM: usize = 2;
/// How long the setup, a promotion or a resync may take.
const SETTLE: Duration = Duration::from_secs(30);
/// How long a primary must not answer before a sentinel counts it down.
/// At 1 s, on a loaded machine, a sentinel counted a primary down that was
/// alive (just promoted and busy) and failed it over: the old primary
/// went on taking writes for seconds, and writes its other replica
/// confirmed were lost when that replica resynced from the new one.
const DOWN_AFTER_MS: u64 = 3000;

/// Three servers of the suite's default kind (`appendonly yes`,
/// `appendfsync always`, `modules` loaded on each: a replica needs an AOF
/// for `WAITAOF`, and the module to apply wire 6's writes) and three
/// sentinels watching them as [`SENTINEL_SERVICE`] with quorum 2, counting
/// a primary down after 3 s.
///
/// [`TestSentinelGroup::kill_primary`] `SIGKILL`s the primary and returns
/// once the sentinels have promoted a replica;
/// [`TestSentinelGroup::restart_killed`] starts the killed server again
/// (it loads its AOF) and makes it a replica of the new primary, as the
/// sentinels would on their next look at it. The sentinels are killed on
/// drop, then the servers stopped; when the thread is panicking the
/// sentinels' configs and logs are kept, and their directory printed
/// (always, with `EMQ_KEEP_SENTINELS` set).
#[derive(Debug)]
pub struct TestSentinelGroup {
    sentinels: Vec<SentinelProcess>,
    sentinel_ports: Vec<u16>,
    servers: Vec<TestServer>,
    primary: usize,
    killed: Option<usize>,
    dir: Option<TempDir>,
}

impl TestSentinelGroup {
    /// Starts the servers and the sentinels with `modules` loaded on every
    /// server, and waits (up to 30 s) until both replicas are synced and
    /// every sentinel sees them and a quorum. Panics, saying what did not
    /// happen.
    pub fn start(modules: Vec<PathBuf>) -> Self {
        let binary = default_binary();
        let servers: Vec<TestServer> = (0..SERVERS)
            .map(|_| {
                TestServer::spawn(
                    &binary,
                    true,
                    modules.clone(),
                    ["--appendfsync", "always", "--repl-diskless-sync-delay", "0"]
                        .map(String::from)
                        .to_vec(),
                )
                .unwrap_or_else(|e| panic!("TestSentinelGroup: {e}"))
            })
            .collect();
        let primary_port = servers[0].port().to_string();
        for replica in &servers[1..] {
            command(replica, &["REPLICAOF", "127.0.0.1", &primary_port]);
        }
        let dir = tempfile::Builder::new()
            .prefix("emq-test-sentinels-")
            .tempdir()
            .expect("a temporary directory for the sentinels");
        let sentinels: Vec<SentinelProcess> = (0..SENTINELS)
            .map(|n| start_sentinel(&dir, n, servers[0].port()))
            .collect();
        let mut group = Self {
            sentinel_ports: sentinels.iter().map(SentinelProcess::port).collect(),
            sentinels,
            servers,
            primary: 0,
            killed: None,
            dir: Some(dir),
        };
        group.wait_until_settled();
        group
    }

    /// `redis://127.0.0.1:PORT` of each sentinel.
    pub fn sentinel_urls(&self) -> Vec<String> {
        self.sentinel_ports
            .iter()
            .map(|port| format!("redis://127.0.0.1:{port}"))
            .collect()
    }

    /// The current primary (as of the last promotion this group waited for).
    pub fn primary(&self) -> &TestServer {
        &self.servers[self.primary]
    }

    /// The sentinels' configuration epoch: how many failovers they have
    /// made (the kills, and any they made on their own).
    pub fn config_epoch(&self) -> u64 {
        let reply = sentinel_value(
            self.sentinel_ports[0],
            &["SENTINEL", "MASTER", SENTINEL_SERVICE],
        )
        .unwrap_or_else(|e| panic!("TestSentinelGroup: SENTINEL MASTER: {e}"));
        let fields: std::collections::HashMap<String, String> =
            redis::from_redis_value(reply).expect("SENTINEL MASTER's fields");
        fields
            .get("config-epoch")
            .and_then(|epoch| epoch.parse().ok())
            .expect("a config-epoch")
    }

    /// All three servers, in the order they were started.
    pub fn servers(&self) -> &[TestServer] {
        &self.servers
    }

    /// `SIGKILL`s the current primary and returns once every sentinel
    /// names a replica as the primary and that server says it is one.
    /// Returns how long the promotion took. Panics when a killed server
    /// has not been restarted yet, or after 30 s.
    pub fn kill_primary(&mut self) -> Duration {
        assert!(
            self.killed.is_none(),
            "TestSentinelGroup: restart the killed server before killing another"
        );
        let victim = self.primary;
        let killed_at = Instant::now();
        self.servers[victim].kill();
        self.killed = Some(victim);
        let victim_port = self.servers[victim].port();
        let promoted = self.wait_until("a replica to be promoted", || {
            let named = self.named_primary()?;
            if named == victim_port {
                return Err(format!("the sentinels still name {named}"));
            }
            let server = self.server_on(named)?;
            let info = query_as(&self.servers[server], None, &["INFO", "replication"])?;
            if !info.contains("role:master") {
                return Err(format!("{named} is named but not yet a master"));
            }
            Ok(server)
        });
        self.primary = promoted;
        killed_at.elapsed()
    }

    /// Starts the killed server again (it loads its AOF), makes it a
    /// replica of the new primary (`REPLICAOF`, what the sentinels do on
    /// their next look at it) and waits until both replicas are synced and
    /// every sentinel sees them and a quorum. Does nothing when no server
    /// is down.
    pub fn restart_killed(&mut self) {
        let Some(killed) = self.killed.take() else {
            return;
        };
        let server = &mut self.servers[killed];
        server.start_again();
        let primary = self.servers[self.primary].port().to_string();
        command(&self.servers[killed], &["REPLICAOF", "127.0.0.1", &primary]);
        self.wait_until_settled();
    }

    /// Waits until every sentinel names one primary, that server says it
    /// is one, the two others follow it with their link up, and every
    /// sentinel sees both replicas fit to be promoted and has its quorum;
    /// then takes that server as the primary (the sentinels may have
    /// failed over again meanwhile, on their own: a sentinel whose view
    /// was late can win the next election).
    fn wait_until_settled(&mut self) {
        let primary = self.wait_until("the replicas to sync and the sentinels to agree", || {
            let primary_port = self.named_primary()?;
            let primary = self.server_on(primary_port)?;
            let info = query_as(&self.servers[primary], None, &["INFO", "replication"])?;
            if !info.contains("role:master") {
                return Err(format!("{primary_port} is named but not a master"));
            }
            for (n, server) in self.servers.iter().enumerate() {
                if n == primary {
                    continue;
                }
                let info = query_as(server, None, &["INFO", "replication"])?;
                let follows = info.contains(&format!("master_port:{primary_port}"))
                    && info.contains("master_link_status:up");
                if !follows {
                    return Err(format!(
                        "{} does not follow {primary_port} yet",
                        server.port()
                    ));
                }
            }
            for port in &self.sentinel_ports {
                let good = good_replicas(*port)?;
                if good < SERVERS - 1 {
                    return Err(format!("sentinel {port} sees {good} good replicas"));
                }
                sentinel_text(*port, &["SENTINEL", "CKQUORUM", SENTINEL_SERVICE])?;
            }
            Ok(primary)
        });
        self.primary = primary;
    }

    /// The port every sentinel names as the primary (an error while they
    /// disagree).
    fn named_primary(&self) -> Result<u16, String> {
        let mut named = None;
        for port in &self.sentinel_ports {
            let this = named_primary(*port)?;
            if named.is_some_and(|named| named != this) {
                return Err("the sentinels disagree".into());
            }
            named = Some(this);
        }
        named.ok_or_else(|| "no sentinel".into())
    }

    fn server_on(&self, port: u16) -> Result<usize, String> {
        self.servers
            .iter()
            .position(|server| server.port() == port)
            .ok_or_else(|| format!("the sentinels name {port}, none of the group's servers"))
    }

    #[track_caller]
    fn wait_until<T>(&self, what: &str, done: impl FnMut() -> Result<T, String>) -> T {
        Wait::new(&format!("TestSentinelGroup: {what}"), SETTLE)
            .every(SETUP_EVERY)
            .until(done)
    }
}

impl Drop for TestSentinelGroup {
    fn drop(&mut self) {
        self.sentinels.clear();
        if let Some(dir) = self.dir.take()
            && (std::thread::panicking() || std::env::var_os("EMQ_KEEP_SENTINELS").is_some())
        {
            eprintln!(
                "TestSentinelGroup: kept the sentinels' logs in {}",
                dir.keep().display()
            );
        }
    }
}

/// Sentinel `n`, watching the primary on `primary` with quorum 2; its
/// config and log in `dir`.
fn start_sentinel(dir: &TempDir, n: usize, primary: u16) -> SentinelProcess {
    SentinelProcess::start(dir.path(), &format!("sentinel-{n}"), |port| {
        format!(
            "port {port}\nbind 127.0.0.1\ndir {dir}\n\
             sentinel monitor {SENTINEL_SERVICE} 127.0.0.1 {primary} {QUORUM}\n\
             sentinel down-after-milliseconds {SENTINEL_SERVICE} {DOWN_AFTER_MS}\n\
             sentinel failover-timeout {SENTINEL_SERVICE} 3000\n\
             sentinel parallel-syncs {SENTINEL_SERVICE} 2\n",
            dir = dir.path().display(),
        )
    })
}

/// The port the sentinel on `port` names as the primary.
fn named_primary(port: u16) -> Result<u16, String> {
    let reply = sentinel_value(
        port,
        &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", SENTINEL_SERVICE],
    )?;
    let (_host, primary): (String, u16) =
        redis::from_redis_value(reply).map_err(|e| e.to_string())?;
    Ok(primary)
}

/// How many replicas the sentinel on `port` could promote: flags just
/// `slave` (not down, not disconnected), link to the primary up.
fn good_replicas(port: u16) -> Result<usize, String> {
    let reply = sentinel_value(port, &["SENTINEL", "REPLICAS", SENTINEL_SERVICE])?;
    let replicas: Vec<std::collections::HashMap<String, String>> =
        redis::from_redis_value(reply).map_err(|e| e.to_string())?;
    Ok(replicas
        .iter()
        .filter(|fields| {
            fields.get("flags").map(String::as_str) == Some("slave")
                && fields.get("master-link-status").map(String::as_str) == Some("ok")
        })
        .count())
}

fn sentinel_text(port: u16, args: &[&str]) -> Result<String, String> {
    Ok(format!("{:?}", sentinel_value(port, args)?))
}

/// One command on `server` that must succeed.
fn command(server: &TestServer, args: &[&str]) {
    query_as(server, None, args)
        .unwrap_or_else(|e| panic!("TestSentinelGroup: {}: {e}", args.join(" ")));
}
