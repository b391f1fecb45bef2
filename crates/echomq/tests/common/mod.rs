//! What every integration test shares: a real server (or cluster), a
//! connector to it, and the state invariant check.
#![allow(dead_code)]

use echomq::{Connector, JobId, Queue, TlsOptions, Wire};
use echomq_server::ServerBinary;
use echomq_testkit::{
    ClientAuth, EndpointProxy, TestCluster, TestServer, TlsServer, invariant, module_path, wait_for,
};
use serde_json::{Value, json};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

pub(crate) mod traces;

/// A server or cluster with a connector to it.
pub(crate) struct Harness {
    pub connector: Connector,
    urls: Vec<String>,
    _server: Option<TestServer>,
    _cluster: Option<TestCluster>,
    _tls: Option<TlsServer>,
}

impl Harness {
    /// A server of the suite's default kind (Valkey, or Redis with EMQ_TEST_SERVER=redis).
    pub(crate) async fn server() -> Self {
        let server = TestServer::start();
        let connector = Connector::connect(server.url()).await.expect("connect");
        Self::single(connector, server.url(), server)
    }

    /// A server of the suite's default kind with the EchoMQ module loaded,
    /// and a connector on wire 6 (`Wire::Native`).
    pub(crate) async fn native() -> Self {
        let server = TestServer::with_config(default_binary(), false, vec![module_path()]);
        let connector = Connector::builder(server.url())
            .wire(Wire::Native)
            .connect()
            .await
            .expect("connect on wire 6");
        Self::single(connector, server.url(), server)
    }

    /// A server of the suite's default kind that asks for a password
    /// (`requirepass`, set once it runs), and a connector and URLs that
    /// carry it (`redis://:<password>@…`).
    pub(crate) async fn with_password(password: &str) -> Self {
        let server = TestServer::start();
        let _: () = redis::cmd("CONFIG")
            .arg(&["SET", "requirepass", password])
            .query_async(&mut server.connection().await)
            .await
            .expect("CONFIG SET requirepass");
        let url = format!("redis://:{password}@127.0.0.1:{}", server.port());
        let connector = Connector::connect(url.clone()).await.expect("connect");
        Self::single(connector, url, server)
    }

    /// A server speaking TLS (Debian's Redis: see [`TlsServer`]) and a
    /// connector to it by `rediss://` that trusts the test CA, presenting
    /// the test client certificate when the server asks for one. The raw
    /// checks go to the same server over plain TCP.
    pub(crate) async fn tls(client_auth: ClientAuth) -> Self {
        let server = TlsServer::start(client_auth);
        let certs = server.certificates();
        let mut tls = TlsOptions::new().root_certificates(certs.ca.clone());
        if client_auth == ClientAuth::Required {
            tls = tls.client_certificate(certs.client_cert.clone(), certs.client_key.clone());
        }
        let connector = Connector::builder(server.url())
            .tls(tls)
            .connect()
            .await
            .expect("connect over TLS");
        Self {
            connector,
            urls: vec![server.plain().url()],
            _server: None,
            _cluster: None,
            _tls: Some(server),
        }
    }

    /// A server of the suite's default kind listening on a Unix socket too,
    /// and a connector to it by `unix://`. The raw checks go over TCP.
    pub(crate) async fn unix_socket() -> Self {
        let server = TestServer::with_unix_socket();
        let connector = Connector::connect(server.unix_url())
            .await
            .expect("connect by the Unix socket");
        Self::single(connector, server.url(), server)
    }

    /// One server, reached by `connector`; the raw checks go to `url`.
    fn single(connector: Connector, url: String, server: TestServer) -> Self {
        Self {
            connector,
            urls: vec![url],
            _server: Some(server),
            _cluster: None,
            _tls: None,
        }
    }

    /// A 3-master cluster speaking TLS (Debian's Redis), and a connector
    /// to it by its `rediss://` ports that trusts the test CA. The raw
    /// checks go to the nodes' plain ports.
    pub(crate) async fn tls_cluster() -> Self {
        let cluster = TestCluster::start_tls(3);
        let ca = cluster.certificates().expect("a TLS cluster").ca.clone();
        let connector = Connector::cluster(cluster.tls_urls())
            .tls(TlsOptions::new().root_certificates(ca))
            .connect()
            .await
            .expect("connect to the cluster over TLS");
        Self::of_cluster(connector, cluster)
    }

