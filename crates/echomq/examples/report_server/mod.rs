//! The report server's core, shared by `examples/report_server.rs` and
//! the suite (`tests/suite/report_server.rs`): an HTTP listener on a
//! loopback address whose `GET /report?month=2026-11` enqueues a job on
//! the queue `reports`, waits for its outcome and answers with it, and a
//! worker in the same process that produces the reports.
//!
//! | the job | the answer |
//! |---|---|
//! | completed | 200, its result (the report) |
//! | dead | 502, its error and attempts |
//! | cancelled or removed | 410 |
//! | unfinished when the wait ends | 504, its id; the job runs on |
//!
//! Every answer about a job names it in `Job-Id`. Requests for the same
//! month share one job while it is unfinished (a dedup key), so a client
//! that asks again after a 504 waits for the same job.

pub(crate) mod http;
mod report;

pub(crate) use report::{Report, ReportRequest};

use echomq::{Connector, Error, NewJob, Outcome, Queue, Worker, WorkerHandle};
use http::{Request, Response};
use serde_json::json;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The queue of the reports.
pub(crate) const QUEUE: &str = "reports";

/// How the server listens and waits.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// A loopback address; port 0 picks a free one.
    pub(crate) listen: SocketAddr,
    /// How long a request waits for its job before it answers 504.
    pub(crate) wait: Duration,
    /// How long a client may take to send its request's head (408 after).
    pub(crate) read_timeout: Duration,
    /// Connections served at once; more wait in the listener's backlog.
    pub(crate) max_connections: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            listen: (Ipv4Addr::LOCALHOST, 0).into(),
            wait: Duration::from_secs(10),
            read_timeout: Duration::from_secs(5),
            max_connections: 64,
        }
    }
}

/// The dedup key of a month's report: requests for the month share the
/// unfinished job that holds it.
pub(crate) fn dedup_key(month: &str) -> String {
    format!("report:{month}")
}

/// A running server: its address, and [`Running::stop`].
pub(crate) struct Running {
    /// Where it listens.
    pub(crate) addr: SocketAddr,
    stop: CancellationToken,
    accepting: JoinHandle<()>,
    connections: Arc<Semaphore>,
    max_connections: usize,
    worker: WorkerHandle,
}

/// Starts the worker and the listener. Refuses an address that is not
/// loopback: the example has no TLS and no authentication.
pub(crate) async fn start(emq: &Connector, settings: Settings) -> anyhow::Result<Running> {
    if !settings.listen.ip().is_loopback() {
        anyhow::bail!(
            "refusing to listen on {}: not a loopback address (127.0.0.1, ::1); \
             the example has no TLS and no authentication",
            settings.listen
        );
    }
    let reports = emq.queue::<ReportRequest>(QUEUE)?;
    let listener = TcpListener::bind(settings.listen).await?;
    let addr = listener.local_addr()?;
    let worker = Worker::new(reports.clone(), |job: echomq::JobContext<ReportRequest>| {
        std::future::ready(report::produce(&job.payload))
    })
    .concurrency(8)
    .start();
    let stop = CancellationToken::new();
    let connections = Arc::new(Semaphore::new(settings.max_connections));
    let served = Arc::new(Served {
        reports,
        port: addr.port(),
        settings: settings.clone(),
    });
    let accepting = tokio::spawn(accept(listener, served, connections.clone(), stop.clone()));
    Ok(Running {
        addr,
        stop,
        accepting,
        connections,
        max_connections: settings.max_connections,
        worker,
    })
}

impl Running {
    /// Stops listening, lets the answers in flight finish (each is bounded
    /// by the read timeout and the wait), then stops the worker.
    pub(crate) async fn stop(self) {
        self.stop.cancel();
        let _ = self.accepting.await;
        let all = u32::try_from(self.max_connections).unwrap_or(u32::MAX);
        let _ = self.connections.acquire_many(all).await;
        self.worker.shutdown(Duration::from_secs(10)).await;
    }
}

/// What every connection needs.
struct Served {
    reports: Queue<ReportRequest>,
    port: u16,
    settings: Settings,
}

