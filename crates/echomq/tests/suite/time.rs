//! Controls over time: schedule, promote, delay, reschedule, backoff, and an
//! idle worker that starts a scheduled job on time. Every case runs on a
//! server, the transition cases again on a 3-master cluster and on wire 6.

#[path = "time/cases.rs"]
mod cases;
use crate::common;
#[path = "time/worker.rs"]
mod worker_cases;

use common::Harness;

/// Every case again, on one 3-master cluster.
#[tokio::test]
async fn time_suite_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}

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
