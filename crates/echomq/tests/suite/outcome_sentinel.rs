//! Outcome waits through Sentinel (issue 41: "standalone, Sentinel and
//! cluster"), wire 4 (the sentinel's servers run no module): a job decided
//! before the wait answers at once, and a wait open across a failover
//! (`SENTINEL FAILOVER`: the primary demoted, its replica promoted) gets
//! the outcome decided on the new primary.

use echomq::{Connector, NewJob, Outcome, Queue};
use echomq_testkit::{SENTINEL_SERVICE, TestSentinel, wait_for};
use serde_json::{Value, json};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);
const LEASE: Duration = Duration::from_secs(60);

/// Claims the job `id` once the calls reach a primary (a failover's
/// calls meet the demoted one first), and completes it with `result`.
async fn complete_when_taken(q: &Queue<Value>, id: &echomq::JobId, result: &Value) {
    let job = wait_for("a claim to be taken", WAIT, || async {
        q.claim_one("w", LEASE).await.ok().flatten()
    })
    .await;
    assert_eq!(&job.id, id);
    q.complete(id, job.token, result).await.unwrap();
}

#[tokio::test]
async fn outcome_waits_through_sentinel_follow_a_failover() {
    let sentinel = TestSentinel::start();
    let connector = Connector::sentinel([sentinel.url()], SENTINEL_SERVICE)
        .connect()
        .await
        .unwrap();
    let q = connector.queue::<Value>("sentinel_waits").unwrap();

    let before = q
        .enqueue(NewJob::new(json!(1)).id("before").unwrap())
        .await
        .unwrap()
        .id;
    complete_when_taken(&q, &before, &json!("first")).await;
    assert_eq!(
        q.outcome::<Value>(&before, WAIT).await.unwrap(),
        Outcome::Completed {
            result: Some(json!("first"))
        }
    );

    let across = q
        .enqueue(NewJob::new(json!(2)).id("across").unwrap())
        .await
        .unwrap()
        .id;
    let wait = tokio::spawn({
        let (q, id) = (q.clone(), across.clone());
        async move { q.outcome::<Value>(&id, WAIT).await }
    });
    // Marked on the replica too before the failover: replication is
    // asynchronous, and a job the replica never had is lost with it.
    let key = q.keys().job(&across);
    for server in [sentinel.first_primary(), sentinel.first_replica()] {
        let con = server.connection().await;
        wait_for("the job marked waited for", WAIT, || {
            let (mut con, key) = (con.clone(), &key);
            async move {
                let waited: Option<String> = redis::cmd("HGET")
                    .arg(key)
                    .arg("waited")
                    .query_async(&mut con)
                    .await
                    .unwrap();
                waited.as_deref() == Some("1")
            }
        })
        .await;
    }
    sentinel.fail_over();
    complete_when_taken(&q, &across, &json!("after the failover")).await;
    let outcome = tokio::time::timeout(WAIT, wait).await.unwrap().unwrap();
    assert_eq!(
        outcome.unwrap(),
        Outcome::Completed {
            result: Some(json!("after the failover"))
        }
    );
}
