//! `emq dashboard`'s command line against a real server: it serves,
//! refuses a non-loopback address without a token (unless --insecure),
//! says so on loopback, serves only the hosts it names, and refuses a bad
//! base path, host, base URL or an empty token before it listens (the
//! tokens file's flags: `token.rs`). (The pages themselves are tested in
//! crates/echomq-dashboard; a real browser drives it in
//! dashboard_browser.rs.)

use crate::common::{Run, emq_on, http_get, http_get_as, spawn_on};
use echomq_testkit::TestServer;
use std::io::Write;

/// A usage error (exit 2): one line naming each of `needles`, nothing
/// served.
#[track_caller]
fn assert_usage(run: &Run, needles: &[&str]) {
    assert_eq!(
        run.code, 2,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    for needle in needles {
        assert!(run.stderr.contains(needle), "{needle:?} in {}", run.stderr);
    }
    assert!(!run.stdout.contains("serving"), "{}", run.stdout);
}

/// `emq dashboard --listen 127.0.0.1:0 <flag> <value>` on a fresh server.
fn dashboard_with(flag: &str, value: &str) -> Run {
    let server = TestServer::start();
    emq_on(
        &server,
        &["dashboard", "--listen", "127.0.0.1:0", flag, value],
    )
}

/// The `host:port` of a `serving http://host:port/…` line.
fn served_at(line: &str) -> String {
    let rest = line
        .strip_prefix("serving http://")
        .unwrap_or_else(|| panic!("{line}"));
    rest.split('/').next().unwrap().to_string()
}

#[test]
fn dashboard_serves_its_pages_under_the_base_path() {
    let server = TestServer::start();
    let mut dashboard = spawn_on(
        &server,
        &[
            "dashboard",
            "--listen",
            "127.0.0.1:0",
            "--base-path",
            "/emq",
        ],
    );
    let line = dashboard.next_line();
    assert!(line.ends_with("/emq"), "{line}");
    let addr = served_at(&line);
    let (moved, _) = http_get(&addr, "/emq/");
    assert!(moved.starts_with("HTTP/1.1 308"), "{moved}");
    assert!(moved.lines().any(|l| l == "location: /emq"), "{moved}");
    let (head, page) = http_get(&addr, "/emq");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(page.contains(r#"href="/emq/controls""#), "{page}");
    let (metrics, _) = http_get(&addr, "/emq/metrics");
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    assert!(http_get(&addr, "/").0.starts_with("HTTP/1.1 404"));
    dashboard.signal("TERM");
    assert!(dashboard.wait_exit().success());
}

#[test]
fn dashboard_refuses_a_non_loopback_address_without_tokens() {
    let server = TestServer::start();
    let run = emq_on(&server, &["dashboard", "--listen", "0.0.0.0:0"]);
    assert_usage(
        &run,
        &["refusing to serve 0.0.0.0:0 without a token", "--insecure"],
    );
}

#[test]
fn dashboard_insecure_serves_a_non_loopback_address_without_tokens_and_warns() {
    let server = TestServer::start();
    let mut dashboard = spawn_on(
        &server,
        &["dashboard", "--listen", "0.0.0.0:0", "--insecure"],
    );
    let addr = served_at(&dashboard.next_line()).replace("0.0.0.0", "127.0.0.1");
    let warning = dashboard.wait_stderr("non-loopback");
    assert!(
        warning.contains("without a token (--insecure)"),
        "{warning}"
    );
    assert!(http_get(&addr, "/").0.starts_with("HTTP/1.1 200"));
    dashboard.signal("TERM");
    assert!(dashboard.wait_exit().success());
}

#[test]
fn dashboard_on_loopback_without_tokens_says_it_serves_loopback_only() {
    let server = TestServer::start();
    let mut dashboard = spawn_on(&server, &["dashboard", "--listen", "127.0.0.1:0"]);
    let addr = served_at(&dashboard.next_line());
    let note = dashboard.wait_stderr("without tokens");
    assert!(note.contains("on loopback only"), "{note}");
    assert!(note.contains("an operator of every queue"), "{note}");
    assert!(http_get(&addr, "/").0.starts_with("HTTP/1.1 200"));
    dashboard.signal("TERM");
    assert!(dashboard.wait_exit().success());
}

#[test]
fn dashboard_with_a_token_does_not_warn() {
    let server = TestServer::start();
    let mut dashboard = spawn_on(
        &server,
        &["dashboard", "--listen", "0.0.0.0:0", "--token", "s3cret"],
    );
    let addr = served_at(&dashboard.next_line()).replace("0.0.0.0", "127.0.0.1");
    assert!(http_get(&addr, "/").0.starts_with("HTTP/1.1 401"));
    dashboard.signal("TERM");
    assert!(dashboard.wait_exit().success());
    let stderr = dashboard.drain_stderr();
    assert!(!stderr.iter().any(|l| l.contains("warning")), "{stderr:?}");
}

#[test]
fn dashboard_live_viewers_caps_the_live_streams() {
    let server = TestServer::start();
    let mut dashboard = spawn_on(
        &server,
        &[
            "dashboard",
            "--listen",
            "127.0.0.1:0",
            "--live-viewers",
            "1",
        ],
    );
    let addr = served_at(&dashboard.next_line());
    // The one slot, held open: its head arrives, the stream goes on.
    let mut first = std::net::TcpStream::connect(&addr).unwrap();
    write!(first, "GET /live/queues HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8];
    while !head.ends_with(b"\r\n\r\n") {
        std::io::Read::read_exact(&mut first, &mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/event-stream"), "{head}");
    let (refused, page) = http_get(&addr, "/live/queues");
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(page.contains("at most 1 live viewer at once"), "{page}");
    assert!(http_get(&addr, "/").0.starts_with("HTTP/1.1 200"));
    drop(first);
    dashboard.signal("TERM");
    assert!(dashboard.wait_exit().success());
}

#[test]
fn dashboard_refuses_a_base_path_without_a_leading_slash() {
    let run = dashboard_with("--base-path", "emq/");
    assert_usage(&run, &["base path", "\"emq/\""]);
}

#[test]
fn dashboard_refuses_an_empty_token_file() {
    let server = TestServer::start();
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file).unwrap();
    let path = file.path().to_str().unwrap();
    let run = emq_on(
        &server,
        &["dashboard", "--listen", "127.0.0.1:0", "--token-file", path],
    );
    assert_usage(&run, &["token", "empty"]);
}

#[test]
fn dashboard_refuses_a_token_file_it_cannot_read() {
    let run = dashboard_with("--token-file", "/nonexistent/token");
    assert_usage(&run, &["--token-file", "/nonexistent/token"]);
}

#[test]
fn dashboard_serves_the_hosts_it_names_and_answers_421_to_others() {
    let server = TestServer::start();
    let mut dashboard = spawn_on(
        &server,
        &[
            "dashboard",
            "--listen",
            "127.0.0.1:0",
            "--allow-host",
            "ops.example.com",
            "--base-url",
            "https://queues.example.com",
        ],
    );
    let addr = served_at(&dashboard.next_line());
    let port = addr.rsplit(':').next().unwrap();
    for host in [
        addr.clone(),
        format!("localhost:{port}"),
        "ops.example.com".into(),
        "queues.example.com".into(),
    ] {
        let (head, _) = http_get_as(&addr, &host, "/");
        assert!(head.starts_with("HTTP/1.1 200"), "{host}: {head}");
    }
    for host in [format!("evil.example:{port}"), "127.0.0.1:1".into()] {
        let (head, body) = http_get_as(&addr, &host, "/");
        assert!(head.starts_with("HTTP/1.1 421"), "{host}: {head}");
        assert!(body.contains("--allow-host"), "{body}");
    }
    dashboard.signal("TERM");
    assert!(dashboard.wait_exit().success());
}

#[test]
fn dashboard_on_an_unspecified_address_says_which_hosts_it_serves() {
    let server = TestServer::start();
    let mut dashboard = spawn_on(
        &server,
        &["dashboard", "--listen", "0.0.0.0:0", "--token", "s3cret"],
    );
    let note = dashboard.wait_stderr("--allow-host");
    assert!(note.contains("127.0.0.1, localhost or [::1]"), "{note}");
    dashboard.signal("TERM");
    assert!(dashboard.wait_exit().success());
}

#[test]
fn dashboard_refuses_a_bad_allowed_host() {
    let run = dashboard_with("--allow-host", "a b");
    assert_usage(&run, &["allowed host", "\"a b\""]);
}

#[test]
fn dashboard_refuses_a_base_url_that_is_not_http() {
    let run = dashboard_with("--base-url", "ftp://ops.example.com");
    assert_usage(&run, &["base URL", "\"ftp://ops.example.com\""]);
}
