//! The spine — enqueue, claim, complete, fail, get, counts — against a real
//! server, each case also run on a 3-master cluster and on wire 6 (the
//! native module). The state invariant is checked after every transition.

#[path = "spine/cases.rs"]
mod cases;
#[path = "spine/failover.rs"]
mod failover;
use crate::common;

/// Every case again, on one 3-master cluster.
#[tokio::test]
async fn spine_suite_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}
