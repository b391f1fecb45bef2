//! The report server (`examples/report_server.rs`): real HTTP requests
//! over TCP to its core, which enqueues each report and answers with the
//! job's outcome (200, 502, 504, 410), on both wires; and each request it
//! refuses before any job is enqueued, with its own test.

#[path = "../../examples/report_server/mod.rs"]
mod example;

use crate::common::Harness;
use echomq::{JobId, NewJob, Outcome};
use echomq_testkit::{TestServer, wait_for};
use example::{Report, ReportRequest, Settings};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest any answer may take here.
const ANSWER: Duration = Duration::from_secs(30);

/// An HTTP answer, read whole.
#[derive(Debug)]
struct Answer {
    status: u16,
    /// Its `Job-Id` header.
    job: Option<String>,
    body: Value,
}

/// Sends `raw` on a new connection to `addr` and reads the answer until
/// the server closes the connection.
async fn exchange(addr: SocketAddr, raw: &[u8]) -> Answer {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(raw).await.unwrap();
    let mut bytes = Vec::new();
    tokio::time::timeout(ANSWER, stream.read_to_end(&mut bytes))
        .await
        .expect("an answer in time")
        .unwrap();
    parse(&String::from_utf8(bytes).unwrap())
}

/// The status, `Job-Id` and JSON body of an answer, checking its
/// `Content-Length` and `Connection: close`.
fn parse(text: &str) -> Answer {
    let (head, body) = text.split_once("\r\n\r\n").expect("a head");
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|line| {
            let (name, value) = line.split_once(": ").unwrap();
            (name.to_ascii_lowercase(), value.to_string())
        })
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(
        header("content-length"),
        Some(body.len().to_string()),
        "{text}"
    );
    assert_eq!(header("connection").as_deref(), Some("close"), "{text}");
    Answer {
        status: status.parse().unwrap(),
        job: header("job-id"),
        body: serde_json::from_str(body).unwrap(),
    }
}

/// `GET target` with a `Host` naming `addr`.
async fn get(addr: SocketAddr, target: &str) -> Answer {
    let raw = format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    exchange(addr, raw.as_bytes()).await
}

/// November 2026's report, as the worker makes it.
fn november() -> Value {
    json!({"month": "2026-11", "orders": 114, "revenue_cents": 279_300})
}

#[echomq_testkit::case]
pub(super) async fn a_report_request_answers_200_with_the_jobs_result(h: &Harness) {
    let server = example::start(&h.connector, Settings::default())
        .await
        .unwrap();
    let answer = get(server.addr, "/report?month=2026-11").await;
    assert_eq!(
        (answer.status, &answer.body),
        (200, &november()),
        "{answer:?}"
    );
    let id = answer.job.expect("the answer names its job");
    let reports = h.queue::<ReportRequest>(example::QUEUE);
    let job = reports.jobs().get(&JobId::new(id).unwrap()).await.unwrap();
    assert_eq!(job.unwrap().result, Some(november().to_string()));
    server.stop().await;
}

#[echomq_testkit::case]
pub(super) async fn a_request_whose_job_dies_answers_502_with_its_error(h: &Harness) {
    let server = example::start(&h.connector, Settings::default())
        .await
        .unwrap();
    let answer = get(server.addr, "/report?month=2019-12").await;
    assert_eq!(answer.status, 502, "{answer:?}");
    assert_eq!(
        answer.body,
        json!({"error": "no orders before 2020-01: the shop opened then", "attempts": 1})
    );
    assert!(answer.job.is_some(), "{answer:?}");
    server.stop().await;
}

