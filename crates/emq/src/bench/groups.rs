//! The groups phases of `emq bench --groups N[,N…]`: claim-and-complete at
//! concurrency 50 with the jobs spread over N groups, against the same
//! work without groups, in rounds interleaved as the flow phases are (see
//! `flow.rs`): job i of the run is in group `g<i mod N>`, so at N = 100,000
//! and 100,000 jobs every group holds one job.

use super::flow::{ROUNDS, Tally, rotated};
use super::{CONCURRENCY, Phase, Session, jobs, process_phase};
use crate::error::CliError;
use echomq::NewJob;
use serde::Serialize;
use serde_json::Value;

/// What the groups phases measured.
#[derive(Debug, Clone, Serialize)]
pub struct GroupsReport {
    /// Processing at concurrency 50 without groups, interleaved with the
    /// grouped runs (their baseline).
    pub process_c50_ungrouped: Phase,
    /// One entry per group count asked for.
    pub grouped: Vec<GroupedRun>,
}

/// Processing at concurrency 50 with the jobs spread over `groups` groups.
#[derive(Debug, Clone, Serialize)]
pub struct GroupedRun {
    /// Groups the jobs are spread over.
    pub groups: u64,
    /// The processing phase, summed over the rounds.
    pub process_c50: Phase,
    /// Its jobs per second over the ungrouped baseline's.
    pub jobs_per_sec_ratio: f64,
}

impl GroupsReport {
    /// The grouped phases as table rows' names and phases.
    pub fn phases(&self) -> Vec<(String, Phase)> {
        let mut rows = vec![("process, no groups".to_string(), self.process_c50_ungrouped)];
        for run in &self.grouped {
            rows.push((format!("process, {} groups", run.groups), run.process_c50));
        }
        rows
    }

    /// One line per group count: its throughput over the baseline's.
    pub fn lines(&self) -> String {
        self.grouped
            .iter()
            .map(|run| {
                format!(
                    "{} groups / none, jobs/s at concurrency 50: {:.2}\n",
                    run.groups, run.jobs_per_sec_ratio
                )
            })
            .collect()
    }
}

/// `n` jobs per variant (rounded down to a multiple of [`ROUNDS`]), the
/// ungrouped baseline and one variant per entry of `counts`.
pub(crate) async fn run(
    n: u64,
    counts: &[u64],
    session: &mut Session,
) -> Result<GroupsReport, CliError> {
    let chunk = (n / ROUNDS).max(1);
    let variants: Vec<Option<u64>> = std::iter::once(None)
        .chain(counts.iter().map(|n| Some((*n).max(1))))
        .collect();
    let mut queues = Vec::new();
    for variant in &variants {
        let name = variant.map_or_else(|| "ungrouped".to_string(), |n| format!("groups-{n}"));
        queues.push(session.queue::<Value>(&name).await?);
    }
    let mut tallies: Vec<Tally> = variants.iter().map(|_| Tally::default()).collect();
    for round in 0..ROUNDS {
        for at in rotated(variants.len(), round as usize) {
            let first = round * chunk;
            queues[at]
                .enqueue_bulk(spread(first, chunk, variants[at]))
                .await?;
            let phase = process_phase(&queues[at], chunk, CONCURRENCY, session).await?;
            tallies[at].add(phase);
        }
    }
    let baseline = tallies[0].phase();
    let grouped = variants
        .iter()
        .zip(&tallies)
        .skip(1)
        .filter_map(|(variant, tally)| {
            let phase = tally.phase();
            variant.map(|groups| GroupedRun {
                groups,
                process_c50: phase,
                jobs_per_sec_ratio: phase.jobs_per_sec
                    / baseline.jobs_per_sec.max(f64::MIN_POSITIVE),
            })
        })
        .collect();
    Ok(GroupsReport {
        process_c50_ungrouped: baseline,
        grouped,
    })
}

/// Jobs `first..first + n` of the run; with `groups`, job i in group
/// `g<i mod groups>`.
fn spread(first: u64, n: u64, groups: Option<u64>) -> Vec<NewJob<Value>> {
    let batch = jobs(n);
    match groups {
        None => batch,
        Some(groups) => batch
            .into_iter()
            .zip(first..)
            .map(|(job, i)| job.group(format!("g{}", i % groups)))
            .collect(),
    }
}
