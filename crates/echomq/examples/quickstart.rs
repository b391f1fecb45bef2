//! The README's example: enqueue typed jobs and run a worker over them.
//!
//! `EMQ_URL=redis://127.0.0.1:6379 cargo run -p echomq --example quickstart`
//! (start a server with `emq server`). The test `tests/quickstart.rs` runs
//! `run` against a real server, and checks the README shows this code.

use echomq::{Connector, JobContext, JobError, Worker};
use serde::{Deserialize, Serialize};
use std::time::Duration;

// README example begins
#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

/// Enqueues three emails, sends them with a worker, returns how many completed.
pub async fn run(url: &str) -> echomq::Result<u64> {
    let emq = Connector::connect(url).await?;
    let mail = emq.queue::<Email>("mail")?;
    for to in ["ada@example.com", "alan@example.com", "grace@example.com"] {
        mail.enqueue(Email { to: to.into() }).await?;
    }

    let worker = Worker::new(mail.clone(), |job: JobContext<Email>| async move {
        if job.payload.to.is_empty() {
            return Err(JobError::permanent("no recipient"));
        }
        println!("sending to {} (attempt {})", job.payload.to, job.attempt);
        Ok(format!("sent to {}", job.payload.to))
    })
    .concurrency(16)
    .start();

    while mail.counts().await?.completed < 3 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let stats = worker.shutdown(Duration::from_secs(10)).await;
    Ok(stats.completed)
}
// README example ends

#[tokio::main]
#[allow(dead_code)]
async fn main() -> echomq::Result<()> {
    let url = std::env::var("EMQ_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let completed = run(&url).await?;
    println!("{completed} emails sent");
    Ok(())
}
