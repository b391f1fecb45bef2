//! `emq job <queue> <id> --logs N`: the newest N lines of the job's log
//! (10 unless given, 0 none, at most the 1000 a log keeps).

use crate::common::{assert_ok, emq, emq_on};
use echomq_testkit::TestServer;
use serde_json::{Value, json};

/// A job `l1` on queue `q` with log lines `line 1` … `line n`.
fn logged(server: &TestServer, n: u64) {
    assert_ok(&emq_on(server, &["enqueue", "q", "{}", "--id", "l1"]));
    for i in 1..=n {
        assert_ok(&emq_on(server, &["log", "q", "l1", &format!("line {i}")]));
    }
}

#[test]
fn job_logs_n_shows_the_newest_n_lines() {
    let server = TestServer::start();
    logged(&server, 4);
    let run = emq_on(&server, &["job", "q", "l1", "--logs", "2", "--json"]);
    assert_ok(&run);
    assert_eq!(run.json()["log"], json!(["line 3", "line 4"]));
    let run = emq_on(&server, &["job", "q", "l1", "--logs", "3"]);
    assert_ok(&run);
    let tail: Vec<&str> = run
        .stdout
        .lines()
        .skip_while(|line| !line.starts_with("log (newest 3 of 4):"))
        .collect();
    assert_eq!(
        tail,
        ["log (newest 3 of 4):", "  line 2", "  line 3", "  line 4"]
    );
}

#[test]
fn job_logs_0_shows_no_log() {
    let server = TestServer::start();
    logged(&server, 2);
    let run = emq_on(&server, &["job", "q", "l1", "--logs", "0", "--json"]);
    assert_ok(&run);
    let shown: Value = run.json();
    assert_eq!(shown["log"], json!([]), "{shown}");
    assert_eq!(shown["logs"], 2, "the count stays: {shown}");
    let run = emq_on(&server, &["job", "q", "l1", "--logs", "0"]);
    assert_ok(&run);
    assert!(!run.stdout.contains("log (newest"), "{}", run.stdout);
}

#[test]
fn job_logs_past_what_a_log_keeps_is_refused() {
    let run = emq(&[
        "--url",
        "redis://127.0.0.1:1",
        "job",
        "q",
        "l1",
        "--logs",
        "1001",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("--logs"), "{}", run.stderr);
    assert!(run.stderr.contains("from 0 to 1000"), "{}", run.stderr);
}
