//! `emq` over time: enqueue --in / --at, reschedule, promote, repeat.

use crate::common::{assert_ok, emq, emq_on, table_row};
use echomq_testkit::TestServer;
use serde_json::Value;

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
        .strip_prefix("scheduled job s1 at ")
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
            "effect": "created",
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
    assert!(run.stdout.starts_with("enqueued job p1"), "{}", run.stdout);
    assert_eq!(
        emq_on(&server, &["job", "q", "p1", "--json"]).json()["state"],
        "pending"
    );

    // The same id again: exists, nothing changes.
    let run = emq_on(&server, &["enqueue", "q", "{}", "--id", "s1", "--in", "5m"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "job s1 exists already: nothing enqueued\n");
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
    assert_eq!(
        run.stdout,
        "rescheduled job s1 at 2099-01-01T00:00:00.000Z\n"
    );
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
fn repeat_add_twice_says_it_replaced_and_shows_the_old_cadence() {
    let server = TestServer::start();
    let add = |every: &str, payload: &str, json: bool| {
        let mut args = vec!["repeat", "add", "q", "poll", payload, "--every", every];
        if json {
            args.push("--json");
        }
        let run = emq_on(&server, &args);
        assert_ok(&run);
        run
    };
    let run = add("5m", r#"{"v":1}"#, true);
    assert_eq!(
        run.json().get("replaced"),
        None,
        "a new key replaced nothing"
    );
    let run = add("5m", r#"{"v":1}"#, false);
    assert!(
        run.stdout
            .starts_with("replaced repeat poll (was every 5m) on queue q: every 5m, next at "),
        "{}",
        run.stdout
    );
    let run = add("1h", r#"{"v":2}"#, false);
    let line = run.stdout.trim_end();
    let (head, next) = line
        .split_once(", next at ")
        .unwrap_or_else(|| panic!("{line}"));
    assert_eq!(
        head,
        "replaced repeat poll (was every 5m) on queue q: every 1h"
    );
    let next = printed_ms(next);
    let run = emq_on(&server, &["jobs", "q", "--state", "scheduled", "--json"]);
    assert_ok(&run);
    let page = run.json();
    let jobs = page["jobs"].as_array().unwrap_or_else(|| panic!("{page}"));
    assert_eq!(jobs.len(), 1, "only the new occurrence: {jobs:?}");
    assert_eq!(jobs[0]["id"], format!("repeat:poll:{next}"), "{jobs:?}");

    let run = add("2h", r#"{"v":3}"#, true);
    let added = run.json();
    assert_eq!(added["key"], "poll", "{added}");
    assert_eq!(added["every_ms"], 7_200_000u64, "{added}");
    assert_eq!(added["replaced"]["cadence"], "every 1h", "{added}");
    assert_eq!(added["replaced"]["every_ms"], 3_600_000u64, "{added}");
    assert_eq!(added["replaced"]["payload"]["v"], 2, "{added}");
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
