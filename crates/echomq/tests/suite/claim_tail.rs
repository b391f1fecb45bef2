//! `COMPLETE.BULK … CLAIM worker lease_ms count`: completions and the next
//! claim in one call, on a server, a 3-master cluster and wire 6. The call
//! completes exactly as without the tail, then claims exactly as CLAIM
//! would; a refusal of the claim's part leaves the completions written.

#[path = "claim_tail/cases.rs"]
mod cases;
use crate::common;

/// Every case again, on one 3-master cluster.
#[tokio::test]
async fn claim_tail_suite_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}
