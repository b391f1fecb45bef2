//! The durability phases of `emq --durability LEVEL bench`: the lifecycle
//! (bulk enqueue, then processing at concurrency 50) of the same work
//! acknowledged at memory and at LEVEL, on one server, in rounds
//! interleaved as the flow phases are (see `flow.rs`): what waiting for
//! the level costs in throughput and server CPU.
//!
//! On an embedded server the phases first make the level available: the
//! AOF switched on for `local`; for `replicas:N`, N embedded replicas with
//! `appendonly yes` and `appendfsync always` (a replica that fsyncs once a
//! second confirms once a second). Against `--url` the server must give
//! the level itself (checked at connect).

use super::flow::{ROUNDS, Tally, rotated};
use super::{CONCURRENCY, Phase, Session, enqueue_phase, process_phase};
use crate::embedded::Embedded;
use crate::error::CliError;
use echomq::{Connector, Durability};
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;

/// What the durability phases measured.
#[derive(Debug, Clone, Serialize)]
pub struct DurabilityReport {
    /// The level measured against memory (`replicas:1`).
    pub level: String,
    /// Memory: bulk enqueue, summed over the rounds.
    pub enqueue_memory: Phase,
    /// Memory: processing at concurrency 50.
    pub process_c50_memory: Phase,
    /// The level: bulk enqueue.
    pub enqueue_level: Phase,
    /// The level: processing at concurrency 50.
    pub process_c50_level: Phase,
    /// Jobs per second processing at concurrency 50, the level over memory.
    pub process_throughput_ratio: f64,
    /// Server CPU per job over the lifecycle, the level over memory.
    pub lifecycle_cpu_ratio: f64,
}

impl DurabilityReport {
    /// The phases as table rows' names and phases.
    pub fn phases(&self) -> Vec<(String, Phase)> {
        vec![
            ("enqueue, memory".into(), self.enqueue_memory),
            ("process, memory".into(), self.process_c50_memory),
            (format!("enqueue, {}", self.level), self.enqueue_level),
            (format!("process, {}", self.level), self.process_c50_level),
        ]
    }

    /// The ratios, as lines.
    pub fn lines(&self) -> String {
        format!(
            "{level} / memory, processing jobs/s at concurrency 50: {:.3}\n\
             {level} / memory, lifecycle server CPU per job: {:.3}\n",
            self.process_throughput_ratio,
            self.lifecycle_cpu_ratio,
            level = self.level
        )
    }
}

/// The replicas started for the phases; stopped when dropped.
pub(crate) struct Prepared {
    _replicas: Vec<Embedded>,
}

/// Makes `level` available on the embedded server at `url` (nothing
/// against a server of the user's own).
pub(crate) async fn prepare(
    level: Durability,
    url: &str,
    session: &mut Session,
) -> Result<Prepared, CliError> {
    if !session.setup.embedded {
        return Ok(Prepared {
            _replicas: Vec::new(),
        });
    }
    match level {
        Durability::Local => {
            let _: () = redis::cmd("CONFIG")
                .arg("SET")
                .arg("appendonly")
                .arg("yes")
                .query_async(&mut session.plain)
                .await
                .map_err(echomq::Error::from)?;
            wait_for_info(session, "persistence", |info| {
                info.contains("aof_enabled:1") && info.contains("aof_rewrite_in_progress:0")
            })
            .await?;
            Ok(Prepared {
                _replicas: Vec::new(),
            })
        }
        Durability::Replicas { n, .. } => {
            let port = url
                .rsplit(':')
                .next()
                .and_then(|port| port.parse::<u16>().ok())
                .ok_or_else(|| CliError::usage(format!("no port in {url}")))?;
            let mut replicas = Vec::new();
            for _ in 0..n {
                let replica = tokio::task::spawn_blocking(move || Embedded::start_replica(port))
                    .await
                    .map_err(|err| CliError::usage(format!("starting a replica: {err}")))??;
                replicas.push(replica);
            }
            let online = format!("connected_slaves:{n}");
            wait_for_info(session, "replication", move |info| {
                info.contains(&online) && info.matches("state=online").count() >= n as usize
            })
            .await?;
            Ok(Prepared {
                _replicas: replicas,
            })
        }
        Durability::Memory => Ok(Prepared {
            _replicas: Vec::new(),
        }),
    }
}

/// Waits (at most a minute) until `INFO section` satisfies `ready`.
async fn wait_for_info(
    session: &mut Session,
    section: &str,
    ready: impl Fn(&str) -> bool,
) -> Result<(), CliError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let info: String = redis::cmd("INFO")
            .arg(section)
            .query_async(&mut session.plain)
            .await
            .map_err(echomq::Error::from)?;
        if ready(&info) {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(CliError::usage(format!(
                "the embedded server's INFO {section} did not get ready for the durability phases"
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `n` jobs per variant (rounded down to a multiple of [`ROUNDS`]),
/// acknowledged at memory and at the level of `durable`, each variant on
/// its own queue.
pub(crate) async fn run(
    n: u64,
    durable: &Connector,
    session: &mut Session,
) -> Result<DurabilityReport, CliError> {
    let chunk = (n / ROUNDS).max(1);
    let memory = session.queue::<Value>("memory").await?;
    let named = session.queue::<Value>("durable").await?;
    let durable_queue = durable.queue::<Value>(named.name().as_str())?;
    let queues = [memory, durable_queue];
    let mut enqueues = [Tally::default(), Tally::default()];
    let mut processes = [Tally::default(), Tally::default()];
    for round in 0..ROUNDS {
        for at in rotated(2, round as usize) {
            enqueues[at].add(enqueue_phase(&queues[at], chunk, session).await?);
            processes[at].add(process_phase(&queues[at], chunk, CONCURRENCY, session).await?);
        }
    }
    let [enqueue_memory, enqueue_level] = enqueues.map(|t| t.phase());
    let [process_memory, process_level] = processes.map(|t| t.phase());
    let per_job = |enqueue: &Phase, process: &Phase| {
        (enqueue.server_cpu_seconds + process.server_cpu_seconds) / enqueue.jobs.max(1) as f64
    };
    Ok(DurabilityReport {
        level: durable.durability().to_string(),
        process_throughput_ratio: process_level.jobs_per_sec
            / process_memory.jobs_per_sec.max(f64::MIN_POSITIVE),
        lifecycle_cpu_ratio: per_job(&enqueue_level, &process_level)
            / per_job(&enqueue_memory, &process_memory).max(f64::MIN_POSITIVE),
        enqueue_memory,
        process_c50_memory: process_memory,
        enqueue_level,
        process_c50_level: process_level,
    })
}
