//! `emq watch`: events written after it started show up, one aligned line
//! (or one JSON object) each; Ctrl-C ends it with exit 0.

use crate::common::{assert_ok, block_on, claim_all, emq_on, queue, spawn_on};
use echomq::FailAction;
use echomq_testkit::TestServer;
use serde_json::Value;
use std::time::Duration;

#[test]
fn watch_shows_an_event_written_after_it_started() {
    let server = TestServer::start();
    let mut watch = spawn_on(&server, &["watch", "q"]);
    watch.wait_stderr("watching the events of queue q from now");
    assert_ok(&emq_on(&server, &["enqueue", "q", "{}", "--id", "w1"]));
    let line = watch.next_line();
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words[1..], ["enqueued", "w1"], "{line}");
    assert!(words[0].ends_with('Z'), "an RFC 3339 time first: {line}");

    assert_ok(&emq_on(&server, &["pause", "q"]));
    let line = watch.next_line();
    assert_eq!(
        line.split_whitespace().collect::<Vec<_>>()[1..],
        ["paused", "-"]
    );

    watch.signal("INT");
    let status = watch.wait_exit();
    assert_eq!(status.code(), Some(0), "{:?}", watch.errors);
}

#[test]
fn watch_json_from_start_replays_then_follows() {
    let server = TestServer::start();
    assert_ok(&emq_on(
        &server,
        &["enqueue", "q", "{}", "--id", "old", "--in", "1h"],
    ));
    let mut watch = spawn_on(&server, &["watch", "q", "--from-start", "--json"]);
    let first: Value = serde_json::from_str(&watch.next_line()).expect("JSON line");
    assert_eq!(first["event"], "scheduled", "{first}");
    assert_eq!(first["id"], "old", "{first}");
    assert!(first["run_at"].as_u64().is_some(), "{first}");
    assert!(first["time_ms"].as_u64().is_some(), "{first}");
    assert!(first["stream_id"].as_str().is_some(), "{first}");

    assert_ok(&emq_on(&server, &["drain", "q", "--scheduled"]));
    let drained: Value = serde_json::from_str(&watch.next_line()).expect("JSON line");
    assert_eq!(drained["event"], "drained", "{drained}");
    assert_eq!(drained["id"], Value::Null, "{drained}");
    assert_eq!(drained["count"], 1, "{drained}");

    watch.signal("TERM");
    assert_eq!(watch.wait_exit().code(), Some(0), "{:?}", watch.errors);
}

#[test]
fn watch_reads_on_after_its_connection_is_cut() {
    let server = TestServer::start();
    let mut watch = spawn_on(&server, &["watch", "q"]);
    watch.wait_stderr("watching the events of queue q from now");
    assert_ok(&emq_on(&server, &["enqueue", "q", "{}", "--id", "a"]));
    let line = watch.next_line();
    assert_eq!(
        line.split_whitespace().collect::<Vec<_>>()[1..],
        ["enqueued", "a"],
        "{line}"
    );

    let mut admin = server.client().get_connection().unwrap();
    let killed: u64 = redis::cmd("CLIENT")
        .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"])
        .query(&mut admin)
        .unwrap();
    assert!(killed > 0);
    watch.wait_stderr("connection lost");
    assert_ok(&emq_on(&server, &["enqueue", "q", "{}", "--id", "b"]));
    let line = watch.next_line();
    assert_eq!(
        line.split_whitespace().collect::<Vec<_>>()[1..],
        ["enqueued", "b"],
        "{line}"
    );

    watch.signal("INT");
    assert_eq!(watch.wait_exit().code(), Some(0), "{:?}", watch.errors);
}

#[test]
fn watch_shows_the_escapes_of_an_error_escaped() {
    let server = TestServer::start();
    let error = "boom\u{1b}[2J\u{1b}]52;c;aGk=\u{7}";
    assert_ok(&emq_on(&server, &["enqueue", "q", "{}", "--id", "e1"]));
    let mut watch = spawn_on(&server, &["watch", "q"]);
    watch.wait_stderr("watching the events of queue q from now");
    let claimed = claim_all(&server, "q", Duration::from_secs(60));
    block_on(async {
        let (id, token) = &claimed[0];
        let queue = queue(&server, "q").await;
        queue
            .fail(id, *token, error, FailAction::Dead)
            .await
            .unwrap();
    });
    assert!(watch.next_line().contains("claimed"));
    let line = watch.next_line();
    assert!(!line.contains(|c: char| c.is_control()), "{line:?}");
    assert!(
        line.ends_with(r"dead              e1        error=boom\x1b[2J\x1b]52;c;aGk=\x07"),
        "{line}"
    );
    watch.signal("INT");
    assert_eq!(watch.wait_exit().code(), Some(0), "{:?}", watch.errors);
}
