//! `cargo bench -p emq --bench flows_cluster`: from a dependency's
//! completion to its dependent being claimable when the two sit on
//! different masters of a 3-master cluster (the testkit's, on loopback;
//! `EMQ_VALKEY_SERVER` names the server binary), over `EMQ_BENCH_PAIRS`
//! pairs (default 10,000) drained by one worker at concurrency 50, wire 4
//! (the cluster's nodes load no module). The figure across shards that
//! `emq bench --flows` cannot take: it measures one server.

use echomq::{Connector, QueueSettings};
use echomq_testkit::TestCluster;
use emq::bench::unblock_latency_over;
use serde_json::Value;

fn main() {
    let pairs = std::env::var("EMQ_BENCH_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let cluster = TestCluster::start(3);
    // `dependency` and `dependent` hash to slots of two different masters.
    let [first, then] = ["dependency", "dependent"];
    let masters = [first, then].map(|q| cluster.master_of(&format!("{{{q}}}")).port());
    assert_ne!(masters[0], masters[1], "the two queues share a master");
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let latency = runtime.block_on(async {
        let text = |err: echomq::Error| err.to_string();
        let connector = Connector::cluster(cluster.urls())
            .connect()
            .await
            .map_err(text)?;
        let keep = QueueSettings {
            keep_completed: pairs,
            ..QueueSettings::default()
        };
        let first = connector.queue::<Value>(first).map_err(text)?;
        let then = connector.queue::<Value>(then).map_err(text)?;
        for queue in [&first, &then] {
            queue.configure(&keep).await.map_err(text)?;
        }
        unblock_latency_over(&connector, &first, &then, pairs)
            .await
            .map_err(|err| err.to_string())
    });
    match latency {
        Ok(u) => println!(
            "across two masters of a cluster, {} pairs, c50: dependency completed → dependent claimable p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (masters {masters:?})",
            u.pairs, u.p50_ms, u.p99_ms, u.max_ms
        ),
        Err(err) => {
            eprintln!("flows_cluster bench: {err}");
            std::process::exit(1);
        }
    }
}