    /// A cluster, reached by `connector`; the raw checks go to its nodes'
    /// plain ports.
    fn of_cluster(connector: Connector, cluster: TestCluster) -> Self {
        Self {
            connector,
            urls: cluster.urls(),
            _server: None,
            _cluster: Some(cluster),
            _tls: None,
        }
    }

    /// A 3-master cluster with one replica per master
    /// ([`Harness::test_cluster`] names them).
    pub(crate) async fn cluster_with_replicas() -> Self {
        Self::connected_to(TestCluster::start_with_replicas(3)).await
    }

    /// `cluster`, and a connector to its masters.
    async fn connected_to(cluster: TestCluster) -> Self {
        let connector = Connector::cluster(cluster.urls())
            .connect()
            .await
            .expect("connect to cluster");
        Self::of_cluster(connector, cluster)
    }

    /// A 3-master cluster with one replica per master, for failovers
    /// ([`TestCluster::start_for_failover`]: the module on every node), and
    /// a connector on `wire` that knows the masters only.
    pub(crate) async fn failover_cluster_on(wire: Wire) -> Self {
        let cluster = TestCluster::start_for_failover(3, vec![module_path()]);
        let connector = Connector::cluster(cluster.urls())
            .wire(wire)
            .connect()
            .await
            .expect("connect to the cluster");
        Self::of_cluster(connector, cluster)
    }

    /// The cluster, for a harness made with one.
    pub(crate) fn test_cluster(&self) -> &TestCluster {
        self._cluster.as_ref().expect("a cluster harness")
    }

    /// A 3-master cluster.
    pub(crate) async fn cluster() -> Self {
        Self::connected_to(TestCluster::start(3)).await
    }

    /// Restarts the one server (`SHUTDOWN SAVE`, then the same port, data
    /// and modules): every client connection is closed.
    pub(crate) fn restart(&mut self) {
        self._server
            .as_mut()
            .expect("a restart needs a single server")
            .restart();
    }

    /// Creates (or resets) the ACL user `name`, password `pw`, with `rules`
    /// on every server, and a connector as it on the harness's wire under
    /// `prefix`.
    pub(crate) async fn as_user(&self, name: &str, rules: &str, prefix: &str) -> Connector {
        for url in &self.urls {
            let client = redis::Client::open(url.as_str()).unwrap();
            let mut conn = client.get_multiplexed_async_connection().await.unwrap();
            let setuser = echomq_testkit::acl::setuser(name, rules);
            let _: () = setuser
                .query_async(&mut conn)
                .await
                .unwrap_or_else(|err| panic!("ACL SETUSER {name} {rules}: {err}"));
        }
        let urls: Vec<String> = self
            .urls
            .iter()
            .map(|url| url.replacen("redis://", &format!("redis://{name}:pw@"), 1))
            .collect();
        let builder = match &self._cluster {
            Some(_) => Connector::cluster(urls),
            None => Connector::builder(urls[0].clone()),
        };
        builder
            .prefix(prefix)
            .wire(self.connector.wire())
            .connect()
            .await
            .unwrap_or_else(|err| panic!("connect as {name}: {err}"))
    }

    /// The URLs of every server.
    pub(crate) fn urls(&self) -> &[String] {
        &self.urls
    }

    /// A queue of `T` named `name`.
    pub(crate) fn queue<T>(&self, name: &str) -> Queue<T> {
        self.connector.queue(name).expect("valid queue name")
    }

    /// Asserts the state invariant of `docs/protocol.md` for `queue`.
    pub(crate) async fn check<T>(&self, queue: &Queue<T>) {
        invariant::assert_invariant(&self.urls, queue.keys()).await;
    }

    /// A plain connection to the server that holds `queue` (for raw checks).
    pub(crate) async fn raw<T>(&self, queue: &Queue<T>) -> redis::aio::MultiplexedConnection {
        for url in &self.urls {
            let client = redis::Client::open(url.as_str()).unwrap();
            let mut conn = client.get_multiplexed_async_connection().await.unwrap();
            let probe: redis::RedisResult<u64> = redis::cmd("ZCARD")
                .arg(queue.keys().pending())
                .query_async(&mut conn)
                .await;
            if probe.is_ok() {
                return conn;
            }
        }
        panic!("no server holds {}", queue.keys().base());
    }

