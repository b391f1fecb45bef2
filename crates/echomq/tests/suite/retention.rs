//! Retention by age (docs/protocol.md, "Retention by age"): each trim of a
//! finished set deletes the members older than the set's age rule, then
//! those beyond its count, at most 100 a call, with their logs; RETENTION
//! reads and writes the settings (`control.rs`). Each case
//! also runs on a 3-master cluster and on wire 6 (the native module).

#[path = "retention/cases.rs"]
mod cases;
#[path = "retention/control.rs"]
mod control;
use crate::common;

/// Every case again, on one 3-master cluster.
#[tokio::test]
async fn retention_suite_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}
