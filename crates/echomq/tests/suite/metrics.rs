//! The metrics each queue keeps on the server (docs/protocol.md
//! "Metrics"): exact counts per outcome, wait and run samples in the right
//! bins, the windows rolling over and expiring on the server clock, the
//! switch that turns them off, and their refusals — each case on wire 4
//! and again on wire 6, against real servers.

#[path = "metrics/cases.rs"]
mod cases;
use crate::common;

twins!(
    a_known_run_counts_each_outcome_in_the_window_and_the_total,
    wait_and_run_samples_fall_in_their_bins,
    a_bulk_completion_samples_each_job_on_its_own,
    a_bulk_completion_writes_each_key_once,
    windows_roll_over_and_expire_on_the_server_clock,
    a_range_reads_every_window_oldest_first,
    metrics_off_reads_and_writes_nothing,
    obliterate_deletes_the_metrics,
    a_metrics_key_of_the_wrong_type_refuses_wrongtype_and_writes_nothing,
    a_window_zero_ms_wide_is_refused_bad_argument,
    keeping_more_windows_than_the_most_is_refused_bad_argument,
);

#[tokio::test]
async fn the_counts_on_a_cluster() {
    cases::a_known_run_counts_each_outcome_in_the_window_and_the_total(
        &common::Harness::cluster().await,
    )
    .await;
}