/// The queue is paused, so the job waits longer than the request: 504
/// names it, and it completes once the queue is resumed.
#[echomq_testkit::case]
pub(super) async fn a_request_whose_job_is_unfinished_answers_504_and_the_job_runs_on(h: &Harness) {
    let reports = h.queue::<ReportRequest>(example::QUEUE);
    reports.admin().pause().await.unwrap();
    let settings = Settings {
        wait: Duration::from_millis(300),
        ..Settings::default()
    };
    let server = example::start(&h.connector, settings).await.unwrap();
    let answer = get(server.addr, "/report?month=2026-11").await;
    assert_eq!(answer.status, 504, "{answer:?}");
    let message = answer.body["error"].as_str().unwrap();
    assert!(message.contains("the job runs on"), "{message}");
    let id = JobId::new(answer.job.expect("the answer names its job")).unwrap();
    reports.admin().resume().await.unwrap();
    let outcome = reports.outcome::<Report>(&id, ANSWER).await.unwrap();
    let report = serde_json::from_value(november()).unwrap();
    assert_eq!(
        outcome,
        Outcome::Completed {
            result: Some(report)
        }
    );
    server.stop().await;
}

/// A request joins the unfinished job holding its month's dedup key; the
/// job cancelled while waited for answers 410, naming it.
#[echomq_testkit::case]
pub(super) async fn a_request_whose_job_is_cancelled_answers_410(h: &Harness) {
    let reports = h.queue::<ReportRequest>(example::QUEUE);
    reports.admin().pause().await.unwrap();
    let request = ReportRequest {
        month: "2026-11".into(),
    };
    let held = NewJob::new(request).dedup(example::dedup_key("2026-11"));
    let id = reports.enqueue(held).await.unwrap().id;
    let server = example::start(&h.connector, Settings::default())
        .await
        .unwrap();
    let addr = server.addr;
    let answer = tokio::spawn(async move { get(addr, "/report?month=2026-11").await });
    let key = format!("{}:job:{id}", reports.keys().base());
    wait_for("the request to wait for the job", ANSWER, || async {
        let waited: Option<String> = redis::cmd("HGET")
            .arg(&key)
            .arg("waited")
            .query_async(&mut h.raw(&reports).await)
            .await
            .unwrap();
        waited.as_deref() == Some("1")
    })
    .await;
    reports.jobs().cancel(&id).await.unwrap();
    let answer = answer.await.unwrap();
    assert_eq!(answer.status, 410, "{answer:?}");
    assert_eq!(answer.body, json!({"error": "the job was cancelled"}));
    assert_eq!(answer.job.as_deref(), Some(id.as_str()));
    server.stop().await;
}

/// A server on one wire for the refusals, which enqueue nothing.
async fn refusing(settings: Settings) -> (TestServer, echomq::Connector, example::Running) {
    let server = TestServer::start();
    let emq = echomq::Connector::connect(server.url()).await.unwrap();
    let running = example::start(&emq, settings).await.unwrap();
    (server, emq, running)
}

/// Asserts that nothing was enqueued on the reports queue.
async fn nothing_enqueued(emq: &echomq::Connector) {
    let counts = emq
        .queue::<Value>(example::QUEUE)
        .unwrap()
        .admin()
        .counts()
        .await
        .unwrap();
    let jobs = counts.pending + counts.scheduled + counts.active + counts.completed;
    assert_eq!(jobs + counts.dead, 0, "{counts:?}");
}

#[tokio::test]
async fn a_listen_address_that_is_not_loopback_is_refused() {
    let server = TestServer::start();
    let emq = echomq::Connector::connect(server.url()).await.unwrap();
    let settings = Settings {
        listen: "0.0.0.0:0".parse().unwrap(),
        ..Settings::default()
    };
    let Err(err) = example::start(&emq, settings).await else {
        panic!("listening on 0.0.0.0 must be refused");
    };
    assert_eq!(
        err.to_string(),
        "refusing to listen on 0.0.0.0:0: not a loopback address (127.0.0.1, ::1); \
         the example has no TLS and no authentication"
    );
}

