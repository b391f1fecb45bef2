//! The CLI's top level, through the real binary against real servers:
//! `--json` on every path (the listeners' first line, every error as one
//! JSON line on stderr with its code and the usual exit code) and the
//! layout of `--help` (headings, usage lines, variables, commands that
//! need no server).

use crate::common::{Run, emq, emq_on, emq_with_env, http_get, run_on, servers, spawn_on};
use echomq_testkit::TestServer;
use serde_json::Value;

/// A URL where nothing listens.
const NOWHERE: &str = "redis://127.0.0.1:1";

/// Checks `run` failed with `exit`, printing nothing on stdout and exactly
/// one line on stderr, a JSON error of `code`; returns its message.
fn json_error(run: &Run, exit: i32, code: &str) -> String {
    assert_eq!(
        run.code, exit,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert_eq!(run.stdout, "", "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    let error: Value = serde_json::from_str(run.stderr.trim())
        .unwrap_or_else(|err| panic!("stderr is not one JSON value ({err}): {}", run.stderr));
    let object = error.as_object().expect("an object");
    assert_eq!(object.len(), 1, "{error}");
    assert_eq!(error["error"]["code"], code, "{error}");
    assert_eq!(error["error"].as_object().unwrap().len(), 2, "{error}");
    error["error"]["message"]
        .as_str()
        .expect("a message")
        .to_string()
}

/// The `url` of a listener's first line under `--json`; its `host:port`.
fn listening_url(first: &str, path: &str) -> String {
    let line: Value = serde_json::from_str(first).unwrap_or_else(|err| panic!("{err}: {first:?}"));
    assert_eq!(line.as_object().map(|o| o.len()), Some(1), "{line}");
    let url = line["url"].as_str().expect("a url");
    let addr = url
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_suffix(path))
        .unwrap_or_else(|| panic!("http://…{path}: {url}"));
    addr.to_string()
}

#[test]
fn dashboard_under_json_prints_its_url_as_the_first_line() {
    let server = TestServer::start();
    let mut dashboard = spawn_on(&server, &["dashboard", "--listen", "127.0.0.1:0", "--json"]);
    let addr = listening_url(&dashboard.next_line(), "/");
    let (head, _) = http_get(&addr, "/");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    dashboard.signal("TERM");
    assert!(dashboard.wait_exit().success(), "{:?}", dashboard.errors);
}

#[test]
fn metrics_listen_under_json_prints_its_url_as_the_first_line() {
    let server = TestServer::start();
    let mut metrics = spawn_on(&server, &["metrics", "--listen", "127.0.0.1:0", "--json"]);
    let addr = listening_url(&metrics.next_line(), "/metrics");
    let (head, _) = http_get(&addr, "/metrics");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    metrics.signal("TERM");
    assert!(metrics.wait_exit().success(), "{:?}", metrics.errors);
}

#[test]
fn an_unreachable_server_under_json_is_one_json_error_exiting_2() {
    for args in [
        &["stats", "q"][..],
        &["enqueue", "q", "{}"][..],
        &["queues"][..],
        &["metrics"][..],
        &["metrics", "--listen", "127.0.0.1:0"][..],
        &["dashboard", "--listen", "127.0.0.1:0"][..],
        &["watch", "q"][..],
        &["worker", "q", "--exec", "cat"][..],
    ] {
        let mut all = vec!["--json", "--url", NOWHERE];
        all.extend_from_slice(args);
        let message = json_error(&emq(&all), 2, "unreachable");
        assert!(
            message.starts_with(&format!("cannot reach {NOWHERE}: ")),
            "{args:?}: {message}"
        );
    }
    // Without --json: the line as before.
    let run = emq(&["--url", NOWHERE, "stats", "q"]);
    assert!(
        run.stderr.starts_with("emq: cannot reach "),
        "{}",
        run.stderr
    );
}

#[test]
fn a_reschedule_of_a_pending_job_under_json_is_bad_state_exiting_1() {
    for (server, wire) in servers() {
        let run = run_on(&server, wire, &["enqueue", "q", "{}", "--id", "now"]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let run = run_on(
            &server,
            wire,
            &["reschedule", "q", "now", "--in", "1h", "--json"],
        );
        let message = json_error(&run, 1, "bad_state");
        assert!(message.contains("job now"), "{wire}: {message}");
        assert!(message.contains("BADSTATE"), "{wire}: {message}");
    }
}

#[test]
fn a_reschedule_of_a_missing_job_under_json_is_not_found_exiting_1() {
    for (server, wire) in servers() {
        let run = run_on(
            &server,
            wire,
            &["reschedule", "q", "nope", "--in", "1h", "--json"],
        );
        let message = json_error(&run, 1, "not_found");
        assert!(message.contains("NOJOB"), "{wire}: {message}");
    }
}

#[test]
fn job_of_a_missing_id_under_json_is_not_found_exiting_1() {
    let server = TestServer::start();
    let run = emq_on(&server, &["job", "q", "nope", "--json"]);
    let message = json_error(&run, 1, "not_found");
    assert_eq!(message, "no job nope in queue q");
}

#[test]
fn obliterate_of_a_queue_not_paused_under_json_is_not_paused_exiting_1() {
    let server = TestServer::start();
    assert_eq!(emq_on(&server, &["enqueue", "q", "{}"]).code, 0);
    let run = emq_on(&server, &["obliterate", "q", "--yes", "--json"]);
    let message = json_error(&run, 1, "not_paused");
    assert!(message.contains("NOTPAUSED"), "{message}");
}

#[test]
fn a_usage_error_found_while_parsing_under_json_is_one_json_line_exiting_2() {
    let message = json_error(&emq(&["--json", "enqueue", "q"]), 2, "usage");
    assert_eq!(
        message,
        "the following required arguments were not provided: <json>"
    );
    let message = json_error(&emq(&["stats", "q", "--jsn", "--json"]), 2, "usage");
    assert!(
        message.starts_with("unexpected argument '--jsn' found"),
        "{message}"
    );
    // Help and the version are not errors: printed as ever.
    let run = emq(&["--json", "stats", "--help"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with("Job counts"), "{}", run.stdout);
}

#[test]
fn a_usage_error_found_after_parsing_under_json_is_one_json_line_exiting_2() {
    let message = json_error(&emq(&["--json", "enqueue", "q", "{nope"]), 2, "usage");
    assert!(
        message.starts_with("argument <json> is not valid JSON"),
        "{message}"
    );
    let message = json_error(&emq(&["--json", "stats", "bad name"]), 2, "usage");
    assert!(message.contains("bad name"), "{message}");
}

#[test]
fn a_wrong_password_under_json_is_auth_exiting_2() {
    let server = TestServer::start();
    let mut admin = server.client().get_connection().unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "requirepass", "right"])
        .query(&mut admin)
        .unwrap();
    let url = format!("redis://:wrong@127.0.0.1:{}", server.port());
    let message = json_error(&emq(&["--json", "--url", &url, "stats", "q"]), 2, "auth");
    assert!(!message.contains("wrong@"), "{message}");
}

#[test]
fn wire_native_without_the_module_under_json_is_wire_exiting_2() {
    let server = TestServer::start();
    let run = emq_on(&server, &["--json", "--wire", "native", "stats", "q"]);
    let message = json_error(&run, 2, "wire");
    assert!(message.starts_with("--wire native: "), "{message}");
}

#[test]
fn a_busy_listen_address_under_json_is_listen_exiting_2() {
    let server = TestServer::start();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    for command in ["metrics", "dashboard"] {
        let run = emq_on(&server, &["--json", command, "--listen", &addr]);
        let message = json_error(&run, 2, "listen");
        assert!(message.contains(&addr), "{command}: {message}");
    }
}

#[test]
fn server_on_a_taken_port_under_json_is_listen_exiting_2() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().to_str().unwrap();
    let run = emq(&["server", "--port", &port, "--dir", dir, "--json"]);
    let message = json_error(&run, 2, "listen");
    assert!(
        message.starts_with(&format!("cannot listen on 127.0.0.1:{port}: ")),
        "{message}"
    );
}

