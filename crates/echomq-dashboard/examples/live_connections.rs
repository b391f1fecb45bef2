//! Valkey connections held by `emq dashboard` while N live pages are
//! open: N server-sent-event streams of the queues page (each watches
//! every queue) over 22 queues, for each N; then the server commands one
//! enqueue costs until every page has its update, and how long the
//! connections take to go once the pages close.
//!
//! ```sh
//! cargo build -p emq && cargo build -p echomq-dashboard --example live_connections
//! EMQ_VALKEY_SERVER=$(scripts/valkey) EMQ_BIN=target/debug/emq target/debug/examples/live_connections
//! ```
//!
//! Environment: `EMQ_BIN` (the `emq` to run, default `target/debug/emq`),
//! `PAGES` (`1,50,200`), `QUEUES` (22), `LIVE_VIEWERS` (passed on as
//! `--live-viewers`, for an `emq` that has it). Each N runs against a
//! fresh `emq dashboard` on one embedded server.

use echomq::Connector;
use echomq_testkit::TestServer;
use redis::aio::MultiplexedConnection;
use serde_json::json;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long the connection count must hold still to count as settled.
const STILL: Duration = Duration::from_secs(2);
/// The longest wait for anything.
const LIMIT: Duration = Duration::from_secs(120);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let emq = std::env::var("EMQ_BIN").unwrap_or_else(|_| "target/debug/emq".into());
    let pages: Vec<usize> = std::env::var("PAGES")
        .unwrap_or_else(|_| "1,50,200".into())
        .split(',')
        .map(|n| n.trim().parse())
        .collect::<Result<_, _>>()?;
    let queues: usize = std::env::var("QUEUES").map_or(Ok(22), |n| n.parse())?;
    let cap = std::env::var("LIVE_VIEWERS").ok();
    let server = TestServer::start();
    let connector = Connector::connect(server.url()).await?;
    for i in 0..queues {
        connector
            .queue::<serde_json::Value>(&format!("q{i:02}"))?
            .enqueue(json!({ "seed": i }))
            .await?;
    }
    let mut info = server.connection().await;
    println!("{emq}: {queues} queues, live pages of /live/queues");
    println!(
        "pages | connections before | with the pages open | refused (503) | commands for one enqueue's updates | update on every live page | connections gone after close"
    );
    for n in pages {
        let mut dashboard = Dashboard::start(&emq, &server.url(), cap.as_deref())?;
        let before = settled(&mut info).await;
        let counts = Arc::new(Counts::default());
        let mut streams = Vec::new();
        for _ in 0..n {
            streams.push(tokio::spawn(page(dashboard.addr.clone(), counts.clone())));
        }
        let open = settled(&mut info).await;
        let live = n - counts.refused.load(Ordering::SeqCst);
        let commands_before = stat(&mut info, "stats", "total_commands_processed").await;
        let enqueued = Instant::now();
        connector
            .queue::<serde_json::Value>("q00")?
            .enqueue(json!({ "n": 1 }))
            .await?;
        while counts.updated.load(Ordering::SeqCst) < live && enqueued.elapsed() < LIMIT {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let update = enqueued.elapsed();
        let commands = stat(&mut info, "stats", "total_commands_processed").await - commands_before;
        for stream in &streams {
            stream.abort();
        }
        let closed = Instant::now();
        while connected(&mut info).await > before && closed.elapsed() < LIMIT {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        println!(
            "{n} | {before} | {open} (+{}) | {} | {commands} | {:.2} s ({}/{live}) | {:.1} s",
            open - before,
            n - live,
            update.as_secs_f64(),
            counts.updated.load(Ordering::SeqCst),
            closed.elapsed().as_secs_f64()
        );
        dashboard.stop();
    }
    Ok(())
}

/// What the pages saw.
#[derive(Default)]
struct Counts {
    /// Pages answered other than 200 (over the cap).
    refused: AtomicUsize,
    /// Pages that had a `queues` event.
    updated: AtomicUsize,
}

/// One live page: `GET /live/queues`, counted as refused or, at its
/// first `queues` event, updated.
async fn page(addr: String, counts: Arc<Counts>) {
    let Ok(mut stream) = TcpStream::connect(&addr).await else {
        return;
    };
    let request =
        format!("GET /live/queues HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
    if stream.write_all(request.as_bytes()).await.is_err() {
        return;
    }
    let mut seen = String::new();
    let mut buf = [0u8; 8192];
    loop {
        let Ok(read) = stream.read(&mut buf).await else {
            return;
        };
        if read == 0 {
            return;
        }
        seen.push_str(&String::from_utf8_lossy(&buf[..read]));
        if seen.len() >= 12 && !seen.starts_with("HTTP/1.1 200") {
            counts.refused.fetch_add(1, Ordering::SeqCst);
            return;
        }
        if seen.contains("event: queues") {
            counts.updated.fetch_add(1, Ordering::SeqCst);
            // Hold the page open, reading on.
            while let Ok(read) = stream.read(&mut buf).await {
                if read == 0 {
                    return;
                }
            }
            return;
        }
    }
}

/// `emq dashboard` on a free loopback port.
struct Dashboard {
    child: Child,
    addr: String,
}

impl Dashboard {
    fn start(emq: &str, url: &str, cap: Option<&str>) -> Result<Self, Box<dyn std::error::Error>> {
        let mut command = Command::new(emq);
        command.args(["--url", url, "dashboard", "--listen", "127.0.0.1:0"]);
        if let Some(cap) = cap {
            command.args(["--live-viewers", cap]);
        }
        let mut child = command.stdout(Stdio::piped()).spawn()?;
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().ok_or("no stdout")?).read_line(&mut line)?;
        let addr = line
            .trim()
            .strip_prefix("serving http://")
            .ok_or_else(|| format!("unexpected first line {line:?}"))?
            .trim_end_matches('/')
            .to_string();
        Ok(Self { child, addr })
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server's connected clients once they have held still for
/// [`STILL`].
async fn settled(info: &mut MultiplexedConnection) -> u64 {
    let start = Instant::now();
    let mut last = connected(info).await;
    let mut since = Instant::now();
    while since.elapsed() < STILL && start.elapsed() < LIMIT {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = connected(info).await;
        if now != last {
            (last, since) = (now, Instant::now());
        }
    }
    last
}

async fn connected(info: &mut MultiplexedConnection) -> u64 {
    stat(info, "clients", "connected_clients").await
}

/// Field `field` of `INFO section`.
async fn stat(info: &mut MultiplexedConnection, section: &str, field: &str) -> u64 {
    let text: String = redis::cmd("INFO")
        .arg(section)
        .query_async(info)
        .await
        .expect("INFO");
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}
