//! Library workers ([`Worker`]) whose handler records each run (the job,
//! the token of its claim) and returns the run's number as the job's
//! result.

use super::ledger::Ledger;
use echomq::{JobContext, JobError, Queue, Worker, WorkerHandle};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// How long a handler works.
const WORK: Duration = Duration::from_millis(2);
/// A lease short enough that a claim a failover stranded (its holder
/// writes to a server that no longer has it) is swept back soon.
const LEASE: Duration = Duration::from_secs(2);

/// Starts `count` workers of 8 handlers each.
pub(crate) fn start(queue: &Queue<Value>, ledger: &Arc<Ledger>, count: usize) -> Vec<WorkerHandle> {
    (0..count)
        .map(|worker| {
            let ledger = ledger.clone();
            Worker::new(queue.clone(), move |ctx: JobContext<Value>| {
                let run = ledger.ran(ctx.id.to_string(), ctx.token);
                async move {
                    tokio::time::sleep(WORK).await;
                    Ok::<_, JobError>(json!({ "run": run }))
                }
            })
            .name(format!("failover-w{worker}"))
            .concurrency(8)
            .lease(LEASE)
            .stalled_interval(Duration::from_millis(500))
            // A job stranded by every failover is recovered, not dead-lettered.
            .max_stalls(1_000)
            .start()
        })
        .collect()
}
