//! 10,000 concurrent outcome waits on one `Connector` on one queue (issue
//! 41, "Cost"): all open at once on one subscription (the server counts
//! one subscriber of the queue's outcome channel, whatever the number of
//! waiters), then the jobs completed by a worker in bulk on a queue that
//! keeps 10 completed jobs, and each wait answers its own job's result.
//! Both wires.

use crate::common::{Harness, marked_waited};
use echomq::{JobContext, JobError, JobId, NewJob, Outcome, Queue, QueueSettings, Worker};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::task::JoinSet;

/// The waits open at once.
const WAITS: usize = 10_000;
/// The timeout of each wait.
const WAIT: Duration = Duration::from_secs(60);
const BOUND: Duration = Duration::from_secs(30);

fn id(n: usize) -> JobId {
    JobId::new(format!("c{n}")).unwrap()
}

/// The result job `n` completes with: made from its payload.
fn result(n: u64) -> Value {
    json!({ "n": n, "twice": 2 * n })
}

/// A plain connection to the one server with no response timeout: the
/// checks read 10,000 marks behind 10,000 waits' calls.
async fn patient_connection(h: &Harness) -> redis::aio::MultiplexedConnection {
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
    redis::Client::open(h.urls()[0].as_str())
        .unwrap()
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .unwrap()
}

/// Subscribers of `q`'s outcome channel, as the server counts them.
async fn outcome_subscribers(h: &Harness, q: &Queue<Value>) -> u64 {
    let (_, n): (String, u64) = redis::cmd("PUBSUB")
        .arg("SHARDNUMSUB")
        .arg(q.keys().outcome_channel())
        .query_async(&mut patient_connection(h).await)
        .await
        .unwrap();
    n
}

#[echomq_testkit::case]
pub(super) async fn ten_thousand_waits_on_one_connector_share_one_subscription(h: &Harness) {
    let q = h.queue::<Value>("crowd");
    // Retention trims a job 10 completions after it: a wait that read a
    // completed job's absence as its outcome would answer Removed.
    q.configure(&QueueSettings {
        keep_completed: 10,
        ..QueueSettings::default()
    })
    .await
    .unwrap();
    let jobs = (0..WAITS).map(|n| NewJob::new(json!({ "n": n })).id(format!("c{n}")).unwrap());
    q.enqueue_bulk(jobs).await.unwrap();
    let mut waits = JoinSet::new();
    for n in 0..WAITS {
        let q = q.clone();
        waits.spawn(async move { (n, q.outcome::<Value>(&id(n), WAIT).await) });
    }
    let ids: Vec<JobId> = (0..WAITS).map(id).collect();
    marked_waited(patient_connection(h).await, &q, &ids).await;
    assert_eq!(outcome_subscribers(h, &q).await, 1, "one subscription");

    let worker = Worker::new(q.clone(), |job: JobContext<Value>| async move {
        Ok::<_, JobError>(result(job.payload["n"].as_u64().unwrap()))
    })
    .concurrency(64)
    .start();
    let mut answered = 0;
    let all = async {
        while let Some(joined) = waits.join_next().await {
            let (n, outcome) = joined.unwrap();
            assert_eq!(
                outcome.unwrap(),
                Outcome::Completed {
                    result: Some(result(n as u64))
                },
                "job {n}"
            );
            answered += 1;
        }
    };
    tokio::time::timeout(WAIT, all)
        .await
        .expect("every wait answered");
    assert_eq!(answered, WAITS);
    worker.shutdown(BOUND).await;
    // The listener keeps its subscription a while, idle: still one.
    assert_eq!(outcome_subscribers(h, &q).await, 1);
}