/// The lines of `text` from the one that is `heading` to the next blank
/// line before another heading (a section of clap's help).
fn section<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    let mut lines = text.lines().skip_while(|line| *line != heading);
    assert!(lines.next().is_some(), "no {heading:?} in:\n{text}");
    lines
        .take_while(|line| line.is_empty() || line.starts_with(' '))
        .collect()
}

#[test]
fn help_puts_global_and_connection_options_under_their_own_headings() {
    for args in [
        &["--help"][..],
        &["-h"][..],
        &["stats", "--help"][..],
        &["stats", "-h"][..],
    ] {
        let help = emq(args).stdout;
        let own = section(&help, "Options:").join("\n");
        for flag in [
            "--url",
            "--json",
            "--prefix",
            "--wire",
            "--tls-cert",
            "--sentinel",
        ] {
            assert!(
                !own.contains(flag),
                "{args:?}: {flag} among Options:\n{help}"
            );
        }
        let global = section(&help, "Global options:").join("\n");
        for flag in ["--json", "--prefix", "--wire"] {
            assert!(global.contains(flag), "{args:?}: {flag}:\n{help}");
        }
        let connection = section(&help, "Connection options:").join("\n");
        for flag in [
            "--url",
            "--tls-ca-cert",
            "--sentinel-service",
            "--primary-password",
        ] {
            assert!(connection.contains(flag), "{args:?}: {flag}:\n{help}");
        }
    }
}

