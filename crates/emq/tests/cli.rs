//! The `emq` binary against real servers: exit codes, human tables and
//! `--json` shapes.

use echomq_testkit::TestServer;
use serde_json::Value;
use std::process::Command;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|err| panic!("stdout is not one JSON value ({err}): {}", self.stdout))
    }
}

/// Runs `emq` with `args` (no `EMQ_URL` from the environment).
fn emq(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_emq"))
        .args(args)
        .env_remove("EMQ_URL")
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run emq");
    Run {
        code: out.status.code().expect("exit code"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `emq --url <server> args…`.
fn emq_on(server: &TestServer, args: &[&str]) -> Run {
    let url = server.url();
    let mut all = vec!["--url", url.as_str()];
    all.extend_from_slice(args);
    emq(&all)
}

fn assert_ok(run: &Run) {
    assert_eq!(
        run.code, 0,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
}

/// A line of the human table: its words.
fn table_row<'a>(text: &'a str, first: &str) -> Vec<&'a str> {
    text.lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .find(|words| words.first() == Some(&first))
        .unwrap_or_else(|| panic!("no row {first:?} in:\n{text}"))
}

#[test]
fn enqueue_then_stats_then_job() {
    let server = TestServer::start();

    let run = emq_on(
        &server,
        &[
            "enqueue",
            "mail",
            r#"{"to":"ada"}"#,
            "--id",
            "j1",
            "--priority",
            "3",
            "--attempts",
            "5",
        ],
    );
    assert_ok(&run);
    assert_eq!(run.stdout, "enqueued j1\n");

    let run = emq_on(&server, &["enqueue", "mail", "[1,2]", "--json"]);
    assert_ok(&run);
    let enqueued = run.json();
    assert_eq!(enqueued["created"], Value::Bool(true));
    let generated = enqueued["id"].as_str().expect("id is a string").to_string();
    assert!(!generated.is_empty());

    let run = emq_on(&server, &["stats", "mail"]);
    assert_ok(&run);
    assert_eq!(table_row(&run.stdout, "pending"), ["pending", "2"]);
    assert_eq!(table_row(&run.stdout, "completed"), ["completed", "0"]);
    assert_eq!(table_row(&run.stdout, "paused"), ["paused", "no"]);

    let run = emq_on(&server, &["stats", "mail", "--json"]);
    assert_ok(&run);
    let counts = run.json();
    for (state, n) in [
        ("scheduled", 0),
        ("pending", 2),
        ("active", 0),
        ("completed", 0),
        ("dead", 0),
        ("cancelled", 0),
    ] {
        assert_eq!(counts[state], Value::from(n), "{state} in {counts}");
    }
    assert_eq!(counts["paused"], Value::Bool(false));

    let run = emq_on(&server, &["job", "mail", "j1"]);
    assert_ok(&run);
    assert_eq!(table_row(&run.stdout, "state"), ["state", "pending"]);
    assert_eq!(
        table_row(&run.stdout, "payload"),
        ["payload", r#"{"to":"ada"}"#]
    );
    assert_eq!(table_row(&run.stdout, "priority"), ["priority", "3"]);
    assert_eq!(
        table_row(&run.stdout, "max_attempts"),
        ["max_attempts", "5"]
    );

    let run = emq_on(&server, &["job", "mail", "j1", "--json"]);
    assert_ok(&run);
    let job = run.json();
    assert_eq!(job["id"], "j1");
    assert_eq!(job["state"], "pending");
    assert_eq!(job["payload"], serde_json::json!({"to": "ada"}));
    assert_eq!(job["priority"], 3);
    assert_eq!(job["max_attempts"], 5);
    assert_eq!(job["claims"], 0);
    assert!(job["created_at"].as_u64().is_some(), "{job}");
    assert_eq!(job["finished_at"], Value::Null);

    let run = emq_on(&server, &["job", "mail", &generated, "--json"]);
    assert_ok(&run);
    assert_eq!(run.json()["payload"], serde_json::json!([1, 2]));
}

#[test]
fn enqueue_of_an_existing_id_prints_exists() {
    let server = TestServer::start();
    assert_ok(&emq_on(&server, &["enqueue", "q", "1", "--id", "same"]));
    let run = emq_on(&server, &["enqueue", "q", "2", "--id", "same"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "exists same\n");
    let run = emq_on(&server, &["enqueue", "q", "3", "--id", "same", "--json"]);
    assert_ok(&run);
    assert_eq!(
        run.json(),
        serde_json::json!({"id": "same", "created": false})
    );
    let job = emq_on(&server, &["job", "q", "same", "--json"]).json();
    assert_eq!(job["payload"], 1, "the first payload stays");
}

#[test]
fn invalid_json_argument_exits_2_naming_it() {
    let server = TestServer::start();
    let run = emq_on(&server, &["enqueue", "q", "{not json"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.starts_with("emq: "), "{}", run.stderr);
    assert!(run.stderr.contains("<json>"), "{}", run.stderr);
    assert!(run.stderr.contains("not valid JSON"), "{}", run.stderr);
    assert_eq!(run.stdout, "");
}

#[test]
fn bad_queue_name_exits_2_with_a_clear_message() {
    let server = TestServer::start();
    for args in [
        &["enqueue", "bad queue", "{}"][..],
        &["stats", "bad{queue}"][..],
        &["job", "bad queue", "x"][..],
    ] {
        let run = emq_on(&server, args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("queue name"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("only A-Z a-z 0-9"),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    }
}

#[test]
fn job_of_a_missing_id_exits_1() {
    let server = TestServer::start();
    let run = emq_on(&server, &["job", "mail", "nope"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stderr, "emq: job nope not found in queue mail\n");
    assert_eq!(run.stdout, "");
}

#[test]
fn unreachable_url_exits_2_with_one_line() {
    for args in [
        &["stats", "q"][..],
        &["job", "q", "x"][..],
        &["enqueue", "q", "{}"][..],
        &["demo", "--jobs", "10"][..],
    ] {
        let mut all = vec!["--url", "redis://127.0.0.1:1"];
        all.extend_from_slice(args);
        let run = emq(&all);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr
                .starts_with("emq: cannot reach redis://127.0.0.1:1: "),
            "{args:?}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
        assert!(!run.stderr.contains("backtrace"), "{}", run.stderr);
    }
}

#[test]
fn usage_errors_exit_2() {
    let run = emq(&["enqueue", "q"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = emq(&["enqueue", "q", "{}", "--attempts", "0"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = emq(&["--wire", "carrier-pigeon", "stats", "q"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn demo_processes_every_job_and_retries_every_tenth() {
    let server = TestServer::start();
    let run = emq_on(&server, &["demo", "--jobs", "500", "--json"]);
    assert_ok(&run);
    let summary = run.json();
    assert_eq!(summary["jobs"], 500, "{summary}");
    assert_eq!(summary["completed"], 500, "{summary}");
    assert_eq!(summary["retried"], 50, "{summary}");
    assert_eq!(summary["dead"], 0, "{summary}");
    assert_eq!(summary["wire"], "script", "{summary}");
    assert_eq!(summary["embedded"], false, "{summary}");
    assert!(summary["jobs_per_sec"].as_f64().unwrap() > 0.0, "{summary}");
    assert!(
        summary["server"].as_str().unwrap().contains('.'),
        "{summary}"
    );
}

#[test]
fn demo_prints_a_summary_table() {
    let server = TestServer::start();
    let run = emq_on(&server, &["demo", "--jobs", "100", "--concurrency", "8"]);
    assert_ok(&run);
    assert_eq!(table_row(&run.stdout, "completed"), ["completed", "100"]);
    assert_eq!(table_row(&run.stdout, "retried")[1], "10");
    assert_eq!(
        table_row(&run.stdout, "wire"),
        ["wire", "wire", "4", "(Lua", "scripts)"]
    );
}

#[test]
fn bench_reports_every_figure() {
    let server = TestServer::start();
    let run = emq_on(&server, &["bench", "--jobs", "2000", "--json"]);
    assert_ok(&run);
    let report = run.json();
    assert_eq!(report["jobs"], 2000, "{report}");
    for (phase, jobs) in [
        ("enqueue", 2000),
        ("process_c50", 2000),
        ("process_c1", 200),
    ] {
        let p = &report[phase];
        assert_eq!(p["jobs"], jobs, "{phase}: {report}");
        assert!(
            p["jobs_per_sec"].as_f64().unwrap() > 0.0,
            "{phase}: {report}"
        );
        assert!(p["seconds"].as_f64().unwrap() > 0.0, "{phase}: {report}");
        assert!(
            p["server_cpu_us_per_job"].as_f64().unwrap() >= 0.0,
            "{phase}: {report}"
        );
    }
    assert_eq!(report["process_c50"]["concurrency"], 50);
    assert_eq!(report["process_c1"]["concurrency"], 1);
    assert!(
        report["lifecycle_server_cpu_us_per_job"].as_f64().unwrap() > 0.0,
        "{report}"
    );
}

// ---- over time: enqueue --in/--at, reschedule, promote, repeat ----

/// Host clock, unix ms.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Unix ms of an RFC 3339 instant as `emq` prints it (`…Z`, milliseconds).
fn printed_ms(text: &str) -> u64 {
    let at = chrono::DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|err| panic!("{text:?} is not RFC 3339: {err}"));
    assert!(text.ends_with('Z'), "{text:?} is not UTC");
    at.timestamp_millis() as u64
}

#[test]
fn enqueue_in_schedules_and_job_shows_scheduled() {
    let server = TestServer::start();
    let before = now_ms();
    let run = emq_on(
        &server,
        &["enqueue", "q", r#"{"a":1}"#, "--id", "s1", "--in", "1h"],
    );
    assert_ok(&run);
    let at = run
        .stdout
        .strip_prefix("scheduled s1 at ")
        .unwrap_or_else(|| panic!("{}", run.stdout))
        .trim_end();
    let at = printed_ms(at);
    assert!(
        at >= before + 3_600_000 - 5_000 && at <= now_ms() + 3_600_000 + 5_000,
        "{at}"
    );

    let job = emq_on(&server, &["job", "q", "s1", "--json"]).json();
    assert_eq!(job["state"], "scheduled", "{job}");
    assert_eq!(job["run_at"], at, "{job}");
    let run = emq_on(&server, &["job", "q", "s1"]);
    assert_eq!(table_row(&run.stdout, "state"), ["state", "scheduled"]);

    let run = emq_on(
        &server,
        &[
            "enqueue",
            "q",
            "{}",
            "--id",
            "s2",
            "--at",
            "2099-01-01T01:00:00+01:00",
            "--json",
        ],
    );
    assert_ok(&run);
    assert_eq!(
        run.json(),
        serde_json::json!({
            "id": "s2",
            "created": true,
            "scheduled": true,
            "run_at": 4_070_908_800_000u64,
            "run_at_utc": "2099-01-01T00:00:00.000Z",
        })
    );

    // A run-at in the past: pending at once.
    let run = emq_on(
        &server,
        &[
            "enqueue",
            "q",
            "{}",
            "--id",
            "p1",
            "--at",
            "2001-01-01T00:00:00Z",
        ],
    );
    assert_ok(&run);
    assert!(run.stdout.starts_with("enqueued p1"), "{}", run.stdout);
    assert_eq!(
        emq_on(&server, &["job", "q", "p1", "--json"]).json()["state"],
        "pending"
    );

    // The same id again: exists, nothing changes.
    let run = emq_on(&server, &["enqueue", "q", "{}", "--id", "s1", "--in", "5m"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "exists s1\n");
    assert_eq!(
        emq_on(&server, &["job", "q", "s1", "--json"]).json()["run_at"],
        at
    );
}

#[test]
fn in_and_at_together_is_a_usage_error() {
    let run = emq(&[
        "enqueue",
        "q",
        "{}",
        "--in",
        "5s",
        "--at",
        "2030-01-01T00:00:00Z",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--in"), "{}", run.stderr);
    assert!(run.stderr.contains("--at"), "{}", run.stderr);
    let run = emq(&[
        "reschedule",
        "q",
        "x",
        "--in",
        "5s",
        "--at",
        "2030-01-01T00:00:00Z",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let run = emq(&["reschedule", "q", "x"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn bad_durations_and_instants_exit_2_naming_the_flag() {
    for (args, flag) in [
        (&["enqueue", "q", "{}", "--in", "5x"][..], "--in"),
        (&["enqueue", "q", "{}", "--in", "10"][..], "--in"),
        (&["enqueue", "q", "{}", "--at", "tomorrow"][..], "--at"),
        (&["reschedule", "q", "x", "--in", "1.5h"][..], "--in"),
        (
            &["repeat", "add", "q", "k", "{}", "--every", "soon"][..],
            "--every",
        ),
        (
            &["repeat", "add", "q", "k", "{}", "--every", "0s"][..],
            "--every",
        ),
    ] {
        let run = emq(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains(flag), "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
    }
    let run = emq(&["enqueue", "q", "{}", "--in", "5x"]);
    assert!(run.stderr.contains("1h30m"), "{}", run.stderr);
}

#[test]
fn reschedule_refuses_a_pending_job_and_moves_a_scheduled_one() {
    let server = TestServer::start();
    assert_ok(&emq_on(&server, &["enqueue", "q", "{}", "--id", "p1"]));
    let run = emq_on(&server, &["reschedule", "q", "p1", "--in", "1h"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "emq: reschedule of job p1 refused: the job is pending (BADSTATE)\n"
    );
    assert_eq!(run.stdout, "");

    let run = emq_on(&server, &["reschedule", "q", "nope", "--in", "1h"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("nope"), "{}", run.stderr);

    assert_ok(&emq_on(
        &server,
        &["enqueue", "q", "{}", "--id", "s1", "--in", "1h"],
    ));
    let run = emq_on(
        &server,
        &["reschedule", "q", "s1", "--at", "2099-01-01T00:00:00Z"],
    );
    assert_ok(&run);
    assert_eq!(run.stdout, "rescheduled s1 at 2099-01-01T00:00:00.000Z\n");
    let job = emq_on(&server, &["job", "q", "s1", "--json"]).json();
    assert_eq!(job["state"], "scheduled", "{job}");
    assert_eq!(job["run_at"], 4_070_908_800_000u64, "{job}");

    // --in counts from the host's now.
    let before = now_ms();
    let run = emq_on(&server, &["reschedule", "q", "s1", "--in", "2h", "--json"]);
    assert_ok(&run);
    let moved = run.json();
    assert_eq!(moved["id"], "s1");
    let run_at = moved["run_at"].as_u64().unwrap();
    assert!(
        run_at >= before + 7_200_000 && run_at <= now_ms() + 7_200_000,
        "{moved}"
    );
    assert_eq!(printed_ms(moved["run_at_utc"].as_str().unwrap()), run_at);
    assert_eq!(
        emq_on(&server, &["job", "q", "s1", "--json"]).json()["run_at"],
        run_at
    );
}

#[test]
fn promote_prints_how_many_moved() {
    let server = TestServer::start();
    for id in ["a", "b", "c"] {
        assert_ok(&emq_on(
            &server,
            &["enqueue", "q", "{}", "--id", id, "--in", "1h"],
        ));
    }
    // A past run-at stays scheduled until the next promote.
    for id in ["a", "b"] {
        assert_ok(&emq_on(
            &server,
            &["reschedule", "q", id, "--at", "2001-01-01T00:00:00Z"],
        ));
    }
    let run = emq_on(&server, &["promote", "q", "--limit", "1"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "promoted 1 job\n");
    let run = emq_on(&server, &["promote", "q"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "promoted 1 job\n");
    let run = emq_on(&server, &["promote", "q", "--json"]);
    assert_ok(&run);
    assert_eq!(run.json(), serde_json::json!({"promoted": 0}));
    let counts = emq_on(&server, &["stats", "q", "--json"]).json();
    assert_eq!(counts["pending"], 2, "{counts}");
    assert_eq!(counts["scheduled"], 1, "{counts}");
    let run = emq(&["promote", "q", "--limit", "0"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn repeat_add_list_remove_round_trip() {
    let server = TestServer::start();
    let before = now_ms();
    let run = emq_on(
        &server,
        &[
            "repeat",
            "add",
            "q",
            "hourly",
            r#"{"r":1}"#,
            "--every",
            "1h",
            "--limit",
            "5",
        ],
    );
    assert_ok(&run);
    let line = run.stdout.trim_end();
    let (head, next) = line
        .split_once(", next at ")
        .unwrap_or_else(|| panic!("{line}"));
    assert_eq!(head, "repeat hourly on queue q: every 1h");
    let next = printed_ms(next);
    assert!(
        next >= before + 3_600_000 && next <= now_ms() + 3_600_000,
        "{line}"
    );

    let run = emq_on(
        &server,
        &[
            "repeat",
            "add",
            "q",
            "weekdays",
            r#"{"r":2}"#,
            "--cron",
            "0 9 * * 1-5",
            "--tz",
            "Europe/Berlin",
            "--start",
            "2099-01-01T00:00:00Z",
            "--end",
            "2099-12-31T00:00:00Z",
            "--priority",
            "2",
            "--attempts",
            "4",
            "--json",
        ],
    );
    assert_ok(&run);
    let added = run.json();
    assert_eq!(added["key"], "weekdays", "{added}");
    assert_eq!(added["cron"], "0 9 * * 1-5", "{added}");
    assert_eq!(added["tz"], "Europe/Berlin", "{added}");
    assert_eq!(added["every_ms"], Value::Null, "{added}");
    assert_eq!(added["start_ms"], 4_070_908_800_000u64, "{added}");
    // 2099-01-01 is a Thursday; 09:00 in Berlin is 08:00 UTC.
    assert_eq!(added["next_utc"], "2099-01-01T08:00:00.000Z", "{added}");
    assert_eq!(added["payload"], serde_json::json!({"r": 2}), "{added}");
    assert_eq!(added["priority"], 2, "{added}");
    assert_eq!(added["attempts"], 4, "{added}");

    // The first occurrence of each is scheduled at once.
    let counts = emq_on(&server, &["stats", "q", "--json"]).json();
    assert_eq!(counts["scheduled"], 2, "{counts}");

    let run = emq_on(&server, &["repeat", "list", "q"]);
    assert_ok(&run);
    assert_eq!(
        table_row(&run.stdout, "key"),
        ["key", "cadence", "next", "limit/end", "payload"]
    );
    let hourly = table_row(&run.stdout, "hourly");
    assert_eq!(hourly[1..3], ["every", "1h"], "{}", run.stdout);
    assert_eq!(printed_ms(hourly[3]), next);
    assert_eq!(hourly[4..], ["limit", "5", r#"{"r":1}"#], "{}", run.stdout);
    let weekdays = table_row(&run.stdout, "weekdays");
    assert_eq!(
        weekdays,
        [
            "weekdays",
            "cron",
            "0",
            "9",
            "*",
            "*",
            "1-5",
            "Europe/Berlin",
            "2099-01-01T08:00:00.000Z",
            "end",
            "2099-12-31T00:00:00.000Z",
            r#"{"r":2}"#
        ]
    );

    let run = emq_on(&server, &["repeat", "list", "q", "--json"]);
    assert_ok(&run);
    let list = run.json();
    let list = list.as_array().expect("an array");
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["key"], "hourly");
    assert_eq!(list[0]["every_ms"], 3_600_000);
    assert_eq!(list[0]["limit"], 5);
    assert_eq!(list[0]["next_ms"], next);
    assert_eq!(list[0]["cron"], Value::Null);
    assert_eq!(list[1], added);

    let run = emq_on(&server, &["repeat", "remove", "q", "hourly"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "removed repeat hourly from queue q\n");
    let counts = emq_on(&server, &["stats", "q", "--json"]).json();
    assert_eq!(
        counts["scheduled"], 1,
        "its occurrence went with it: {counts}"
    );

    let run = emq_on(&server, &["repeat", "remove", "q", "hourly"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stderr, "emq: no repeat hourly in queue q\n");

    let run = emq_on(&server, &["repeat", "remove", "q", "weekdays", "--json"]);
    assert_ok(&run);
    assert_eq!(
        run.json(),
        serde_json::json!({"key": "weekdays", "removed": true})
    );
    let run = emq_on(&server, &["repeat", "list", "q", "--json"]);
    assert_eq!(run.json(), serde_json::json!([]));
    let run = emq_on(&server, &["repeat", "list", "q"]);
    assert_eq!(run.stdout, "queue q has no repeat definitions\n");
}

#[test]
fn bad_repeats_exit_2_saying_why() {
    let server = TestServer::start();
    let run = emq_on(
        &server,
        &["repeat", "add", "q", "k", "{}", "--cron", "61 * * * *"],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--cron"), "{}", run.stderr);
    assert!(run.stderr.contains("61 * * * *"), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);

    let run = emq_on(
        &server,
        &[
            "repeat",
            "add",
            "q",
            "k",
            "{}",
            "--cron",
            "0 * * * *",
            "--tz",
            "Mars/Olympus",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--tz"), "{}", run.stderr);
    assert!(run.stderr.contains("Mars/Olympus"), "{}", run.stderr);

    let run = emq_on(
        &server,
        &[
            "repeat",
            "add",
            "q",
            "k",
            "{}",
            "--every",
            "1h",
            "--end",
            "2001-01-01T00:00:00Z",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("never fire"), "{}", run.stderr);

    let run = emq_on(
        &server,
        &["repeat", "add", "q", "a:b", "{}", "--every", "1h"],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("repeat key"), "{}", run.stderr);

    let run = emq_on(
        &server,
        &["repeat", "add", "q", "k", "{nope", "--every", "1h"],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("<json>"), "{}", run.stderr);

    let run = emq(&[
        "repeat", "add", "q", "k", "{}", "--every", "1h", "--tz", "UTC",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);

    // Nothing was stored.
    let run = emq_on(&server, &["repeat", "list", "q", "--json"]);
    assert_eq!(run.json(), serde_json::json!([]));
}

#[test]
fn bench_lateness_reports_percentiles() {
    let server = TestServer::start();
    let run = emq_on(&server, &["bench", "--lateness", "--jobs", "200", "--json"]);
    assert_ok(&run);
    let report = run.json();
    assert_eq!(report["concurrency"], 50, "{report}");
    assert_eq!(report["lead_ms"], 500, "{report}");
    assert_eq!(report["spread_ms"], 1000, "{report}");
    let runs = report["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1, "{report}");
    let r = &runs[0];
    assert_eq!(r["jobs"], 200, "{report}");
    let ms = |field: &str| {
        r[field]
            .as_f64()
            .unwrap_or_else(|| panic!("{field}: {report}"))
    };
    assert!(ms("p50_ms") >= 0.0, "{report}");
    assert!(ms("p50_ms") <= ms("p99_ms"), "{report}");
    assert!(ms("p99_ms") <= ms("max_ms"), "{report}");
    assert!(ms("server_cpu_us_per_job") > 0.0, "{report}");
    assert!(ms("enqueue_server_cpu_us_per_job") > 0.0, "{report}");
    assert!(ms("enqueue_seconds") > 0.0, "{report}");
    assert!(
        ms("seconds") >= 1.0,
        "the last job is due ~1.5 s in: {report}"
    );

    let run = emq_on(&server, &["bench", "--lateness", "--jobs", "100"]);
    assert_ok(&run);
    let row = table_row(&run.stdout, "100");
    assert_eq!(row.len(), 8, "{}", run.stdout);
    assert!(run.stdout.contains("p99 ms"), "{}", run.stdout);
}
