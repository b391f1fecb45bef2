//! Trace contexts on the wire (docs/protocol.md, "Traces"), without the
//! `otel` feature: `TRACE tp` stores a job's `traceparent`, marks the
//! queue `traced`, and every claim of the job answers it sixth; a queue
//! never traced reads none. Each case also runs on a 3-master cluster and
//! on wire 6 (the native module).

#[path = "traces/cases.rs"]
mod cases;
use crate::common;

suite!(
    traces_suite_on_cluster, traces_suite_on_wire_6:
    a_traced_enqueue_stores_its_traceparent_and_marks_the_queue,
    every_claim_of_a_traced_job_answers_its_traceparent_sixth,
    a_queue_never_traced_reads_no_traceparent_when_it_claims,
    a_bad_traceparent_is_refused_badarg_traceparent,
    an_enqueue_that_creates_nothing_does_not_mark_the_queue,
    a_bulk_enqueue_sends_a_traced_job_alone_in_order,
);
