//! Flow control — a rate limit and a cap on active jobs across every
//! worker, a handler's rate-limited outcome holding the whole queue —
//! against real servers: each case on wire 4 and again on wire 6 (the
//! module's `EMQ.*`), the transitions' spine again on a 3-master cluster.
//! The state invariant is checked after the steps.

#[path = "flow/cases.rs"]
mod cases;
use crate::common;
#[path = "flow/workers.rs"]
mod workers;

/// The spine of each control, on one 3-master cluster.
#[tokio::test]
async fn flow_spine_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}
