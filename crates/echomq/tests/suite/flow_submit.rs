//! `Connector::submit` (docs/protocol.md, "Submitting a flow"): a flow
//! built with `Flow` is checked whole on the client, then written
//! dependents first across its queues; submitting it again changes
//! nothing, and finishes a submit that died midway. Every case runs on
//! both wires; those marked so also on a 3-master cluster, where the
//! flow's queues sit on different shards.

use crate::common::{self, Harness, raw_call};
use echomq::{DependencyOutcome, Error, Flow, JobState, NewJob, Policy, Queue};
use serde_json::{Value, json};

/// Every case marked `cluster`, on one 3-master cluster.
#[tokio::test]
async fn flow_submit_suite_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}

/// How many keys the queue has: 0 when a refused submit wrote nothing.
async fn key_count(h: &Harness, q: &Queue<Value>) -> usize {
    echomq_testkit::invariant::queue_keys(h.urls(), q.keys())
        .await
        .unwrap()
        .len()
}

/// The reason of a flow refused by the client.
fn flow_refusal(err: Error) -> String {
    match err {
        Error::BadArgument {
            name: "flow",
            reason,
        } => reason,
        other => panic!("expected the flow refused, got {other:?}"),
    }
}

/// fetch → (small, large) → mail, images and mailer: issue 43's example.
fn diamond(images: &Queue<Value>, mailer: &Queue<Value>) -> Flow {
    let mut flow = Flow::new("order-42");
    let fetch = flow.add_as("fetch", images, NewJob::new(json!({"url": "u"})));
    let small = flow.add_as(
        "small",
        images,
        NewJob::new(json!({"px": 64})).depends_on([&fetch]),
    );
    let large = flow.add_as(
        "large",
        images,
        NewJob::new(json!({"px": 1024}))
            .priority(3)
            .depends_on([&fetch]),
    );
    flow.add_as(
        "mail",
        mailer,
        NewJob::new(json!({"to": "a@example.com"}))
            .depends_on([&small, &large])
            .on_dependency_failure(Policy::Ignore),
    );
    flow
}