#[test]
fn a_usage_line_never_shows_url_as_required() {
    let usage = |run: &Run| {
        assert_eq!(run.code, 2, "{}", run.stderr);
        run.stderr
            .lines()
            .find(|line| line.starts_with("Usage:"))
            .unwrap_or_else(|| panic!("no usage line: {}", run.stderr))
            .to_string()
    };
    // EMQ_URL set, --url given after the command, or both with another
    // flag: the usage line is the command's own, as its help shows it.
    let from_env = emq_with_env(&["stats"], &[("EMQ_URL", NOWHERE)]);
    assert_eq!(usage(&from_env), "Usage: emq stats [OPTIONS] <queue>");
    let given = emq(&["stats", "--url", NOWHERE]);
    assert_eq!(usage(&given), "Usage: emq stats [OPTIONS] <queue>");
    let both = emq_with_env(
        &["reschedule", "q", "id", "--wire", "native"],
        &[("EMQ_URL", NOWHERE)],
    );
    assert_eq!(
        usage(&both),
        "Usage: emq reschedule [OPTIONS] <--at <RFC 3339>|--in <duration>> <queue> <id>"
    );
    let help = emq(&["stats", "--help"]).stdout;
    assert!(
        help.contains("Usage: emq stats [OPTIONS] <queue>\n"),
        "{help}"
    );
}

#[test]
fn help_never_shows_an_empty_variable() {
    // No variable set (the runner clears EMQ_URL; these are cleared too).
    let unset = [
        "EMQ_TLS_CA_CERT",
        "EMQ_TLS_CERT",
        "EMQ_TLS_KEY",
        "EMQ_SENTINEL",
        "EMQ_SENTINEL_SERVICE",
        "EMQ_PRIMARY_PASSWORD",
        "EMQ_DASHBOARD_TOKEN",
    ];
    for args in [
        &["stats", "--help"][..],
        &["--help"][..],
        &["dashboard", "--help"][..],
    ] {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_emq"));
        command.args(args).env_remove("EMQ_URL");
        for name in unset {
            command.env_remove(name);
        }
        let out = command.output().expect("run emq");
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains("[env: EMQ_TLS_CA_CERT]") || args == ["dashboard", "--help"]);
        assert!(!help.contains("=]"), "{args:?}:\n{help}");
    }
}

#[test]
fn controls_and_acl_help_list_no_connection_options() {
    for args in [
        &["controls", "--help"][..],
        &["controls", "-h"][..],
        &["acl", "--help"][..],
        &["help", "acl"][..],
    ] {
        let run = emq(args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        for absent in [
            "--url",
            "--tls-",
            "--sentinel",
            "--primary-password",
            "Connection options",
            "EMQ_",
        ] {
            assert!(
                !run.stdout.contains(absent),
                "{args:?}: {absent}:\n{}",
                run.stdout
            );
        }
        assert!(run.stdout.contains("--prefix"), "{args:?}:\n{}", run.stdout);
    }
    // Still accepted, so one set of flags works with every command.
    let run = emq(&["controls", "claim", "--url", NOWHERE, "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = emq(&["--url", NOWHERE, "acl", "worker", "--queue", "q"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("ACL SETUSER tenant"),
        "{}",
        run.stdout
    );
}
