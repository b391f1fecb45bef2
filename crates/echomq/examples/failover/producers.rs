//! Producers: each enqueues jobs with ids of its own (`p<producer>-<n>`)
//! and records each acknowledged enqueue. A failed enqueue is sent again
//! with the same id (safe: an id names one job), never skipped.

use super::ledger::Ledger;
use echomq::{NewJob, Queue};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Starts `count` producers, each enqueueing one job per `every` until
/// `stop` fires.
pub(crate) fn start(
    queue: &Queue<Value>,
    ledger: &Arc<Ledger>,
    count: usize,
    every: Duration,
    stop: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    (0..count)
        .map(|producer| {
            let (queue, ledger, stop) = (queue.clone(), ledger.clone(), stop.clone());
            tokio::spawn(produce(queue, ledger, producer, every, stop))
        })
        .collect()
}

async fn produce(
    queue: Queue<Value>,
    ledger: Arc<Ledger>,
    producer: usize,
    every: Duration,
    stop: CancellationToken,
) {
    let mut n = 0u64;
    while !stop.is_cancelled() {
        let id = format!("p{producer}-{n}");
        let job = NewJob::new(json!({ "n": n }))
            .id(id.as_str())
            .expect("a valid job id");
        match queue.enqueue(job).await {
            Ok(_) => {
                ledger.acknowledged(id);
                n += 1;
            }
            Err(_) => ledger.refused(),
        }
        // The pace of the load, not a synchronisation.
        tokio::select! {
            () = stop.cancelled() => break,
            () = tokio::time::sleep(every) => {}
        }
    }
}
