//! Outcome waits on a 3-master cluster with a replica per master, both
//! wires (issue 41: "standalone, Sentinel and cluster"): each guarantee
//! case of `outcome_wait` in turn on one cluster per wire (its nodes have
//! the module and an AOF), its queues on whichever node owns their slot
//! (the wait subscribes to the channel on that node, and a read-back
//! asks it): a job decided before the wait, one completed during it, one
//! dead, cancelled, removed or absent, a timeout, an outcome published
//! while the subscription was down (`CLIENT KILL TYPE pubsub` on the
//! queue's node), and many waits at once; last, a wait open across a
//! failover of the queue's master to its replica, a node the connector
//! was not given. One cluster per wire: under six test threads a cluster
//! more per case made their forming time out.

use super::outcome_wait as cases;
use crate::common::{Harness, fail_over};
use echomq::{NewJob, Outcome, Wire};
use echomq_testkit::{case, wait_for};
use serde_json::{Value, json};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

#[case(wire)]
async fn outcome_waits_on_a_cluster(wire: Wire) {
    let h = Harness::failover_cluster_on(wire).await;
    eprintln!("cluster on {wire:?}: decided before the wait");
    cases::a_job_completed_before_the_wait_began_answers_at_once(&h).await;
    eprintln!("cluster on {wire:?}: completed during the wait");
    cases::a_wait_begun_before_the_completion_gets_its_result(&h).await;
    eprintln!("cluster on {wire:?}: dead");
    cases::a_dead_job_answers_its_error_and_attempts(&h).await;
    eprintln!("cluster on {wire:?}: cancelled");
    cases::a_cancelled_job_answers_cancelled(&h).await;
    eprintln!("cluster on {wire:?}: removed");
    cases::a_job_removed_while_waited_for_answers_removed(&h).await;
    eprintln!("cluster on {wire:?}: absent");
    cases::a_job_that_does_not_exist_answers_removed_at_once(&h).await;
    eprintln!("cluster on {wire:?}: timeout");
    cases::a_wait_that_runs_out_is_a_timeout_and_leaves_the_job(&h).await;
    eprintln!("cluster on {wire:?}: published while the subscription was down");
    cases::an_outcome_published_while_the_subscription_was_down_is_read_back(&h).await;
    eprintln!("cluster on {wire:?}: many waits");
    cases::many_waits_yield_each_outcome_as_it_is_decided(&h).await;
    eprintln!("cluster on {wire:?}: a failover");
    a_wait_follows_a_failover_of_its_queue_s_master(&h).await;
}

/// A wait open while the queue's master fails over to its replica gets
/// the outcome decided on the new master.
async fn a_wait_follows_a_failover_of_its_queue_s_master(h: &Harness) {
    let q = h.queue::<Value>("failover");
    let id = q
        .enqueue(NewJob::new(json!(1)).id("across").unwrap())
        .await
        .unwrap()
        .id;
    let wait = tokio::spawn({
        let (q, id) = (q.clone(), id.clone());
        async move { q.outcome::<Value>(&id, WAIT).await }
    });
    let key = q.keys().job(&id);
    wait_for("the job marked waited for", WAIT, || async {
        let waited: Option<String> = redis::cmd("HGET")
            .arg(&key)
            .arg("waited")
            .query_async(&mut h.raw(&q).await)
            .await
            .unwrap();
        waited.as_deref() == Some("1")
    })
    .await;
    fail_over(h, &q, &id).await;
    let job = wait_for("a claim on the new master", WAIT, || async {
        q.claim_one("w", WAIT).await.ok().flatten()
    })
    .await;
    assert_eq!(job.id, id);
    q.complete(&id, job.token, &json!("after the failover"))
        .await
        .unwrap();
    let outcome = tokio::time::timeout(WAIT + WAIT, wait)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        outcome.unwrap(),
        Outcome::Completed {
            result: Some(json!("after the failover"))
        }
    );
}
