//! Connections against real servers: a worker and its queue handle carry
//! on after their connections are cut, after a server restart (on both
//! wires) and on a cluster; an outcome whose connection was cut under it is
//! sent again, once; a server that asks for a password says so at connect.
//! Over TLS and over a Unix socket too.

use crate::common;

use common::{
    FailoverPair, Harness, blocked_clients, command_stats, enqueue_when_taken, fail_over,
    job_state_at, state_of,
};
use echomq::{
    Connector, Error, JobContext, JobError, JobId, JobState, Queue, Wire, Worker, WorkerHandle,
};
use echomq_testkit::{ClientAuth, SENTINEL_SERVICE, TestSentinel, invariant, wait_for};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, mpsc};

const BOUND: Duration = Duration::from_secs(10);

/// Closes every client connection of the server at `url` but the one
/// asking (`CLIENT KILL TYPE normal`), as a network cut would; returns how
/// many were closed.
async fn cut_connections_of(url: &str) -> u64 {
    let client = redis::Client::open(url).unwrap();
    let mut raw = client.get_multiplexed_async_connection().await.unwrap();
    cut_connections(&mut raw).await
}

/// [`cut_connections_of`] through a connection the caller holds (and keeps).
async fn cut_connections(raw: &mut redis::aio::MultiplexedConnection) -> u64 {
    redis::cmd("CLIENT")
        .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"])
        .query_async(raw)
        .await
        .unwrap()
}

/// What happens to the server between the two jobs.
enum Disruption {
    /// Every connection of every server is closed.
    Cut,
    /// The server restarts (`SHUTDOWN SAVE`, same port, data and modules):
    /// connections closed, script cache empty, data loaded back.
    Restart,
}

/// A worker that reports the id of each job it runs, and completes it.
fn reporting_worker(q: &Queue<Value>) -> (WorkerHandle, mpsc::UnboundedReceiver<JobId>) {
    let (done_tx, done) = mpsc::unbounded_channel();
    let worker = Worker::new(q.clone(), move |ctx: JobContext<Value>| {
        let done_tx = done_tx.clone();
        async move {
            done_tx.send(ctx.id.clone()).unwrap();
            Ok::<_, JobError>(())
        }
    })
    .idle_wait(Duration::from_millis(200))
    .start();
    (worker, done)
}

/// A worker runs a job, `disruption` happens, and the same worker and
/// queue handle run the next job; the first job's record is intact.
async fn carries_on(mut h: Harness, name: &str, disruption: Disruption) {
    let q = h.queue::<Value>(name);
    let (worker, mut done) = reporting_worker(&q);
    let first = run_one(&q, &mut done, "before").await;
    match disruption {
        Disruption::Cut => {
            let mut closed = 0;
            for url in h.urls() {
                closed += cut_connections_of(url).await;
            }
            assert!(closed > 0, "no connection was closed");
        }
        Disruption::Restart => h.restart(),
    }
    // The queue handle lost its connection too. A call in flight at the
    // cut may fail; the next ones go out on a new connection.
    wait_for("the connector to answer again", BOUND, || async {
        q.admin().counts().await.is_ok()
    })
    .await;
    assert_eq!(state_of(&q, &first).await, Some(JobState::Completed));
    run_one(&q, &mut done, "after").await;
    let stats = worker.shutdown(BOUND).await;
    assert_eq!((stats.completed, stats.lost), (2, 0));
    h.check(&q).await;
}

/// Enqueues one job, waits for the worker to run it and for its
/// completion to be on the server; returns its id.
async fn run_one(
    q: &Queue<Value>,
    done: &mut mpsc::UnboundedReceiver<JobId>,
    payload: &str,
) -> JobId {
    let job = q.enqueue(json!(payload)).await.unwrap();
    assert_eq!(
        tokio::time::timeout(BOUND, done.recv()).await.unwrap(),
        Some(job.id.clone())
    );
    wait_for("the completion", BOUND, || async {
        state_of(q, &job.id).await == Some(JobState::Completed)
    })
    .await;
    job.id
}

