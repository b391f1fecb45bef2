//! The server's commands per job of one worker over one queue against one
//! over three (`emq bench --many-queues`'s two setups), each run alone so
//! the server's `commandstats` tell them apart.
//!
//! Against a server of your own (`CONFIG RESETSTAT` is sent to it):
//! `cargo build --release -p echomq --example many_queues_calls`, then
//! `target/release/examples/many_queues_calls redis://127.0.0.1:6411
//! native|script 60000 one|three [rounds]`.

use echomq::{Connector, JobContext, JobError, NewJob, Wire, Worker};
use serde::de::IgnoredAny;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, wire, jobs, setup, rest @ ..] = args.as_slice() else {
        anyhow::bail!("usage: many_queues_calls URL native|script JOBS one|three [ROUNDS]");
    };
    let wire = match wire.as_str() {
        "native" => Wire::Native,
        "script" => Wire::Script,
        other => anyhow::bail!("wire {other:?}: give native or script"),
    };
    let jobs: u64 = jobs.parse()?;
    let rounds: u64 = rest.first().map_or(Ok(1), |r| r.parse())?;
    let queues = match setup.as_str() {
        "one" => 1,
        "three" => 3,
        other => anyhow::bail!("setup {other:?}: give one or three"),
    };
    let connector = Connector::builder(url.as_str())
        .prefix(format!("calls{}", std::process::id()))
        .wire(wire)
        .connect()
        .await?;
    let client = redis::Client::open(url.as_str())?;
    let mut plain = client.get_multiplexed_async_connection().await?;
    let mut busy = Duration::ZERO;
    let mut stats = String::new();
    for round in 0..rounds {
        let names: Vec<String> = (0..queues).map(|q| format!("q{round}-{q}")).collect();
        let mut typed = Vec::new();
        for name in &names {
            let queue = connector.queue::<Value>(name)?;
            let each = jobs / queues;
            queue
                .enqueue_bulk((0..each).map(|i| NewJob::new(json!({ "n": i }))))
                .await?;
            typed.push(queue.typed::<IgnoredAny>());
        }
        let _: () = redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query_async(&mut plain)
            .await?;
        let started = Instant::now();
        let worker = Worker::over(typed, |_job: JobContext<IgnoredAny>| async {
            Ok::<_, JobError>(())
        })?
        .concurrency(50)
        .start();
        let total = (jobs / queues) * queues;
        while worker.stats().finished() < total {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        busy += started.elapsed();
        stats = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut plain)
            .await?;
        worker.shutdown(Duration::from_secs(5)).await;
        println!(
            "round {round}: {:.0} jobs/s",
            total as f64 / started.elapsed().as_secs_f64()
        );
    }
    let total = (jobs / queues) * queues;
    println!(
        "{setup}: {:.0} jobs/s over {rounds} rounds; the last round's commands per job:",
        (total * rounds) as f64 / busy.as_secs_f64()
    );
    for line in stats.lines().filter(|line| line.starts_with("cmdstat_")) {
        let field = |key: &str| -> f64 {
            line.split([':', ','])
                .find_map(|part| part.strip_prefix(key))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0)
        };
        let (calls, usec) = (field("calls="), field("usec="));
        let name = line.split(':').next().unwrap_or(line);
        println!(
            "  {name:<40} calls/job {:.4}  jobs/call {:>7.1}  server µs/job {:.2}",
            calls / total as f64,
            total as f64 / calls.max(1.0),
            usec / total as f64
        );
    }
    Ok(())
}
