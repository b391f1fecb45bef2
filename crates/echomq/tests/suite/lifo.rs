//! LIFO jobs (docs/protocol.md, "Time limits, start-by deadlines, LIFO and
//! retention by age"): the claim order of FIFO and LIFO jobs at two
//! priorities, on a queue without groups and inside a group's lane, and
//! a LIFO job that enters pending again going to the front again. Each
//! case runs on wire 4 and wire 6; those marked `cluster` again on a
//! 3-master cluster. The state invariant is checked after the steps.

use crate::common::{self, Harness, meta_field};
use echomq::{FailAction, JobId, NewJob, Queue};
use echomq_testkit::invariant::check_invariant;
use serde_json::{Value, json};
use std::time::Duration;

/// Every case marked `cluster` again, on one 3-master cluster.
#[tokio::test]
async fn lifo_suite_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}

/// Enqueues, in order, FIFO and LIFO jobs at priorities 0 and 1 (each in
/// `group` when given), named by what they are: `f1` FIFO at priority 0,
/// `L2` LIFO at priority 1, …; returns them in claim order as the
/// contract says: priority 0 first, its LIFO jobs newest first, then its
/// FIFO jobs oldest first; then priority 1 likewise.
async fn enqueue_mix(q: &Queue<Value>, group: Option<&str>) -> Vec<String> {
    let mix = [
        ("f1", 0, false),
        ("l1", 0, true),
        ("F1", 1, false),
        ("L1", 1, true),
        ("f2", 0, false),
        ("l2", 0, true),
        ("F2", 1, false),
        ("L2", 1, true),
        ("l3", 0, true),
    ];
    for (id, priority, lifo) in mix {
        let mut job = NewJob::new(json!(id)).id(id).unwrap().priority(priority);
        if lifo {
            job = job.lifo();
        }
        if let Some(group) = group {
            job = job.group(group);
        }
        q.enqueue(job).await.unwrap();
    }
    ["l3", "l2", "l1", "f1", "f2", "L2", "L1", "F1", "F2"]
        .map(String::from)
        .to_vec()
}

/// Claims one job at a time until none is pending: their ids in order.
async fn claim_all(q: &Queue<Value>) -> Vec<String> {
    let mut order = Vec::new();
    while let Some(job) = q.claim_one("w", Duration::from_secs(60)).await.unwrap() {
        order.push(job.id.as_str().to_string());
    }
    order
}

#[echomq_testkit::case(cluster)]
pub(super) async fn lifo_jobs_are_claimed_first_in_their_priority_newest_first(h: &Harness) {
    let q = h.queue::<Value>("lifo_order");
    let expected = enqueue_mix(&q, None).await;
    h.check(&q).await;
    assert_eq!(claim_all(&q).await, expected);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn lifo_jobs_are_claimed_first_inside_their_group_lane(h: &Harness) {
    let q = h.queue::<Value>("lifo_lane");
    let expected = enqueue_mix(&q, Some("g")).await;
    h.check(&q).await;
    assert_eq!(claim_all(&q).await, expected);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_lifo_job_keeps_its_place_when_the_first_grouped_job_moves_the_fifo(
    h: &Harness,
) {
    let q = h.queue::<Value>("lifo_moved");
    for (id, lifo) in [("f1", false), ("l1", true), ("l2", true)] {
        let job = NewJob::new(json!(id)).id(id).unwrap();
        q.enqueue(if lifo { job.lifo() } else { job })
            .await
            .unwrap();
    }
    // The first grouped job moves fifo ([l2, l1, f1]) into pending.
    q.enqueue(
        NewJob::new(json!("g"))
            .id("g1")
            .unwrap()
            .group("g")
            .priority(1),
    )
    .await
    .unwrap();
    q.enqueue(NewJob::new(json!("l3")).id("l3").unwrap().lifo())
        .await
        .unwrap();
    h.check(&q).await;
    // The lanes take turns: the ungrouped jobs' own order is the check.
    let mut order = claim_all(&q).await;
    order.retain(|id| id != "g1");
    assert_eq!(order, ["l3", "l2", "l1", "f1"]);
}

/// Claims `expected` (the head of pending), checking its id.
async fn claim_is(q: &Queue<Value>, expected: &str) -> echomq::Claimed<Value> {
    let job = q
        .claim_one("w", Duration::from_secs(60))
        .await
        .unwrap()
        .expect("a pending job");
    assert_eq!(job.id.as_str(), expected);
    job
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_lifo_job_retried_at_once_or_requeued_goes_to_the_front_again(h: &Harness) {
    for group in [None, Some("g")] {
        let name = if group.is_some() {
            "lifo_again_g"
        } else {
            "lifo_again"
        };
        let q = h.queue::<Value>(name);
        for (id, lifo) in [("l1", true), ("f1", false), ("f2", false)] {
            let mut job = NewJob::new(json!(id)).id(id).unwrap();
            if lifo {
                job = job.lifo();
            }
            if let Some(group) = group {
                job = job.group(group);
            }
            q.enqueue(job).await.unwrap();
        }
        let job = claim_is(&q, "l1").await;
        q.fail(
            &job.id,
            job.token,
            "boom",
            FailAction::Retry(Duration::ZERO),
        )
        .await
        .unwrap();
        h.check(&q).await;
        claim_is(&q, "l1").await;
        q.jobs().requeue(&JobId::new("l1").unwrap()).await.unwrap();
        h.check(&q).await;
        claim_is(&q, "l1").await;
        claim_is(&q, "f1").await;
    }
}

#[echomq_testkit::case]
pub(super) async fn a_lifo_enqueue_stores_its_field_and_mark_and_the_invariant_checks_them(
    h: &Harness,
) {
    let q = h.queue::<Value>("lifo_fields");
    q.enqueue(NewJob::new(json!(0)).id("f").unwrap())
        .await
        .unwrap();
    assert_eq!(
        meta_field(h, &q, "lifo").await,
        None,
        "no LIFO job, no mark"
    );
    q.enqueue(NewJob::new(json!(1)).id("l").unwrap().lifo())
        .await
        .unwrap();
    assert_eq!(meta_field(h, &q, "lifo").await.as_deref(), Some("1"));
    let lifo: Option<String> = redis::cmd("HGET")
        .arg(q.keys().job(&JobId::new("l").unwrap()))
        .arg("lifo")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    assert_eq!(lifo.as_deref(), Some("1"));
    h.check(&q).await;
    let _: u64 = redis::cmd("HDEL")
        .arg(q.keys().meta())
        .arg("lifo")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let problems = check_invariant(h.urls(), q.keys()).await.unwrap_err();
    assert!(problems.contains("no lifo mark"), "{problems}");
}
