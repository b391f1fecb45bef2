//! `FLOW.ADD`, `FLOW.ADD.BULK`, `FLOW.DEPS` and `FLOW.DEPENDENTS`
//! (docs/protocol.md, "Flows"): a flow's jobs are written blocked on their
//! dependencies, or waiting as an enqueue writes them, with their edges'
//! halves in their own queue; an id of the same flow changes nothing, one
//! of another flow (or of none) is refused `CONFLICT`, and every refusal
//! writes nothing. Sent raw (the client's flow builder comes later), so
//! each case runs on a server (wire 4) and again on wire 6 (the native
//! module); those marked so also on a 3-master cluster.

#[path = "flow_add/cases.rs"]
pub(crate) mod cases;
#[path = "flow_add/reads.rs"]
mod reads;
#[path = "flow_add/refusals.rs"]
pub(crate) mod refusals;
use crate::common;

/// Every case marked `cluster`, on one 3-master cluster.
#[tokio::test]
async fn flow_add_suite_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}
