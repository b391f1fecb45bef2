//! The dashboard phase of `emq bench --dashboard N`: a queue of N pending
//! jobs and one of [`SEARCHED`] under a prefix of their own, the dashboard
//! served on a loopback port; the time of whole HTTP answers of the queue
//! page (first page and one deep in the set), the queues page and a
//! payload search, and the longest single server call of a search walked
//! to its end (the server's slow log, every call logged).

use super::scrape::{spread, time_gets};
use crate::error::CliError;
use echomq::{Connector, JobMatch, JobState, NewJob};
use serde::Serialize;
use serde_json::{Value, json};
use std::time::Instant;

/// Answers timed per page.
const GETS: usize = 20;
/// Jobs of the searched queue.
const SEARCHED: u64 = 100_000;
/// Every this many jobs of the searched queue, one payload holds the
/// needle.
const NEEDLE_EVERY: u64 = 1_000;
/// Jobs enqueued per `enqueue_bulk` call while filling.
const FILL_BATCH: u64 = 10_000;
/// Server calls over this many microseconds would block others too long.
const CALL_BOUND_US: u64 = 10_000;
/// Entries the slow log keeps while the search is walked: every call.
const SLOWLOG_KEEP: u64 = 1_000_000;

/// The times of one page, ms.
#[derive(Debug, Clone, Serialize)]
pub struct PageTimes {
    /// The path fetched.
    pub path: String,
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// Slowest.
    pub max_ms: f64,
}

/// What the dashboard phase measured.
#[derive(Debug, Clone, Serialize)]
pub struct DashboardReport {
    /// Jobs in the big queue.
    pub jobs: u64,
    /// Each page timed.
    pub pages: Vec<PageTimes>,
    /// Jobs the walked search scanned, and the matches it found.
    pub searched: u64,
    /// Matches found by the walk.
    pub matches: u64,
    /// Library calls (pages of the search) the walk took.
    pub search_pages: u64,
    /// The walk, whole, ms.
    pub search_walk_ms: f64,
    /// The longest single server call during the walk, µs, and which.
    pub longest_call_us: u64,
    /// That call's command name.
    pub longest_call: String,
    /// Calls over 10 ms (10,000 µs) during the walk.
    pub calls_over_bound: u64,
}

impl DashboardReport {
    /// The figures, one line each.
    pub fn lines(&self) -> String {
        let mut out = String::new();
        for page in &self.pages {
            out += &format!(
                "dashboard GET {} ({} jobs): p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms\n",
                page.path, self.jobs, page.p50_ms, page.p95_ms, page.max_ms
            );
        }
        out += &format!(
            "dashboard payload search over {} jobs: {} matches in {} pages, {:.0} ms; longest server call {} µs ({}), {} over {} µs\n",
            self.searched,
            self.matches,
            self.search_pages,
            self.search_walk_ms,
            self.longest_call_us,
            self.longest_call,
            self.calls_over_bound,
            CALL_BOUND_US
        );
        out
    }
}

/// Fills the queues, serves the dashboard, times it, obliterates them.
pub(crate) async fn run(
    jobs: u64,
    connector: Connector,
    url: &str,
) -> Result<DashboardReport, CliError> {
    fill(
        &connector,
        "big",
        jobs,
        |i| json!({ "n": i, "customer": format!("c{}", i % 997) }),
    )
    .await?;
    fill(&connector, "searched", SEARCHED, |i| {
        let tag = if i % NEEDLE_EVERY == 0 {
            "needle"
        } else {
            "hay"
        };
        json!({ "n": i, "tag": tag })
    })
    .await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = echomq_dashboard::router(connector.clone());
    let server = tokio::spawn(axum::serve(listener, app).into_future());
    let deep = jobs / 2 / 50;
    let paths = [
        "/queues/big".to_string(),
        format!("/queues/big?state=pending&page={deep}"),
        "/".to_string(),
        "/queues/searched?state=pending&by=payload&q=needle".to_string(),
    ];
    let mut pages = Vec::new();
    for path in paths {
        pages.push(time_page(addr, &path).await?);
    }
    server.abort();
    let walk = walk_search(&connector, url).await?;
    for name in ["big", "searched"] {
        let admin = connector.queue::<Value>(name)?.admin();
        admin.pause().await?;
        admin.obliterate(echomq::IfActive::Force).await?;
    }
    Ok(DashboardReport {
        jobs,
        pages,
        ..walk
    })
}

