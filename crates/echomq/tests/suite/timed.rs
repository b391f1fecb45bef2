//! Time limits and start-by deadlines (docs/protocol.md, "Time limits,
//! start-by deadlines, LIFO and retention by age"): the options of ENQUEUE
//! and SCHEDULE, each refusal with its own case and the same text on both
//! wires, what a timed enqueue writes (the job's fields, the `timed`
//! mark, the `deadlines` set), and the client's checks. Each case runs on
//! wire 4 and wire 6; those marked `cluster` again on a 3-master cluster.

#[path = "timed/cases.rs"]
mod cases;
#[path = "timed/claim_expiry.rs"]
mod claim_expiry;
#[path = "timed/expiry.rs"]
mod expiry;
#[path = "timed/limits.rs"]
mod limits;
#[path = "timed/refusals.rs"]
mod refusals;
use crate::common;

/// Every case marked `cluster` again, on one 3-master cluster.
#[tokio::test]
async fn timed_suite_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}
