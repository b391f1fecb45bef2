//! `emq serve` against a real server: one process serving the dashboard,
//! the HTTP API and /metrics; `--no-dashboard` leaves the pages out;
//! `--max-body` bounds an API request's body. (The API itself is tested
//! in crates/echomq-dashboard.)

use crate::common::{emq_on, http_get, spawn_on};
use echomq_testkit::TestServer;
use std::io::{Read, Write};

/// The `host:port` of a `serving http://host:port/…` line.
pub(crate) fn served_at(line: &str) -> String {
    let rest = line
        .strip_prefix("serving http://")
        .unwrap_or_else(|| panic!("{line}"));
    rest.split('/').next().unwrap().to_string()
}

/// `POST path` of JSON `body` on `addr`: head and body.
fn http_post(addr: &str, path: &str, body: &str) -> (String, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    (head.to_string(), body.to_string())
}

#[test]
fn serve_serves_the_dashboard_the_api_and_metrics_from_one_process() {
    let server = TestServer::start();
    let mut serve = spawn_on(&server, &["serve", "--listen", "127.0.0.1:0"]);
    let addr = served_at(&serve.next_line());
    let (head, body) = http_post(
        &addr,
        "/api/v1/queues/q/jobs",
        r#"{"payload": 1, "id": "a"}"#,
    );
    assert!(head.starts_with("HTTP/1.1 201"), "{head}\n{body}");
    assert_eq!(body, r#"{"id":"a","outcome":"created"}"#);
    let (head, body) = http_get(&addr, "/");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body.contains("<td"), "{body}");
    let (head, body) = http_get(&addr, "/api/v1/openapi.json");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body.contains(r#""openapi":"3.1"#), "{body}");
    let (head, body) = http_get(&addr, "/metrics");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body.contains("queue=\"q\""), "{body}");
}

#[test]
fn serve_with_no_dashboard_serves_the_api_and_metrics_alone() {
    let server = TestServer::start();
    let mut serve = spawn_on(
        &server,
        &["serve", "--listen", "127.0.0.1:0", "--no-dashboard"],
    );
    let addr = served_at(&serve.next_line());
    let (head, _) = http_get(&addr, "/");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    let (head, _) = http_get(&addr, "/api/v1/queues");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let (head, _) = http_get(&addr, "/metrics");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}

#[test]
fn serve_max_body_refuses_a_larger_api_body_with_413() {
    let server = TestServer::start();
    let mut serve = spawn_on(
        &server,
        &["serve", "--listen", "127.0.0.1:0", "--max-body", "64"],
    );
    let addr = served_at(&serve.next_line());
    let big = format!(r#"{{"payload": "{}"}}"#, "x".repeat(100));
    let (head, body) = http_post(&addr, "/api/v1/queues/q/jobs", &big);
    assert!(head.starts_with("HTTP/1.1 413"), "{head}\n{body}");
    assert!(body.contains("TOOLARGE"), "{body}");
    let (head, _) = http_post(&addr, "/api/v1/queues/q/jobs", r#"{"payload": 1}"#);
    assert!(head.starts_with("HTTP/1.1 201"), "{head}");
}

#[test]
fn serve_refuses_a_max_body_of_zero() {
    let server = TestServer::start();
    let run = emq_on(
        &server,
        &["serve", "--listen", "127.0.0.1:0", "--max-body", "0"],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--max-body"), "{}", run.stderr);
}

#[test]
fn dashboard_is_a_synonym_of_serve() {
    let server = TestServer::start();
    let mut dashboard = spawn_on(
        &server,
        &["dashboard", "--listen", "127.0.0.1:0", "--no-dashboard"],
    );
    let addr = served_at(&dashboard.next_line());
    let (head, _) = http_get(&addr, "/api/v1/openapi.json");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let (head, _) = http_get(&addr, "/");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
}
