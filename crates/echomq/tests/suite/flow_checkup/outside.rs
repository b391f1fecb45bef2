//! A flow whose jobs run after a job outside it (`Flow::existing`): read
//! first (one that does not exist refuses the flow, nothing written), told
//! of its new dependents by `FLOW.LINK` once the flow is written, its
//! outcome delivered at once when it has ended already.

use super::common::{Harness, writes};
use super::{flow_key, hash, scored};
use echomq::{Error, FailAction, Flow, JobId, JobState, NewJob, Policy, Queue};
use serde_json::{Value, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);

/// `id`'s state in `q`.
async fn state(q: &Queue<Value>, id: &str) -> JobState {
    let id = JobId::new(id).unwrap();
    q.jobs().get(&id).await.unwrap().unwrap().state
}

/// Flow `p`: job b of `to` runs after job `ext` of `from` (outside the
/// flow) and after a, a job of the flow in `to`, with `policy`.
fn after_outside(from: &Queue<Value>, to: &Queue<Value>, ext: &JobId, policy: Policy) -> Flow {
    let mut flow = Flow::new("p");
    let outside = flow.existing(from, ext);
    let a = flow.add_as("a", to, NewJob::new(json!(1)));
    flow.add_as(
        "b",
        to,
        NewJob::new(json!(2))
            .depends_on([&outside, &a])
            .on_dependency_failure(policy),
    );
    flow
}

/// Claims and completes every pending job of `q`, its id as its result.
async fn complete_all(q: &Queue<Value>) {
    for job in q.claim("w", LEASE, 100).await.unwrap() {
        q.complete(&job.id, job.token, &json!(job.id.as_str()))
            .await
            .unwrap();
    }
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_flow_job_runs_after_an_outside_job_once_it_completes(h: &Harness) {
    let x = h.queue::<Value>("outside_pending_x");
    let y = h.queue::<Value>("outside_pending_y");
    let ext = x.enqueue(json!("ext")).await.unwrap().id;
    let flow = after_outside(&x, &y, &ext, Policy::Fail);
    y.connector().submit(&flow).await.unwrap();
    let told = hash(h, &x, &flow_key(&x, "dependents", ext.as_str())).await;
    assert_eq!(told[&format!("{} p:b", y.name())], "0", "linked");
    complete_all(&y).await;
    assert_eq!(state(&y, "p:b").await, JobState::Blocked);
    complete_all(&x).await;
    assert_eq!(state(&y, "p:b").await, JobState::Pending);
    let deps = hash(h, &y, &flow_key(&y, "deps", "p:b")).await;
    let text = format!("completed - {} \"{ext}\"", ext.as_str().len() + 2);
    assert_eq!(deps[&format!("{} {ext}", x.name())], text);
    assert!(
        scored(h, &x, "resolutions").await.is_empty(),
        "acknowledged"
    );
    h.check(&x).await;
    h.check(&y).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_flow_on_an_outside_job_ended_already_is_told_its_outcome_at_submit(
    h: &Harness,
) {
    let x = h.queue::<Value>("outside_done_x");
    let y = h.queue::<Value>("outside_done_y");
    let done = x.enqueue(json!("done")).await.unwrap().id;
    complete_all(&x).await;
    let flow = after_outside(&x, &y, &done, Policy::Fail);
    y.connector().submit(&flow).await.unwrap();
    // Only a, of the flow, is left for b to wait for.
    let record = y
        .jobs()
        .get(&JobId::new("p:b").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (record.state, record.deps_left),
        (JobState::Blocked, Some(1))
    );
    assert!(
        scored(h, &x, "resolutions").await.is_empty(),
        "acknowledged"
    );
    complete_all(&y).await;
    assert_eq!(state(&y, "p:b").await, JobState::Pending);
    h.check(&x).await;
    h.check(&y).await;

    // A dead one decides a fail dependent at once.
    let dead = x
        .enqueue(NewJob::new(json!("dead")).attempts(1))
        .await
        .unwrap()
        .id;
    let job = x.claim_one("w", LEASE).await.unwrap().unwrap();
    x.fail(&job.id, job.token, "boom", FailAction::Dead)
        .await
        .unwrap();
    let mut flow = Flow::new("q");
    let outside = flow.existing(&x, &dead);
    flow.add_as("c", &y, NewJob::new(json!(3)).depends_on([&outside]));
    y.connector().submit(&flow).await.unwrap();
    let record = y
        .jobs()
        .get(&JobId::new("q:c").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.state, JobState::Dead);
    assert_eq!(
        record.error,
        Some(format!("dependency {} {dead} is dead", x.name()))
    );
    h.check(&x).await;
    h.check(&y).await;
}

#[echomq_testkit::case]
pub(super) async fn a_flow_on_an_outside_job_that_does_not_exist_is_refused_writing_nothing(
    h: &Harness,
) {
    let x = h.queue::<Value>("outside_absent_x");
    let y = h.queue::<Value>("outside_absent_y");
    let absent = JobId::new("absent").unwrap();
    // Wire 4 loads its library at its first call: a write of its own.
    assert!(x.jobs().get(&absent).await.unwrap().is_none());
    let before = (writes(h, &x).await, writes(h, &y).await);
    let flow = after_outside(&x, &y, &absent, Policy::Fail);
    let err = y.connector().submit(&flow).await.unwrap_err();
    match err {
        Error::BadArgument {
            name: "flow",
            reason,
        } => assert_eq!(
            reason,
            format!(
                "{} absent, a job outside the flow that {} p:b runs after, does not exist",
                x.name(),
                y.name()
            )
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!((writes(h, &x).await, writes(h, &y).await), before);
    assert_eq!(y.admin().counts().await.unwrap().blocked, 0);
}