/// `count` pending jobs on queue `name`, payload `payload(i)`.
async fn fill(
    connector: &Connector,
    name: &str,
    count: u64,
    payload: impl Fn(u64) -> Value,
) -> Result<(), CliError> {
    let queue = connector.queue::<Value>(name)?;
    let mut at = 0;
    while at < count {
        let end = (at + FILL_BATCH).min(count);
        queue
            .enqueue_bulk((at..end).map(|i| NewJob::new(payload(i))))
            .await?;
        at = end;
    }
    Ok(())
}

async fn time_page(addr: std::net::SocketAddr, path: &str) -> Result<PageTimes, CliError> {
    let (times, _) = time_gets(addr, path, GETS).await?;
    let (p50_ms, p95_ms, max_ms) = spread(times);
    Ok(PageTimes {
        path: path.to_string(),
        p50_ms,
        p95_ms,
        max_ms,
    })
}

/// Walks a payload search of the searched queue to its end with every
/// server call in the slow log; the longest call, and how many passed the
/// bound. The slow log's settings are put back after.
async fn walk_search(connector: &Connector, url: &str) -> Result<DashboardReport, CliError> {
    let queue = connector.queue::<Value>("searched")?;
    let server = |err: redis::RedisError| CliError::from_redis(url, &err);
    let mut raw = redis::Client::open(url)
        .map_err(server)?
        .get_multiplexed_async_connection()
        .await
        .map_err(server)?;
    let before: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("slowlog-*")
        .query_async(&mut raw)
        .await
        .map_err(server)?;
    let settings = [
        ("slowlog-log-slower-than".to_string(), "0".to_string()),
        ("slowlog-max-len".to_string(), SLOWLOG_KEEP.to_string()),
    ];
    configure(&mut raw, &settings).await.map_err(server)?;
    redis::cmd("SLOWLOG")
        .arg("RESET")
        .query_async::<()>(&mut raw)
        .await
        .map_err(server)?;
    let matching = JobMatch::Payload("needle".into());
    let started = Instant::now();
    let (mut cursor, mut matches, mut pages, mut scanned) = (0, 0, 0, 0);
    loop {
        let page = queue
            .jobs()
            .search(JobState::Pending, &matching, cursor, 50, SEARCHED)
            .await?;
        matches += page.jobs.len() as u64;
        scanned += page.scanned;
        pages += 1;
        cursor = page.cursor;
        if cursor == 0 {
            break;
        }
    }
    let search_walk_ms = started.elapsed().as_secs_f64() * 1000.0;
    let log: redis::Value = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query_async(&mut raw)
        .await
        .map_err(server)?;
    let before: Vec<(String, String)> = before
        .chunks(2)
        .filter_map(|pair| match pair {
            [name, value] => Some((name.clone(), value.clone())),
            _ => None,
        })
        .collect();
    configure(&mut raw, &before).await.map_err(server)?;
    let calls = slow_calls(log);
    let longest = calls
        .iter()
        .max_by_key(|(us, _)| *us)
        .cloned()
        .unwrap_or_default();
    Ok(DashboardReport {
        jobs: 0,
        pages: Vec::new(),
        searched: scanned,
        matches,
        search_pages: pages,
        search_walk_ms,
        longest_call_us: longest.0,
        longest_call: longest.1,
        calls_over_bound: calls.iter().filter(|(us, _)| *us > CALL_BOUND_US).count() as u64,
    })
}

/// `CONFIG SET` of each (name, value).
async fn configure(
    raw: &mut redis::aio::MultiplexedConnection,
    settings: &[(String, String)],
) -> redis::RedisResult<()> {
    for (name, value) in settings {
        redis::cmd("CONFIG")
            .arg("SET")
            .arg(name)
            .arg(value)
            .query_async::<()>(raw)
            .await?;
    }
    Ok(())
}

/// Each slow-log entry's duration (µs) and command name, leaving out the
/// SLOWLOG and CONFIG calls of the measurement itself.
fn slow_calls(log: redis::Value) -> Vec<(u64, String)> {
    let redis::Value::Array(entries) = log else {
        return Vec::new();
    };
    entries
        .into_iter()
        .filter_map(|entry| {
            let redis::Value::Array(fields) = entry else {
                return None;
            };
            let us = match fields.get(2)? {
                redis::Value::Int(us) => *us as u64,
                _ => return None,
            };
            let name = match fields.get(3)? {
                redis::Value::Array(args) => match args.first()? {
                    redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                    _ => return None,
                },
                _ => return None,
            };
            (!matches!(name.to_ascii_uppercase().as_str(), "SLOWLOG" | "CONFIG"))
                .then_some((us, name))
        })
        .collect()
}