/// Accepts connections while a permit is free, until `stop`.
async fn accept(
    listener: TcpListener,
    served: Arc<Served>,
    connections: Arc<Semaphore>,
    stop: CancellationToken,
) {
    loop {
        let permit = tokio::select! {
            _ = stop.cancelled() => return,
            permit = connections.clone().acquire_owned() => permit.expect("never closed"),
        };
        let stream = tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(err) => {
                    eprintln!("report server: accept: {err}");
                    continue;
                }
            },
        };
        tokio::spawn(serve(stream, served.clone(), permit));
    }
}

/// Reads one request, answers it, closes the connection.
async fn serve(mut stream: TcpStream, served: Arc<Served>, _permit: OwnedSemaphorePermit) {
    let limit = served.settings.read_timeout;
    let response = match http::read_request(&mut stream, limit).await {
        Ok(request) => answer(&request, &served).await,
        Err(Some(refused)) => refused,
        Err(None) => return,
    };
    http::write_response(&mut stream, &response, limit).await;
}

/// The answer to a request read whole.
async fn answer(request: &Request, served: &Served) -> Response {
    if let Err(refused) = admit_host(request.host.as_deref(), served.port) {
        return refused;
    }
    if request.method != "GET" {
        return Response::error(405, format!("{} is not served: GET only", request.method));
    }
    let (path, query) = request
        .target
        .split_once('?')
        .unwrap_or((&request.target, ""));
    if path != "/report" {
        return Response::error(404, format!("no page {path}: try /report?month=2026-11"));
    }
    match month_of(query) {
        Ok(month) => report_for(&served.reports, month.to_string(), served.settings.wait).await,
        Err(message) => Response::error(400, message),
    }
}

/// Serves only a `Host` naming a loopback address on our port: a page
/// elsewhere whose name resolves to 127.0.0.1 (DNS rebinding) is
/// answered 421.
fn admit_host(host: Option<&str>, port: u16) -> Result<(), Response> {
    let Some(host) = host else {
        return Err(Response::error(400, "the request has no Host header"));
    };
    let served = ["127.0.0.1", "localhost", "[::1]"].map(|name| format!("{name}:{port}"));
    if served.iter().any(|name| name == host) {
        Ok(())
    } else {
        Err(Response::error(
            421,
            format!(
                "Host {host} is not served: only 127.0.0.1:{port}, localhost:{port}, [::1]:{port}"
            ),
        ))
    }
}

/// The month of a query `month=2026-11`, or what is wrong with it.
fn month_of(query: &str) -> Result<report::Month, String> {
    let mut month = None;
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        match pair.split_once('=') {
            Some(("month", value)) if month.is_none() => month = Some(value),
            Some(("month", _)) => return Err("month is given twice".into()),
            _ => return Err(format!("unknown parameter {pair:?}: only month=YYYY-MM")),
        }
    }
    let month = month.ok_or("missing month: /report?month=2026-11")?;
    report::Month::parse(month).ok_or_else(|| format!("month {month:?} is not YYYY-MM"))
}

/// Enqueues the month's report (or joins the unfinished job that holds
/// its dedup key), waits for its outcome, and answers with it.
// Outcome waits begin
async fn report_for(reports: &Queue<ReportRequest>, month: String, wait: Duration) -> Response {
    let key = dedup_key(&month);
    let job = match reports
        .enqueue(NewJob::new(ReportRequest { month }).dedup(key).awaited())
        .await
    {
        Ok(job) => job,
        Err(err) => return Response::error(503, format!("the report was not enqueued: {err}")),
    };
    let answer = match job.outcome::<Report>(wait).await {
        Ok(Outcome::Completed {
            result: Some(report),
        }) => Response::json(200, json!(report)),
        Ok(Outcome::Completed { result: None }) => Response::error(502, "the job stored no report"),
        Ok(Outcome::Dead { error, attempts }) => {
            Response::json(502, json!({ "error": error, "attempts": attempts }))
        }
        Ok(Outcome::Cancelled) => Response::error(410, "the job was cancelled"),
        Ok(Outcome::Removed) => Response::error(410, "the job was removed"),
        // Still running: a request for the month joins it (its dedup key).
        Err(Error::Timeout { .. }) => Response::error(504, "not ready; the job runs on: ask again"),
        Err(err) => Response::error(500, format!("waiting for the job: {err}")),
    };
    answer.about(job.id.as_str())
}
// Outcome waits end
