//! [`TestSentinelGroup`] on real servers: a killed primary is replaced by
//! a replica, the killed server comes back as a replica with its data, and
//! the next kill promotes again.

use echomq_testkit::{TestSentinelGroup, TestServer};

fn get(server: &TestServer, key: &str) -> Option<String> {
    let mut con = server.client().get_connection().unwrap();
    redis::cmd("GET").arg(key).query(&mut con).unwrap()
}

fn role(server: &TestServer) -> String {
    let mut con = server.client().get_connection().unwrap();
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query(&mut con)
        .unwrap();
    let line = info.lines().find(|line| line.starts_with("role:")).unwrap();
    line.trim_start_matches("role:").to_string()
}

#[test]
fn a_killed_primary_is_replaced_and_comes_back_as_a_replica() {
    let mut group = TestSentinelGroup::start(Vec::new());
    assert_eq!(group.sentinel_urls().len(), 3);
    let first = group.primary().port();
    let mut con = group.primary().client().get_connection().unwrap();
    // Fsynced by both replicas before the kill: it must survive it.
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut con).unwrap();
    let (_local, replicas): (u64, u64) = redis::cmd("WAITAOF")
        .arg(0)
        .arg(2)
        .arg(5000)
        .query(&mut con)
        .unwrap();
    assert_eq!(replicas, 2, "both replicas have an AOF and confirm");

    group.kill_primary();
    let second = group.primary().port();
    assert_ne!(second, first, "a replica was promoted");
    assert_eq!(role(group.primary()), "master");
    assert_eq!(get(group.primary(), "k").as_deref(), Some("v"));

    group.restart_killed();
    let back = group.servers().iter().find(|s| s.port() == first).unwrap();
    assert_eq!(
        role(back),
        "slave",
        "the killed server follows the new primary"
    );
    assert_eq!(get(back, "k").as_deref(), Some("v"));

    group.kill_primary();
    assert_ne!(
        group.primary().port(),
        second,
        "the next kill promotes again"
    );
    group.restart_killed();
}
