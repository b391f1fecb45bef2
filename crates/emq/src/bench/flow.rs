//! The flow-control phases of `emq bench` (`--rate-limit`,
//! `--concurrency-cap`, `--dedup`): what a rate limit that never binds and a
//! cap of 50 cost a worker at concurrency 50, and what a deduplication key
//! costs an enqueue. Each runs on a fresh queue of the run, as the other
//! phases do.

use super::{CONCURRENCY, Phase, Session, check_fresh, jobs, process_phase};
use crate::error::CliError;
use echomq::{NewJob, Queue};
use serde_json::Value;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// Jobs a rate-limit window lets start in `emq bench --rate-limit`: more
/// than any machine claims in a second, so the limit never binds.
pub const UNBINDING_RATE: u64 = 1_000_000_000;
/// The cap on active jobs of `emq bench --concurrency-cap`: the worker's
/// own concurrency, so the cap is at its edge without binding.
pub const CAP: u64 = CONCURRENCY;
/// Single enqueues in flight at once in the `--dedup` phases (the
/// connection pipelines them).
const IN_FLIGHT: usize = 200;

/// Processing `n` jobs at concurrency 50 on a queue whose rate limit lets
/// every start through (`UNBINDING_RATE` per second): the cost of the
/// window's bookkeeping in every claim.
pub(crate) async fn rate_limited(n: u64, session: &mut Session) -> Result<Phase, CliError> {
    let queue = session.queue::<Value>("rate-limit")?;
    queue
        .admin()
        .set_rate_limit(UNBINDING_RATE, Duration::from_secs(1))
        .await?;
    queue.enqueue_bulk(jobs(n)).await?;
    process_phase(&queue, n, CONCURRENCY, session).await
}

/// Processing `n` jobs at concurrency 50 on a queue capped at 50 active
/// jobs: the cost of the cap's check in every claim and of the wake-up
/// every finishing job sends.
pub(crate) async fn capped(n: u64, session: &mut Session) -> Result<Phase, CliError> {
    let queue = session.queue::<Value>("concurrency-cap")?;
    queue.admin().set_concurrency(CAP).await?;
    queue.enqueue_bulk(jobs(n)).await?;
    process_phase(&queue, n, CONCURRENCY, session).await
}

/// `n` single enqueues (`ENQUEUE`, not the bulk form), `IN_FLIGHT` at a
/// time, each with its own dedup key when `dedup`: what a key adds to an
/// enqueue, against the same enqueues without one.
pub(crate) async fn single_enqueues(
    n: u64,
    dedup: bool,
    session: &mut Session,
) -> Result<Phase, CliError> {
    let queue = session.queue::<Value>(if dedup { "dedup" } else { "single" })?;
    let batch: Vec<NewJob<Value>> = jobs(n)
        .into_iter()
        .enumerate()
        .map(|(i, job)| {
            if dedup {
                job.dedup(format!("k{i}"))
            } else {
                job
            }
        })
        .collect();
    let cpu = session.cpu().await?;
    let started = Instant::now();
    let created = enqueue_each(&queue, batch).await?;
    let wall = started.elapsed();
    let cpu = session.cpu().await? - cpu;
    check_fresh(&queue, created, n)?;
    Ok(Phase::new(n, None, wall, cpu))
}

/// Sends each job as its own enqueue, `IN_FLIGHT` at once; how many were
/// created.
async fn enqueue_each(queue: &Queue<Value>, batch: Vec<NewJob<Value>>) -> Result<u64, CliError> {
    let mut created = 0;
    let mut running = JoinSet::new();
    for job in batch {
        if running.len() >= IN_FLIGHT
            && let Some(done) = running.join_next().await
        {
            created += u64::from(joined(done)?);
        }
        let queue = queue.clone();
        running.spawn(async move { queue.enqueue(job).await });
    }
    while let Some(done) = running.join_next().await {
        created += u64::from(joined(done)?);
    }
    Ok(created)
}

fn joined(
    done: Result<echomq::Result<echomq::Enqueued>, tokio::task::JoinError>,
) -> Result<bool, CliError> {
    let enqueued = done.map_err(|err| CliError::usage(format!("bench: an enqueue task: {err}")))?;
    Ok(enqueued?.created)
}
