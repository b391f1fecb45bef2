//! The many-queues phases of `emq bench --many-queues`: the same jobs
//! processed at concurrency 50 by one worker over one queue and by one
//! worker over three queues (a third of the jobs each, even weights), in
//! rounds interleaved as the flow phases are (see `flow.rs`): what sharing
//! one worker among queues costs in jobs per second.

use super::flow::{ROUNDS, Tally, rotated};
use super::{
    CONCURRENCY, Phase, STALL, Session, enqueue_phase, finish, noop_worker_over, process_phase,
};
use crate::error::CliError;
use echomq::Queue;
use serde::Serialize;
use serde_json::Value;
use std::time::Instant;

/// The queues of the worker over many.
const QUEUES: u64 = 3;

/// What the many-queues phases measured.
#[derive(Debug, Clone, Serialize)]
pub struct ManyQueuesReport {
    /// One worker over one queue, concurrency 50, summed over the rounds.
    pub process_c50_one_queue: Phase,
    /// One worker over three queues, concurrency 50, the same jobs.
    pub process_c50_three_queues: Phase,
    /// Jobs per second over three queues as a share of over one.
    pub jobs_per_sec_ratio: f64,
}

impl ManyQueuesReport {
    /// The phases as table rows' names and phases.
    pub fn phases(&self) -> Vec<(String, Phase)> {
        vec![
            ("process, one queue".into(), self.process_c50_one_queue),
            (
                "process, three queues".into(),
                self.process_c50_three_queues,
            ),
        ]
    }

    /// The ratio, as one line.
    pub fn lines(&self) -> String {
        format!(
            "one worker over three queues / over one, jobs/s: {:.3}\n",
            self.jobs_per_sec_ratio
        )
    }
}

/// `n` jobs per variant (rounded down to a multiple of [`ROUNDS`] × 3),
/// over one queue and over three.
pub(crate) async fn run(n: u64, session: &mut Session) -> Result<ManyQueuesReport, CliError> {
    let part = (n / ROUNDS / QUEUES).max(1);
    let chunk = part * QUEUES;
    let one = session.queue::<Value>("one-queue").await?;
    let mut three = Vec::new();
    for name in ["over-a", "over-b", "over-c"] {
        three.push(session.queue::<Value>(name).await?);
    }
    let mut tallies = [Tally::default(), Tally::default()];
    for round in 0..ROUNDS {
        for at in rotated(2, round as usize) {
            let phase = if at == 0 {
                enqueue_phase(&one, chunk, session).await?;
                process_phase(&one, chunk, CONCURRENCY, session).await?
            } else {
                for queue in &three {
                    enqueue_phase(queue, part, session).await?;
                }
                process_over(&three, chunk, session).await?
            };
            tallies[at].add(phase);
        }
    }
    let [one, three] = tallies.map(|t| t.phase());
    Ok(ManyQueuesReport {
        jobs_per_sec_ratio: three.jobs_per_sec / one.jobs_per_sec.max(f64::MIN_POSITIVE),
        process_c50_one_queue: one,
        process_c50_three_queues: three,
    })
}

/// Drains the `n` pending jobs of `queues` with one worker over them all,
/// a no-op handler at concurrency 50.
async fn process_over(
    queues: &[Queue<Value>],
    n: u64,
    session: &mut Session,
) -> Result<Phase, CliError> {
    let cpu = session.cpu().await?;
    let started = Instant::now();
    let worker = noop_worker_over(queues.iter(), session.claim_ahead)?;
    let (wall, cpu_after) = finish(worker, &queues[0], n, started, STALL, session).await?;
    Ok(Phase::new(n, Some(CONCURRENCY), wall, cpu_after - cpu))
}
