//! The scrape phase of `emq bench --scrape N`: N queues under a prefix of
//! their own, each with jobs in several states and metrics, served by `emq
//! metrics --listen`'s handler on a loopback port; the time of each whole
//! HTTP scrape (every queue read from the server, rendered, sent).

use crate::commands::metrics::router;
use crate::error::CliError;
use echomq::{Connector, FailAction, NewJob};
use serde::Serialize;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Scrapes timed.
const SCRAPES: usize = 30;
/// Jobs per queue: some completed, one dead, the rest pending.
const JOBS_PER_QUEUE: u64 = 20;
const LEASE: Duration = Duration::from_secs(60);

/// What the scrape phase measured.
#[derive(Debug, Clone, Serialize)]
pub struct ScrapeReport {
    /// Queues under the scraped prefix.
    pub queues: u64,
    /// Scrapes timed.
    pub scrapes: usize,
    /// Median scrape, ms.
    pub p50_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// Slowest, ms.
    pub max_ms: f64,
    /// Size of one answer, bytes.
    pub body_bytes: usize,
}

impl ScrapeReport {
    /// The figures, as one line.
    pub fn lines(&self) -> String {
        format!(
            "scrape of {} queues over HTTP ({} scrapes, {} bytes): p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms\n",
            self.queues, self.scrapes, self.body_bytes, self.p50_ms, self.p95_ms, self.max_ms
        )
    }
}

/// Fills `queues` queues under `connector`'s prefix, serves them, times
/// [`SCRAPES`] scrapes, then obliterates the queues.
pub(crate) async fn run(queues: u64, connector: Connector) -> Result<ScrapeReport, CliError> {
    let mut names = Vec::new();
    for i in 0..queues {
        let name = format!("q{i}");
        fill(&connector, &name).await?;
        names.push(name);
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(axum::serve(listener, router(connector.clone())).into_future());
    let timed = time_gets(addr, "/metrics", SCRAPES).await;
    server.abort();
    let (times, body) = timed?;
    for name in &names {
        let admin = connector.queue::<Value>(name)?.admin();
        admin.pause().await?;
        admin.obliterate(echomq::IfActive::Force).await?;
    }
    let (p50_ms, p95_ms, max_ms) = spread(times);
    Ok(ScrapeReport {
        queues,
        scrapes: SCRAPES,
        p50_ms,
        p95_ms,
        max_ms,
        body_bytes: body.len(),
    })
}

/// [`JOBS_PER_QUEUE`] jobs: half completed, one dead, the rest pending.
async fn fill(connector: &Connector, name: &str) -> Result<(), CliError> {
    let queue = connector.queue::<Value>(name)?;
    let jobs: Vec<NewJob<Value>> = (0..JOBS_PER_QUEUE)
        .map(|i| NewJob::new(json!({ "n": i })))
        .collect();
    queue.enqueue_bulk(jobs).await?;
    let claimed = queue
        .claim("bench", LEASE, (JOBS_PER_QUEUE / 2) as usize)
        .await?;
    for (i, job) in claimed.iter().enumerate() {
        if i == 0 {
            queue
                .fail(&job.id, job.token, "bench", FailAction::Dead)
                .await?;
        } else {
            queue.complete(&job.id, job.token, &()).await?;
        }
    }
    Ok(())
}

/// `count` whole `GET path` answers, each timed (ms); the last body.
pub(super) async fn time_gets(
    addr: std::net::SocketAddr,
    path: &str,
    count: usize,
) -> Result<(Vec<f64>, String), CliError> {
    let mut times = Vec::with_capacity(count);
    let mut body = String::new();
    for _ in 0..count {
        let started = Instant::now();
        body = http_get(addr, path).await?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    Ok((times, body))
}

/// The median, 95th percentile and largest of `times` (not empty).
pub(super) fn spread(mut times: Vec<f64>) -> (f64, f64, f64) {
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.95), at(1.0))
}

/// One `GET path`: the body of a 200.
pub(super) async fn http_get(addr: std::net::SocketAddr, path: &str) -> Result<String, CliError> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    match response.split_once("\r\n\r\n") {
        Some((head, body)) if head.starts_with("HTTP/1.1 200") => Ok(body.to_string()),
        _ => Err(CliError::usage(format!(
            "bench: GET {path} failed: {}",
            response.lines().next().unwrap_or("")
        ))),
    }
}