#[tokio::test]
async fn a_worker_carries_on_after_its_connections_are_cut() {
    carries_on(Harness::server().await, "cut", Disruption::Cut).await;
}

#[tokio::test]
async fn a_cluster_worker_carries_on_after_its_connections_are_cut() {
    carries_on(Harness::cluster().await, "cluster_cut", Disruption::Cut).await;
}

#[tokio::test]
async fn a_worker_over_tls_carries_on_after_its_connections_are_cut() {
    let h = Harness::tls(ClientAuth::None).await;
    carries_on(h, "tls_cut", Disruption::Cut).await;
}

#[tokio::test]
async fn a_worker_over_a_unix_socket_carries_on_after_its_connections_are_cut() {
    carries_on(Harness::unix_socket().await, "unix_cut", Disruption::Cut).await;
}

/// After a failover: an enqueue is taken (once the calls reach the new
/// primary), the same worker runs it, its completion is on `new`, and the
/// worker lost nothing (the job before the failover and this one).
async fn runs_on_the_new_primary(
    q: &Queue<Value>,
    worker: WorkerHandle,
    done: &mut mpsc::UnboundedReceiver<JobId>,
    new: &str,
) {
    let after = enqueue_when_taken(q, "after").await;
    assert_eq!(
        tokio::time::timeout(BOUND, done.recv()).await.unwrap(),
        Some(after.clone())
    );
    let key = q.keys().job(&after);
    let on_new = redis::Client::open(new)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    wait_for("the completion on the new primary", BOUND, || {
        let (mut on_new, key) = (on_new.clone(), &key);
        async move { job_state_at(&mut on_new, key).await.as_deref() == Some("completed") }
    })
    .await;
    let stats = worker.shutdown(BOUND).await;
    assert_eq!((stats.completed, stats.lost), (2, 0));
    invariant::assert_invariant(&[new.to_string()], q.keys()).await;
}

/// The worker reaches the primary through an endpoint (a DNS name, a load
/// balancer: here a proxy) that a failover switches to the new primary.
/// Its connections opened before stay on the old one, which the failover
/// made a replica: every write there answers READONLY.
async fn follows_a_failover(wire: Wire) {
    let pair = FailoverPair::start(wire);
    let q = pair
        .connector(wire)
        .await
        .queue::<Value>("failover")
        .unwrap();
    let (worker, mut done) = reporting_worker(&q);
    let first = run_one(&q, &mut done, "before").await;
    pair.fail_over(&q, &first).await;

    // The first calls meet the demoted server (READONLY) or the connection
    // closed to leave it; then they reach the new primary.
    runs_on_the_new_primary(&q, worker, &mut done, &pair.new.url()).await;
}

#[tokio::test]
async fn a_worker_follows_a_failover_of_its_endpoint() {
    follows_a_failover(Wire::Script).await;
}

#[tokio::test]
async fn a_worker_on_wire_6_follows_a_failover_of_its_endpoint() {
    follows_a_failover(Wire::Native).await;
}

#[tokio::test]
async fn a_cluster_worker_carries_on_across_a_failover() {
    let h = Harness::cluster_with_replicas().await;
    let q = h.queue::<Value>("cluster_failover");
    let (worker, mut done) = reporting_worker(&q);
    let first = run_one(&q, &mut done, "before").await;
    let replica = fail_over(&h, &q, &first).await;

    runs_on_the_new_primary(&q, worker, &mut done, &replica.url()).await;
}

/// How the primary behind Sentinel goes away.
enum PrimaryLoss {
    /// `SENTINEL FAILOVER`: the old primary is demoted and answers
    /// READONLY.
    Demoted,
    /// The primary stops; the sentinel promotes the replica on its own.
    Died,
}

