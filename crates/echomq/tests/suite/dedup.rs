//! Deduplication (`docs/flow-control.md`, `docs/protocol.md`
//! "Deduplication"): each mode, each path that frees a key and each that
//! must not, each refusal, and a race of eight producers on one key. Every
//! case runs on a server (wire 4) and again on wire 6 (`…::on_wire_6`);
//! the spine of each mode also on a 3-master cluster. The state invariant,
//! dedup keys included, is checked after every step.

#[path = "dedup/cases.rs"]
mod cases;
use crate::common;
#[path = "dedup/keyspace.rs"]
mod keyspace;

/// The spine of each mode on one 3-master cluster.
#[tokio::test]
async fn each_mode_on_a_cluster() {
    common::on_one_cluster(module_path!()).await;
}
