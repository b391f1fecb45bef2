//! The spine — enqueue, claim, complete, fail, get, counts — against a real
//! server, each case also run on a 3-master cluster and on wire 6 (the
//! native module). The state invariant is checked after every transition.

#[path = "spine/cases.rs"]
mod cases;
#[path = "spine/failover.rs"]
mod failover;
use crate::common;

suite!(
    spine_suite_on_cluster, spine_suite_on_wire_6:
    enqueue_creates_a_pending_job,
    enqueue_with_an_existing_id_changes_nothing,
    generated_ids_skip_ids_already_taken,
    claim_takes_priority_then_fifo,
    claim_count_takes_a_batch,
    a_claim_that_brings_the_active_set_to_32_leases_keeps_it_a_skiplist,
    claim_of_an_empty_queue_returns_nothing,
    claim_issues_a_larger_token_each_time,
    a_batch_claim_gives_each_job_its_own_token,
    complete_moves_active_to_completed,
    complete_with_a_stale_token_is_refused_notactive,
    a_thousandth_claim_completes_with_its_token,
    fail_with_a_stale_token_is_refused_notactive,
    complete_of_a_completed_job_is_refused_notactive,
    complete_of_a_missing_job_is_refused_notactive,
    fail_retries_until_attempts_run_out,
    fail_with_retry_in_schedules_the_retry,
    fail_dead_dead_letters_at_once,
    fail_cancelled_cancels_without_counting_a_failure,
    bad_queue_names_are_refused_before_any_key_is_written,
    bad_job_ids_are_refused_before_any_key_is_written,
    a_wrong_key_type_is_refused_before_any_write,
    a_claim_that_meets_a_job_key_of_the_wrong_type_writes_nothing,
    a_refused_complete_leaves_a_watch_on_the_job_intact,
    a_setting_that_is_not_a_whole_number_reads_as_its_default,
    get_of_a_missing_job_is_none,
    retention_keeps_the_newest_completed_jobs,
    keep_completed_zero_deletes_at_once,
    retention_trims_dead_jobs,
    events_record_each_transition,
    bulk_enqueue_matches_single_enqueue,
    jobs_of_priority_0_wait_in_fifo_and_take_no_seq,
    the_first_grouped_job_moves_fifo_into_pending_in_order,
    drain_takes_fifo_first_then_pending,
    a_fifo_of_the_wrong_type_is_refused_before_any_write,
);
