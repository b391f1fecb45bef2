//! Tenants behind ACL users: a user limited to one queue, or to one
//! prefix, runs everything of its own on both wires; a user of another
//! tenant is refused every verb, by name, and writes nothing; a user given
//! exactly what `echomq::acl::rules` (and `emq acl`) lists for its role
//! runs it. Real servers, real ACL users; Valkey 9 and Redis 7.0.

#[path = "tenants/cases.rs"]
mod cases;
use crate::common;

use common::Harness;

#[tokio::test]
async fn a_queue_scoped_user_runs_the_spine_on_a_cluster() {
    cases::a_queue_scoped_user_runs_the_spine(&Harness::cluster().await).await;
}

#[tokio::test]
async fn a_queue_scoped_user_over_mutual_tls_runs_its_queue_and_hears_cancels() {
    cases::a_queue_scoped_user_over_mutual_tls_runs_its_queue().await;
}
