//! The failover chaos run's core, shared by `examples/failover.rs` and the
//! suite's short run (`tests/suite/failover_chaos.rs`): producers, library
//! workers and `emq worker --exec` workers on a queue reached through
//! Sentinel or a cluster ([`Topology`]), while a driver `SIGKILL`s the
//! server of the queue, waits for the promotion and restarts the killed
//! server; then a drain, and the tally.

mod exec_workers;
mod ledger;
mod producers;
mod tally;
mod topology;
mod workers;

pub(crate) use tally::Tally;
pub(crate) use topology::Topology;

use echomq::{Durability, QueueSettings, Wire};
use ledger::Ledger;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The queue of the run.
const QUEUE: &str = "failover";

/// How a run goes.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The wire the clients speak.
    pub(crate) wire: Wire,
    /// The level every acknowledgement waits for.
    pub(crate) durability: Durability,
    /// Servers of the queue killed, one after another.
    pub(crate) failovers: u32,
    /// Load between a restart and the next kill.
    pub(crate) kill_every: Duration,
    /// Producers, each enqueueing one job per `enqueue_every`.
    pub(crate) producers: usize,
    /// The pace of each producer.
    pub(crate) enqueue_every: Duration,
    /// Library workers (8 handlers each).
    pub(crate) workers: usize,
    /// `emq worker --exec` processes (4 commands at once each); the `emq`
    /// binary is `EMQ_BIN` or one in a directory above this program.
    pub(crate) exec_workers: usize,
    /// How long the drain may take before what is left counts as stuck.
    pub(crate) drain_timeout: Duration,
}

/// What a run did, and its tally.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    /// How long each promotion took, from the kill to the sentinels
    /// naming the new primary.
    pub(crate) promotions: Vec<Duration>,
    /// Failovers the sentinels made (their configuration epoch): the
    /// kills, and any they made on their own (a primary they counted down
    /// while it was alive). `None` on a cluster.
    pub(crate) sentinel_failovers: Option<u64>,
    /// From the first job to the end of the drain.
    pub(crate) elapsed: Duration,
    /// How long the drain took.
    pub(crate) drain: Duration,
    /// The verdict.
    pub(crate) tally: Tally,
}

/// Runs the chaos on `topology` as `settings` say, on [`QUEUE`].
pub(crate) async fn run(
    topology: Topology,
    settings: &Settings,
) -> Result<Report, Box<dyn std::error::Error + Send + Sync>> {
    let emq = topology
        .connector()
        .wire(settings.wire)
        .durability(settings.durability)
        .connect()
        .await?;
    let queue = emq.queue::<Value>(QUEUE)?;
    queue
        .configure(&QueueSettings {
            keep_completed: u64::from(u32::MAX),
            ..QueueSettings::default()
        })
        .await?;
    let started = Instant::now();
    let ledger = Arc::new(Ledger::default());
    let stop = CancellationToken::new();
    let producers = producers::start(
        &queue,
        &ledger,
        settings.producers,
        settings.enqueue_every,
        &stop,
    );
    let workers = workers::start(&queue, &ledger, settings.workers);
    let reach = exec_workers::Reach {
        connection: topology.emq_flags(),
        wire: settings.wire,
        durability: settings.durability,
    };
    let exec_workers = match settings.exec_workers {
        0 => None,
        count => Some(exec_workers::start(
            &exec_workers::emq_binary()?,
            &reach,
            QUEUE,
            count,
        )?),
    };
    let (failovers, pause) = (settings.failovers, settings.kill_every);
    let driver = tokio::task::spawn_blocking(move || drive(topology, failovers, pause));
    let (topology, promotions) = match driver.await {
        Ok(done) => done,
        Err(err) => std::panic::resume_unwind(err.into_panic()),
    };
    stop.cancel();
    for producer in producers {
        producer.await?;
    }
    let drain_started = Instant::now();
    drain(&queue, settings.drain_timeout).await;
    let drain = drain_started.elapsed();
    for worker in workers {
        worker.shutdown(Duration::from_secs(5)).await;
    }
    if let Some(exec_workers) = exec_workers {
        exec_workers.stop(&ledger).await?;
    }
    let tally = tally::take(&queue, &ledger).await?;
    let elapsed = started.elapsed();
    let sentinel_failovers = topology.sentinel_failovers();
    drop(topology);
    Ok(Report {
        promotions,
        sentinel_failovers,
        elapsed,
        drain,
        tally,
    })
}

/// `failovers` times: let the load run for `pause`, `SIGKILL` the
/// server of the queue, wait for the promotion, restart the killed server.
fn drive(mut topology: Topology, failovers: u32, pause: Duration) -> (Topology, Vec<Duration>) {
    let mut promotions = Vec::new();
    for _ in 0..failovers {
        // The load between kills, not a synchronisation.
        std::thread::sleep(pause);
        promotions.push(topology.kill(QUEUE));
        topology.restart_killed();
    }
    std::thread::sleep(pause);
    (topology, promotions)
}

/// Waits until the queue has nothing pending, scheduled or active, for
/// at most `timeout` (what is left then counts as stuck).
async fn drain(queue: &echomq::Queue<Value>, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        let counts = queue.admin().counts().await;
        if counts.is_ok_and(|c| c.pending + c.scheduled + c.active == 0) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
