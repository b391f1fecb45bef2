//! The failover chaos run (`examples/failover.rs`), briefly, on both
//! wires: two servers of the queue `SIGKILL`ed under load at `replicas:1`
//! (the primary behind Sentinel; the master of the queue's slot in a
//! cluster) lose no acknowledged job, breach no fence and leave nothing
//! stuck, with library workers and an `emq worker --exec` process running
//! the jobs (the `emq` binary next to the test's directory: `cargo build
//! -p emq`, or `EMQ_BIN`).
//!
//! Not on Redis 7.0: about 20 s a wire and topology; `replicas:1` there
//! waits with `WAIT`, which `durability.rs` covers.

#[path = "../../examples/failover/mod.rs"]
mod chaos;

use chaos::Topology;
use echomq::{Durability, Wire};
use echomq_testkit::{TestCluster, TestSentinelGroup, case, module_path};
use std::time::Duration;

/// Two kills at `replicas:1` on `topology`: nothing lost, breached or
/// stuck, and the exec worker ran jobs.
async fn two_failovers_lose_nothing(topology: Topology, wire: Wire) {
    let settings = chaos::Settings {
        wire,
        durability: Durability::replicas(1),
        failovers: 2,
        kill_every: Duration::from_secs(2),
        producers: 2,
        enqueue_every: Duration::from_millis(10),
        workers: 2,
        exec_workers: 1,
        drain_timeout: Duration::from_secs(30),
    };
    let report = chaos::run(topology, &settings).await.unwrap();
    let tally = &report.tally;
    let context = format!(
        "{wire:?}: promotions {:?}, failovers by the sentinels {:?}, run {:?}, drain {:?}\n{tally}",
        report.promotions, report.sentinel_failovers, report.elapsed, report.drain
    );
    eprintln!("{context}");
    assert_eq!(report.promotions.len(), 2, "two servers killed");
    assert!(tally.acknowledged > 0, "the producers were acknowledged");
    assert_eq!(
        tally.failures(settings.durability),
        Vec::<String>::new(),
        "{context}"
    );
    assert_eq!(tally.ran, tally.acknowledged, "{context}");
    assert!(tally.exec_runs > 0, "the exec worker ran jobs: {context}");
}

#[case(wire)]
async fn two_failovers_at_replicas_1_lose_nothing_and_breach_no_fence(wire: Wire) {
    let group = TestSentinelGroup::start(vec![module_path()]);
    two_failovers_lose_nothing(Topology::Sentinel(group), wire).await;
}

#[case(wire)]
async fn two_cluster_failovers_at_replicas_1_lose_nothing_and_breach_no_fence(wire: Wire) {
    let cluster = TestCluster::start_for_failover(3, vec![module_path()]);
    two_failovers_lose_nothing(Topology::Cluster(cluster), wire).await;
}
