//! Spawning and waiting (docs/protocol.md, "Spawning and waiting"): a
//! handler adds children with `JobContext::spawn_and_wait`, its job blocks
//! until they end, then runs again with their results. Every case runs on
//! both wires; those marked so also on a 3-master cluster, where the
//! queues sit on different shards.

use crate::common::{self, Harness};
use echomq::{
    DependencyOutcome, Flow, JobContext, JobError, JobId, JobState, NewJob, Queue, Worker,
};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Every case marked `cluster`, on one 3-master cluster.
#[tokio::test]
async fn flow_spawn_suite_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}

const BOUND: Duration = Duration::from_secs(20);

/// A worker on `q` completing each job with its payload times ten.
fn tenfold(q: &Queue<Value>) -> echomq::WorkerHandle {
    Worker::new(q.clone(), |ctx: JobContext<Value>| async move {
        Ok::<_, JobError>(json!(ctx.payload.as_u64().unwrap() * 10))
    })
    .start()
}

/// The state of job `id` of `q`, once it is `want` (within [`BOUND`]).
async fn reaches(q: &Queue<Value>, id: &str, want: JobState) -> echomq::JobRecord {
    let id = JobId::new(id).unwrap();
    wait_for(&format!("{id} {want:?}"), BOUND, || async {
        q.jobs()
            .get(&id)
            .await
            .unwrap()
            .filter(|record| record.state == want)
    })
    .await
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_handler_spawns_children_across_two_queues_and_runs_again_with_their_results(
    h: &Harness,
) {
    let parent = h.queue::<Value>("spawn_parent");
    let (left, right) = (
        h.queue::<Value>("spawn_left"),
        h.queue::<Value>("spawn_right"),
    );
    let runs = Arc::new(AtomicU64::new(0));
    let handler = {
        let (left, right, runs) = (left.clone(), right.clone(), runs.clone());
        move |ctx: JobContext<Value>| {
            let (left, right, runs) = (left.clone(), right.clone(), runs.clone());
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                let mut children = Flow::new("ignored");
                let one = children.add_as("one", &left, NewJob::new(json!(1)));
                children.add_as("two", &left, NewJob::new(json!(2)).depends_on([&one]));
                children.add_as("three", &right, NewJob::new(json!(3)));
                let done = ctx.spawn_and_wait(&children).await?;
                let mut sum = 0;
                for dependency in &done {
                    assert!(matches!(
                        dependency.outcome,
                        DependencyOutcome::Completed { .. }
                    ));
                    sum += dependency.result::<u64>().unwrap().unwrap();
                }
                Ok::<_, JobError>(json!(sum))
            }
        }
    };
    let workers = [
        Worker::new(parent.clone(), handler).start(),
        tenfold(&left),
        tenfold(&right),
    ];
    parent
        .enqueue(NewJob::new(json!(0)).id("job").unwrap())
        .await
        .unwrap();

    let done = reaches(&parent, "job", JobState::Completed).await;
    assert_eq!(
        done.result.as_deref(),
        Some("60"),
        "ran again with the children's results"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "once to spawn, once to finish"
    );
    for (q, id) in [
        (&left, "job:one"),
        (&left, "job:two"),
        (&right, "job:three"),
    ] {
        let child = reaches(q, id, JobState::Completed).await;
        assert_eq!(
            child.flow.as_deref(),
            Some("job"),
            "the children's flow is the job's id"
        );
    }
    let deps = parent
        .jobs()
        .dependencies(&JobId::new("job").unwrap())
        .await
        .unwrap();
    assert_eq!(deps.len(), 3);
    let [parent_worker, left_worker, right_worker] = workers;
    let stats = parent_worker.shutdown(BOUND).await;
    assert_eq!(
        (stats.blocked, stats.completed, stats.retried, stats.dead),
        (1, 1, 0, 0)
    );
    left_worker.shutdown(BOUND).await;
    right_worker.shutdown(BOUND).await;
    for q in [&parent, &left, &right] {
        assert_eq!(q.admin().counts().await.unwrap().blocked, 0);
        h.check(q).await;
    }
}

#[echomq_testkit::case]
pub(super) async fn a_spawned_child_that_dies_ends_its_parent_under_its_policy(h: &Harness) {
    let parent = h.queue::<Value>("spawn_dies");
    let kids = h.queue::<Value>("spawn_dies_kids");
    let runs = Arc::new(AtomicU64::new(0));
    let handler = {
        let (kids, runs) = (kids.clone(), runs.clone());
        move |ctx: JobContext<Value>| {
            let (kids, runs) = (kids.clone(), runs.clone());
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                let mut children = Flow::new("ignored");
                children.add_as("kid", &kids, NewJob::new(json!(1)).attempts(1));
                ctx.spawn_and_wait(&children).await?;
                Ok::<_, JobError>(json!("never"))
            }
        }
    };
    let parent_worker = Worker::new(parent.clone(), handler).start();
    let kid_worker = Worker::new(kids.clone(), |_: JobContext<Value>| async move {
        Err::<(), _>(JobError::permanent("no"))
    })
    .start();
    parent
        .enqueue(NewJob::new(json!(0)).id("p").unwrap())
        .await
        .unwrap();
    let dead = reaches(&parent, "p", JobState::Dead).await;
    assert_eq!(dead.reason.as_deref(), Some("dependency"));
    assert_eq!(
        dead.error.as_deref(),
        Some("dependency spawn_dies_kids p:kid is dead")
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    parent_worker.shutdown(BOUND).await;
    kid_worker.shutdown(BOUND).await;
    h.check(&parent).await;
    h.check(&kids).await;
}