/// The connector finds the primary through Sentinel. After the primary
/// goes (`loss`), its calls meet the demoted primary or none, and it asks
/// the sentinel again.
async fn follows_sentinel(loss: PrimaryLoss, password: Option<&str>) {
    let sentinel = match password {
        Some(password) => TestSentinel::with_password(password),
        None => TestSentinel::start(),
    };
    let builder = Connector::sentinel([sentinel.url()], SENTINEL_SERVICE);
    let connector = match password {
        Some(password) => {
            // Without the primary's password the connect is refused.
            let refused = builder.clone().connect().await.unwrap_err();
            assert!(matches!(refused, Error::Auth(_)), "{refused:?}");
            assert!(refused.to_string().contains("primary_auth"), "{refused}");
            builder.primary_auth(None, password)
        }
        None => builder,
    }
    .connect()
    .await
    .unwrap();
    let q = connector.queue::<Value>("sentinel_failover").unwrap();
    let (worker, mut done) = reporting_worker(&q);
    run_one(&q, &mut done, "before").await;
    match loss {
        PrimaryLoss::Demoted => sentinel.fail_over(),
        PrimaryLoss::Died => sentinel.lose_primary(),
    }
    let new = sentinel.first_replica().port();
    let new = match password {
        Some(password) => format!("redis://:{password}@127.0.0.1:{new}"),
        None => format!("redis://127.0.0.1:{new}"),
    };
    runs_on_the_new_primary(&q, worker, &mut done, &new).await;
}

#[tokio::test]
async fn a_worker_follows_a_sentinel_failover() {
    follows_sentinel(PrimaryLoss::Demoted, None).await;
}

#[tokio::test]
async fn a_worker_follows_sentinel_when_the_primary_dies() {
    follows_sentinel(PrimaryLoss::Died, None).await;
}

#[tokio::test]
async fn a_worker_follows_a_sentinel_failover_to_a_primary_that_asks_for_a_password() {
    follows_sentinel(PrimaryLoss::Demoted, Some("s3cret-pass")).await;
}

#[tokio::test]
async fn a_worker_carries_on_across_a_server_restart() {
    carries_on(Harness::server().await, "restart", Disruption::Restart).await;
}

#[tokio::test]
async fn a_worker_on_wire_6_carries_on_across_a_server_restart() {
    carries_on(
        Harness::native().await,
        "restart_native",
        Disruption::Restart,
    )
    .await;
}

/// A worker whose handler reports each job it starts, then waits for the
/// gate to open once before it returns. With more slots than jobs it goes
/// idle after claiming them (its listener blocks, see [`idle_with_jobs`]),
/// and a handler that returns then sends its outcome and nothing else: an
/// idle worker claims again only when woken, and `idle_wait` is long.
fn gated_worker(
    q: &Queue<Value>,
    slots: usize,
) -> (WorkerHandle, Arc<Notify>, mpsc::UnboundedReceiver<JobId>) {
    let gate = Arc::new(Notify::new());
    let (started_tx, started) = mpsc::unbounded_channel();
    let handler_gate = gate.clone();
    let worker = Worker::new(q.clone(), move |ctx: JobContext<Value>| {
        let (gate, started_tx) = (handler_gate.clone(), started_tx.clone());
        async move {
            started_tx.send(ctx.id.clone()).unwrap();
            gate.notified().await;
            Ok::<_, JobError>(())
        }
    })
    .concurrency(slots)
    .idle_wait(Duration::from_secs(60))
    .start();
    (worker, gate, started)
}

/// Enqueues one job for a [`gated_worker`] with two slots and waits until
/// its handler runs and the worker, with a slot to spare and nothing more
/// to claim, sits idle on the signal set (`BZPOPMIN`).
async fn idle_with_jobs(
    h: &Harness,
    q: &Queue<Value>,
    started: &mut mpsc::UnboundedReceiver<JobId>,
) -> JobId {
    let job = q.enqueue(json!("held")).await.unwrap();
    assert_eq!(
        tokio::time::timeout(BOUND, started.recv()).await.unwrap(),
        Some(job.id.clone())
    );
    wait_for("the worker idle on the signal set", BOUND, || async {
        blocked_clients(h, q).await == 1
    })
    .await;
    job.id
}

