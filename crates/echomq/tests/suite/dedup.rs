//! Deduplication (`docs/flow-control.md`, `docs/protocol.md`
//! "Deduplication"): each mode, each path that frees a key and each that
//! must not, each refusal, and a race of eight producers on one key. Every
//! case runs on a server (wire 4) and again on wire 6 (`on_wire_6::…`);
//! the spine of each mode also on a 3-master cluster. The state invariant,
//! dedup keys included, is checked after every step.

#[path = "dedup/cases.rs"]
mod cases;
use crate::common;
#[path = "dedup/keyspace.rs"]
mod keyspace;

twins!(
    the_queue_is_marked_once_a_job_takes_a_key,
    simple_mode_answers_the_holder_while_its_job_is_unfinished,
    a_deduplicated_enqueue_of_a_generated_id_takes_no_id,
    an_existing_id_answers_existed_before_the_key_is_looked_at,
    throttle_holds_for_its_time_on_the_server_clock,
    debounce_replaces_the_payload_and_pushes_the_run_at,
    debounce_of_a_pending_job_sends_it_back_to_the_schedule_set,
    the_claim_of_a_debounced_job_frees_its_key_for_the_next_job,
    a_debounce_on_a_key_held_by_a_simple_job_deduplicates,
    complete_frees_a_simple_key,
    bulk_complete_frees_each_simple_key,
    fail_to_dead_frees_a_simple_key,
    fail_cancelled_frees_a_simple_key,
    a_retry_does_not_free_the_key,
    stalled_to_dead_frees_a_simple_key,
    stalled_to_cancelled_frees_a_simple_key,
    cancel_of_a_waiting_job_frees_its_key,
    remove_frees_a_simple_key_but_not_a_throttle_key,
    drain_frees_simple_and_debounce_keys_but_not_throttle_keys,
    obliterate_frees_every_key,
    release_dedup_frees_a_key_of_any_mode,
    a_job_frees_no_key_another_job_took_since,
    bulk_enqueue_sends_jobs_with_a_key_alone_in_order,
    a_bad_dedup_key_is_refused_badarg_dedup_and_writes_nothing,
    dedup_for_without_dedup_is_refused_syntax,
    debounce_without_dedup_is_refused_syntax,
    dedup_for_and_debounce_together_are_refused_syntax,
    debounce_on_schedule_is_refused_syntax,
    a_zero_dedup_for_or_debounce_is_refused_badarg,
    dedup_owner_and_release_refuse_a_bad_key_badarg_dedup,
    the_client_refuses_bad_dedup_options_before_sending,
    eight_producers_racing_on_one_key_create_one_job,
);

/// What each mode stores, and how expired throttle keys go
/// (`dedup/keyspace.rs`), on both wires.
mod stored {
    use super::{common, keyspace as cases};

    twins!(
        simple_and_debounce_keys_are_owner_entries_only,
        only_a_simple_keys_job_stores_no_mode,
        a_simple_enqueue_does_not_trim_expired_keys,
        a_throttle_enqueue_trims_expired_keys,
        a_simple_key_taken_from_an_expired_throttle_key_leaves_the_set,
        a_throttle_key_taken_again_gets_a_new_time,
        release_dedup_removes_an_expired_throttle_key_and_answers_false,
    );
}

/// The spine of each mode on one 3-master cluster.
#[tokio::test]
async fn each_mode_on_a_cluster() {
    let harness = common::Harness::cluster().await;
    cases::simple_mode_answers_the_holder_while_its_job_is_unfinished(&harness).await;
    cases::throttle_holds_for_its_time_on_the_server_clock(&harness).await;
    cases::debounce_replaces_the_payload_and_pushes_the_run_at(&harness).await;
    cases::the_claim_of_a_debounced_job_frees_its_key_for_the_next_job(&harness).await;
    cases::release_dedup_frees_a_key_of_any_mode(&harness).await;
}
