//! [`TestSentinel`]: a primary, its replica, and one sentinel watching
//! them, on loopback.

use std::time::Duration;

use tempfile::TempDir;

use crate::TestServer;
use crate::sentinel_process::SentinelProcess;
use crate::wait::{SETUP_EVERY, Wait};

/// The service name the sentinel knows the primary by.
pub const SENTINEL_SERVICE: &str = "emq";
/// How long the setup and a failover may take. A sentinel learns of a
/// replica from the primary's `INFO`, and of its link from the replica's,
/// each asked every 10 s: a replica that synced just after one round is
/// seen good two rounds later, and a busy machine (three test threads a
/// core) once took longer than 20 s.
const SETTLE: Duration = Duration::from_secs(60);

/// A primary and a replica of the suite's default kind, and a sentinel
/// (quorum 1) that names the primary as [`SENTINEL_SERVICE`]. The sentinel
/// is killed on drop.
#[derive(Debug)]
pub struct TestSentinel {
    servers: [TestServer; 2],
    sentinel: SentinelProcess,
    /// The servers' password, when they ask for one.
    password: Option<String>,
    _dir: TempDir,
}

impl TestSentinel {
    /// Starts the three and waits (up to 20 s) until the replica has synced
    /// and the sentinel knows it. Panics, saying what did not happen.
    pub fn start() -> Self {
        Self::start_with(None)
    }

    /// Like [`TestSentinel::start`], with both servers asking for
    /// `password` (`requirepass`, and `masterauth` for the replica's link);
    /// the sentinel knows it (`auth-pass`) and asks for none itself. The
    /// password goes into URLs and a config line as it is: no spaces.
    pub fn with_password(password: &str) -> Self {
        Self::start_with(Some(password))
    }

    fn start_with(password: Option<&str>) -> Self {
        let (primary, replica) = (TestServer::start(), TestServer::start());
        command(
            &primary,
            &["CONFIG", "SET", "repl-diskless-sync-delay", "0"],
        );
        let mut auth_pass = String::new();
        if let Some(password) = password {
            for server in [&primary, &replica] {
                command(server, &["CONFIG", "SET", "masterauth", password]);
                command(server, &["CONFIG", "SET", "requirepass", password]);
            }
            auth_pass = format!("sentinel auth-pass {SENTINEL_SERVICE} {password}\n");
        }
        // Only now: a replica that began its handshake before the primary
        // asked for a password hung in it for a minute (Valkey 9.1).
        let primary_port = primary.port().to_string();
        query_as(
            &replica,
            password,
            &["REPLICAOF", "127.0.0.1", &primary_port],
        )
        .unwrap_or_else(|e| panic!("TestSentinel: REPLICAOF: {e}"));
        let dir = tempfile::Builder::new()
            .prefix("emq-test-sentinel-")
            .tempdir()
            .expect("a temporary directory for the sentinel");
        let sentinel = SentinelProcess::start(dir.path(), "sentinel", |port| {
            format!(
                "port {port}\nbind 127.0.0.1\ndir {dir}\n\
                 sentinel monitor {SENTINEL_SERVICE} 127.0.0.1 {primary_port} 1\n\
                 sentinel down-after-milliseconds {SENTINEL_SERVICE} 1000\n\
                 sentinel failover-timeout {SENTINEL_SERVICE} 5000\n{auth_pass}",
                dir = dir.path().display(),
            )
        });
        let mut this = Self {
            servers: [primary, replica],
            sentinel,
            password: password.map(str::to_string),
            _dir: dir,
        };
        let replica_port = this.servers[1].port().to_string();
        Wait::new(
            "TestSentinel: the sentinel to see the synced replica",
            SETTLE,
        )
        .every(SETUP_EVERY)
        .until(|| {
            this.sentinel.alive()?;
            let info = this.query(&this.servers[1], &["INFO", "replication"])?;
            if !info.contains("master_link_status:up") {
                return Err("the replica's link is not up".to_string());
            }
            this.sentinel_sees_a_good_replica(&replica_port)
        });
        this
    }