    /// Subscribers of `queue`'s cancel channel on the server that holds it.
    pub(crate) async fn cancel_subscribers<T>(&self, queue: &Queue<T>) -> u64 {
        cancel_subscribers_via(&mut self.raw(queue).await, queue)
            .await
            .unwrap()
    }

    /// How many of `queue`'s pending jobs each of its two keys holds: the
    /// list `fifo` (`LLEN`) and the sorted set `pending` (`ZCARD`).
    pub(crate) async fn fifo_and_pending<T>(&self, queue: &Queue<T>) -> (u64, u64) {
        redis::pipe()
            .cmd("LLEN")
            .arg(queue.keys().fifo())
            .cmd("ZCARD")
            .arg(queue.keys().pending())
            .query_async(&mut self.raw(queue).await)
            .await
            .unwrap()
    }
}

/// `HGET <job> state` on `server`, a cluster node read as a replica may
/// be (`READONLY` first); `None` when it does not hold the job.
pub(crate) async fn job_state_on(server: &TestServer, key: &str) -> Option<String> {
    job_state_at(&mut server.connection().await, key).await
}

/// `HGET <job> state` over `con` (after `READONLY`, for a cluster replica;
/// elsewhere that is refused, and ignored); `None` when the job is not
/// there or the server cannot answer.
pub(crate) async fn job_state_at(
    con: &mut redis::aio::MultiplexedConnection,
    key: &str,
) -> Option<String> {
    let _: redis::RedisResult<()> = redis::cmd("READONLY").query_async(con).await;
    redis::cmd("HGET")
        .arg(key)
        .arg("state")
        .query_async(con)
        .await
        .unwrap_or(None)
}

/// A job hash's `field`, read raw.
pub(crate) async fn job_field<T>(
    h: &Harness,
    q: &Queue<T>,
    id: &echomq::JobId,
    field: &str,
) -> Option<String> {
    redis::cmd("HGET")
        .arg(q.keys().job(id))
        .arg(field)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// A field of the queue's meta hash (a mark, a setting), read raw.
pub(crate) async fn meta_field<T>(h: &Harness, q: &Queue<T>, field: &str) -> Option<String> {
    redis::cmd("HGET")
        .arg(q.keys().meta())
        .arg(field)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// Waits (up to 30 s) until the server behind `con` has marked every job
/// of `ids` waited for: each wait's subscription is open and its `OUTCOME`
/// answered. `con` should have no response timeout: thousands of marks
/// are read in one pipeline, behind the waits' own calls.
pub(crate) async fn marked_waited<T>(
    con: redis::aio::MultiplexedConnection,
    q: &Queue<T>,
    ids: &[JobId],
) {
    echomq_testkit::Wait::new(
        "the waits to be marked on their jobs",
        Duration::from_secs(30),
    )
    .every(Duration::from_millis(50))
    .until_async(|| {
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("HGET").arg(q.keys().job(id)).arg("waited");
        }
        let mut con = con.clone();
        async move {
            let marks: Vec<Option<String>> = pipe.query_async(&mut con).await.unwrap();
            match marks.iter().filter(|m| m.as_deref() != Some("1")).count() {
                0 => Ok(()),
                unmarked => Err(format!("{unmarked} not marked")),
            }
        }
    })
    .await;
}

/// Whether `server` says `role:master`.
pub(crate) async fn is_master(server: &TestServer) -> bool {
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query_async(&mut server.connection().await)
        .await
        .unwrap_or_default();
    info.contains("role:master")
}

/// Enqueues a job, trying again while the calls fail (a server in the
/// middle of a failover); returns its id.
pub(crate) async fn enqueue_when_taken(q: &Queue<Value>, payload: &str) -> JobId {
    let landed = std::cell::RefCell::new(None);
    let cell = &landed;
    wait_for(
        "an enqueue to be taken",
        Duration::from_secs(10),
        move || async move {
            if cell.borrow().is_none() {
                let job = q.enqueue(json!(payload)).await.ok();
                *cell.borrow_mut() = job.map(|job| job.id);
            }
            cell.borrow().is_some()
        },
    )
    .await;
    landed.into_inner().expect("an enqueue landed")
}

/// Fails over the master that owns `queue` (the one holding `job`) to its
/// replica (`CLUSTER FAILOVER`, once the replica holds the job); returns
/// the replica, master once this returns.
pub(crate) async fn fail_over<'h, T>(
    h: &'h Harness,
    queue: &Queue<T>,
    job: &JobId,
) -> &'h TestServer {
    let bound = Duration::from_secs(10);
    let key = queue.keys().job(job);
    let cluster = h.test_cluster();
    let mut owner = None;
    for (i, master) in cluster.nodes().iter().enumerate() {
        if job_state_on(master, &key).await.is_some() {
            owner = Some(i);
        }
    }
    let replica = &cluster.replicas()[owner.expect("a master holds the job")];
    wait_for("the replica to hold the job", bound, || async {
        job_state_on(replica, &key).await.is_some()
    })
    .await;
    // A manual failover gives up after 5 s when the cluster is slow to
    // agree (a loaded machine): ask again every 6 s until the replica has
    // taken over, for up to 30 s.
    let asked: Cell<Option<Instant>> = Cell::new(None);
    let asked = &asked;
    wait_for(
        "the replica to take over",
        Duration::from_secs(30),
        move || async move {
            if asked
                .get()
                .is_none_or(|at| at.elapsed() >= Duration::from_secs(6))
            {
                let _: () = redis::cmd("CLUSTER")
                    .arg("FAILOVER")
                    .query_async(&mut replica.connection().await)
                    .await
                    .unwrap();
                asked.set(Some(Instant::now()));
            }
            is_master(replica).await
        },
    )
    .await;
    replica
}