#[echomq_testkit::case(cluster)]
pub(super) async fn submit_writes_a_diamond_across_queues_blocked_on_its_dependencies(h: &Harness) {
    let images = h.queue::<Value>("flow_images");
    let mailer = h.queue::<Value>("flow_mailer");
    let flow = diamond(&images, &mailer);
    let submitted = images.connector().submit(&flow).await.unwrap();
    assert_eq!(submitted.flow(), "order-42");
    assert_eq!(submitted.created(), 4);
    let mail = submitted.by_name("mail").unwrap();
    assert_eq!(mail.id.as_str(), "order-42:mail");

    let counts = images.admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.blocked), (1, 2));
    assert_eq!(mailer.admin().counts().await.unwrap().blocked, 1);
    let record = mailer.jobs().get(&mail.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Blocked);
    assert_eq!(record.flow.as_deref(), Some("order-42"));
    assert_eq!(record.flow_ref.as_deref(), Some("mail"));
    assert_eq!((record.deps, record.deps_left), (Some(2), Some(2)));
    assert_eq!(record.on_failure, Policy::Ignore);
    let fetch = submitted.by_name("fetch").unwrap();
    let record = images.jobs().get(&fetch.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Pending);
    assert_eq!((record.dependents, record.deps), (Some(2), None));
    let large = submitted.by_name("large").unwrap();
    let record = images.jobs().get(&large.id).await.unwrap().unwrap();
    assert_eq!(record.priority, 3);
    assert_eq!(record.dependents, Some(1));
    // Only fetch can be claimed.
    let claimed = images
        .claim("w", std::time::Duration::from_secs(30), 10)
        .await;
    let ids: Vec<String> = claimed
        .unwrap()
        .iter()
        .map(|job| job.id.to_string())
        .collect();
    assert_eq!(ids, ["order-42:fetch"]);
    h.check(&images).await;
    h.check(&mailer).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn submitting_a_flow_again_creates_nothing_and_changes_nothing(h: &Harness) {
    let images = h.queue::<Value>("flow_again_images");
    let mailer = h.queue::<Value>("flow_again_mailer");
    let flow = diamond(&images, &mailer);
    images.connector().submit(&flow).await.unwrap();
    let before = (
        images.admin().counts().await.unwrap(),
        mailer.admin().counts().await.unwrap(),
    );
    let again = images.connector().submit(&flow).await.unwrap();
    assert_eq!(again.created(), 0);
    assert!(again.iter().all(|(_, job)| !job.created));
    let after = (
        images.admin().counts().await.unwrap(),
        mailer.admin().counts().await.unwrap(),
    );
    assert_eq!(before, after);
    h.check(&images).await;
    h.check(&mailer).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn submitting_again_finishes_a_submit_that_died_midway(h: &Harness) {
    let images = h.queue::<Value>("flow_midway_images");
    let mailer = h.queue::<Value>("flow_midway_mailer");
    // The first submit wrote the dependent (mail, blocked on small and
    // large) and died before the rest.
    let reply = raw_call(
        h,
        &mailer,
        "flow_add",
        &[
            "order-42",
            "order-42:mail",
            "mail",
            "{}",
            "flow_midway_images order-42:small flow_midway_images order-42:large",
            "",
            "ON_FAILURE",
            "ignore",
        ],
    )
    .await;
    reply.unwrap();
    let flow = diamond(&images, &mailer);
    let submitted = images.connector().submit(&flow).await.unwrap();
    assert_eq!(submitted.created(), 3, "all but mail");
    assert!(!submitted.by_name("mail").unwrap().created);
    let small = submitted.by_name("small").unwrap();
    let record = images.jobs().get(&small.id).await.unwrap().unwrap();
    assert_eq!(record.dependents, Some(1), "small knows mail runs after it");
    h.check(&images).await;
    h.check(&mailer).await;
}

#[echomq_testkit::case]
pub(super) async fn a_job_s_options_reach_the_server_with_it(h: &Harness) {
    let q = h.queue::<Value>("flow_options");
    let mut flow = Flow::new("opts");
    let first = flow.add(&q, NewJob::new(json!(1)).group("g").lifo());
    let later = flow.add(
        &q,
        NewJob::new(json!(2))
            .after(std::time::Duration::from_secs(3600))
            .time_limit(std::time::Duration::from_secs(30))
            .id("custom")
            .unwrap()
            .depends_on([&first])
            .on_dependency_failure(Policy::Cancel),
    );
    let submitted = q.connector().submit(&flow).await.unwrap();
    assert_eq!(first.name(), "1");
    assert_eq!(submitted[&first].id.as_str(), "opts:1");
    assert_eq!(submitted[&later].id.as_str(), "custom");
    let record = q.jobs().get(&submitted[&first].id).await.unwrap().unwrap();
    assert_eq!(record.group.as_deref(), Some("g"));
    assert!(record.lifo);
    let record = q.jobs().get(&submitted[&later].id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Blocked);
    assert_eq!(record.time_limit, Some(30_000));
    assert_eq!(record.on_failure, Policy::Cancel);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn submit_refuses_a_ref_used_twice_and_writes_nothing(h: &Harness) {
    let q = h.queue::<Value>("flow_twice");
    let mut flow = Flow::new("f");
    flow.add_as("a", &q, NewJob::new(json!(1)));
    flow.add_as("a", &q, NewJob::new(json!(2)));
    let err = q.connector().submit(&flow).await.unwrap_err();
    assert_eq!(flow_refusal(err), "ref a is used twice");
    assert_eq!(key_count(h, &q).await, 0);
}

#[echomq_testkit::case]
pub(super) async fn submit_refuses_a_ref_of_another_flow_and_writes_nothing(h: &Harness) {
    let q = h.queue::<Value>("flow_foreign");
    let mut other = Flow::new("other");
    let theirs = other.add_as("x", &q, NewJob::new(json!(1)));
    let mut flow = Flow::new("f");
    flow.add_as("a", &q, NewJob::new(json!(1)));
    flow.add_as("b", &q, NewJob::new(json!(2)).depends_on([&theirs]));
    let err = q.connector().submit(&flow).await.unwrap_err();
    assert_eq!(
        flow_refusal(err),
        "job b: runs after x, a job of another Flow"
    );
    assert_eq!(key_count(h, &q).await, 0);
}

#[echomq_testkit::case]
pub(super) async fn submit_refuses_a_bad_flow_id_and_writes_nothing(h: &Harness) {
    let q = h.queue::<Value>("flow_bad_id");
    let mut flow = Flow::new("has space");
    flow.add(&q, NewJob::new(json!(1)));
    let err = q.connector().submit(&flow).await.unwrap_err();
    assert!(flow_refusal(err).starts_with("the flow id"));
    assert_eq!(key_count(h, &q).await, 0);
}

#[echomq_testkit::case]
pub(super) async fn submit_refuses_a_dedup_key_on_a_flow_job_and_writes_nothing(h: &Harness) {
    let q = h.queue::<Value>("flow_dedup");
    let mut flow = Flow::new("f");
    flow.add_as("a", &q, NewJob::new(json!(1)));
    flow.add_as("b", &q, NewJob::new(json!(2)).dedup("k"));
    let err = q.connector().submit(&flow).await.unwrap_err();
    assert_eq!(
        flow_refusal(err),
        "job b: a flow's job takes no dedup key (dedup, dedup_for, debounce)"
    );
    assert_eq!(key_count(h, &q).await, 0);
}

#[echomq_testkit::case]
pub(super) async fn submit_refuses_an_id_held_outside_the_flow_with_conflict(h: &Harness) {
    let q = h.queue::<Value>("flow_conflict");
    q.enqueue(NewJob::new(json!(0)).id("f:a").unwrap())
        .await
        .unwrap();
    let mut flow = Flow::new("f");
    flow.add_as("a", &q, NewJob::new(json!(1)));
    let err = q.connector().submit(&flow).await.unwrap_err();
    assert!(err.to_string().contains("CONFLICT"), "{err}");
    assert_eq!(q.admin().counts().await.unwrap().total(), 1);
}

#[echomq_testkit::case]
pub(super) async fn enqueue_refuses_a_job_with_dependencies(h: &Harness) {
    let q = h.queue::<Value>("flow_enqueue");
    let mut flow = Flow::new("f");
    let a = flow.add(&q, NewJob::new(json!(1)));
    let err = q
        .enqueue(NewJob::new(json!(2)).depends_on([&a]))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::BadArgument {
                name: "depends_on",
                ..
            }
        ),
        "{err:?}"
    );
    let err = q
        .enqueue_bulk([NewJob::new(json!(2)).on_dependency_failure(Policy::Ignore)])
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::BadArgument {
                name: "depends_on",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(key_count(h, &q).await, 0);
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_job_s_dependencies_and_dependents_read_back_with_their_outcomes(h: &Harness) {
    let images = h.queue::<Value>("flow_read_images");
    let mailer = h.queue::<Value>("flow_read_mailer");
    let submitted = images
        .connector()
        .submit(&diamond(&images, &mailer))
        .await
        .unwrap();
    let mail = &submitted.by_name("mail").unwrap().id;
    let mut deps = mailer.jobs().dependencies(mail).await.unwrap();
    deps.sort_by(|a, b| a.id.cmp(&b.id));
    let ids: Vec<&str> = deps.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, ["order-42:large", "order-42:small"]);
    assert!(deps.iter().all(|d| d.queue == "flow_read_images"));
    assert!(deps.iter().all(|d| d.outcome == DependencyOutcome::Waiting));
    let fetch = &submitted.by_name("fetch").unwrap().id;
    let dependents = images.jobs().dependents(fetch).await.unwrap();
    assert_eq!(dependents.len(), 2);
    assert!(dependents.iter().all(|d| !d.told));

    // An edge resolved as FLOW.RESOLVE writes it: the resolution text.
    let _: () = redis::cmd("HSET")
        .arg(format!("{}:deps:{mail}", mailer.keys().base()))
        .arg("flow_read_images order-42:small")
        .arg("completed small 9 {\"px\":64}")
        .query_async(&mut h.raw(&mailer).await)
        .await
        .unwrap();
    let deps = mailer.jobs().dependencies(mail).await.unwrap();
    let small = deps
        .iter()
        .find(|d| d.id.as_str() == "order-42:small")
        .unwrap();
    assert_eq!(small.reference.as_deref(), Some("small"));
    assert_eq!(small.result::<Value>().unwrap().unwrap(), json!({"px": 64}));
    let err = mailer
        .jobs()
        .dependencies(&echomq::JobId::new("ghost").unwrap())
        .await
        .unwrap_err();
    assert_eq!(common::refusal(err), echomq::Refusal::NoJob);
}