    /// `redis://127.0.0.1:PORT` of the sentinel.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.sentinel.port())
    }

    /// The server that started as the primary.
    pub fn first_primary(&self) -> &TestServer {
        &self.servers[0]
    }

    /// The server that started as the replica.
    pub fn first_replica(&self) -> &TestServer {
        &self.servers[1]
    }

    /// `SENTINEL FAILOVER`: the replica is promoted and the old primary
    /// made its replica (`REPLICAOF`, as the sentinel would on its next
    /// look); returns once the sentinel names the new primary and both
    /// servers say so. Panics after 20 s.
    pub fn fail_over(&self) {
        // The sentinel refuses (NOGOODSLAVE) until it has read the
        // replica's own INFO, which it may not have yet under load.
        let mut refused = String::new();
        self.wait_until("the sentinel to take SENTINEL FAILOVER", || {
            match self.sentinel_query(&["SENTINEL", "FAILOVER", SENTINEL_SERVICE]) {
                Ok(_) => true,
                Err(e) if e.contains("NOGOODSLAVE") => {
                    refused = e;
                    false
                }
                Err(e) => panic!("TestSentinel: SENTINEL FAILOVER: {e} (before: {refused})"),
            }
        });
        self.wait_for_promotion();
        let new = self.servers[1].port().to_string();
        // The sentinel turns the old primary into a replica on its next
        // look at it (up to 10 s away); do what it will do, now.
        self.query(&self.servers[0], &["REPLICAOF", "127.0.0.1", &new])
            .unwrap_or_else(|e| panic!("TestSentinel: REPLICAOF: {e}"));
        self.wait_until("the old primary to follow", || {
            self.query(&self.servers[0], &["INFO", "replication"])
                .is_ok_and(|info| info.contains("role:slave"))
        });
    }

    /// Stops the primary (`SHUTDOWN NOSAVE`, as a crash would leave it) and
    /// returns once the sentinel has promoted the replica (it counts the
    /// primary down after 1 s). Panics after 20 s.
    pub fn lose_primary(&self) {
        let _ = self.query(&self.servers[0], &["SHUTDOWN", "NOSAVE"]);
        self.wait_for_promotion();
    }

    /// Waits until the sentinel names the replica as the primary and the
    /// replica says it is one.
    fn wait_for_promotion(&self) {
        let new = self.servers[1].port().to_string();
        self.wait_until("the promotion", || {
            let named = self
                .sentinel_query(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", SENTINEL_SERVICE])
                .is_ok_and(|addr| addr.contains(&new));
            let promoted = self
                .query(&self.servers[1], &["INFO", "replication"])
                .is_ok_and(|info| info.contains("role:master"));
            named && promoted
        });
    }

    /// One command on `server`, with the servers' password if any.
    fn query(&self, server: &TestServer, args: &[&str]) -> Result<String, String> {
        query_as(server, self.password.as_deref(), args)
    }

    /// `Ok` when the sentinel lists the replica on `port` as one it could
    /// promote: flags just `slave` (not down, not disconnected) and its
    /// link to the primary up, as read from the replica's own INFO; else
    /// what it lists.
    fn sentinel_sees_a_good_replica(&self, port: &str) -> Result<(), String> {
        let reply = self
            .sentinel
            .value(&["SENTINEL", "REPLICAS", SENTINEL_SERVICE])?;
        let replicas: Vec<std::collections::HashMap<String, String>> =
            redis::from_redis_value(reply).map_err(|e| e.to_string())?;
        let good = replicas.iter().any(|fields| {
            let field = |name: &str| fields.get(name).map(String::as_str);
            field("port") == Some(port)
                && field("flags") == Some("slave")
                && field("master-link-status") == Some("ok")
        });
        if good {
            Ok(())
        } else {
            Err(format!("the sentinel lists {replicas:?}"))
        }
    }

    fn sentinel_query(&self, args: &[&str]) -> Result<String, String> {
        Ok(format!("{:?}", self.sentinel.value(args)?))
    }

    /// A [`Wait`] for the setup or a failover, within [`SETTLE`].
    #[track_caller]
    fn wait_until(&self, what: &str, done: impl FnMut() -> bool) {
        Wait::new(&format!("TestSentinel: {what}"), SETTLE)
            .every(SETUP_EVERY)
            .until(done);
    }
}

/// One command on `server` (with `password` when given), its reply as
/// text.
pub(crate) fn query_as(
    server: &TestServer,
    password: Option<&str>,
    args: &[&str],
) -> Result<String, String> {
    let url = match password {
        Some(password) => format!("redis://:{password}@127.0.0.1:{}", server.port()),
        None => server.url(),
    };
    let client = redis::Client::open(url).map_err(|e| e.to_string())?;
    let mut con = client.get_connection().map_err(|e| e.to_string())?;
    let reply: redis::Value = redis::cmd(args[0])
        .arg(&args[1..])
        .query(&mut con)
        .map_err(|e| e.to_string())?;
    Ok(match reply {
        redis::Value::BulkString(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        redis::Value::VerbatimString { text, .. } => text,
        other => format!("{other:?}"),
    })
}

/// One command on `server` that must succeed.
fn command(server: &TestServer, args: &[&str]) {
    query_as(server, None, args)
        .unwrap_or_else(|e| panic!("TestSentinel: {}: {e}", args.join(" ")));
}
