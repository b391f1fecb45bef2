//! Fair groups — the round robin of a claim across groups, each group's
//! cap, rate limit, pause and counts, and the bookkeeping every other
//! transition keeps — against real servers: each case on wire 4 and again
//! on wire 6 (the module's `EMQ.*`), the spine of groups again on a
//! 3-master cluster. The state invariant, groups included, is checked
//! after the steps.

#[path = "groups/cases.rs"]
mod cases;
use crate::common;
#[path = "groups/workers.rs"]
mod workers;

#[tokio::test]
async fn the_round_robin_on_a_cluster() {
    common::on_one_cluster(module_path!()).await;
}
