//! The relay (docs/protocol.md, "The relay", "Failure policies", "Every
//! terminal move, and its dependents"): a dependency's decision reaches
//! its dependents in other queues, exactly once per edge, and no terminal
//! move leaves a dependent blocked. Every case runs on both wires; those
//! marked so also on a 3-master cluster, where the queues sit on
//! different shards.

use crate::common::{self, Harness, raw_call};
use echomq::{
    DependencyOutcome, FailAction, Flow, IfActive, JobContext, JobError, JobId, JobRef, JobState,
    NewJob, Outcome, Policy, Queue, Worker,
};
use serde_json::{Value, json};
use std::time::Duration;

/// Every case marked `cluster`, on one 3-master cluster.
#[tokio::test]
async fn flow_relay_suite_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}

const LEASE: Duration = Duration::from_secs(30);

/// Claims every pending job of `q` and completes each with its id as its
/// result; answers the ids.
async fn complete_all(q: &Queue<Value>) -> Vec<String> {
    let claimed = q.claim("w", LEASE, 100).await.unwrap();
    let mut ids = Vec::new();
    for job in claimed {
        q.complete(&job.id, job.token, &json!(job.id.as_str()))
            .await
            .unwrap();
        ids.push(job.id.to_string());
    }
    ids.sort();
    ids
}

/// `id`'s state in `q`.
async fn state(q: &Queue<Value>, id: &str) -> JobState {
    let id = JobId::new(id).unwrap();
    q.jobs().get(&id).await.unwrap().unwrap().state
}

/// fetch → (small, large) → mail across images and mailer, flow `id`:
/// the flow and mail's ref.
fn fan_out_and_in(id: &str, images: &Queue<Value>, mailer: &Queue<Value>) -> (Flow, JobRef) {
    let mut flow = Flow::new(id);
    let fetch = flow.add_as("fetch", images, NewJob::new(json!("u")));
    let small = flow.add_as("small", images, NewJob::new(json!(64)).depends_on([&fetch]));
    let large = flow.add_as(
        "large",
        images,
        NewJob::new(json!(1024)).depends_on([&fetch]),
    );
    let mail = flow.add_as(
        "mail",
        mailer,
        NewJob::new(json!("to")).depends_on([&small, &large]),
    );
    (flow, mail)
}

/// a → b: b in queue `to` runs after a in queue `from`, with `policy`.
async fn pair(from: &Queue<Value>, to: &Queue<Value>, policy: Policy) {
    let mut flow = Flow::new("p");
    let a = flow.add_as("a", from, NewJob::new(json!(1)).attempts(1));
    flow.add_as(
        "b",
        to,
        NewJob::new(json!(2))
            .depends_on([&a])
            .on_dependency_failure(policy),
    );
    from.connector().submit(&flow).await.unwrap();
}

