//! The HTTP phases of `emq bench --http` (docs/http.md): the API served on
//! a loopback port by a thread of this process with a runtime and a
//! connector of its own (as `emq serve` would be), measured side by side
//! with the library on the same server, in rounds interleaved as the flow
//! phases are (`flow.rs`):
//!
//! - **single enqueues**: the library's, [`CLIENTS`] at once over its one
//!   connector (pipelined), against [`CLIENTS`] keep-alive connections
//!   each POSTing one job at a time;
//! - **bulk enqueues**: `enqueue_bulk` of [`BULK`]-job chunks against
//!   POSTs of [`BULK`]-job arrays, [`BULK_STREAMS`] at once each;
//! - **work**: the library's worker at concurrency 50 against one HTTP
//!   worker loop that claims [`COUNT`] jobs, then completes each batch and
//!   claims the next in one request (`POST /queues/{q}/complete`).
//!
//! Jobs are `{"n": i}` on both sides. The report's ratios are the HTTP
//! side's jobs per second over the library's, against the floors.

use super::flow::{ROUNDS, Tally, rotated};
use super::keep_alive::KeepAlive;
use super::{CONCURRENCY, Cpu, Phase, Session, jobs, process_phase};
use crate::error::CliError;
use echomq::{NewJob, Queue, TlsOptions};
use futures_util::future::try_join_all;
use serde::Serialize;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::Instant;

/// Clients enqueueing one job at a time, at once, on each side.
pub const CLIENTS: u64 = 50;
/// Jobs per bulk call and per bulk POST.
pub const BULK: u64 = 100;
/// Bulk calls (and POSTs) in flight at once.
pub const BULK_STREAMS: u64 = 4;
/// Jobs each claim of the HTTP worker loop asks for.
pub const COUNT: u64 = 50;
/// The floors of issue 44: HTTP jobs/s over the library's.
const SINGLE_FLOOR: f64 = 0.25;
const BULK_FLOOR: f64 = 0.60;
const WORK_FLOOR: f64 = 0.30;

/// One pair: the library's phase, the HTTP API's, and the ratio of their
/// jobs per second against its floor.
#[derive(Debug, Clone, Serialize)]
pub struct HttpPair {
    /// The library's phase, summed over the rounds.
    pub library: Phase,
    /// The HTTP API's, summed over the rounds.
    pub http: Phase,
    /// HTTP jobs/s over the library's.
    pub ratio: f64,
    /// The least ratio issue 44 asks for.
    pub floor: f64,
}

impl HttpPair {
    fn of(tallies: &[Tally; 2], floor: f64) -> Self {
        let [library, http] = [tallies[0].phase(), tallies[1].phase()];
        Self {
            ratio: http.jobs_per_sec / library.jobs_per_sec.max(f64::MIN_POSITIVE),
            library,
            http,
            floor,
        }
    }
}

/// What the HTTP phases measured.
#[derive(Debug, Clone, Serialize)]
pub struct HttpReport {
    /// Single enqueues, [`CLIENTS`] at once.
    pub single_enqueue: HttpPair,
    /// Bulk enqueues of [`BULK`] jobs, [`BULK_STREAMS`] at once.
    pub bulk_enqueue: HttpPair,
    /// Claim and complete: the library's worker at concurrency 50 against
    /// an HTTP worker loop at count [`COUNT`].
    pub work: HttpPair,
}

impl HttpReport {
    fn pairs(&self) -> [(&'static str, &HttpPair); 3] {
        [
            ("single enqueue", &self.single_enqueue),
            ("bulk enqueue", &self.bulk_enqueue),
            ("work", &self.work),
        ]
    }

    /// The phases as table rows' names and phases.
    pub fn phases(&self) -> Vec<(String, Phase)> {
        self.pairs()
            .into_iter()
            .flat_map(|(name, pair)| {
                [
                    (format!("{name}, library"), pair.library),
                    (format!("{name}, HTTP"), pair.http),
                ]
            })
            .collect()
    }

    /// The ratios, one line each.
    pub fn lines(&self) -> String {
        self.pairs()
            .into_iter()
            .map(|(name, pair)| {
                format!(
                    "HTTP / library {name}, jobs/s: {:.3} (floor {:.2}{})\n",
                    pair.ratio,
                    pair.floor,
                    if pair.ratio >= pair.floor {
                        ""
                    } else {
                        ", MISSED"
                    }
                )
            })
            .collect()
    }
}

/// Where the API is served from, and how to reach the server.
pub(crate) struct Reach<'a> {
    pub url: &'a str,
    pub prefix: &'a str,
    pub wire: crate::cli::WireArg,
    pub tls: Option<TlsOptions>,
}