/// Whether a client of the server at `url` is held by `CLIENT PAUSE` with
/// a completion (`FCALL` on wire 4, `EMQ.COMPLETE.BULK` on wire 6).
async fn completion_held(url: &str) -> bool {
    let client = redis::Client::open(url).unwrap();
    let mut raw = client.get_multiplexed_async_connection().await.unwrap();
    let clients: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(&mut raw)
        .await
        .unwrap();
    clients.to_lowercase().lines().any(|client| {
        let held = client
            .split(' ')
            .any(|field| field.starts_with("flags=") && field.contains('b'));
        held && ["cmd=fcall", "cmd=evalsha", "cmd=emq.complete.bulk"]
            .iter()
            .any(|cmd| client.contains(cmd))
    })
}

/// Waits for the held `job` to complete, stops the worker, and checks it
/// ran and completed once: nothing lost, no write given up, one claim.
async fn completed_once(h: &Harness, q: &Queue<Value>, worker: WorkerHandle, job: &JobId) {
    // The test's own connection was cut too (the worker has its own): the
    // first read on it may fail with the I/O error of the closed socket.
    wait_for("the completion sent again", BOUND, || async {
        q.jobs()
            .get(job)
            .await
            .is_ok_and(|record| record.is_some_and(|r| r.state == JobState::Completed))
    })
    .await;
    let stats = worker.shutdown(BOUND).await;
    assert_eq!((stats.completed, stats.lost, stats.write_errors), (1, 0, 0));
    assert_eq!(q.jobs().get(job).await.unwrap().unwrap().claims, 1);
    h.check(q).await;
}

/// The completion is on the wire, held by `CLIENT PAUSE WRITE`, when the
/// worker's connections are cut: it never ran, and the writer sends it
/// again on a new connection, so the job completes once and nothing counts
/// as lost.
async fn resends_an_outcome_cut_off(h: Harness, name: &str) {
    let q = h.queue::<Value>(name);
    let url = h.urls()[0].clone();
    let (worker, gate, mut started) = gated_worker(&q, 2);
    let job = idle_with_jobs(&h, &q, &mut started).await;
    let mut admin = h.raw(&q).await;
    let _: () = redis::cmd("CLIENT")
        .arg(&["PAUSE", "60000", "WRITE"])
        .query_async(&mut admin)
        .await
        .unwrap();
    gate.notify_one();
    wait_for("the completion held by the pause", BOUND, || {
        completion_held(&url)
    })
    .await;
    assert!(cut_connections(&mut admin).await > 0);
    let _: () = redis::cmd("CLIENT")
        .arg("UNPAUSE")
        .query_async(&mut admin)
        .await
        .unwrap();
    completed_once(&h, &q, worker, &job).await;
}

#[tokio::test]
async fn an_outcome_cut_off_with_its_connection_is_sent_again() {
    resends_an_outcome_cut_off(Harness::server().await, "resend").await;
}

#[tokio::test]
async fn an_outcome_cut_off_on_wire_6_is_sent_again() {
    resends_an_outcome_cut_off(Harness::native().await, "resend_native").await;
}

#[tokio::test]
async fn outcomes_finished_after_a_cut_go_out_on_a_new_connection() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("after_cut");
    let (worker, gate, mut started) = gated_worker(&q, 1);
    let jobs: Vec<_> = q
        .enqueue_bulk((0..3).map(|n| json!(n)))
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    // Each job's handler is running when the connections are cut, and its
    // outcome is written after: it must land, once.
    for id in &jobs {
        assert_eq!(
            tokio::time::timeout(BOUND, started.recv()).await.unwrap(),
            Some(id.clone())
        );
        assert!(cut_connections_of(&h.urls()[0]).await > 0);
        gate.notify_one();
    }
    wait_for("three completions", BOUND, || async {
        q.admin()
            .counts()
            .await
            .is_ok_and(|counts| counts.completed == 3)
    })
    .await;
    let stats = worker.shutdown(BOUND).await;
    assert_eq!((stats.completed, stats.lost, stats.write_errors), (3, 0, 0));
    h.check(&q).await;
}

