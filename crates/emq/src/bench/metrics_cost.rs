//! The metrics phases of `emq bench --metrics-cost`: the lifecycle (bulk
//! enqueue, then processing at concurrency 50) of the same work with the
//! queue's metrics on (the default) and off, in rounds interleaved as the
//! flow phases are (see `flow.rs`): what keeping metrics costs the server
//! per job.

use super::flow::{ROUNDS, Tally, rotated};
use super::{CONCURRENCY, Phase, Session, enqueue_phase, process_phase};
use crate::error::CliError;
use echomq::MetricsSettings;
use serde::Serialize;
use serde_json::Value;

/// What the metrics phases measured.
#[derive(Debug, Clone, Serialize)]
pub struct MetricsCostReport {
    /// Metrics on: bulk enqueue, summed over the rounds.
    pub enqueue_metrics_on: Phase,
    /// Metrics on: processing at concurrency 50.
    pub process_c50_metrics_on: Phase,
    /// Metrics off: bulk enqueue.
    pub enqueue_metrics_off: Phase,
    /// Metrics off: processing at concurrency 50.
    pub process_c50_metrics_off: Phase,
    /// Server CPU per job over the lifecycle (enqueue + processing), on
    /// over off.
    pub lifecycle_cpu_ratio: f64,
}

impl MetricsCostReport {
    /// The phases as table rows' names and phases.
    pub fn phases(&self) -> Vec<(String, Phase)> {
        vec![
            ("enqueue, metrics on".into(), self.enqueue_metrics_on),
            ("process, metrics on".into(), self.process_c50_metrics_on),
            ("enqueue, metrics off".into(), self.enqueue_metrics_off),
            ("process, metrics off".into(), self.process_c50_metrics_off),
        ]
    }

    /// The ratio, as one line.
    pub fn lines(&self) -> String {
        format!(
            "metrics on / off, lifecycle server CPU per job: {:.3}\n",
            self.lifecycle_cpu_ratio
        )
    }
}

/// `n` jobs per variant (rounded down to a multiple of [`ROUNDS`]), with
/// metrics on and off, each on its own queue.
pub(crate) async fn run(n: u64, session: &mut Session) -> Result<MetricsCostReport, CliError> {
    let chunk = (n / ROUNDS).max(1);
    let on = session.queue::<Value>("metrics-on").await?;
    let off = session.queue::<Value>("metrics-off").await?;
    off.configure_metrics(&MetricsSettings {
        enabled: false,
        ..MetricsSettings::default()
    })
    .await?;
    let queues = [on, off];
    let mut enqueues = [Tally::default(), Tally::default()];
    let mut processes = [Tally::default(), Tally::default()];
    for round in 0..ROUNDS {
        for at in rotated(2, round as usize) {
            enqueues[at].add(enqueue_phase(&queues[at], chunk, session).await?);
            processes[at].add(process_phase(&queues[at], chunk, CONCURRENCY, session).await?);
        }
    }
    let [enqueue_on, enqueue_off] = enqueues.map(|t| t.phase());
    let [process_on, process_off] = processes.map(|t| t.phase());
    let per_job = |enqueue: &Phase, process: &Phase| {
        (enqueue.server_cpu_seconds + process.server_cpu_seconds) / enqueue.jobs.max(1) as f64
    };
    Ok(MetricsCostReport {
        lifecycle_cpu_ratio: per_job(&enqueue_on, &process_on)
            / per_job(&enqueue_off, &process_off).max(f64::MIN_POSITIVE),
        enqueue_metrics_on: enqueue_on,
        process_c50_metrics_on: process_on,
        enqueue_metrics_off: enqueue_off,
        process_c50_metrics_off: process_off,
    })
}
