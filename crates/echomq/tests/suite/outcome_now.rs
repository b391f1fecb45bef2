//! `OUTCOME` (docs/protocol.md, "Outcome waits"): a finished job answers
//! its outcome and writes nothing, an absent one nil, an unfinished one
//! its state, after marking the job and its queue waited for (each mark
//! written once). Its refusals write nothing. An enqueue with `WAITED`
//! marks the jobs it creates, and nothing else. Each case runs on a server
//! (wire 4) and again on wire 6 (the native module); those marked so also
//! on a 3-master cluster.

#[path = "outcome_now/cases.rs"]
mod cases;
#[path = "outcome_now/waited.rs"]
mod waited;
use crate::common;

/// Every case marked `cluster`, on one 3-master cluster.
#[tokio::test]
async fn outcome_now_suite_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}