/// Two servers behind one endpoint ([`EndpointProxy`]): `old` the
/// primary, `new` the one that takes over in [`FailoverPair::fail_over`].
pub(crate) struct FailoverPair {
    pub old: TestServer,
    pub new: TestServer,
    pub endpoint: EndpointProxy,
}

impl FailoverPair {
    /// Both servers of the suite's default kind (with the module on wire
    /// 6), the endpoint on `old`.
    pub(crate) fn start(wire: Wire) -> Self {
        let start = || match wire {
            Wire::Script => TestServer::start(),
            Wire::Native => TestServer::with_config(default_binary(), false, vec![module_path()]),
        };
        let (old, new) = (start(), start());
        let endpoint = EndpointProxy::start(old.port());
        Self { old, new, endpoint }
    }

    /// A connector to the endpoint.
    pub(crate) async fn connector(&self, wire: Wire) -> Connector {
        Connector::builder(self.endpoint.url())
            .wire(wire)
            .connect()
            .await
            .expect("connect to the endpoint")
    }

    /// The failover: `new` copies `old` until it holds `job`, takes over,
    /// the endpoint switches to it, and `old` follows it as a replica.
    pub(crate) async fn fail_over<T>(&self, queue: &Queue<T>, job: &JobId) {
        // A primary waits 5 s for more replicas before a diskless sync.
        let _: () = redis::cmd("CONFIG")
            .arg(&["SET", "repl-diskless-sync-delay", "0"])
            .query_async(&mut self.old.connection().await)
            .await
            .unwrap();
        replica_of(&self.new, Some(self.old.port())).await;
        let key = queue.keys().job(job);
        wait_for(
            "the new server to hold the job",
            Duration::from_secs(10),
            || async { job_state_on(&self.new, &key).await.is_some() },
        )
        .await;
        replica_of(&self.new, None).await;
        self.endpoint.switch_to(self.new.port());
        replica_of(&self.old, Some(self.new.port())).await;
    }
}

/// `REPLICAOF 127.0.0.1 port` (or `NO ONE` for `None`) on `server`.
async fn replica_of(server: &TestServer, primary: Option<u16>) {
    let port = primary.map(|port| port.to_string());
    let args = match &port {
        Some(port) => vec!["127.0.0.1", port.as_str()],
        None => vec!["NO", "ONE"],
    };
    let _: () = redis::cmd("REPLICAOF")
        .arg(&args)
        .query_async(&mut server.connection().await)
        .await
        .unwrap();
}

