//! Durability levels (docs/protocol.md, Durability) on real servers, both
//! wires: what each level waits for, which controls wait, a wait that
//! falls short, and the servers that cannot give a level, refused at
//! connect.
//!
//! Not on Redis 7.0: the local level needs WAITAOF (Redis ≥ 7.2); the two
//! cases about Redis 7.0 start its server themselves, in every pass.

use super::common::default_binary;
use echomq::{Connector, Durability, Error, JobContext, JobError, JobId, NewJob, Wire, Worker};
use echomq_protocol::Transition;
use echomq_testkit::{ServerBinary, TestCluster, TestServer, case, module_path, wait_for};
use serde_json::{Value, json};
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(30);

/// A server of the suite's kind with the module loaded (wire 6 needs it
/// on the replica too: the module's writes replicate as its own command).
fn server(appendonly: bool) -> TestServer {
    TestServer::with_config(default_binary(), appendonly, vec![module_path()])
}

/// A replica of `primary` with an AOF fsynced at every write (so that its
/// confirmations come at once), caught up when this returns.
async fn replica_of(primary: &TestServer) -> TestServer {
    let replica = server(true);
    let mut link = replica.connection().await;
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("appendfsync")
        .arg("always")
        .query_async(&mut link)
        .await
        .unwrap();
    follow(&replica, primary).await;
    replica
}

/// Makes `replica` a replica of `primary`, and returns once it is online.
async fn follow(replica: &TestServer, primary: &TestServer) {
    let _: () = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(primary.port())
        .query_async(&mut replica.connection().await)
        .await
        .unwrap();
    wait_for("the replica to be online", BOUND, || async {
        info(primary, "replication").await.contains("state=online")
    })
    .await;
}

/// Enqueues `n` jobs on `q` (queue `replicated`) at its connector's
/// level, and checks that each is on the replica `on_replica` reaches when
/// its enqueue returns.
async fn enqueue_each_found_on(
    q: &echomq::Queue<Value>,
    n: u32,
    on_replica: &mut redis::aio::MultiplexedConnection,
) {
    for n in 0..n {
        let id = format!("j{n}");
        q.enqueue(NewJob::new(json!(n)).id(&id).unwrap())
            .await
            .unwrap();
        let state: Option<String> = redis::cmd("HGET")
            .arg(format!("emq:{{replicated}}:job:{id}"))
            .arg("state")
            .query_async(on_replica)
            .await
            .unwrap();
        assert_eq!(state.as_deref(), Some("pending"), "job {id} on the replica");
    }
}

/// `INFO section` of `server`.
async fn info(server: &TestServer, section: &str) -> String {
    redis::cmd("INFO")
        .arg(section)
        .query_async(&mut server.connection().await)
        .await
        .unwrap()
}

/// A primary, its replica, and a connector to the primary on `wire` at
/// `replicas:1` with waits of `timeout`.
async fn replicated(wire: Wire, timeout: Duration) -> (TestServer, TestServer, Connector) {
    let primary = server(false);
    let replica = replica_of(&primary).await;
    let level = Durability::Replicas { n: 1, timeout };
    let connector = connect(&primary, wire, level).await.unwrap();
    (primary, replica, connector)
}

async fn connect(server: &TestServer, wire: Wire, level: Durability) -> echomq::Result<Connector> {
    Connector::builder(server.url())
        .wire(wire)
        .durability(level)
        .connect()
        .await
}

/// How many times `server` ran `command` (`INFO commandstats` names the
/// server's own commands in lower case, a module's as registered).
async fn calls(server: &TestServer, command: &str) -> u64 {
    let info = info(server, "commandstats").await;
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|line| line.strip_prefix(prefix.as_str()))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

#[case(wire)]
async fn local_waits_once_per_durable_write_and_never_for_a_claim(wire: Wire) {
    let server = server(true);
    let connector = connect(&server, wire, Durability::Local).await.unwrap();
    assert_eq!(connector.durability(), Durability::Local);
    let q = connector.queue::<Value>("local").unwrap();
    // The first call on wire 4 may meet a server without the library: the
    // wait behind the refused call is sent too, then the call again.
    q.jobs().get(&JobId::new("none").unwrap()).await.unwrap();
    let before = calls(&server, "waitaof").await;
    let waits = || async { calls(&server, "waitaof").await - before };
    q.enqueue(NewJob::new(json!(1)).id("a").unwrap())
        .await
        .unwrap();
    assert_eq!(waits().await, 1, "the enqueue waits");
    let claimed = q
        .claim_one("w", Duration::from_secs(60))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(waits().await, 1, "a claim does not wait");
    let job = q.jobs().get(&claimed.id).await.unwrap().unwrap();
    assert_eq!(waits().await, 1, "a read does not wait");
    q.complete(&job.id, claimed.token, &json!("done"))
        .await
        .unwrap();
    assert_eq!(waits().await, 2, "the completion waits");
}

