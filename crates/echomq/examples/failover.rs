//! The failover chaos run. Two topologies (`EMQ_TOPOLOGY`), AOF on every
//! server and the module loaded:
//!
//! - `sentinel` (the default): a primary, two replicas and three
//!   sentinels (quorum 2); the driver `SIGKILL`s the primary every few
//!   seconds, waits for the sentinels to promote a replica and restarts
//!   the killed server (it comes back as a replica);
//! - `cluster`: three masters with a replica each,
//!   `cluster-node-timeout` 2000 ms; the driver `SIGKILL`s the master of
//!   the queue's slot, waits until the cluster promotes its replica and
//!   restarts the killed node (it rejoins as that replica's replica).
//!
//! Producers enqueue jobs with ids of their own at a durability level
//! and record each acknowledged enqueue; library workers and `emq worker
//! --exec` processes (`--sentinel` or `--cluster`, at the same level) run
//! them, recording each run with its claim's token (the exec workers'
//! command from `EMQ_JOB_ID` and `EMQ_TOKEN`). Then the run drains and
//! holds the clients' ledger against the surviving servers' records:
//!
//! - acknowledged enqueues, and jobs that ran;
//! - lost: acknowledged jobs that never ran;
//! - jobs run more than once (at-least-once allows it);
//! - fence breaches: a completed job whose accepted completion (the run
//!   its result names) did not hold the token of the job's last claim, or
//!   whose token another run held too;
//! - stuck: acknowledged jobs that ran but are not completed after the
//!   drain (`DRAIN_TIMEOUT_S`).
//!
//! The exit code is non-zero on a fence breach at any level, and above
//! `memory` on any lost or stuck job.
//!
//! ```sh
//! cargo build --release -p echomq-module -p emq
//! cargo build --release -p echomq --example failover
//! EMQ_VALKEY_SERVER=$(scripts/valkey) EMQ_MODULE=target/release/libechomq_module.so \
//!   EMQ_DURABILITY=replicas:1 EMQ_WIRE=native target/release/examples/failover
//! EMQ_VALKEY_SERVER=$(scripts/valkey) EMQ_MODULE=target/release/libechomq_module.so \
//!   EMQ_TOPOLOGY=cluster EMQ_DURABILITY=memory target/release/examples/failover
//! ```
//!
//! Figures of 20 failovers (docs/reliability.md, "The failover chaos
//! run"), one exec worker: on the cluster, `replicas:1` lost 0 of 9,085
//! (wire 4) and 7,783 (wire 6) acknowledged jobs, `memory` 0 of 10,605 and
//! 10,526; on Redis 7.0 behind Sentinel, `replicas:1` (`WAIT`) lost 0,
//! `memory` 16 and 21; no fence breach, nothing stuck, in any run.
//!
//! Environment: `EMQ_TOPOLOGY` (`sentinel` or `cluster`; default
//! `sentinel`), `EMQ_DURABILITY` (`memory`, `local`, `replicas:N[:MS]`;
//! default `replicas:1`), `EMQ_WIRE` (`script` or `native`; default
//! `script`), `FAILOVERS` (20), `KILL_EVERY_MS` (3000: load between a
//! restart and the next kill), `PRODUCERS` (2), `ENQUEUE_EVERY_MS` (10,
//! per producer), `WORKERS` (2, of 8 handlers each), `EXEC_WORKERS` (1,
//! `emq worker --exec` processes of 4 commands each; the `emq` binary is
//! `EMQ_BIN` or the one next to this example's directory),
//! `DRAIN_TIMEOUT_S` (60). The core is `examples/failover/`, which the
//! suite runs briefly (`tests/suite/failover_chaos.rs`).

#[path = "failover/mod.rs"]
mod chaos;

use echomq::{Durability, Wire};
use echomq_testkit::{TestCluster, TestSentinelGroup, module_path};
use std::process::ExitCode;
use std::time::Duration;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn settings() -> Result<chaos::Settings, String> {
    let durability = match std::env::var("EMQ_DURABILITY") {
        Ok(level) => level
            .parse::<Durability>()
            .map_err(|e| format!("EMQ_DURABILITY: {e}"))?,
        Err(_) => Durability::replicas(1),
    };
    let wire = match std::env::var("EMQ_WIRE").as_deref() {
        Ok("script") | Err(_) => Wire::Script,
        Ok("native") => Wire::Native,
        Ok(other) => return Err(format!("EMQ_WIRE={other:?}: say script or native")),
    };
    Ok(chaos::Settings {
        wire,
        durability,
        failovers: env_or("FAILOVERS", 20),
        kill_every: Duration::from_millis(env_or("KILL_EVERY_MS", 3000)),
        producers: env_or("PRODUCERS", 2),
        enqueue_every: Duration::from_millis(env_or("ENQUEUE_EVERY_MS", 10)),
        workers: env_or("WORKERS", 2),
        exec_workers: env_or("EXEC_WORKERS", 1),
        drain_timeout: Duration::from_secs(env_or("DRAIN_TIMEOUT_S", 60)),
    })
}

/// The servers `EMQ_TOPOLOGY` names: `sentinel` (the default) or
/// `cluster`, started.
fn start_topology() -> Result<chaos::Topology, String> {
    match std::env::var("EMQ_TOPOLOGY").as_deref() {
        Ok("sentinel") | Err(_) => Ok(chaos::Topology::Sentinel(TestSentinelGroup::start(vec![
            module_path(),
        ]))),
        Ok("cluster") => Ok(chaos::Topology::Cluster(TestCluster::start_for_failover(
            3,
            vec![module_path()],
        ))),
        Ok(other) => Err(format!("EMQ_TOPOLOGY={other:?}: say sentinel or cluster")),
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let (settings, topology) = match settings().and_then(|s| Ok((s, start_topology()?))) {
        Ok(both) => both,
        Err(e) => {
            eprintln!("failover: {e}");
            return ExitCode::from(2);
        }
    };
    let report = match chaos::run(topology, &settings).await {
        Ok(report) => report,
        Err(e) => {
            eprintln!("failover: {e}");
            return ExitCode::FAILURE;
        }
    };
    let promotions = &report.promotions;
    let slowest = promotions.iter().max().copied().unwrap_or_default();
    let mean = promotions.iter().sum::<Duration>() / promotions.len().max(1) as u32;
    println!(
        "failover run: {} failovers, wire {:?}, durability {}",
        promotions.len(),
        settings.wire,
        settings.durability
    );
    if let Some(failovers) = report.sentinel_failovers {
        println!("{:<34}{:>10}", "failovers by the sentinels", failovers);
    }
    println!("{:<34}{:>10.1}", "promotion, mean (s)", mean.as_secs_f64());
    println!(
        "{:<34}{:>10.1}",
        "promotion, slowest (s)",
        slowest.as_secs_f64()
    );
    println!("{:<34}{:>10.1}", "run (s)", report.elapsed.as_secs_f64());
    println!("{:<34}{:>10.1}", "drain (s)", report.drain.as_secs_f64());
    print!("{}", report.tally);
    let failures = report.tally.failures(settings.durability);
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        eprintln!("failover: {}", failures.join(", "));
        ExitCode::FAILURE
    }
}
