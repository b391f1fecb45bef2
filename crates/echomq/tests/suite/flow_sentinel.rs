//! Flows through Sentinel (issue 43: "standalone, Sentinel and cluster"),
//! wire 4 (the sentinel's servers run no module): a flow submitted before
//! a failover (`SENTINEL FAILOVER`: the primary demoted, its replica
//! promoted) runs to its end on the new primary, its dependency's result
//! relayed to the dependent there.

use crate::common;
use echomq::{Connector, DependencyOutcome, Flow, JobState, NewJob, Queue};
use echomq_testkit::{SENTINEL_SERVICE, TestSentinel, wait_for};
use serde_json::{Value, json};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);
const LEASE: Duration = Duration::from_secs(60);

/// Claims the job `id` once the calls reach a primary (a failover's
/// calls meet the demoted one first), and completes it with `result`.
async fn complete_when_taken(q: &Queue<Value>, id: &str, result: &Value) {
    let job = wait_for("a claim to be taken", WAIT, || async {
        q.claim_one("w", LEASE).await.ok().flatten()
    })
    .await;
    assert_eq!(job.id.as_str(), id);
    q.complete(&job.id, job.token, result).await.unwrap();
}

#[tokio::test]
async fn a_flow_through_sentinel_runs_to_its_end_across_a_failover() {
    let sentinel = TestSentinel::start();
    let connector = Connector::sentinel([sentinel.url()], SENTINEL_SERVICE)
        .connect()
        .await
        .unwrap();
    let images = connector.queue::<Value>("sentinel_images").unwrap();
    let mailer = connector.queue::<Value>("sentinel_mailer").unwrap();
    let mut flow = Flow::new("order");
    let fetch = flow.add_as("fetch", &images, NewJob::new(json!("u")));
    flow.add_as(
        "mail",
        &mailer,
        NewJob::new(json!("to")).depends_on([&fetch]),
    );
    connector.submit(&flow).await.unwrap();

    // On the replica too before the failover: replication is
    // asynchronous, and a job the replica never had is lost with it.
    let key = mailer
        .keys()
        .job(&echomq::JobId::new("order:mail").unwrap());
    wait_for("the blocked job on the replica", WAIT, || async {
        let state = common::job_state_on(sentinel.first_replica(), &key).await;
        (state.as_deref() == Some("blocked")).then_some(())
    })
    .await;
    sentinel.fail_over();

    complete_when_taken(&images, "order:fetch", &json!("fetched")).await;
    let mail = echomq::JobId::new("order:mail").unwrap();
    assert_eq!(
        mailer.jobs().get(&mail).await.unwrap().unwrap().state,
        JobState::Pending
    );
    let deps = mailer.jobs().dependencies(&mail).await.unwrap();
    assert_eq!(deps.len(), 1);
    assert!(matches!(
        deps[0].outcome,
        DependencyOutcome::Completed { .. }
    ));
    assert_eq!(deps[0].result::<String>().unwrap().unwrap(), "fetched");
    complete_when_taken(&mailer, "order:mail", &json!("sent")).await;
    assert_eq!(images.relay().await.unwrap(), echomq::Relayed::default());
}
