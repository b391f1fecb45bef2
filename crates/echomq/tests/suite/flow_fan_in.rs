//! One call that takes several edges of the same dependent
//! (docs/protocol.md, "Deciding a job that has dependents"): a batch of
//! completions of a fan-in's dependencies in its own queue. The call reads
//! the dependent once and writes it once, so these cases check that what
//! it leaves is what taking the edges one by one leaves: each edge's field
//! holds its own resolution, deps_left counts the edges still waiting, and
//! the last edge unblocks. Each case runs on wire 4 and again on wire 6.

use crate::common::{Harness, entries_by_name, raw_call};
use crate::flow_own_queue::{flow_hash, id_of, state};
use echomq::{Claimed, Flow, JobRef, JobState, NewJob, Queue, Submitted};
use serde_json::{Value as Json, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);

/// A flow of `a`, `b`, `c` and `d` in `q`, then `last` after all four,
/// its id `order` (a word the call's own bookkeeping could mistake for
/// its own); submitted.
async fn four_then_last(q: &Queue<Json>) -> Submitted {
    let mut flow = Flow::new("fan_in");
    let first: Vec<JobRef> = ["a", "b", "c", "d"]
        .iter()
        .map(|r| flow.add_as(r, q, NewJob::new(json!(r))))
        .collect();
    let last = NewJob::new(json!(0)).id("order").unwrap();
    flow.add_as("last", q, last.depends_on(&first));
    q.connector().submit(&flow).await.unwrap()
}

/// Completes each of `refs`, of the jobs `claimed`, in one COMPLETE.BULK,
/// each with its position in `refs` as its result.
async fn complete_in_one_call(
    h: &Harness,
    q: &Queue<Json>,
    (submitted, claimed): (&Submitted, &[Claimed<Json>]),
    refs: &[&str],
) {
    let mut args: Vec<String> = Vec::new();
    for (at, reference) in refs.iter().enumerate() {
        let id = id_of(submitted, reference);
        let job = claimed.iter().find(|job| job.id == id).expect("claimed");
        args.extend([id.to_string(), job.token.to_string(), at.to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    raw_call(h, q, "complete_bulk", &args).await.unwrap();
}

#[echomq_testkit::case]
async fn three_edges_of_one_dependent_taken_in_one_call_leave_one_waiting(h: &Harness) {
    let q = h.queue::<Json>("fan_in_three");
    let submitted = four_then_last(&q).await;
    let last = id_of(&submitted, "last");
    assert_eq!(last.as_str(), "order");
    let claimed = q.claim("w", LEASE, 4).await.unwrap();
    let jobs = (&submitted, claimed.as_slice());
    complete_in_one_call(h, &q, jobs, &["a", "b", "c"]).await;

    let deps = flow_hash(h, &q, "deps", &last).await;
    let field = |r: &str| format!("{} {}", q.name(), id_of(&submitted, r));
    for (at, reference) in ["a", "b", "c"].iter().enumerate() {
        let text = format!("completed {reference} 1 {at}");
        assert_eq!(deps[&field(reference)], text, "{reference}'s edge");
    }
    assert_eq!(deps[&field("d")], "wait");
    let job = flow_hash(h, &q, "job", &last).await;
    assert_eq!(job["deps_left"], "1");
    assert_eq!(state(&q, &last).await, JobState::Blocked);
    // One entry names the dependent once an edge, in the order taken.
    let entries = entries_by_name(h, &q).await;
    let resolved = entries
        .iter()
        .rfind(|(name, _)| name == "dependency_resolved")
        .expect("an entry");
    assert_eq!(resolved.1, vec![last.to_string(); 3]);
    h.check(&q).await;

    complete_in_one_call(h, &q, jobs, &["d"]).await;
    assert_eq!(state(&q, &last).await, JobState::Pending);
    assert_eq!(flow_hash(h, &q, "job", &last).await["deps_left"], "0");
    h.check(&q).await;
}

#[echomq_testkit::case]
async fn every_edge_of_one_dependent_taken_in_one_call_unblocks_it_once(h: &Harness) {
    let q = h.queue::<Json>("fan_in_all");
    let submitted = four_then_last(&q).await;
    let last = id_of(&submitted, "last");
    let claimed = q.claim("w", LEASE, 4).await.unwrap();
    let jobs = (&submitted, claimed.as_slice());
    complete_in_one_call(h, &q, jobs, &["d", "c", "b", "a"]).await;

    let deps = flow_hash(h, &q, "deps", &last).await;
    assert!(
        deps.values().all(|v| v.starts_with("completed ")),
        "{deps:?}"
    );
    assert_eq!(flow_hash(h, &q, "job", &last).await["deps_left"], "0");
    assert_eq!(state(&q, &last).await, JobState::Pending);
    let entries = entries_by_name(h, &q).await;
    let unblocked: Vec<_> = entries
        .iter()
        .filter(|(name, _)| name == "unblocked")
        .collect();
    assert_eq!(unblocked.len(), 1, "{entries:?}");
    assert_eq!(unblocked[0].1, vec![last.to_string()]);
    h.check(&q).await;
}