#[tokio::test]
async fn connecting_without_the_password_a_server_asks_for_fails_auth() {
    let h = Harness::with_password("right").await;
    let port = h.urls()[0].rsplit(':').next().unwrap().to_string();
    for (url, says) in [
        (
            format!("redis://127.0.0.1:{port}"),
            "give the password in the URL",
        ),
        (
            format!("redis://:wrong@127.0.0.1:{port}"),
            "WRONGPASS invalid username-password pair",
        ),
        (
            format!("redis://ada:right@127.0.0.1:{port}"),
            "the user or password in the URL is wrong",
        ),
    ] {
        let err = Connector::connect(url.clone()).await.unwrap_err();
        assert!(matches!(err, Error::Auth(_)), "{url}: {err:?}");
        assert!(err.to_string().contains(says), "{url}: {err}");
    }
    // With it, everything works: here a whole job.
    carries_on(h, "with_password", Disruption::Cut).await;
}

/// The `tr` (timer) column of `/proc/net/tcp` for each established socket
/// whose remote end is 127.0.0.1:`port`: `02` when its keepalive timer
/// runs, `00` when no timer does.
#[cfg(target_os = "linux")]
fn client_socket_timers(port: u16) -> Vec<String> {
    let server = format!("0100007F:{port:04X}");
    std::fs::read_to_string("/proc/net/tcp")
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|row| {
            let fields: Vec<&str> = row.split_whitespace().collect();
            let established = fields.get(3) == Some(&"01");
            (established && fields.get(2) == Some(&server.as_str()))
                .then(|| fields[5].split(':').next().unwrap().to_string())
        })
        .collect()
}

/// A server host that vanishes without closing its connections is found
/// out by keepalive probes on every idle connection (the limit for data
/// in flight, `TCP_USER_TIMEOUT`, cannot be seen from outside the socket).
#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_connectors_idle_connections_probe_the_server() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("keepalive");
    q.admin().counts().await.unwrap();
    // An idle worker holds two more: its listener's and its cancel
    // subscription's.
    let worker = Worker::new(q.clone(), |_ctx: JobContext<Value>| async {
        Ok::<_, JobError>(())
    })
    .start();
    let port: u16 = h.urls()[0].rsplit(':').next().unwrap().parse().unwrap();
    wait_for(
        "three idle sockets with their keepalive timers",
        BOUND,
        || async {
            let timers = client_socket_timers(port);
            timers.len() >= 3 && timers.iter().all(|timer| timer == "02")
        },
    )
    .await;
    // A socket opened without the settings has no timer: the check tells
    // them apart.
    let plain = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    assert!(client_socket_timers(port).contains(&"00".to_string()));
    drop(plain);
    worker.shutdown(BOUND).await;
}

/// Calls of `commands` the server refused or that failed.
async fn refused_calls(raw: &mut redis::aio::MultiplexedConnection, commands: &[&str]) -> u64 {
    command_stats(raw, commands, &["rejected_calls", "failed_calls"]).await
}

/// The server is out of memory when a handler finishes: its completion is
/// refused (`OOM`) and sent again until memory is back, so the job
/// completes once instead of waiting for the stalled sweep to run it again.
async fn outcome_refused_for_memory_is_sent_again(h: Harness, name: &str) {
    let q = h.queue::<Value>(name);
    let (worker, gate, mut started) = gated_worker(&q, 2);
    let job = idle_with_jobs(&h, &q, &mut started).await;
    let mut admin = h.raw(&q).await;
    let completions = ["fcall", "evalsha", "emq.complete.bulk"];
    let before = refused_calls(&mut admin, &completions).await;
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory", "1"])
        .query_async(&mut admin)
        .await
        .unwrap();
    gate.notify_one();
    wait_for("the completion refused for memory", BOUND, || async {
        refused_calls(&mut h.raw(&q).await, &completions).await > before
    })
    .await;
    assert_eq!(state_of(&q, &job).await, Some(JobState::Active));
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory", "0"])
        .query_async(&mut admin)
        .await
        .unwrap();
    completed_once(&h, &q, worker, &job).await;
}

#[tokio::test]
async fn an_outcome_refused_for_memory_is_sent_again() {
    outcome_refused_for_memory_is_sent_again(Harness::server().await, "oom").await;
}

#[tokio::test]
async fn an_outcome_refused_for_memory_on_wire_6_is_sent_again() {
    outcome_refused_for_memory_is_sent_again(Harness::native().await, "oom_native").await;
}
