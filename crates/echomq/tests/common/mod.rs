//! What every integration test shares: a real server (or cluster), a
//! connector to it, and the state invariant check.
#![allow(dead_code)]

use echomq::{Connector, Queue};
use echomq_testkit::{TestCluster, TestServer, invariant};
use std::future::Future;
use std::time::{Duration, Instant};

/// A server or cluster with a connector to it.
pub struct Harness {
    pub connector: Connector,
    urls: Vec<String>,
    _server: Option<TestServer>,
    _cluster: Option<TestCluster>,
}

impl Harness {
    /// A server of the suite's default kind (Valkey, or Redis with EMQ_TEST_SERVER=redis).
    pub async fn server() -> Self {
        let server = TestServer::start();
        let connector = Connector::connect(server.url()).await.expect("connect");
        Self {
            connector,
            urls: vec![server.url()],
            _server: Some(server),
            _cluster: None,
        }
    }

    /// A 3-master cluster.
    pub async fn cluster() -> Self {
        let cluster = TestCluster::start(3);
        let connector = Connector::cluster(cluster.urls())
            .connect()
            .await
            .expect("connect to cluster");
        Self {
            connector,
            urls: cluster.urls(),
            _server: None,
            _cluster: Some(cluster),
        }
    }

    /// The URLs of every server.
    pub fn urls(&self) -> &[String] {
        &self.urls
    }

    /// A queue of `T` named `name`.
    pub fn queue<T>(&self, name: &str) -> Queue<T> {
        self.connector.queue(name).expect("valid queue name")
    }

    /// Asserts the state invariant of PROTOCOL.md for `queue`.
    pub async fn check<T>(&self, queue: &Queue<T>) {
        invariant::assert_invariant(&self.urls, queue.keys()).await;
    }

    /// A plain connection to the server that holds `queue` (for raw checks).
    pub async fn raw<T>(&self, queue: &Queue<T>) -> redis::aio::MultiplexedConnection {
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
}

/// Waits until `condition` holds, re-checking every few milliseconds, for at
/// most `limit`; panics naming `what` when it never does.
pub async fn wait_for<F, Fut>(what: &str, limit: Duration, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while !condition().await {
        assert!(
            Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
