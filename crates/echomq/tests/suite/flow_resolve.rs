//! `FLOW.RESOLVE` (docs/protocol.md, "Flows"): on the dependents' queue,
//! each edge still `wait` takes its dependency's resolution once; a
//! blocked dependent is unblocked at its last edge, entering pending as
//! every path into pending does, or decided by its failure policy, its own
//! resolution written when it has dependents; every refusal writes
//! nothing. Sent raw, so each case runs on a server (wire 4) and again on
//! wire 6 (the native module); those marked so also on a 3-master cluster.

#[path = "flow_resolve/cases.rs"]
pub(crate) mod cases;
#[path = "flow_resolve/entering.rs"]
mod entering;
#[path = "flow_resolve/refusals.rs"]
mod refusals;
use crate::common;

/// Every case marked `cluster`, on one 3-master cluster.
#[tokio::test]
async fn flow_resolve_suite_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}