#[case(wire)]
async fn local_on_a_server_without_aof_is_refused_at_connect(wire: Wire) {
    let server = server(false);
    let err = connect(&server, wire, Durability::Local).await.unwrap_err();
    assert!(
        matches!(&err, Error::DurabilityUnavailable { level: Durability::Local, reason } if reason.contains("appendonly is off")),
        "{err}"
    );
    assert_eq!(calls(&server, "waitaof").await, 0);
}

#[case(wire)]
async fn replicas_with_too_few_replicas_online_are_refused_at_connect(wire: Wire) {
    let primary = server(false);
    let _replica = replica_of(&primary).await;
    let err = connect(&primary, wire, Durability::replicas(2))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains(
            "durability replicas:2 is not available on this server: 1 replica(s) online, 2 wanted"
        ),
        "{err}"
    );
    connect(&primary, wire, Durability::replicas(1))
        .await
        .unwrap();
}

#[case(wire)]
async fn an_enqueue_at_replicas_1_is_on_the_replica_when_it_returns(wire: Wire) {
    let primary = server(false);
    let replica = replica_of(&primary).await;
    let connector = connect(&primary, wire, Durability::replicas(1))
        .await
        .unwrap();
    let q = connector.queue::<Value>("replicated").unwrap();
    let mut on_replica = replica.connection().await;
    enqueue_each_found_on(&q, 20, &mut on_replica).await;
}

#[case(wire)]
async fn an_enqueue_at_replicas_1_on_a_cluster_is_on_its_slot_s_replica_when_it_returns(
    wire: Wire,
) {
    let cluster = TestCluster::start_for_failover(3, vec![module_path()]);
    let connector = Connector::cluster(cluster.all_urls())
        .wire(wire)
        .durability(Durability::replicas(1))
        .connect()
        .await
        .unwrap();
    let q = connector.queue::<Value>("replicated").unwrap();
    // The first call on wire 4 may meet a node without the library.
    q.jobs().get(&JobId::new("none").unwrap()).await.unwrap();
    let master = cluster.master_of("{replicated}");
    let waits_before = calls(master, "waitaof").await;
    let master = master.port();
    let mut replica = None;
    for server in cluster.replicas() {
        let role: Vec<redis::Value> = redis::cmd("ROLE")
            .query_async(&mut server.connection().await)
            .await
            .unwrap();
        if role.get(2) == Some(&redis::Value::Int(i64::from(master))) {
            replica = Some(server);
        }
    }
    let replica = replica.expect("the master of the queue's slot has a replica");
    let mut on_replica = replica.connection().await;
    let _: () = redis::cmd("READONLY")
        .query_async(&mut on_replica)
        .await
        .unwrap();
    enqueue_each_found_on(&q, 10, &mut on_replica).await;
    let master = cluster.master_of("{replicated}");
    let waits = calls(master, "waitaof").await - waits_before;
    assert_eq!(waits, 10, "one wait per enqueue, on the slot's master");
}

#[case(wire)]
async fn a_wait_that_falls_short_is_not_durable_and_the_write_stays_applied(wire: Wire) {
    let (_primary, replica, connector) = replicated(wire, Duration::from_millis(300)).await;
    let q = connector.queue::<Value>("short").unwrap();
    let stopped = Stopped::new(&replica);
    let err = q
        .enqueue(NewJob::new(json!(1)).id("lost-or-not").unwrap())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotDurable {
                acked: 0,
                wanted: 1,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("0 of 1 replicas confirmed it within 300 ms"),
        "{err}"
    );
    let job = q
        .jobs()
        .get(&JobId::new("lost-or-not").unwrap())
        .await
        .unwrap();
    assert!(job.is_some(), "the write was applied on the primary");
    drop(stopped);
    let on_replica = replica.connection().await;
    wait_for("the replica to hold the job", BOUND, || async {
        let exists: bool = redis::cmd("EXISTS")
            .arg("emq:{short}:job:lost-or-not")
            .query_async(&mut on_replica.clone())
            .await
            .unwrap();
        exists
    })
    .await;
    // Sent again once the replica is back: the job exists, nothing changes,
    // and this time the wait confirms it.
    let again = q
        .enqueue(NewJob::new(json!(1)).id("lost-or-not").unwrap())
        .await
        .unwrap();
    assert!(!again.created);
}

