//! The testkit itself: real servers start, answer, coexist, and stop.

use std::process::{Command, Stdio};
use std::time::Duration;

use echomq_testkit::{ServerKind, TestCluster, TestServer, wait_until};

fn info_server(server: &TestServer) -> String {
    let mut con = server.client().get_connection().unwrap();
    redis::cmd("INFO").arg("server").query(&mut con).unwrap()
}

/// Whether a process with this pid exists (`kill -0`).
fn process_exists(pid: u32) -> bool {
    Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

#[tokio::test]
async fn valkey_starts_and_answers() {
    let server = TestServer::valkey();
    assert_eq!(server.url(), format!("redis://127.0.0.1:{}", server.port()));
    let mut con = server.connection().await;
    let pong: String = redis::cmd("PING").query_async(&mut con).await.unwrap();
    assert_eq!(pong, "PONG");
    let _: () = redis::cmd("SET")
        .arg("emq:k")
        .arg("v")
        .query_async(&mut con)
        .await
        .unwrap();
    let v: String = redis::cmd("GET")
        .arg("emq:k")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(v, "v");
    let info = info_server(&server);
    assert!(
        info.contains(&format!("process_id:{}", server.pid())),
        "{info}"
    );
    // The located binary may be redis-server when that is all there is;
    // `kind()` must say which one answered.
    assert_eq!(
        info.contains("valkey_version:"),
        server.kind() == ServerKind::Valkey,
        "{info}"
    );
}

#[tokio::test]
async fn redis_starts_and_answers() {
    let server = TestServer::redis();
    assert_eq!(server.kind(), ServerKind::Redis);
    let mut con = server.connection().await;
    let pong: String = redis::cmd("PING").query_async(&mut con).await.unwrap();
    assert_eq!(pong, "PONG");
    let info = info_server(&server);
    assert!(info.contains("redis_version:7."), "{info}");
    assert!(!info.contains("valkey_version:"), "{info}");
}

#[tokio::test]
async fn three_master_cluster_forms_and_routes() {
    let cluster = TestCluster::start(3);
    assert_eq!(cluster.urls().len(), 3);
    let mut con = cluster.connection().await;
    // Keys spread over the three shards (and one hash-tagged pair).
    let keys = ["a", "b", "c", "emq:{q}:1", "emq:{q}:2", "zzz"];
    for (i, key) in keys.iter().enumerate() {
        let _: () = redis::cmd("SET")
            .arg(key)
            .arg(i)
            .query_async(&mut con)
            .await
            .unwrap();
    }
    for (i, key) in keys.iter().enumerate() {
        let v: usize = redis::cmd("GET")
            .arg(key)
            .query_async(&mut con)
            .await
            .unwrap();
        assert_eq!(v, i, "{key}");
    }
    // Every node holds some of them: the slots really are split.
    let mut total = 0;
    for node in cluster.nodes() {
        let mut c = node.client().get_connection().unwrap();
        let n: usize = redis::cmd("DBSIZE").query(&mut c).unwrap();
        let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut c).unwrap();
        assert!(info.contains("cluster_state:ok"), "{info}");
        assert!(info.contains("cluster_known_nodes:3"), "{info}");
        total += n;
    }
    assert_eq!(total, keys.len());
}

#[test]
fn two_servers_coexist() {
    let a = TestServer::start();
    let b = TestServer::start();
    assert_ne!(a.port(), b.port());
    assert_ne!(a.pid(), b.pid());
    assert_ne!(a.dir(), b.dir());
    let mut ca = a.client().get_connection().unwrap();
    let mut cb = b.client().get_connection().unwrap();
    let _: () = redis::cmd("SET")
        .arg("only-a")
        .arg(1)
        .query(&mut ca)
        .unwrap();
    let in_a: Option<i64> = redis::cmd("GET").arg("only-a").query(&mut ca).unwrap();
    let in_b: Option<i64> = redis::cmd("GET").arg("only-a").query(&mut cb).unwrap();
    assert_eq!((in_a, in_b), (Some(1), None));
}

#[test]
fn dropping_a_server_stops_the_process() {
    let server = TestServer::start();
    let pid = server.pid();
    let dir = server.dir().to_path_buf();
    assert!(process_exists(pid));
    drop(server);
    wait_until(
        &format!("server pid {pid} to exit after drop"),
        Duration::from_secs(10),
        || !process_exists(pid),
    );
    assert!(!dir.exists(), "{} was not removed", dir.display());
}
