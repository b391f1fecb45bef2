//! Deduplication from the command line: `emq enqueue --dedup` (with
//! `--dedup-for`, `--debounce`) and what it prints, `emq dedup` (and
//! `--release`), the dedup fields of `emq job`, the count in `emq stats`,
//! the events in `emq watch`, and the usage errors; on wire 4 and wire 6.

use crate::common::{
    self, assert_ok, assert_refused, claim_all, emq, emq_on, job, spawn_on, stats,
};
use echomq_server::ServerBinary;
use echomq_testkit::{TestServer, module_path};
use serde_json::{Value, json};
use std::time::Duration;

/// `emq enqueue q <payload> args…` on `server`, to the end.
fn enqueue(server: &TestServer, payload: &str, args: &[&str]) -> common::Run {
    let mut all = vec!["enqueue", "q", payload];
    all.extend(args);
    emq_on(server, &all)
}

#[test]
fn a_second_enqueue_with_the_key_names_the_holder() {
    let server = TestServer::start();
    let run = enqueue(&server, r#"{"n":1}"#, &["--dedup", "sync:7", "--id", "a"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "enqueued job a\n");
    let run = enqueue(&server, r#"{"n":2}"#, &["--dedup", "sync:7", "--id", "b"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "deduplicated: job a holds sync:7\n");
    let run = enqueue(&server, "{}", &["--dedup", "sync:7", "--json"]);
    assert_ok(&run);
    assert_eq!(
        run.json(),
        json!({"id": "a", "created": false, "effect": "deduplicated", "dedup": "sync:7"})
    );
    let record = job(&server, "q", "a");
    assert_eq!(
        (&record["dedup"], &record["dedup_mode"]),
        (&json!("sync:7"), &json!("simple"))
    );
    let run = emq_on(&server, &["job", "q", "a"]);
    assert!(
        run.stdout
            .lines()
            .any(|l| l.split_whitespace().eq(["dedup", "sync:7"])),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .lines()
            .any(|l| l.split_whitespace().eq(["dedup_mode", "simple"])),
        "{}",
        run.stdout
    );
    assert_refused(
        &emq_on(&server, &["job", "q", "b"]),
        &["no job b in queue q"],
    );
}

#[test]
fn a_debounced_enqueue_says_when_the_job_runs() {
    let server = TestServer::start();
    let run = enqueue(
        &server,
        "1",
        &["--dedup", "d", "--debounce", "10m", "--id", "a"],
    );
    assert_ok(&run);
    assert!(
        run.stdout.starts_with("scheduled job a at "),
        "{}",
        run.stdout
    );
    let first = job(&server, "q", "a")["run_at"].as_u64().unwrap();
    let run = enqueue(&server, "2", &["--dedup", "d", "--debounce", "20m"]);
    assert_ok(&run);
    assert!(
        run.stdout.starts_with("debounced: job a holds d, runs at "),
        "{}",
        run.stdout
    );
    let record = job(&server, "q", "a");
    assert_eq!(record["payload"], 2);
    assert_eq!(record["dedup_mode"], "debounce");
    assert!(record["run_at"].as_u64().unwrap() >= first + 600_000);
    let run = enqueue(
        &server,
        "3",
        &["--dedup", "d", "--debounce", "10m", "--json"],
    );
    let out = run.json();
    assert_eq!(
        (&out["effect"], &out["id"]),
        (&json!("debounced"), &json!("a"))
    );
    assert_eq!(out["scheduled"], true, "{out}");
}

#[test]
fn emq_dedup_shows_the_holder_and_release_frees_the_key() {
    let server = TestServer::start();
    assert_ok(&enqueue(&server, "{}", &["--dedup", "s", "--id", "a"]));
    assert_ok(&enqueue(
        &server,
        "{}",
        &["--dedup", "t", "--dedup-for", "1h", "--id", "b"],
    ));
    let run = emq_on(&server, &["dedup", "q", "s"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "s is held by job a until it is released\n");
    let run = emq_on(&server, &["dedup", "q", "t"]);
    assert!(
        run.stdout.starts_with("t is held by job b until 20"),
        "{}",
        run.stdout
    );
    let held = emq_on(&server, &["dedup", "q", "t", "--json"]).json();
    assert_eq!((&held["held"], &held["owner"]), (&json!(true), &json!("b")));
    let created = job(&server, "q", "b")["created_at"].as_u64().unwrap();
    assert_eq!(held["until"], created + 3_600_000);

    let run = emq_on(&server, &["dedup", "q", "t", "--release"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "released t\n");
    let run = emq_on(&server, &["dedup", "q", "t", "--release", "--json"]);
    assert_eq!(run.json(), json!({"key": "t", "released": false}));
    assert_eq!(
        emq_on(&server, &["dedup", "q", "t"]).stdout,
        "t is not held\n"
    );
    let free = emq_on(&server, &["dedup", "q", "t", "--json"]).json();
    assert_eq!(
        free,
        json!({"key": "t", "held": false, "owner": null, "until": null, "until_utc": null})
    );
    assert_eq!(
        enqueue(&server, "{}", &["--dedup", "t", "--id", "c"]).stdout,
        "enqueued job c\n"
    );
}

#[test]
fn stats_counts_the_dedup_keys_held() {
    let server = TestServer::start();
    assert_eq!(stats(&server, "q")["dedup_keys_held"], 0);
    assert_ok(&enqueue(&server, "{}", &["--dedup", "a"]));
    assert_ok(&enqueue(
        &server,
        "{}",
        &["--dedup", "b", "--dedup-for", "1h"],
    ));
    assert_eq!(stats(&server, "q")["dedup_keys_held"], 2);
    claim_all(&server, "q", Duration::from_secs(60));
    let run = emq_on(&server, &["stats", "q"]);
    assert!(
        run.stdout
            .lines()
            .any(|l| l.split_whitespace().eq(["dedup", "keys", "held", "2"])),
        "{}",
        run.stdout
    );
}

#[test]
fn watch_shows_the_dedup_events() {
    let server = TestServer::start();
    let mut watch = spawn_on(&server, &["watch", "q", "--json"]);
    watch.wait_stderr("watching the events of queue q from now");
    assert_ok(&enqueue(&server, "{}", &["--dedup", "k", "--id", "a"]));
    assert_ok(&enqueue(&server, "{}", &["--dedup", "k", "--id", "b"]));
    assert_ok(&emq_on(&server, &["dedup", "q", "k", "--release"]));
    assert_ok(&enqueue(
        &server,
        "{}",
        &["--dedup", "d", "--debounce", "1h", "--id", "c"],
    ));
    assert_ok(&enqueue(
        &server,
        "{}",
        &["--dedup", "d", "--debounce", "1h"],
    ));
    let seen: Vec<Value> = (0..5)
        .map(|_| serde_json::from_str(&watch.next_line()).expect("JSON line"))
        .collect();
    let shape: Vec<(&str, &str)> = seen
        .iter()
        .map(|e| (e["event"].as_str().unwrap(), e["id"].as_str().unwrap()))
        .collect();
    assert_eq!(
        shape,
        [
            ("enqueued", "a"),
            ("deduplicated", "a"),
            ("dedup_released", "a"),
            ("scheduled", "c"),
            ("debounced", "c"),
        ]
    );
    assert_eq!(
        (&seen[1]["key"], &seen[1]["requested"]),
        (&json!("k"), &json!("b"))
    );
    assert_eq!(seen[2]["key"], "k");
    assert_eq!(seen[4]["key"], "d");
    assert!(
        seen[4]["run_at"].as_u64() > seen[3]["run_at"].as_u64(),
        "{seen:?}"
    );
    watch.signal("INT");
    assert_eq!(watch.wait_exit().code(), Some(0), "{:?}", watch.errors);
}

#[test]
fn dedup_flags_need_dedup_and_exclude_each_other() {
    let at = "2030-01-01T00:00:00Z";
    for flags in [
        &["--dedup-for", "10s"][..],
        &["--debounce", "10s"],
        &["--dedup", "k", "--dedup-for", "1s", "--debounce", "1s"],
        &["--dedup", "k", "--debounce", "1s", "--in", "1s"],
        &["--dedup", "k", "--debounce", "1s", "--at", at],
        &["--dedup", "k", "--dedup-for", "soon"],
    ] {
        let run = emq(&[&["enqueue", "q", "{}"][..], flags].concat());
        assert_eq!(run.code, 2, "{flags:?}: {}", run.stderr);
    }
}

#[test]
fn a_bad_dedup_key_is_a_usage_error_before_anything_is_sent() {
    // No server at this URL: the key is refused before connecting.
    let url = ["--url", "redis://127.0.0.1:1"];
    for key in ["two words", "*", "{k}"] {
        let run = emq(&[&url[..], &["enqueue", "q", "{}", "--dedup", key]].concat());
        assert_eq!(run.code, 2, "{key:?}: {}", run.stderr);
        assert!(run.stderr.contains("--dedup"), "{}", run.stderr);
        let run = emq(&[&url[..], &["dedup", "q", key]].concat());
        assert_eq!(run.code, 2, "{key:?}: {}", run.stderr);
    }
    let run = emq(&[
        &url[..],
        &["enqueue", "q", "{}", "--dedup", "k", "--dedup-for", "0s"],
    ]
    .concat());
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn dedup_on_wire_6() {
    let server = TestServer::with_config(
        ServerBinary::locate().expect("a server binary"),
        false,
        vec![module_path()],
    );
    let native = |args: &[&str]| emq_on(&server, &[args, &["--wire", "native"]].concat());
    assert_ok(&native(&[
        "enqueue", "q", "{}", "--dedup", "k", "--id", "a",
    ]));
    let run = native(&["enqueue", "q", "{}", "--dedup", "k"]);
    assert_eq!(run.stdout, "deduplicated: job a holds k\n");
    assert_eq!(
        native(&["dedup", "q", "k"]).stdout,
        "k is held by job a until it is released\n"
    );
    assert_eq!(
        native(&["dedup", "q", "k", "--release"]).stdout,
        "released k\n"
    );
    assert_eq!(
        native(&["stats", "q", "--json"]).json()["dedup_keys_held"],
        0
    );
}
