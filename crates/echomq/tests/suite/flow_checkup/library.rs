//! The library's check-up: a worker's sweep runs it on a queue that uses
//! flows, and `Queue::checkup` runs it on demand; either finds the edges
//! no relay will ever deliver and delivers them.

use super::common::{Harness, raw_call};
use super::{flow_key, hash, make_due, scored};
use echomq::{Flow, JobContext, JobError, JobId, JobState, NewJob, Queue, Worker};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(20);
const LEASE: Duration = Duration::from_secs(30);

/// `id`'s state in `q`.
async fn state(q: &Queue<Value>, id: &str) -> JobState {
    let id = JobId::new(id).unwrap();
    q.jobs().get(&id).await.unwrap().unwrap().state
}

#[echomq_testkit::case(cluster)]
pub(super) async fn dependent_runs_after_a_submit_that_never_finished(h: &Harness) {
    let a = h.queue::<Value>("checkup_never_a");
    let b = h.queue::<Value>("checkup_never_b");
    let after = format!("{} p:a", a.name());
    // The submit died after it wrote b's jobs: p:a was never written.
    for (id, policy) in [("p:b", "fail"), ("p:c", "ignore")] {
        let reference = &id[2..];
        let args = ["p", id, reference, "{}", &after, "", "ON_FAILURE", policy];
        raw_call(h, &b, "flow_add", &args).await.unwrap();
        make_due(h, &b, id, 1).await;
    }
    let worker = Worker::new(b.clone(), |_job: JobContext<Value>| async move {
        Ok::<_, JobError>(json!("ran"))
    })
    .stalled_interval(Duration::from_millis(100))
    .start();
    wait_for("the sweep's check-up to decide both", BOUND, || async {
        state(&b, "p:b").await == JobState::Dead && state(&b, "p:c").await == JobState::Completed
    })
    .await;
    worker.shutdown(BOUND).await;
    let record = b
        .jobs()
        .get(&JobId::new("p:b").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        record.error,
        Some(format!("dependency {} p:a is removed", a.name()))
    );
    let deps = hash(h, &b, &flow_key(&b, "deps", "p:c")).await;
    assert_eq!(deps[&after], "removed -");
    assert_eq!(b.admin().counts().await.unwrap().blocked, 0);
    h.check(&a).await;
    h.check(&b).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn the_checkup_tells_again_an_edge_a_failover_lost(h: &Harness) {
    let a = h.queue::<Value>("checkup_lost_a");
    let b = h.queue::<Value>("checkup_lost_b");
    let mut flow = Flow::new("p");
    let a1 = flow.add_as("a1", &a, NewJob::new(json!(1)));
    let a2 = flow.add_as("a2", &a, NewJob::new(json!(2)));
    flow.add_as("b", &b, NewJob::new(json!(3)).depends_on([&a1, &a2]));
    a.connector().submit(&flow).await.unwrap();
    // The first of a1 and a2 claimed completes: its edge is the one lost.
    let job = a.claim_one("w", LEASE).await.unwrap().unwrap();
    let done = job.id.as_str().to_string();
    a.complete(&job.id, job.token, &json!("r")).await.unwrap();
    let field = format!("{} {done}", a.name());
    let text = hash(h, &b, &flow_key(&b, "deps", "p:b")).await[&field].clone();
    assert_eq!(text, format!("completed {} 3 \"r\"", &done[2..]));
    // A failover lost b's queue's write after it was acknowledged: the
    // edge waits again, and the dependency's side says told.
    let mut con = h.raw(&b).await;
    let _: () = redis::cmd("HSET")
        .arg(flow_key(&b, "deps", "p:b"))
        .arg(&field)
        .arg("wait")
        .query_async(&mut con)
        .await
        .unwrap();
    let _: () = redis::cmd("HINCRBY")
        .arg(flow_key(&b, "job", "p:b"))
        .arg("deps_left")
        .arg(1)
        .query_async(&mut con)
        .await
        .unwrap();
    let told = hash(h, &a, &flow_key(&a, "dependents", &done)).await;
    assert_eq!(told[&format!("{} p:b", b.name())], "1");
    h.check(&b).await;

    // Not due yet: the check-up asks nothing.
    assert_eq!(b.checkup().await.unwrap().jobs, 0);
    make_due(h, &b, "p:b", 1).await;
    let checked = b.checkup().await.unwrap();
    assert_eq!((checked.jobs, checked.edges, checked.waiting), (1, 2, 1));
    assert_eq!(
        (checked.relayed.resolved, checked.relayed.unblocked),
        (1, 0)
    );
    let deps = hash(h, &b, &flow_key(&b, "deps", "p:b")).await;
    assert_eq!(deps[&field], text, "told again, the same text");
    let record = b
        .jobs()
        .get(&JobId::new("p:b").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.deps_left, Some(1));
    assert!(
        scored(h, &a, "resolutions").await.is_empty(),
        "acknowledged"
    );
    let told = hash(h, &a, &flow_key(&a, "dependents", &done)).await;
    assert_eq!(told[&format!("{} p:b", b.name())], "1");
    h.check(&a).await;
    h.check(&b).await;

    // The other completes: b runs.
    let job = a.claim_one("w", LEASE).await.unwrap().unwrap();
    a.complete(&job.id, job.token, &json!("s")).await.unwrap();
    assert_eq!(state(&b, "p:b").await, JobState::Pending);
    h.check(&a).await;
    h.check(&b).await;
}

#[echomq_testkit::case]
pub(super) async fn a_checkup_of_an_undecided_dependency_changes_nothing(h: &Harness) {
    let a = h.queue::<Value>("checkup_waiting_a");
    let b = h.queue::<Value>("checkup_waiting_b");
    let mut flow = Flow::new("p");
    let a1 = flow.add_as("a1", &a, NewJob::new(json!(1)));
    flow.add_as("b", &b, NewJob::new(json!(2)).depends_on([&a1]));
    a.connector().submit(&flow).await.unwrap();
    make_due(h, &b, "p:b", 1).await;
    let checked = b.checkup().await.unwrap();
    assert_eq!((checked.jobs, checked.edges, checked.waiting), (1, 1, 1));
    assert_eq!(checked.relayed, echomq::Relayed::default());
    assert_eq!(state(&b, "p:b").await, JobState::Blocked);
    assert_eq!(b.checkup().await.unwrap().jobs, 0, "scored again");
    h.check(&a).await;
    h.check(&b).await;
}

#[echomq_testkit::case]
pub(super) async fn a_sweep_of_a_queue_without_flows_sends_no_flow_command(h: &Harness) {
    let q = h.queue::<Value>("checkup_plain");
    let worker = Worker::new(q.clone(), |_job: JobContext<Value>| async move {
        Ok::<_, JobError>(json!(1))
    })
    .stalled_interval(Duration::from_millis(20))
    .start();
    let mut con = h.raw(&q).await;
    // Wire 6 counts each command by name (a script's are one FCALL).
    let native = h.connector.wire() == echomq::Wire::Native;
    wait_for("a few sweeps", BOUND, || async {
        let mut con = h.raw(&q).await;
        let guarded = super::common::command_stats(&mut con, &["set"], &["calls"]).await;
        guarded >= 5
    })
    .await;
    worker.shutdown(BOUND).await;
    let flow = ["emq.flow.outbox", "emq.flow.checkup", "emq.flow.link"];
    let sent = super::common::command_stats(&mut con, &flow, &["calls"]).await;
    if native {
        assert_eq!(sent, 0, "a queue without flows pays no flow pass");
    }
    let mark: Option<String> = redis::cmd("HGET")
        .arg(q.keys().meta())
        .arg("flows")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(mark, None);
    h.check(&q).await;
}