/// About `n` jobs per variant (whole chunks of [`BULK`] × [`CLIENTS`] per
/// round), each pair interleaved over [`ROUNDS`].
pub(crate) async fn run(
    n: u64,
    reach: Reach<'_>,
    session: &mut Session,
) -> Result<HttpReport, CliError> {
    let served = Served::start(&reach)?;
    let step = BULK * CLIENTS;
    let chunk = (n / ROUNDS / step).max(1) * step;
    let result = rounds(chunk, served.addr, session).await;
    served.stop();
    result
}

async fn rounds(
    chunk: u64,
    addr: SocketAddr,
    session: &mut Session,
) -> Result<HttpReport, CliError> {
    let mut queues = Vec::new();
    for name in ["single-lib", "single-http", "bulk-lib", "bulk-http"] {
        queues.push(session.queue::<Value>(name).await?);
    }
    let work = [
        session.queue::<Value>("work-lib").await?,
        session.queue::<Value>("work-http").await?,
    ];
    let mut tallies: [[Tally; 2]; 3] = Default::default();
    for round in 0..ROUNDS {
        for at in rotated(2, round as usize) {
            let queue = &queues[at];
            let phase = timed(chunk, None, session, async {
                if at == 0 {
                    singles_library(queue, chunk).await
                } else {
                    singles_http(addr, queue.name().as_str(), chunk).await
                }
            })
            .await?;
            tallies[0][at].add(phase);
        }
        for at in rotated(2, round as usize) {
            let queue = &queues[2 + at];
            let phase = timed(chunk, None, session, async {
                if at == 0 {
                    bulk_library(queue, chunk).await
                } else {
                    bulk_http(addr, queue.name().as_str(), chunk).await
                }
            })
            .await?;
            tallies[1][at].add(phase);
        }
        for at in rotated(2, round as usize) {
            let queue = &work[at];
            queue.enqueue_bulk(jobs(chunk)).await?;
            let phase = if at == 0 {
                process_phase(queue, chunk, CONCURRENCY, session).await?
            } else {
                timed(
                    chunk,
                    Some(COUNT),
                    session,
                    work_http(addr, queue.name().as_str(), chunk),
                )
                .await?
            };
            tallies[2][at].add(phase);
        }
    }
    for queue in queues.iter().chain(&work) {
        let admin = queue.admin();
        admin.pause().await?;
        admin.obliterate(echomq::IfActive::Force).await?;
    }
    Ok(HttpReport {
        single_enqueue: HttpPair::of(&tallies[0], SINGLE_FLOOR),
        bulk_enqueue: HttpPair::of(&tallies[1], BULK_FLOOR),
        work: HttpPair::of(&tallies[2], WORK_FLOOR),
    })
}

/// `work` as a phase of `jobs` jobs: its wall time and CPU.
async fn timed(
    jobs: u64,
    concurrency: Option<u64>,
    session: &mut Session,
    work: impl Future<Output = Result<(), CliError>>,
) -> Result<Phase, CliError> {
    let cpu = session.cpu().await?;
    let started = Instant::now();
    work.await?;
    let wall = started.elapsed();
    let cpu: Cpu = session.cpu().await? - cpu;
    Ok(Phase::new(jobs, concurrency, wall, cpu))
}

/// Job `i`'s payload, the same on both sides.
fn payload(i: u64) -> Value {
    json!({ "n": i })
}

async fn singles_library(queue: &Queue<Value>, n: u64) -> Result<(), CliError> {
    try_join_all((0..CLIENTS).map(|client| async move {
        for i in (client..n).step_by(CLIENTS as usize) {
            queue.enqueue(NewJob::new(payload(i))).await?;
        }
        Ok::<_, CliError>(())
    }))
    .await?;
    Ok(())
}

async fn singles_http(addr: SocketAddr, queue: &str, n: u64) -> Result<(), CliError> {
    let path = format!("/api/v1/queues/{queue}/jobs");
    try_join_all((0..CLIENTS).map(|client| {
        let path = &path;
        async move {
            let mut connection = KeepAlive::open(addr).await?;
            for i in (client..n).step_by(CLIENTS as usize) {
                let body = json!({ "payload": payload(i) }).to_string().into_bytes();
                connection.post_expect(path, &body, 201).await?;
            }
            Ok::<_, CliError>(())
        }
    }))
    .await?;
    Ok(())
}

