//! The logs mark (docs/protocol.md, "The logs mark"): the first job of an
//! empty queue sets `logs` to 0 and retention then deletes no log keys;
//! `LOG` sets it to 1; a queue from before the mark is marked 1 and keeps
//! deleting them. Each case also runs on a 3-master cluster and on wire 6
//! (the native module).

#[path = "logs_mark/cases.rs"]
mod cases;
use crate::common;

/// Every case again, on one 3-master cluster.
#[tokio::test]
async fn logs_mark_suite_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}