#[tokio::test]
async fn a_host_other_than_a_loopback_name_answers_421() {
    let (_server, emq, running) = refusing(Settings::default()).await;
    let raw = "GET /report?month=2026-11 HTTP/1.1\r\nHost: rebound.example:80\r\n\r\n";
    let answer = exchange(running.addr, raw.as_bytes()).await;
    assert_eq!(answer.status, 421, "{answer:?}");
    let message = answer.body["error"].as_str().unwrap();
    assert!(
        message.starts_with("Host rebound.example:80 is not served"),
        "{message}"
    );
    nothing_enqueued(&emq).await;
    running.stop().await;
}

#[tokio::test]
async fn a_month_that_is_not_yyyy_mm_answers_400() {
    let (_server, emq, running) = refusing(Settings::default()).await;
    for (query, error) in [
        ("month=2026-13", r#"month "2026-13" is not YYYY-MM"#),
        ("month=26-11", r#"month "26-11" is not YYYY-MM"#),
        ("", "missing month: /report?month=2026-11"),
        (
            "month=2026-11&x=1",
            r#"unknown parameter "x=1": only month=YYYY-MM"#,
        ),
    ] {
        let answer = get(running.addr, &format!("/report?{query}")).await;
        assert_eq!(
            (answer.status, &answer.body),
            (400, &json!({"error": error}))
        );
    }
    nothing_enqueued(&emq).await;
    running.stop().await;
}

#[tokio::test]
async fn a_path_other_than_report_answers_404() {
    let (_server, emq, running) = refusing(Settings::default()).await;
    let answer = get(running.addr, "/reports?month=2026-11").await;
    assert_eq!(answer.status, 404, "{answer:?}");
    nothing_enqueued(&emq).await;
    running.stop().await;
}

#[tokio::test]
async fn a_method_other_than_get_answers_405() {
    let (_server, emq, running) = refusing(Settings::default()).await;
    let raw = format!(
        "POST /report?month=2026-11 HTTP/1.1\r\nHost: {}\r\nContent-Length: 0\r\n\r\n",
        running.addr
    );
    let answer = exchange(running.addr, raw.as_bytes()).await;
    assert_eq!(answer.status, 405, "{answer:?}");
    nothing_enqueued(&emq).await;
    running.stop().await;
}

/// A client that sends half a request is answered 408 when the read
/// timeout runs out, not held for ever.
#[tokio::test]
async fn a_request_not_sent_within_the_read_timeout_answers_408() {
    let settings = Settings {
        read_timeout: Duration::from_millis(200),
        ..Settings::default()
    };
    let (_server, emq, running) = refusing(settings).await;
    let answer = exchange(running.addr, b"GET /report?month=2026-11 HTTP/1.1\r\n").await;
    assert_eq!(answer.status, 408, "{answer:?}");
    nothing_enqueued(&emq).await;
    running.stop().await;
}

#[tokio::test]
async fn a_request_head_over_the_limit_answers_431() {
    let (_server, emq, running) = refusing(Settings::default()).await;
    let padding = "a".repeat(example::http::MAX_HEAD);
    let raw = format!(
        "GET /report?month=2026-11 HTTP/1.1\r\nHost: {}\r\nX-Padding: {padding}\r\n\r\n",
        running.addr
    );
    let answer = exchange(running.addr, raw.as_bytes()).await;
    assert_eq!(answer.status, 431, "{answer:?}");
    nothing_enqueued(&emq).await;
    running.stop().await;
}

#[test]
fn the_outcomes_guide_shows_the_examples_handler() {
    let example = include_str!("../../examples/report_server/mod.rs");
    let start =
        example.find("// Outcome waits begin\n").unwrap() + "// Outcome waits begin\n".len();
    let end = example.find("// Outcome waits end").unwrap();
    let guide = include_str!("../../../../docs/outcomes.md");
    assert!(
        guide.contains(&example[start..end]),
        "docs/outcomes.md must show examples/report_server/mod.rs between its markers, verbatim"
    );
}