async fn bulk_library(queue: &Queue<Value>, n: u64) -> Result<(), CliError> {
    try_join_all((0..BULK_STREAMS).map(|stream| async move {
        for first in (stream * BULK..n).step_by((BULK * BULK_STREAMS) as usize) {
            let batch = (first..(first + BULK).min(n)).map(|i| NewJob::new(payload(i)));
            queue.enqueue_bulk(batch.collect::<Vec<_>>()).await?;
        }
        Ok::<_, CliError>(())
    }))
    .await?;
    Ok(())
}

async fn bulk_http(addr: SocketAddr, queue: &str, n: u64) -> Result<(), CliError> {
    let path = format!("/api/v1/queues/{queue}/jobs");
    try_join_all((0..BULK_STREAMS).map(|stream| {
        let path = &path;
        async move {
            let mut connection = KeepAlive::open(addr).await?;
            for first in (stream * BULK..n).step_by((BULK * BULK_STREAMS) as usize) {
                let batch: Vec<Value> = (first..(first + BULK).min(n))
                    .map(|i| json!({ "payload": payload(i) }))
                    .collect();
                connection
                    .post_expect(path, Value::from(batch).to_string().as_bytes(), 201)
                    .await?;
            }
            Ok::<_, CliError>(())
        }
    }))
    .await?;
    Ok(())
}

/// One HTTP worker loop at count [`COUNT`]: claims [`COUNT`] jobs, then
/// completes each batch and claims the next in one request
/// (`POST /queues/{q}/complete` with `claim`), until `n` are completed.
async fn work_http(addr: SocketAddr, queue: &str, n: u64) -> Result<(), CliError> {
    let claim = json!({ "count": COUNT, "lease_ms": 30_000 });
    let mut connection = KeepAlive::open(addr).await?;
    let answer = connection
        .post_expect(
            &format!("/api/v1/queues/{queue}/claim"),
            claim.to_string().as_bytes(),
            200,
        )
        .await?;
    let mut claimed = jobs_of(&answer, "jobs")?;
    let complete = format!("/api/v1/queues/{queue}/complete");
    let mut completed = 0;
    while completed < n {
        if claimed.is_empty() {
            return Err(CliError::usage(format!(
                "bench: the HTTP worker found no job with {completed} of {n} completed"
            )));
        }
        completed += claimed.len() as u64;
        let done: Vec<Value> = claimed
            .iter()
            .map(|job| json!({ "id": job["id"], "token": job["token"] }))
            .collect();
        let body = json!({ "jobs": done, "claim": claim });
        let answer = connection
            .post_expect(&complete, body.to_string().as_bytes(), 200)
            .await?;
        claimed = jobs_of(&answer, "claimed")?;
    }
    Ok(())
}

/// The jobs of an answer's array `field`.
fn jobs_of(answer: &[u8], field: &str) -> Result<Vec<Value>, CliError> {
    let answer: Value = serde_json::from_slice(answer)
        .map_err(|err| CliError::usage(format!("bench: an answer of the API: {err}")))?;
    Ok(answer[field].as_array().cloned().unwrap_or_default())
}

/// The API, served by a thread of its own until [`Served::stop`].
struct Served {
    addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Served {
    /// Serves the API from a new thread with its own current-thread
    /// runtime and connector: what an `emq serve` process does, beside
    /// the bench's own client.
    fn start(reach: &Reach<'_>) -> Result<Self, CliError> {
        let (url, prefix, wire, tls) = (
            reach.url.to_string(),
            reach.prefix.to_string(),
            reach.wire,
            reach.tls.clone(),
        );
        let (ready, listening) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let failed = ready.clone();
            let serving = async move {
                let how = crate::commands::How {
                    prefix: &prefix,
                    wire,
                    durability: echomq::Durability::Memory,
                };
                let connector = crate::commands::connect_to(&url, how, tls).await?;
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
                let _ = ready.send(Ok(listener.local_addr()?));
                let app = echomq_dashboard::Dashboard::new(connector).router();
                let limits = echomq_dashboard::ConnectionLimits::default();
                echomq_dashboard::serve(listener, app, limits, async {
                    let _ = stopped.await;
                })
                .await?;
                Ok::<_, CliError>(())
            };
            let outcome = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(CliError::from)
                .and_then(|runtime| runtime.block_on(serving));
            if let Err(err) = outcome {
                let _ = failed.send(Err(err));
            }
        });
        let addr = listening.recv().map_err(|_| {
            CliError::usage("bench: the HTTP server thread ended before listening")
        })??;
        Ok(Self { addr, stop, thread })
    }

    fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}
