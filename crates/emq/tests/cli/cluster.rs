//! `--cluster`: emq reaches a cluster through any of its nodes, each
//! queue's commands going to the master of its slot; it excludes `--url`
//! and `--sentinel`, and the commands that measure one server refuse it.

use crate::common::{assert_ok, emq};
use echomq_testkit::{SENTINEL_SERVICE, TestCluster};
use serde_json::Value;

/// `emq --cluster <urls> args…`.
fn on_cluster(cluster: &TestCluster, args: &[&str]) -> crate::common::Run {
    let urls = cluster.urls().join(",");
    let mut all = vec!["--cluster", urls.as_str()];
    all.extend_from_slice(args);
    emq(&all)
}

#[test]
fn cluster_flag_reaches_the_master_of_the_queues_slot() {
    let cluster = TestCluster::start(3);
    let run = on_cluster(&cluster, &["enqueue", "q", "{}", "--id", "c1", "--json"]);
    assert_ok(&run);
    assert_eq!(run.json()["created"], Value::Bool(true), "{}", run.stdout);
    let run = on_cluster(&cluster, &["stats", "q", "--json"]);
    assert_ok(&run);
    assert_eq!(run.json()["pending"], 1, "{}", run.stdout);
    // The job is on the master of the queue's slot ({q}), and only there.
    let holds = |node: &echomq_testkit::TestServer| {
        let mut con = node.client().get_connection().unwrap();
        let keys: Vec<String> = redis::cmd("KEYS").arg("emq:{q}:*").query(&mut con).unwrap();
        !keys.is_empty()
    };
    let master = cluster.master_of("{q}").port();
    for node in cluster.nodes() {
        assert_eq!(holds(node), node.port() == master, "node {}", node.port());
    }
}

#[test]
fn cluster_excludes_url_and_sentinel() {
    let cluster = TestCluster::start(1);
    let run = on_cluster(&cluster, &["--url", "redis://127.0.0.1:1", "stats", "q"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--url"), "{}", run.stderr);
    let run = on_cluster(
        &cluster,
        &[
            "--sentinel",
            "redis://127.0.0.1:1",
            "--sentinel-service",
            SENTINEL_SERVICE,
            "stats",
            "q",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--sentinel"), "{}", run.stderr);
}

#[test]
fn the_measuring_commands_refuse_cluster() {
    for command in ["bench", "demo"] {
        let run = emq(&["--cluster", "redis://127.0.0.1:1", command]);
        assert_eq!(run.code, 2, "{command}: {}", run.stderr);
        assert!(
            run.stderr.contains("not --cluster"),
            "{command}: {}",
            run.stderr
        );
    }
}