/// The server binary of the suite's default kind: Redis with
/// `EMQ_TEST_SERVER=redis`, else Valkey.
pub(crate) fn default_binary() -> ServerBinary {
    let redis = std::env::var(echomq_testkit::TEST_SERVER_ENV)
        .is_ok_and(|v| v.eq_ignore_ascii_case("redis"));
    let binary = if redis {
        ServerBinary::redis()
    } else {
        ServerBinary::locate()
    };
    binary.unwrap_or_else(|e| panic!("no server binary: {e}"))
}

/// An error reply as its text: code, then detail.
pub(crate) fn error_text(err: &redis::RedisError) -> String {
    format!(
        "{} {}",
        err.code().unwrap_or("?"),
        err.detail().unwrap_or("")
    )
    .trim()
    .to_string()
}

/// The reason of a refused transition; panics on any other error.
pub(crate) fn refusal(err: echomq::Error) -> echomq::Refusal {
    match err {
        echomq::Error::Refused(refused) => refused.reason,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// Clients blocked on the server that holds `queue` (idle workers wait
/// there on the signal key).
pub(crate) async fn blocked_clients<T>(h: &Harness, queue: &Queue<T>) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("clients")
        .query_async(&mut h.raw(queue).await)
        .await
        .unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix("blocked_clients:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// A job's state, `None` when absent.
pub(crate) async fn state_of<T>(queue: &Queue<T>, id: &echomq::JobId) -> Option<echomq::JobState> {
    queue
        .jobs()
        .get(id)
        .await
        .unwrap()
        .map(|record| record.state)
}

/// The server's clock, in ms.
pub(crate) async fn server_now<T>(h: &Harness, queue: &Queue<T>) -> u64 {
    let (secs, micros): (u64, u64) = redis::cmd("TIME")
        .query_async(&mut h.raw(queue).await)
        .await
        .unwrap();
    secs * 1000 + micros / 1000
}

/// Every event of a queue, each as its flat [field, value…] list, in order
/// (an entry of several jobs is one event per job, as a reader sees it).
pub(crate) async fn events<T>(h: &Harness, queue: &Queue<T>) -> Vec<Vec<String>> {
    event_entries(h, queue)
        .await
        .into_iter()
        .map(|(_, fields)| fields)
        .collect()
}

/// Every event of a queue, in order: the stream id of its entry, and its
/// flat [field, value…] list (an entry of several jobs split per job).
pub(crate) async fn event_entries<T>(h: &Harness, queue: &Queue<T>) -> Vec<(String, Vec<String>)> {
    raw_event_entries(h, queue)
        .await
        .into_iter()
        .flat_map(|(id, fields)| {
            per_job(fields)
                .into_iter()
                .map(move |fields| (id.clone(), fields))
        })
        .collect()
}

/// An entry's events: `event`, its name, then each job's `id` and fields,
/// one list per job, each starting `event`, name (`docs/protocol.md`
/// "Events"); an entry with no `id` as it is.
fn per_job(fields: Vec<String>) -> Vec<Vec<String>> {
    let head = fields[..2].to_vec();
    let mut jobs: Vec<Vec<String>> = vec![head.clone()];
    for pair in fields[2..].chunks(2) {
        if pair[0] == "id" && jobs.last().unwrap().len() > 2 {
            jobs.push(head.clone());
        }
        jobs.last_mut().unwrap().extend_from_slice(pair);
    }
    jobs
}

/// Replaces the key `key` of `queue`'s server with a string: a key of
/// another type for a command to meet.
pub(crate) async fn set_a_string<T>(h: &Harness, queue: &Queue<T>, key: &str) {
    let _: () = redis::pipe()
        .cmd("DEL")
        .arg(key)
        .ignore()
        .cmd("SET")
        .arg(key)
        .arg("not of its type")
        .ignore()
        .query_async(&mut h.raw(queue).await)
        .await
        .unwrap();
}

/// Each entry of a queue's events stream, in order, as its event's name
/// and the ids of the jobs it carries.
pub(crate) async fn entries_by_name<T>(
    h: &Harness,
    queue: &Queue<T>,
) -> Vec<(String, Vec<String>)> {
    raw_event_entries(h, queue)
        .await
        .into_iter()
        .map(|(_, fields)| {
            let ids = fields
                .chunks(2)
                .filter(|pair| pair[0] == "id")
                .map(|pair| pair[1].clone())
                .collect();
            (fields[1].clone(), ids)
        })
        .collect()
}

/// Every entry of a queue's events stream, as written: its stream id and
/// its flat [field, value…] list.
pub(crate) async fn raw_event_entries<T>(
    h: &Harness,
    queue: &Queue<T>,
) -> Vec<(String, Vec<String>)> {
    redis::cmd("XRANGE")
        .arg(queue.keys().events())
        .arg("-")
        .arg("+")
        .query_async(&mut h.raw(queue).await)
        .await
        .unwrap()
}

/// Sends `verb` raw on the harness's wire, bypassing the client's own
/// checks: `EMQ.<VERB> base args…` on wire 6, `EVAL` of its script with the
/// keys the registry lists on wire 4.
pub(crate) async fn raw_call<T>(
    h: &Harness,
    q: &Queue<T>,
    verb: &str,
    args: &[&str],
) -> redis::RedisResult<redis::Value> {
    let cmd = raw_command(h, q, verb, args);
    cmd.query_async(&mut h.raw(q).await).await
}

/// Completes job `id`, held under `token`, with `result` in one
/// transaction that first closes every subscription of the server: the
/// outcome is published to nobody, and only a read-back tells a wait.
pub(crate) async fn complete_unheard<T>(
    h: &Harness,
    q: &Queue<T>,
    id: &str,
    token: u64,
    result: &str,
) {
    let complete = raw_command(
        h,
        q,
        "complete",
        &[id, &token.to_string(), "RESULT", result],
    );
    let mut multi = redis::pipe();
    multi
        .atomic()
        .cmd("CLIENT")
        .arg(&["KILL", "TYPE", "pubsub"])
        .ignore()
        .add_command(complete);
    let _: Vec<redis::Value> = multi.query_async(&mut h.raw(q).await).await.unwrap();
}

/// The command [`raw_call`] sends.
pub(crate) fn raw_command<T>(h: &Harness, q: &Queue<T>, verb: &str, args: &[&str]) -> redis::Cmd {
    let (transition, _, command) = command_of_script(verb);
    let mut cmd = match h.connector.wire() {
        Wire::Native => {
            let mut cmd = redis::cmd(command.native);
            cmd.arg(q.keys().base());
            cmd
        }
        Wire::Script => {
            let keys = transition.control().keys;
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(script_text(verb)).arg(keys.len());
            for key in keys {
                cmd.arg(q.keys().key(*key));
            }
            cmd
        }
    };
    for arg in args {
        cmd.arg(*arg);
    }
    cmd
}

/// [`raw_call`], its reply as it came: an error entry inside an array
/// stays an entry (`query_async` would turn the whole reply into it).
pub(crate) async fn raw_call_whole<T>(
    h: &Harness,
    q: &Queue<T>,
    verb: &str,
    args: &[&str],
) -> redis::RedisResult<redis::Value> {
    let cmd = raw_command(h, q, verb, args);
    let mut pipe = redis::pipe();
    pipe.ignore_errors().add_command(cmd);
    let mut replies: Vec<redis::Value> = pipe.query_async(&mut h.raw(q).await).await?;
    Ok(replies.pop().unwrap_or(redis::Value::Nil))
}

/// A case of the suite, registered by `#[echomq_testkit::case]` on its
/// `async fn name(h: &Harness)`.
pub(crate) struct Case {
    /// The `module_path!()` of the case's own test module (`suite::spine::cases::name`).
    pub module: &'static str,
    /// The case's function.
    pub name: &'static str,
    /// Where it is written, for the order of a sweep.
    pub file: &'static str,
    pub line: u32,
    /// Whether a cluster sweep runs it (`#[case(cluster)]`).
    pub cluster: bool,
    /// The case, on a harness.
    pub run: for<'h> fn(&'h Harness) -> Pin<Box<dyn Future<Output = ()> + 'h>>,
}

/// Every case of the program (`#[echomq_testkit::case]`), gathered by
/// the linker (linkme's `#[link_section]`, which `unsafe_code` counts).
#[allow(unsafe_code)]
#[echomq_testkit::linkme::distributed_slice]
#[linkme(crate = echomq_testkit::linkme)]
pub static CASES: [Case];

/// Runs every case marked `#[case(cluster)]` in `module` (a
/// `module_path!()`) and its submodules in turn, in the order they are
/// written, on one 3-master cluster: the module's cluster sweep.
pub(crate) async fn on_one_cluster(module: &str) {
    let prefix = format!("{module}::");
    let mut cases: Vec<&Case> = CASES
        .iter()
        .filter(|case| case.cluster && case.module.starts_with(&prefix))
        .collect();
    cases.sort_by_key(|case| (case.file, case.line));
    assert!(!cases.is_empty(), "no #[case(cluster)] under {module}");
    let harness = Harness::cluster().await;
    for case in cases {
        eprintln!("cluster: {}", case.name);
        (case.run)(&harness).await;
    }
}

/// The command of the registry of controls whose script is `name`
/// (`enqueue_bulk`), with its control and form.
pub(crate) fn command_of_script(
    name: &str,
) -> (
    echomq::Transition,
    echomq::protocol::Form,
    &'static echomq::protocol::Command,
) {
    echomq::Transition::ALL
        .iter()
        .find_map(|t| {
            t.control()
                .commands()
                .find(|(_, command)| command.script == name)
                .map(|(form, command)| (*t, form, command))
        })
        .unwrap_or_else(|| panic!("no command of the registry has the script {name}"))
}

/// The text the client loads for script `name` (helpers, constants, body,
/// epilogue).
pub(crate) fn script_text(name: &str) -> &'static str {
    let (transition, form, _) = command_of_script(name);
    echomq::script_source(transition, form)
}

/// Claims the queue's first pending job, fails that attempt with an
/// immediate retry and claims the job again: the first claim (whose token is
/// now stale) and the second (which holds the job).
pub(crate) async fn reclaimed<T>(queue: &Queue<T>) -> (echomq::Claimed<T>, echomq::Claimed<T>)
where
    T: serde::de::DeserializeOwned,
{
    let lease = Duration::from_secs(30);
    let old = queue.claim_one("w", lease).await.unwrap().unwrap();
    retry_now(queue, &old, "first try").await;
    let new = queue.claim_one("w", lease).await.unwrap().unwrap();
    (old, new)
}

/// Fails the claimed `job` with `error`, to be retried at once; its
/// outcome (a retry, or dead when its attempts ran out).
pub(crate) async fn retry_now<T>(
    queue: &Queue<T>,
    job: &echomq::Claimed<T>,
    error: &str,
) -> echomq::FailOutcome {
    queue
        .fail(
            &job.id,
            job.token,
            error,
            echomq::FailAction::Retry(Duration::ZERO),
        )
        .await
        .unwrap()
}

/// The jobs `jobs` (id, priority, maybe a group; the id is the payload
/// too) enqueued in order, the invariant checked after each.
pub(crate) async fn enqueue_named(
    h: &Harness,
    q: &Queue<Value>,
    jobs: &[(&str, u8, Option<&str>)],
) {
    for (name, priority, group) in jobs {
        let mut job = echomq::NewJob::new(json!(name))
            .id(*name)
            .unwrap()
            .priority(*priority);
        if let Some(group) = group {
            job = job.group(*group);
        }
        q.enqueue(job).await.unwrap();
        h.check(q).await;
    }
}

/// The ids one claim of up to `count` jobs hands out (worker `w`), in order.
pub(crate) async fn claimed_ids<T>(queue: &Queue<T>, count: usize) -> Vec<String>
where
    T: serde::de::DeserializeOwned,
{
    queue
        .claim("w", Duration::from_secs(30), count)
        .await
        .unwrap()
        .iter()
        .map(|job| job.id.as_str().to_string())
        .collect()
}

/// The lines `MONITOR` printed while `ran` ran: every command the server
/// ran, a client's (`[0 127.0.0.1:port]`), a script's (`[0 lua]`) or the
/// module's, its name and arguments quoted ([`monitored_words`]). The
/// server's other clients are in them too: a caller picks its queue's
/// keys.
pub(crate) async fn monitored<P, T>(
    h: &Harness,
    q: &Queue<P>,
    ran: impl std::future::Future<Output = T>,
) -> (Vec<String>, T) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let address = h.urls()[0].trim_start_matches("redis://").to_string();
    let stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let (read, mut write) = stream.into_split();
    write.write_all(b"MONITOR\r\n").await.unwrap();
    let mut lines = BufReader::new(read).lines();
    assert_eq!(lines.next_line().await.unwrap().as_deref(), Some("+OK"));
    let answer = ran.await;
    // A marker after the run: every line before it is the run's.
    let marker = "monitored-until-here";
    let echoed: String = redis::cmd("ECHO")
        .arg(marker)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
    assert_eq!(echoed, marker);
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = tokio::time::timeout(left, lines.next_line())
            .await
            .expect("the marker reaches MONITOR within 10 s")
            .unwrap()
            .expect("MONITOR's connection stays open");
        if line.contains(marker) {
            return (seen, answer);
        }
        seen.push(line);
    }
}