#[case(wire)]
async fn a_claim_and_a_read_do_not_queue_behind_a_durable_write_s_wait(wire: Wire) {
    let (primary, replica, connector) = replicated(wire, Duration::from_secs(5)).await;
    let q = connector.queue::<Value>("apart").unwrap();
    q.jobs().get(&JobId::new("none").unwrap()).await.unwrap();
    let stopped = Stopped::new(&replica);
    let enqueue = tokio::spawn({
        let q = q.clone();
        async move { q.enqueue(NewJob::new(json!(1)).id("waits").unwrap()).await }
    });
    wait_for(
        "the enqueue's wait to block on the primary",
        BOUND,
        || async {
            info(&primary, "clients")
                .await
                .contains("blocked_clients:1")
        },
    )
    .await;
    // Sent on the connector's shared connection, these would wait behind
    // the blocked WAIT until its 5 s ran out, and the enqueue would then
    // answer NotDurable (0 of 1 replicas).
    let id = JobId::new("waits").unwrap();
    assert!(q.jobs().get(&id).await.unwrap().is_some(), "the read");
    let claimed = q.claim_one("w", Duration::from_secs(60)).await.unwrap();
    assert_eq!(claimed.map(|job| job.id), Some(id), "the claim");
    drop(stopped);
    let enqueued = enqueue
        .await
        .unwrap()
        .expect("confirmed once the replica runs");
    assert!(enqueued.created);
}

#[case(wire)]
async fn a_worker_waits_once_per_command_it_sends_never_once_per_job(wire: Wire) {
    let primary = server(false);
    let _replica = replica_of(&primary).await;
    let connector = connect(&primary, wire, Durability::replicas(1))
        .await
        .unwrap();
    let q = connector.queue::<Value>("outcomes").unwrap();
    q.enqueue_bulk((0..200).map(|n| json!(n))).await.unwrap();
    let worker = Worker::new(q.clone(), |job: JobContext<Value>| async move {
        Ok::<_, JobError>(job.payload)
    })
    .concurrency(16)
    .start();
    wait_for("200 completions", BOUND, || async {
        q.admin().counts().await.unwrap().completed == 200
    })
    .await;
    worker.shutdown(BOUND).await;
    let waits = calls(&primary, "waitaof").await;
    if wire == Wire::Native {
        // Every command of a durable control waited, once; none else did.
        let mut durable = 0;
        for transition in Transition::ALL {
            if transition.control().durable {
                for (_, command) in transition.control().commands() {
                    durable += calls(&primary, command.native).await;
                }
            }
        }
        // Several in one pipeline share one wait.
        assert!(waits <= durable, "{waits} waits for {durable} commands");
    }
    assert!(waits >= 1);
    assert!(
        waits < 200,
        "{waits} waits for 200 jobs: one per batch, not per job"
    );
}

/// A server stopped (`SIGSTOP`) until this is dropped (`SIGCONT`).
struct Stopped(u32);

impl Stopped {
    fn new(server: &TestServer) -> Self {
        signal(server.pid(), "-STOP");
        Stopped(server.pid())
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        signal(self.0, "-CONT");
    }
}

fn signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill")
        .arg(signal)
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success(), "kill {signal} {pid}");
}

#[tokio::test]
async fn local_on_redis_7_0_is_refused_naming_waitaof() {
    let binary = ServerBinary::redis().unwrap();
    let server = TestServer::with_config(binary, true, Vec::new());
    let info = info(&server, "server").await;
    let version = info
        .lines()
        .find_map(|line| line.strip_prefix("redis_version:"))
        .unwrap()
        .trim()
        .to_string();
    let result = connect(&server, Wire::Script, Durability::Local).await;
    if version.starts_with("7.0") || version.starts_with("7.1") {
        let err = result.unwrap_err().to_string();
        assert!(
            err.contains(&format!("redis {version} has no WAITAOF")),
            "{err}"
        );
    } else {
        result.unwrap();
    }
}

#[tokio::test]
async fn replicas_on_a_server_without_waitaof_wait_with_wait() {
    let binary = ServerBinary::redis().unwrap();
    let primary = TestServer::with_config(binary.clone(), false, Vec::new());
    let replica = TestServer::with_config(binary, false, Vec::new());
    follow(&replica, &primary).await;
    let connector = connect(&primary, Wire::Script, Durability::replicas(1))
        .await
        .unwrap();
    let q = connector.queue::<Value>("seven").unwrap();
    // The first call may meet a server without the library (see above).
    q.enqueue(NewJob::new(json!(0))).await.unwrap();
    let waits = async || {
        (
            calls(&primary, "wait").await,
            calls(&primary, "waitaof").await,
        )
    };
    let before = waits().await;
    q.enqueue(NewJob::new(json!(1))).await.unwrap();
    let after = waits().await;
    let (wait, waitaof) = (after.0 - before.0, after.1 - before.1);
    let info = info(&primary, "server").await;
    if info.contains("redis_version:7.0") {
        assert_eq!((wait, waitaof), (1, 0));
    } else {
        assert_eq!((wait, waitaof), (0, 1));
    }
}
