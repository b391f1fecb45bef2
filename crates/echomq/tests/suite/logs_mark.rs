//! The logs mark (docs/protocol.md, "The logs mark"): the first job of an
//! empty queue sets `logs` to 0 and retention then deletes no log keys;
//! `LOG` sets it to 1; a queue from before the mark is marked 1 and keeps
//! deleting them. Each case also runs on a 3-master cluster and on wire 6
//! (the native module).

#[path = "logs_mark/cases.rs"]
mod cases;
use crate::common;

suite!(
    logs_mark_suite_on_cluster, logs_mark_suite_on_wire_6:
    the_first_job_of_an_empty_queue_sets_the_logs_mark_to_0,
    an_enqueue_that_creates_nothing_sets_no_logs_mark,
    log_sets_the_logs_mark_and_retention_then_deletes_the_log,
    a_queue_from_before_the_mark_is_marked_1_and_its_logs_still_go,
    retention_under_the_mark_0_deletes_no_log_key,
    log_on_a_queue_whose_meta_is_not_a_hash_is_refused_wrongtype,
);