/// The quoted words of a `MONITOR` line: the command's name, then its
/// arguments.
pub(crate) fn monitored_words(line: &str) -> Vec<&str> {
    line.split('"').skip(1).step_by(2).collect()
}

/// The sum of `fields` (`calls`, `rejected_calls`, `failed_calls`, …) over
/// the `INFO commandstats` lines of `commands` (names in lower case; a
/// module's commands are listed in upper case and match too).
pub(crate) async fn command_stats(
    conn: &mut redis::aio::MultiplexedConnection,
    commands: &[&str],
    fields: &[&str],
) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(conn)
        .await
        .unwrap();
    info.lines()
        .filter_map(|line| {
            let (name, stats) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            commands
                .contains(&name.to_lowercase().as_str())
                .then_some(stats)
        })
        .flat_map(|stats| stats.split(','))
        .filter_map(|stat| {
            let (field, value) = stat.split_once('=')?;
            fields
                .contains(&field)
                .then(|| value.trim().parse::<u64>().ok())?
        })
        .sum()
}

/// Calls of the commands a worker sends on its own: the scripts (whose
/// inner calls `INFO commandstats` counts too, so they are left out), the
/// module's commands and the idle wait (an idle wait reads the schedule,
/// `TIME` and `ZRANGE`, just before each `BZPOPMIN`).
pub(crate) async fn worker_calls(conn: &mut redis::aio::MultiplexedConnection) -> u64 {
    const SENT: [&str; 9] = [
        "fcall",
        "evalsha",
        "eval",
        "bzpopmin",
        "emq.claim",
        "emq.complete",
        "emq.complete.bulk",
        "emq.extend",
        "emq.stalled.check",
    ];
    command_stats(conn, &SENT, &["calls"]).await
}

/// The score of the queue's wake-up marker on its signal set (`None` when
/// there is none).
pub(crate) async fn wake_marker<T>(h: &Harness, q: &Queue<T>) -> Option<f64> {
    redis::cmd("ZSCORE")
        .arg(q.keys().signal())
        .arg("wake")
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// Subscribers of `queue`'s cancel channel, asked over `conn` (any server
/// of a cluster, a replica, a demoted primary).
pub(crate) async fn cancel_subscribers_via<T>(
    conn: &mut redis::aio::MultiplexedConnection,
    queue: &Queue<T>,
) -> redis::RedisResult<u64> {
    let (_, n): (String, u64) = redis::cmd("PUBSUB")
        .arg("SHARDNUMSUB")
        .arg(queue.keys().cancel_channel())
        .query_async(conn)
        .await?;
    Ok(n)
}

/// The server's count of writes since its last save
/// (`rdb_changes_since_last_save`): what a refused command must leave as
/// it found it.
pub(crate) async fn writes<T>(h: &Harness, q: &Queue<T>) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("persistence")
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix("rdb_changes_since_last_save:"))
        .expect("INFO persistence names its changes")
        .trim()
        .parse()
        .unwrap()
}
