//! Tenants behind ACL users: a user limited to one queue, or to one
//! prefix, runs everything of its own on both wires; a user of another
//! tenant is refused every verb, by name, and writes nothing; a user given
//! exactly what `echomq::acl::rules` (and `emq acl`) lists for its role
//! runs it. Real servers, real ACL users; Valkey 9 and Redis 7.0.

#[path = "tenants/cases.rs"]
mod cases;
use crate::common;

use common::Harness;

twins!(
    a_queue_scoped_user_runs_its_queue,
    a_prefix_scoped_user_runs_its_queues_and_lists_them,
    another_tenants_user_is_refused_every_verb_and_writes_nothing,
    a_worker_refused_the_queue_stops_with_not_permitted,
    a_worker_refused_the_cancel_channel_hears_cancels_at_checkpoints,
    a_cancel_sent_while_the_subscription_is_down_reaches_the_handler_when_it_is_back,
    a_script_command_the_user_lacks_is_named,
    a_queue_scoped_user_is_refused_the_registry_by_name,
    users_with_the_rules_of_their_role_produce_work_and_operate,
    a_user_refused_the_connects_checks_connects_and_works,
);

#[tokio::test]
async fn a_queue_scoped_user_runs_the_spine_on_a_cluster() {
    cases::a_queue_scoped_user_runs_the_spine(&Harness::cluster().await).await;
}

#[tokio::test]
async fn a_queue_scoped_user_over_mutual_tls_runs_its_queue_and_hears_cancels() {
    cases::a_queue_scoped_user_over_mutual_tls_runs_its_queue().await;
}
