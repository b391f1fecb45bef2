//! Flow control — a rate limit and a cap on active jobs across every
//! worker, a handler's rate-limited outcome holding the whole queue —
//! against real servers: each case on wire 4 and again on wire 6 (the
//! module's `EMQ.*`), the transitions' spine again on a 3-master cluster.
//! The state invariant is checked after the steps.

#[path = "flow/cases.rs"]
mod cases;
use crate::common;
#[path = "flow/workers.rs"]
mod workers;

use common::Harness;

twins!(
    a_claim_under_a_limit_hands_out_what_the_window_has_left,
    a_claim_that_takes_exactly_what_the_window_has_left_answers_no_wait,
    a_claim_under_a_spent_window_still_promotes_due_jobs,
    a_claim_under_the_cap_hands_out_the_room_and_answers_zero,
    every_job_leaving_active_under_a_cap_wakes_a_worker,
    without_a_cap_a_completion_sets_no_marker,
    a_rate_limited_failure_holds_the_queue_without_counting_a_failure,
    a_cancel_requested_job_that_meets_a_rate_limit_is_cancelled,
    limit_sets_reads_and_clears_and_says_so_in_the_events,
    concurrency_sets_reads_and_clears_and_wakes_a_waiting_worker,
    limit_max_zero_is_refused_badarg_max,
    limit_per_zero_is_refused_badarg_per,
    limit_max_without_per_is_refused_badarg_per,
    limit_per_without_max_is_refused_badarg_max,
    limit_off_with_max_is_refused_syntax,
    concurrency_max_zero_is_refused_badarg_max,
    concurrency_off_with_max_is_refused_syntax,
    fail_rate_limited_with_dead_is_refused_syntax,
);

worker_twins!(
    a_rate_limit_holds_across_four_workers_in_every_window,
    a_rate_limited_handler_holds_the_queue_and_its_job_runs_later,
    a_cap_of_three_holds_across_four_workers,
    a_finishing_job_wakes_a_worker_waiting_on_the_cap,
    an_idle_limited_worker_sends_at_most_two_commands_a_window,
);

/// The spine of each control, on one 3-master cluster.
#[tokio::test]
async fn flow_spine_on_cluster() {
    let h = Harness::cluster().await;
    cases::a_claim_under_a_limit_hands_out_what_the_window_has_left(&h).await;
    cases::a_claim_under_the_cap_hands_out_the_room_and_answers_zero(&h).await;
    cases::every_job_leaving_active_under_a_cap_wakes_a_worker(&h).await;
    cases::a_rate_limited_failure_holds_the_queue_without_counting_a_failure(&h).await;
    cases::limit_sets_reads_and_clears_and_says_so_in_the_events(&h).await;
    cases::concurrency_sets_reads_and_clears_and_wakes_a_waiting_worker(&h).await;
    cases::limit_max_without_per_is_refused_badarg_per(&h).await;
    workers::a_rate_limited_handler_holds_the_queue_and_its_job_runs_later(&h).await;
    workers::a_cap_of_three_holds_across_four_workers(&h).await;
}
