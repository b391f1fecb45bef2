//! Fair groups — the round robin of a claim across groups, each group's
//! cap, rate limit, pause and counts, and the bookkeeping every other
//! transition keeps — against real servers: each case on wire 4 and again
//! on wire 6 (the module's `EMQ.*`), the spine of groups again on a
//! 3-master cluster. The state invariant, groups included, is checked
//! after the steps.

#[path = "groups/cases.rs"]
mod cases;
use crate::common;
#[path = "groups/workers.rs"]
mod workers;

use common::Harness;

twins!(
    a_claim_takes_one_head_per_group_round_robin,
    a_claim_of_count_n_spreads_across_groups_in_the_same_order,
    inside_a_group_priority_then_first_in_first_out,
    ungrouped_jobs_take_part_as_one_more_group,
    a_group_cap_holds_its_jobs_back_until_one_finishes,
    a_group_rate_limit_holds_its_jobs_until_the_window_reopens,
    a_paused_group_waits_and_the_rest_flows,
    group_counts_and_the_list_page_by_name,
    settings_make_a_group_and_clearing_them_leaves_no_keys,
    the_stalled_sweep_returns_a_grouped_job_to_its_lane,
    cancel_remove_and_drain_take_jobs_out_of_their_lanes,
    delay_requeue_and_reprocess_keep_the_group_exact,
    scheduled_grouped_jobs_enter_their_lane_when_promoted,
    obliterate_leaves_no_group_key,
    group_events_are_written,
    a_bad_group_is_refused_badarg_group,
    group_concurrency_off_with_max_is_refused_syntax,
    group_concurrency_max_zero_is_refused_badarg_max,
    group_limit_max_without_per_is_refused_badarg_per,
    group_limit_per_without_max_is_refused_badarg_max,
    group_limit_off_with_max_is_refused_syntax,
    group_pause_with_an_extra_argument_is_refused_syntax,
    groups_after_a_bad_group_is_refused_badarg_after,
    groups_count_zero_is_refused_badarg_count,
);

#[tokio::test]
async fn the_round_robin_on_a_cluster() {
    let h = Harness::cluster().await;
    cases::a_claim_takes_one_head_per_group_round_robin(&h).await;
    cases::a_group_cap_holds_its_jobs_back_until_one_finishes(&h).await;
    cases::cancel_remove_and_drain_take_jobs_out_of_their_lanes(&h).await;
}

worker_twins!(
    small_groups_finish_before_a_big_backlog_does,
    a_group_cap_holds_across_four_workers,
    a_paused_or_capped_group_never_blocks_the_others,
    a_group_whose_window_reopens_wakes_an_idle_worker,
);
