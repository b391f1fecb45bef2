//! Outcome waits on a 3-master cluster, both wires (issue 41: "standalone,
//! Sentinel and cluster"): each guarantee case of `outcome_wait` in turn
//! on one cluster per wire, its queues on whichever node owns their slot
//! (the wait subscribes to the channel on that node, and a read-back
//! asks it): a job decided before the wait, one completed during it, one
//! dead, cancelled, removed or absent, a timeout, an outcome published
//! while the subscription was down (`CLIENT KILL TYPE pubsub` on the
//! queue's node), and many waits at once.

use super::outcome_wait as cases;
use crate::common::Harness;
use echomq::Wire;
use echomq_testkit::case;

#[case(wire)]
async fn outcome_waits_on_a_cluster(wire: Wire) {
    let h = Harness::cluster_on(wire).await;
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
}