#[echomq_testkit::case(cluster)]
pub(super) async fn dependents_run_after_their_dependencies_complete_with_their_results(
    h: &Harness,
) {
    let images = h.queue::<Value>("relay_images");
    let mailer = h.queue::<Value>("relay_mailer");
    let (flow, mail) = fan_out_and_in("order", &images, &mailer);
    let submitted = images.connector().submit(&flow).await.unwrap();

    assert_eq!(complete_all(&images).await, ["order:fetch"]);
    // The completion relayed at once: both resizes are claimable.
    assert_eq!(complete_all(&images).await, ["order:large", "order:small"]);
    assert_eq!(mailer.admin().counts().await.unwrap().pending, 1);
    let mail_id = &submitted[&mail].id;
    let deps = mailer.jobs().dependencies(mail_id).await.unwrap();
    assert_eq!(deps.len(), 2);
    for dep in &deps {
        assert_eq!(dep.result::<String>().unwrap().unwrap(), dep.id.as_str());
    }
    let record = mailer.jobs().get(mail_id).await.unwrap().unwrap();
    assert_eq!(record.deps_left, Some(0));
    h.check(&images).await;
    h.check(&mailer).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_dead_dependency_kills_fail_dependents_and_ignore_lets_them_run(h: &Harness) {
    let a = h.queue::<Value>("relay_dead_a");
    let b = h.queue::<Value>("relay_dead_b");
    let mut flow = Flow::new("f");
    let root = flow.add_as("root", &a, NewJob::new(json!(0)).attempts(1));
    let strict = flow.add_as("strict", &b, NewJob::new(json!(1)).depends_on([&root]));
    let lenient = flow.add_as(
        "lenient",
        &b,
        NewJob::new(json!(2))
            .depends_on([&root])
            .on_dependency_failure(Policy::Ignore),
    );
    // strict's own dependent learns of its death in turn.
    let after_strict = flow.add_as("after", &a, NewJob::new(json!(3)).depends_on([&strict]));
    let submitted = a.connector().submit(&flow).await.unwrap();

    let job = a.claim("w", LEASE, 1).await.unwrap().remove(0);
    a.fail(&job.id, job.token, "boom", FailAction::Dead)
        .await
        .unwrap();

    let strict = b.jobs().get(&submitted[&strict].id).await.unwrap().unwrap();
    assert_eq!(strict.state, JobState::Dead);
    assert_eq!(strict.reason.as_deref(), Some("dependency"));
    assert_eq!(
        strict.error.as_deref(),
        Some("dependency relay_dead_a f:root is dead")
    );
    assert_eq!(
        state(&b, submitted[&lenient].id.as_str()).await,
        JobState::Pending
    );
    let deps = b
        .jobs()
        .dependencies(&submitted[&lenient].id)
        .await
        .unwrap();
    assert!(
        matches!(&deps[0].outcome, DependencyOutcome::Dead { failures: 1, error } if error == "boom"),
        "{deps:?}"
    );
    assert_eq!(
        state(&a, submitted[&after_strict].id.as_str()).await,
        JobState::Dead
    );
    h.check(&a).await;
    h.check(&b).await;
}

#[echomq_testkit::case]
pub(super) async fn cancelling_a_dependency_cancels_a_cancel_dependent(h: &Harness) {
    let a = h.queue::<Value>("relay_cancel_a");
    let b = h.queue::<Value>("relay_cancel_b");
    pair(&a, &b, Policy::Cancel).await;
    a.jobs().cancel(&JobId::new("p:a").unwrap()).await.unwrap();
    let record = b
        .jobs()
        .get(&JobId::new("p:b").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.state, JobState::Cancelled);
    assert_eq!(record.reason.as_deref(), Some("dependency"));
    h.check(&a).await;
    h.check(&b).await;
}

#[echomq_testkit::case]
pub(super) async fn removing_a_dependency_fails_its_dependent(h: &Harness) {
    let a = h.queue::<Value>("relay_remove_a");
    let b = h.queue::<Value>("relay_remove_b");
    pair(&a, &b, Policy::Fail).await;
    assert!(
        a.jobs()
            .remove(&JobId::new("p:a").unwrap(), IfActive::Refuse)
            .await
            .unwrap()
    );
    assert_eq!(state(&b, "p:b").await, JobState::Dead);
    h.check(&a).await;
    h.check(&b).await;
}

#[echomq_testkit::case]
pub(super) async fn obliterating_a_dependency_s_queue_fails_its_dependent(h: &Harness) {
    let a = h.queue::<Value>("relay_obliterate_a");
    let b = h.queue::<Value>("relay_obliterate_b");
    pair(&a, &b, Policy::Fail).await;
    a.admin().pause().await.unwrap();
    a.admin().obliterate(IfActive::Refuse).await.unwrap();
    assert_eq!(state(&b, "p:b").await, JobState::Dead);
    h.check(&b).await;
}

#[echomq_testkit::case]
pub(super) async fn the_relay_delivers_an_outbox_its_decider_did_not(h: &Harness) {
    let a = h.queue::<Value>("relay_late_a");
    let b = h.queue::<Value>("relay_late_b");
    pair(&a, &b, Policy::Fail).await;
    let job = a.claim("w", LEASE, 1).await.unwrap().remove(0);
    // Completed raw: the decider died before it relayed.
    let token = job.token.to_string();
    raw_call(h, &a, "complete", &["p:a", &token, "RESULT", "\"done\""])
        .await
        .unwrap();
    assert_eq!(state(&b, "p:b").await, JobState::Blocked);
    let relayed = a.relay().await.unwrap();
    assert_eq!((relayed.resolved, relayed.unblocked), (1, 1));
    assert_eq!(state(&b, "p:b").await, JobState::Pending);
    // Delivered again: nothing is left to deliver, nothing changes.
    let again = a.relay().await.unwrap();
    assert_eq!(again, echomq::Relayed::default());
    h.check(&a).await;
    h.check(&b).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_completion_unblocks_more_dependents_than_one_outbox_read_lists(h: &Harness) {
    // FLOW.OUTBOX lists at most 1,000 dependents a read: the completing
    // call's own relay reads the root again until all 2,500 are told,
    // rather than leaving 1,500 blocked until a sweep.
    let root_queue = h.queue::<Value>("relay_wide_root");
    let wide = h.queue::<Value>("relay_wide");
    let mut flow = Flow::new("wide");
    let root = flow.add_as("root", &root_queue, NewJob::new(json!(0)));
    for i in 0..2_500 {
        flow.add(&wide, NewJob::new(json!(i)).depends_on([&root]));
    }
    root_queue.connector().submit(&flow).await.unwrap();
    assert_eq!(wide.admin().counts().await.unwrap().blocked, 2_500);

    assert_eq!(complete_all(&root_queue).await, ["wide:root"]);
    let counts = wide.admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.blocked), (2_500, 0));
    assert_eq!(
        root_queue.relay().await.unwrap(),
        echomq::Relayed::default()
    );
    h.check(&root_queue).await;
    h.check(&wide).await;
}

#[echomq_testkit::case]
pub(super) async fn workers_run_a_flow_to_its_end(h: &Harness) {
    let images = h.queue::<Value>("relay_work_images");
    let mailer = h.queue::<Value>("relay_work_mailer");
    let resize = Worker::new(images.clone(), |job: JobContext<Value>| async move {
        Ok::<_, JobError>(json!({"done": job.payload}))
    })
    .start();
    let mail = Worker::new(mailer.clone(), |job: JobContext<Value>| async move {
        let deps = job
            .dependencies()
            .await
            .map_err(|err| JobError::permanent(err.to_string()))?;
        let mut results: Vec<Value> = deps
            .iter()
            .map(|dep| dep.result::<Value>().unwrap().unwrap())
            .collect();
        results.sort_by_key(|r| r.to_string());
        Ok::<_, JobError>(json!(results))
    })
    .start();
    let (flow, last) = fan_out_and_in("w", &images, &mailer);
    let submitted = images.connector().submit(&flow).await.unwrap();
    let outcome: Outcome<Value> = submitted[&last]
        .outcome(Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(
        outcome,
        Outcome::Completed {
            result: Some(json!([{"done": 1024}, {"done": 64}]))
        }
    );
    resize.shutdown(Duration::from_secs(10)).await;
    mail.shutdown(Duration::from_secs(10)).await;
    h.check(&images).await;
    h.check(&mailer).await;
}
