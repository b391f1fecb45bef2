//! The README's example: enqueue typed jobs and run a worker over them.
//!
//! `EMQ_URL=redis://127.0.0.1:6379 cargo run -p echomq --example quickstart`
//! (start a server with `emq server`). The test `tests/suite/quickstart.rs` runs
//! `run` twice against one real server, and checks the README shows this
//! code.

// README example begins
use echomq::{Connector, JobContext, JobError, JobState, Worker};
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Serialize, Deserialize)]
struct Email {
    to: String,
}

/// Enqueues three emails, sends them with a worker, returns how many of the
/// three were sent. The queue may hold other jobs (earlier runs', the CLI's):
/// the worker takes those too, but the run waits on its own three.
pub(crate) async fn run(url: &str) -> echomq::Result<u64> {
    let emq = Connector::connect(url).await?;
    let mail = emq.queue::<Email>("mail")?;
    let mut ids = Vec::new();
    for to in ["ada@example.com", "alan@example.com", "grace@example.com"] {
        ids.push(mail.enqueue(Email { to: to.into() }).await?.id);
    }
    if mail.admin().counts().await?.paused {
        eprintln!("the queue mail is paused: `emq resume mail` lets the worker start");
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

    let mut sent = 0;
    for id in &ids {
        // Until the job finishes: completed, dead, cancelled (or removed).
        loop {
            match mail.jobs().get(id).await?.map(|job| job.state) {
                Some(JobState::Completed) => {
                    sent += 1;
                    break;
                }
                Some(state) if !state.is_finished() => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                _ => break,
            }
        }
    }
    worker.shutdown(Duration::from_secs(10)).await;
    Ok(sent)
}
// README example ends

#[tokio::main]
#[allow(dead_code)]
async fn main() -> echomq::Result<()> {
    let url = std::env::var("EMQ_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let sent = run(&url).await?;
    println!("{sent} emails sent");
    Ok(())
}
