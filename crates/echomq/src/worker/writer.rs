//! The writer task: every outcome ready at once goes out in one pipeline.

use super::options::Counters;
use crate::dispatch::Call;
use crate::error::Error;
use crate::job::FailOutcome;
use crate::queue::{Queue, decode_fail};
use echomq_protocol::{JobId, Refusal};
use redis::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::mpsc::UnboundedReceiver;

/// Most outcomes per pipeline.
const MAX_BATCH: usize = 1024;
/// Tries of one batch before its outcomes are given up to the stalled sweep.
const WRITE_TRIES: u32 = 5;

/// One finished attempt waiting to be written; its slot frees once written.
pub(crate) struct Outcome {
    pub id: JobId,
    pub call: Call,
    pub permit: OwnedSemaphorePermit,
}

pub(crate) async fn write_outcomes<T>(
    queue: Queue<T>,
    mut outcomes: UnboundedReceiver<Outcome>,
    counters: Arc<Counters>,
) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while outcomes.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let calls: Vec<Call> = batch.iter().map(|outcome| outcome.call.clone()).collect();
        match send_with_retries(&queue, &calls).await {
            Ok(replies) => {
                for (outcome, reply) in batch.drain(..).zip(replies) {
                    record(&counters, &outcome.id, &outcome.call, reply);
                    // The outcome is on the server: free the slot.
                    drop(outcome.permit);
                }
            }
            Err(err) => {
                tracing::error!(queue = %queue.name(), error = %err, jobs = batch.len(),
                    "could not write job outcomes; the stalled sweep will recover them");
                Counters::add(&counters.write_errors, batch.len() as u64);
            }
        }
        batch.clear();
    }
}

async fn send_with_retries<T>(queue: &Queue<T>, calls: &[Call]) -> crate::Result<Vec<crate::Result<Value>>> {
    let mut pause = Duration::from_millis(50);
    let mut tries = 1;
    loop {
        match queue.call_many(calls).await {
            Ok(replies) => return Ok(replies),
            Err(err) if tries < WRITE_TRIES => {
                tracing::warn!(queue = %queue.name(), error = %err, "writing outcomes failed; retrying");
                tokio::time::sleep(pause).await;
                pause *= 2;
                tries += 1;
            }
            Err(err) => return Err(err),
        }
    }
}

fn record(counters: &Counters, id: &JobId, call: &Call, reply: crate::Result<Value>) {
    use echomq_protocol::Transition;
    let outcome = match (call.transition, reply) {
        (Transition::Complete, Ok(_)) => Ok(&counters.completed),
        (Transition::Fail, Ok(reply)) => match decode_fail(reply) {
            Ok(FailOutcome::Retry) => Ok(&counters.retried),
            Ok(FailOutcome::Dead) => Ok(&counters.dead),
            Ok(FailOutcome::Cancelled) => Ok(&counters.cancelled),
            Err(err) => Err(err),
        },
        (_, Ok(_)) => return,
        (_, Err(err)) => Err(err),
    };
    match outcome {
        Ok(counter) => Counters::add(counter, 1),
        Err(Error::Refused(refused)) if refused.reason == Refusal::NotActive => {
            tracing::warn!(id = %id, "lease lost before the outcome was written; the job was already taken back");
            Counters::add(&counters.lost, 1);
        }
        Err(err) => {
            tracing::error!(id = %id, error = %err, "outcome refused");
            Counters::add(&counters.write_errors, 1);
        }
    }
}
