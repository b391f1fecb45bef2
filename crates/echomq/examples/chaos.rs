//! The chaos run: 4 `emq worker --exec` processes drain 20,000 jobs while a
//! driver kill -9s a random worker every 2 s and restarts it. Reports jobs
//! completed, jobs lost (must be 0), duplicate executions (at-least-once
//! allows them only for killed attempts) and the time to drain.
//!
//! ```sh
//! cargo build --release -p emq -p echomq --example chaos
//! EMQ_VALKEY_SERVER=$(scripts/valkey) target/release/examples/chaos
//! ```
//!
//! Environment: `EMQ_URL` (default: an embedded server), `EMQ_BIN` (default
//! `target/release/emq`), `JOBS` (20000), `WORKERS` (4), `KILL_EVERY_MS`
//! (2000), `EMQ_CLAIM_AHEAD` (16: each worker holds one batch ahead).

use echomq::{Connector, NewJob, QueueSettings};
use echomq_server::{ServerBinary, ServerConfig, ServerProcess};
use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Jobs each worker holds claimed ahead (`EMQ_CLAIM_AHEAD`, default one
/// batch: 16), so a kill also lands on jobs waiting ahead.
fn claim_ahead() -> String {
    env_or("EMQ_CLAIM_AHEAD", 16u32).to_string()
}

fn spawn_worker(bin: &str, url: &str, queue: &str, runs: &str) -> std::io::Result<Child> {
    let exec = format!("echo \"$EMQ_JOB_ID\" >> {runs}; cat > /dev/null");
    Command::new(bin)
        .args([
            "worker",
            queue,
            "--exec",
            &exec,
            "--concurrency",
            "16",
            "--claim-ahead",
            &claim_ahead(),
            "--lease",
            "2s",
        ])
        .args([
            "--stalled-interval",
            "500ms",
            "--max-stalls",
            "10",
            "--quiet",
            "--url",
            url,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
}

fn kill9(child: &mut Child) {
    let _ = Command::new("kill")
        .arg("-9")
        .arg(child.id().to_string())
        .status();
    let _ = child.wait();
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let jobs: u64 = env_or("JOBS", 20_000);
    let workers: usize = env_or("WORKERS", 4);
    let kill_every = Duration::from_millis(env_or("KILL_EVERY_MS", 2000));
    let bin = std::env::var("EMQ_BIN").unwrap_or_else(|_| "target/release/emq".into());
    let dir = tempfile_dir()?;
    let mut _server = None;
    let url = match std::env::var("EMQ_URL") {
        Ok(url) => url,
        Err(_) => {
            let server = ServerProcess::spawn(
                &ServerBinary::locate()?,
                &ServerConfig::new(dir.join("server")),
            )?;
            let url = server.url();
            _server = Some(server);
            url
        }
    };
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let name = format!("chaos-{stamp}");
    let runs = dir.join("runs.log");
    let emq = Connector::connect(url.clone()).await?;
    let queue = emq.queue::<serde_json::Value>(&name)?;
    queue
        .configure(&QueueSettings {
            keep_completed: jobs,
            ..QueueSettings::default()
        })
        .await?;
    queue
        .enqueue_bulk((0..jobs).map(|n| NewJob::new(serde_json::json!({ "n": n }))))
        .await?;

    let runs_path = runs.to_string_lossy().to_string();
    let mut children: Vec<Child> = (0..workers)
        .map(|_| spawn_worker(&bin, &url, &name, &runs_path))
        .collect::<Result<_, _>>()?;
    let started = Instant::now();
    let mut kills = 0u64;
    let mut next_kill = Instant::now() + kill_every;
    let mut victim = 0usize;
    loop {
        let counts = queue.admin().counts().await?;
        if counts.completed + counts.dead + counts.cancelled >= jobs {
            break;
        }
        if started.elapsed() > Duration::from_secs(600) {
            return Err(format!("did not drain within 600 s: {counts:?}").into());
        }
        if Instant::now() >= next_kill {
            victim = (victim + 7) % workers;
            kill9(&mut children[victim]);
            children[victim] = spawn_worker(&bin, &url, &name, &runs_path)?;
            kills += 1;
            next_kill = Instant::now() + kill_every;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let drained = started.elapsed();
    for child in &mut children {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        let _ = child.wait();
    }
    let counts = queue.admin().counts().await?;
    let log = std::fs::read_to_string(&runs).unwrap_or_default();
    let mut executions: HashMap<&str, u64> = HashMap::new();
    for id in log.lines().filter(|line| !line.is_empty()) {
        *executions.entry(id).or_default() += 1;
    }
    let ran_twice = executions.values().filter(|n| **n > 1).count();
    let duplicates: u64 = executions.values().map(|n| n - 1).sum();
    let lost = jobs - counts.completed;
    println!(
        "chaos run: {jobs} jobs, {workers} `emq worker --exec` processes, kill -9 every {kill_every:?}"
    );
    println!("{:<28}{:>10}", "kills", kills);
    println!("{:<28}{:>10}", "jobs completed", counts.completed);
    println!("{:<28}{:>10}", "jobs lost", lost);
    println!(
        "{:<28}{:>10}",
        "jobs dead / cancelled",
        counts.dead + counts.cancelled
    );
    println!(
        "{:<28}{:>10}",
        "executions",
        executions.values().sum::<u64>()
    );
    println!("{:<28}{:>10}", "duplicate executions", duplicates);
    println!("{:<28}{:>10}", "jobs run more than once", ran_twice);
    println!("{:<28}{:>10.1}", "time to drain (s)", drained.as_secs_f64());
    if lost > 0 {
        return Err(format!("{lost} jobs were lost").into());
    }
    Ok(())
}

fn tempfile_dir() -> std::io::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("emq-chaos-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