#[echomq_testkit::case]
pub(super) async fn spawn_and_wait_refuses_a_child_with_its_own_id_and_writes_nothing(h: &Harness) {
    let parent = h.queue::<Value>("spawn_own_id");
    let kids = h.queue::<Value>("spawn_own_id_kids");
    let handler = {
        let kids = kids.clone();
        move |ctx: JobContext<Value>| {
            let kids = kids.clone();
            async move {
                let mut children = Flow::new("ignored");
                children.add_as("kid", &kids, NewJob::new(json!(1)).id("mine").unwrap());
                ctx.spawn_and_wait(&children).await?;
                Ok::<_, JobError>(json!("never"))
            }
        }
    };
    let worker = Worker::new(parent.clone(), handler).start();
    parent
        .enqueue(NewJob::new(json!(0)).id("p").unwrap())
        .await
        .unwrap();
    let dead = reaches(&parent, "p", JobState::Dead).await;
    let error = dead.error.unwrap_or_default();
    assert!(
        error.contains("a spawned child's id is <job id>:<ref>"),
        "{error}"
    );
    assert_eq!(dead.deps, None, "no edge was written");
    assert_eq!(kids.admin().counts().await.unwrap().pending, 0);
    worker.shutdown(BOUND).await;
    h.check(&parent).await;
}

#[echomq_testkit::case]
pub(super) async fn spawn_and_wait_refuses_more_children_than_flow_edges_max(h: &Harness) {
    let parent = h.queue::<Value>("spawn_too_many");
    let kids = h.queue::<Value>("spawn_too_many_kids");
    let handler = {
        let kids = kids.clone();
        move |ctx: JobContext<Value>| {
            let kids = kids.clone();
            async move {
                let mut children = Flow::new("ignored");
                for n in 0..=10_000 {
                    children.add_as(&format!("k{n}"), &kids, NewJob::new(json!(n)));
                }
                ctx.spawn_and_wait(&children).await?;
                Ok::<_, JobError>(json!("never"))
            }
        }
    };
    let worker = Worker::new(parent.clone(), handler).start();
    parent
        .enqueue(NewJob::new(json!(0)).id("p").unwrap())
        .await
        .unwrap();
    let dead = reaches(&parent, "p", JobState::Dead).await;
    let error = dead.error.unwrap_or_default();
    assert!(error.contains("10001 children, more than"), "{error}");
    assert_eq!(dead.deps, None, "no edge was written");
    assert_eq!(kids.admin().counts().await.unwrap().pending, 0);
    worker.shutdown(BOUND).await;
    h.check(&parent).await;
}

#[echomq_testkit::case]
pub(super) async fn spawn_and_wait_refuses_children_whose_ids_break_the_job_id_rule(h: &Harness) {
    // A job of no flow lends its id as the children's flow id (at most
    // 127 bytes); a flow's job with a long id makes <id>:<ref> too long.
    let parent = h.queue::<Value>("spawn_long_id");
    let kids = h.queue::<Value>("spawn_long_id_kids");
    let handler = {
        let kids = kids.clone();
        move |ctx: JobContext<Value>| {
            let kids = kids.clone();
            async move {
                let mut children = Flow::new("ignored");
                children.add_as(&"r".repeat(60), &kids, NewJob::new(json!(1)));
                ctx.spawn_and_wait(&children).await?;
                Ok::<_, JobError>(json!("never"))
            }
        }
    };
    let worker = Worker::new(parent.clone(), handler).start();
    let long = "p".repeat(200);
    parent
        .enqueue(NewJob::new(json!(0)).id(long.as_str()).unwrap())
        .await
        .unwrap();
    let mut flow = Flow::new("f");
    let in_flow = "q".repeat(200);
    flow.add_as(
        "q",
        &parent,
        NewJob::new(json!(1)).id(in_flow.as_str()).unwrap(),
    );
    parent.connector().submit(&flow).await.unwrap();
    let wanted = [
        "the flow id is 200 bytes, more than 127".to_string(),
        format!("job {}'s id", "r".repeat(60)),
    ];
    for (id, wanted) in [&long, &in_flow].into_iter().zip(wanted) {
        let dead = reaches(&parent, id, JobState::Dead).await;
        let error = dead.error.unwrap_or_default();
        assert!(error.contains(&wanted), "{error}");
        assert_eq!(dead.deps, None, "no edge was written");
    }
    assert_eq!(kids.admin().counts().await.unwrap().pending, 0);
    worker.shutdown(BOUND).await;
    h.check(&parent).await;
}
