//! Trace contexts on the wire (docs/protocol.md, "Traces"), without the
//! `otel` feature: `TRACE tp` stores a job's `traceparent`, marks the
//! queue `traced`, and every claim of the job answers it sixth; a queue
//! never traced reads none. Each case also runs on a 3-master cluster and
//! on wire 6 (the native module).

#[path = "traces/cases.rs"]
mod cases;
use crate::common;

/// Every case again, on one 3-master cluster.
#[tokio::test]
async fn traces_suite_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}
