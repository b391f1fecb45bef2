//! Exactly-once completion under concurrency: 4 workers with concurrency 16
//! each over 20,000 jobs. Every job completes once, none is lost, none is
//! left active — on wire 4 and on wire 6.

use crate::common;

use common::Harness;
use echomq::{JobContext, JobError, QueueSettings, Worker};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const JOBS: u64 = 20_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_workers_complete_twenty_thousand_jobs_exactly_once() {
    exactly_once(Harness::server().await).await;
}

/// The same on wire 6: bulk enqueue and bulk completions by the module.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_workers_complete_twenty_thousand_jobs_exactly_once_on_wire_6() {
    exactly_once(Harness::native().await).await;
}

async fn exactly_once(h: Harness) {
    let q = h.queue::<Value>("exactly_once");
    q.configure(&QueueSettings {
        keep_completed: JOBS,
        ..QueueSettings::default()
    })
    .await
    .unwrap();
    let ids = q.enqueue_bulk((0..JOBS).map(|n| json!(n))).await.unwrap();
    assert_eq!(ids.len() as u64, JOBS);

    let runs: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let workers: Vec<_> = (0..4)
        .map(|n| {
            let runs = runs.clone();
            Worker::new(q.clone(), move |job: JobContext<Value>| {
                let runs = runs.clone();
                async move {
                    *runs.lock().unwrap().entry(job.id.to_string()).or_default() += 1;
                    tokio::task::yield_now().await;
                    Ok::<_, JobError>(())
                }
            })
            .name(format!("worker-{n}"))
            .concurrency(16)
            .start()
        })
        .collect();
    wait_for(
        "every job to complete",
        Duration::from_secs(120),
        || async { q.admin().counts().await.unwrap().completed == JOBS },
    )
    .await;
    let mut claimed = 0;
    for worker in workers {
        let stats = worker.shutdown(Duration::from_secs(10)).await;
        assert_eq!(stats.lost, 0);
        claimed += stats.claimed;
    }
    assert_eq!(claimed, JOBS, "each job claimed once");
    let runs = runs.lock().unwrap().clone();
    assert_eq!(runs.len() as u64, JOBS, "every job ran");
    assert!(runs.values().all(|n| *n == 1), "some job ran twice");
    for enqueued in &ids {
        assert_eq!(runs.get(enqueued.id.as_str()), Some(&1));
    }
    let counts = q.admin().counts().await.unwrap();
    assert_eq!(
        (counts.pending, counts.active, counts.completed),
        (0, 0, JOBS)
    );
    h.check(&q).await;
}
