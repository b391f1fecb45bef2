//! `FLOW.WAIT` (docs/protocol.md, "Spawning and waiting"): the job in hand
//! waits for jobs it names, leaving active for `blocked` as DELAY leaves
//! it for the schedule, or answers `ready` when every named edge was
//! already resolved; every refusal writes nothing. Sent raw, so each case
//! runs on a server (wire 4) and again on wire 6 (the native module);
//! those marked so also on a 3-master cluster.

#[path = "flow_wait/cases.rs"]
mod cases;
#[path = "flow_wait/refusals.rs"]
mod refusals;
use crate::common;

/// Every case marked `cluster`, on one 3-master cluster.
#[tokio::test]
async fn flow_wait_suite_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}
