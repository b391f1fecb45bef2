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
