//! The metrics each queue keeps on the server (docs/protocol.md
//! "Metrics"): exact counts per outcome, wait and run samples in the right
//! bins, the windows rolling over and expiring on the server clock, the
//! switch that turns them off, and their refusals — each case on wire 4
//! and again on wire 6, against real servers.

#[path = "metrics/cases.rs"]
mod cases;
use crate::common;

#[tokio::test]
async fn the_counts_on_a_cluster() {
    common::on_one_cluster(module_path!()).await;
}
