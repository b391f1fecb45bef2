//! The ways into and out of `blocked` beside FLOW.ADD, FLOW.WAIT and
//! FLOW.RESOLVE (docs/protocol.md, "The state blocked", "Every terminal
//! move, and its dependents"): REPROCESS of a finished job whose edges
//! still wait blocks it again, and clears its `reason`; a start-by
//! deadline expires a blocked job as a waiting one, and an expired
//! dependency reaches its dependents as `cancelled`. Every case on both
//! wires.

use crate::common::{Harness, events};
use crate::flow_add::cases::{flow_add, hash};
use crate::flow_resolve::cases::{members, resolve};
use echomq::{DependencyOutcome, Flow, JobId, JobState, NewJob, Policy, Queue};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(20);

fn id(text: &str) -> JobId {
    JobId::new(text).unwrap()
}

#[echomq_testkit::case]
pub(super) async fn reprocess_of_a_finished_job_with_edges_waiting_blocks_it_and_clears_its_reason(
    h: &Harness,
) {
    let q = h.queue::<Value>("reprocess_blocks");
    flow_add(h, &q, &["f", "f:a", "a", "{}", "up p1 up p2", ""]).await;
    let words = resolve(h, &q, &[["up", "p1", "dead p1 1 boom", "f:a"]]).await;
    assert_eq!(words, ["dead"]);
    let a = hash(h, &q, "job:f:a").await;
    assert_eq!(
        (a["reason"].as_str(), a["deps_left"].as_str()),
        ("dependency", "1")
    );

    q.jobs().reprocess(&id("f:a")).await.unwrap();
    let a = hash(h, &q, "job:f:a").await;
    assert_eq!(
        (a["state"].as_str(), a["deps_left"].as_str()),
        ("blocked", "1")
    );
    assert!(!a.contains_key("reason"), "REPROCESS clears the reason");
    assert!(!a.contains_key("error"));
    assert_eq!(members(h, &q, "blocked").await, ["f:a"]);
    assert!(members(h, &q, "pending").await.is_empty());
    let all = events(h, &q).await;
    assert_eq!(
        all[all.len() - 2..],
        [
            ["event", "reprocessed", "id", "f:a"]
                .map(String::from)
                .to_vec(),
            ["event", "blocked", "id", "f:a", "deps", "1"]
                .map(String::from)
                .to_vec(),
        ]
    );
    h.check(&q).await;

    // Its last edge unblocks it as any blocked job's.
    let words = resolve(h, &q, &[["up", "p2", "completed p2 0 ", "f:a"]]).await;
    assert_eq!(words, ["unblocked"]);
    assert_eq!(hash(h, &q, "job:f:a").await["state"], "pending");
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn reprocess_clears_the_reason_of_a_job_it_sends_to_pending(h: &Harness) {
    let q = h.queue::<Value>("reprocess_reason");
    flow_add(h, &q, &["f", "f:b", "b", "{}", "up p", ""]).await;
    resolve(h, &q, &[["up", "p", "cancelled p", "f:b"]]).await;
    let b = hash(h, &q, "job:f:b").await;
    assert_eq!(
        (b["state"].as_str(), b["reason"].as_str()),
        ("dead", "dependency")
    );

    q.jobs().reprocess(&id("f:b")).await.unwrap();
    let b = hash(h, &q, "job:f:b").await;
    assert_eq!(
        (b["state"].as_str(), b["deps_left"].as_str()),
        ("pending", "0")
    );
    assert!(!b.contains_key("reason"), "REPROCESS clears the reason");
    h.check(&q).await;
}

/// Sweeps `q` (and relays what the sweep decided) until job `job` is
/// `cancelled`, within [`BOUND`].
async fn sweep_until_cancelled(q: &Queue<Value>, job: &JobId) -> echomq::JobRecord {
    wait_for(&format!("{job} expired"), BOUND, || async {
        q.sweep_stalled(5, 1000).await.unwrap();
        q.relay().await.unwrap();
        q.jobs()
            .get(job)
            .await
            .unwrap()
            .filter(|record| record.state == JobState::Cancelled)
    })
    .await
}

#[echomq_testkit::case]
pub(super) async fn a_blocked_job_past_its_start_by_expires_and_its_dependents_learn_it(
    h: &Harness,
) {
    let q = h.queue::<Value>("blocked_expires");
    let mut flow = Flow::new("f");
    let first = flow.add_as("first", &q, NewJob::new(json!(1)));
    let late = flow.add_as(
        "late",
        &q,
        NewJob::new(json!(2))
            .depends_on([&first])
            .start_within(Duration::from_millis(50)),
    );
    flow.add_as(
        "after",
        &q,
        NewJob::new(json!(3))
            .depends_on([&late])
            .on_dependency_failure(Policy::Ignore),
    );
    q.connector().submit(&flow).await.unwrap();
    assert_eq!(
        members(h, &q, "deadlines").await,
        ["f:late"],
        "blocked, with its start-by"
    );

    let late = sweep_until_cancelled(&q, &id("f:late")).await;
    assert_eq!(late.reason.as_deref(), Some("expired"));
    assert!(members(h, &q, "deadlines").await.is_empty());
    assert!(members(h, &q, "blocked").await.is_empty());
    // Its dependent receives cancelled: its policy (ignore) lets it run.
    let after = q.jobs().get(&id("f:after")).await.unwrap().unwrap();
    assert_eq!(after.state, JobState::Pending);
    let deps = q.jobs().dependencies(&id("f:after")).await.unwrap();
    assert_eq!(deps[0].outcome, DependencyOutcome::Cancelled);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn dependent_runs_after_start_by_expiry(h: &Harness) {
    let from = h.queue::<Value>("expiry_from");
    let to = h.queue::<Value>("expiry_to");
    let mut flow = Flow::new("f");
    let soon = flow.add_as(
        "soon",
        &from,
        NewJob::new(json!(1)).start_within(Duration::from_millis(50)),
    );
    flow.add_as(
        "then",
        &to,
        NewJob::new(json!(2))
            .depends_on([&soon])
            .on_dependency_failure(Policy::Ignore),
    );
    let strict = flow.add_as("strict", &to, NewJob::new(json!(3)).depends_on([&soon]));
    let submitted = from.connector().submit(&flow).await.unwrap();

    let soon = sweep_until_cancelled(&from, &id("f:soon")).await;
    assert_eq!(soon.reason.as_deref(), Some("expired"));
    let then = to.jobs().get(&id("f:then")).await.unwrap().unwrap();
    assert_eq!(then.state, JobState::Pending, "ignore: it runs");
    let deps = to.jobs().dependencies(&id("f:then")).await.unwrap();
    assert_eq!(deps[0].outcome, DependencyOutcome::Cancelled);
    let strict = to
        .jobs()
        .get(&submitted[&strict].id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(strict.state, JobState::Dead, "fail: it dies");
    assert_eq!(to.admin().counts().await.unwrap().blocked, 0);
    h.check(&from).await;
    h.check(&to).await;
}
