//! Controls over time: schedule, promote, delay, reschedule, backoff, and an
//! idle worker that starts a scheduled job on time. Every case runs on a
//! server, the transition cases again on a 3-master cluster and on wire 6.

#[path = "time/cases.rs"]
mod cases;
use crate::common;
#[path = "time/worker.rs"]
mod worker_cases;

use common::Harness;

suite!(
    time_suite_on_cluster, time_suite_on_wire_6:
    a_job_with_a_future_run_at_waits_on_the_schedule_set,
    a_run_at_past_2_53_is_the_same_double_in_the_job_and_the_schedule_set,
    a_run_at_already_due_goes_straight_to_pending,
    an_absolute_run_at_is_kept_as_given,
    claim_promotes_due_jobs_itself,
    a_claim_that_promotes_takes_the_lowest_of_pending_and_due,
    promote_moves_due_jobs_and_counts_them,
    scheduled_and_immediate_jobs_mix_in_one_bulk,
    delay_sends_the_job_back_without_a_failure,
    delay_with_a_stale_token_is_refused_notactive,
    reschedule_moves_a_scheduled_job,
    reschedule_of_a_pending_job_is_refused_badstate,
    reschedule_of_an_active_job_is_refused_badstate,
    reschedule_of_a_finished_job_is_refused_badstate,
    reschedule_of_a_missing_job_is_refused_nojob,
);

#[tokio::test]
async fn an_idle_worker_starts_a_job_scheduled_300_ms_ahead_on_time() {
    worker_cases::an_idle_worker_starts_a_job_scheduled_300_ms_ahead_on_time(
        &Harness::server().await,
    )
    .await;
}

#[tokio::test]
async fn retries_follow_the_backoff_curve() {
    worker_cases::retries_follow_the_backoff_curve(&Harness::server().await).await;
}

#[tokio::test]
async fn jittered_retries_stay_inside_their_bounds() {
    worker_cases::jittered_retries_stay_inside_their_bounds(&Harness::server().await).await;
}

#[tokio::test]
async fn a_handler_delay_keeps_the_attempt_budget() {
    worker_cases::a_handler_delay_keeps_the_attempt_budget(&Harness::server().await).await;
}

#[tokio::test]
async fn an_earlier_job_wakes_a_worker_sleeping_towards_a_later_one() {
    worker_cases::an_earlier_job_wakes_a_worker_sleeping_towards_a_later_one(
        &Harness::server().await,
    )
    .await;
}
