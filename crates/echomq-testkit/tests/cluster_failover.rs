//! [`TestCluster::start_for_failover`] on real servers: the killed master
//! of a key's slot is replaced by its replica, the killed node comes back
//! as that replica's replica with the data, and the next kill promotes it
//! again.

use echomq_testkit::{TestCluster, TestServer};

fn query<T: redis::FromRedisValue>(server: &TestServer, args: &[&str]) -> T {
    let mut con = server.client().get_connection().unwrap();
    redis::cmd(args[0]).arg(&args[1..]).query(&mut con).unwrap()
}

fn role(server: &TestServer) -> String {
    let info: String = query(server, &["INFO", "replication"]);
    let line = info.lines().find(|line| line.starts_with("role:")).unwrap();
    line.trim_start_matches("role:").to_string()
}

#[test]
fn a_killed_master_is_replaced_by_its_replica_and_comes_back_as_one() {
    let mut cluster = TestCluster::start_for_failover(3, Vec::new());
    assert_eq!(cluster.all_urls().len(), 6, "three masters, three replicas");
    let first = cluster.master_of("{q}").port();
    let aof: Vec<String> = query(cluster.master_of("{q}"), &["CONFIG", "GET", "appendonly"]);
    assert_eq!(aof, ["appendonly", "yes"]);
    let _: () = query(cluster.master_of("{q}"), &["SET", "{q}:k", "v"]);
    // Fsynced by the replica before the kill: it must survive it.
    let (_local, replicas): (u64, u64) =
        query(cluster.master_of("{q}"), &["WAITAOF", "0", "1", "5000"]);
    assert_eq!(replicas, 1, "the replica has an AOF and confirms");

    let took = cluster.kill_master_of("{q}");
    let second = cluster.master_of("{q}").port();
    assert_ne!(second, first, "the replica was promoted (in {took:?})");
    assert_eq!(role(cluster.master_of("{q}")), "master");
    let value: Option<String> = query(cluster.master_of("{q}"), &["GET", "{q}:k"]);
    assert_eq!(value.as_deref(), Some("v"));

    cluster.restart_killed();
    let back = cluster
        .nodes()
        .iter()
        .chain(cluster.replicas())
        .find(|node| node.port() == first)
        .expect("the killed node is one of the cluster's");
    assert_eq!(
        role(back),
        "slave",
        "the killed node follows the promoted one"
    );
    let info: String = query(back, &["INFO", "replication"]);
    assert!(info.contains(&format!("master_port:{second}")), "{info}");
    let mut con = back.client().get_connection().unwrap();
    let _: () = redis::cmd("READONLY").query(&mut con).unwrap();
    let value: Option<String> = redis::cmd("GET").arg("{q}:k").query(&mut con).unwrap();
    assert_eq!(
        value.as_deref(),
        Some("v"),
        "the rejoined replica has the data"
    );

    cluster.kill_master_of("{q}");
    assert_eq!(
        cluster.master_of("{q}").port(),
        first,
        "the next kill promotes the node killed first"
    );
    cluster.restart_killed();
}
