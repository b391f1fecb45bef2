//! `emq server`: where it listens by default, what it says when it cannot,
//! the URL and the server binary it names; and what a command says when no
//! server answers.

use crate::common::{self, assert_ok, emq, spawn};
use echomq_server::{ServerBinary, free_loopback_port};
use serde_json::Value;
use std::net::{Ipv4Addr, TcpListener};

/// `emq server` with `args` on a fresh data directory; it must refuse
/// (exit 2) within [`common::PATIENCE`]: a server that starts instead is
/// stopped and the test fails. Its one stderr line.
fn refused_server(args: &[&str]) -> String {
    let data = tempfile::tempdir().unwrap();
    let mut all = vec!["server", "--dir", data.path().to_str().unwrap()];
    all.extend_from_slice(args);
    let mut server = spawn(&all);
    let exited = server.try_wait_exit();
    if exited.is_none() {
        server.signal("TERM");
        server.wait_exit();
        panic!("emq server {args:?} started instead of refusing");
    }
    assert_eq!(exited.unwrap().code(), Some(2), "{:?}", server.errors);
    assert_eq!(server.errors.len(), 1, "{:?}", server.errors);
    server.errors[0].clone()
}

#[test]
fn server_without_port_listens_on_6379_and_says_so_when_it_is_taken() {
    // Held here when it is free; when it is not, whatever holds it makes
    // the same refusal. Never a server of ours on 6379.
    let _held = TcpListener::bind((Ipv4Addr::LOCALHOST, 6379));
    let error = refused_server(&[]);
    assert!(
        error.contains("127.0.0.1:6379")
            && error.contains("already in use")
            && error.contains("--port 0"),
        "{error}"
    );
}

#[test]
fn server_on_a_taken_port_names_it_and_suggests_port_0() {
    let held = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    let error = refused_server(&["--port", &port]);
    assert!(
        error.starts_with(&format!("emq: cannot listen on 127.0.0.1:{port}: ")),
        "{error}"
    );
    assert!(error.contains("--port 0"), "{error}");
}

#[test]
fn server_on_port_0_prints_the_url_to_export_and_answers_there() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().to_str().unwrap();
    let mut server = spawn(&["server", "--port", "0", "--dir", dir]);
    let banner = [server.next_line(), server.next_line(), server.next_line()];
    let export = banner
        .iter()
        .find_map(|line| line.strip_prefix("export EMQ_URL="))
        .unwrap_or_else(|| panic!("no export line: {banner:#?}"));
    let url = export.split_whitespace().next().unwrap();
    let port: u16 = url
        .strip_prefix("redis://127.0.0.1:")
        .and_then(|port| port.parse().ok())
        .unwrap_or_else(|| panic!("not a loopback URL: {url}"));
    assert_ne!(port, 6379, "{banner:#?}");
    assert_ok(&emq(&["--url", url, "enqueue", "q", "{}", "--id", "a"]));
    let run = common::emq_with_env(&["job", "q", "a", "--json"], &[("EMQ_URL", url)]);
    assert_ok(&run);
    assert_eq!(run.json()["state"], "pending", "{}", run.stdout);
    server.signal("TERM");
    assert!(server.wait_exit().success(), "{:?}", server.errors);
}

#[test]
fn server_banner_names_the_binary_path_and_its_version() {
    let binary = ServerBinary::locate().unwrap();
    let version = binary.version().unwrap();
    let path = binary.path.display().to_string();
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().to_str().unwrap();

    let mut server = spawn(&["server", "--port", "0", "--dir", dir]);
    let banner = [server.next_line(), server.next_line()].join("\n");
    let named = format!("server: {} {version} ({path})", binary.kind);
    assert!(banner.contains(&named), "want {named:?} in {banner}");
    server.signal("TERM");
    assert!(server.wait_exit().success(), "{:?}", server.errors);

    let mut server = spawn(&["server", "--port", "0", "--dir", dir, "--json"]);
    let started: Value = serde_json::from_str(&server.next_line()).unwrap();
    assert_eq!(started["server"]["path"], path.as_str(), "{started}");
    assert_eq!(started["server"]["version"], version.as_str(), "{started}");
    assert_eq!(started["server"]["kind"], binary.kind.name(), "{started}");
    server.signal("TERM");
    assert!(server.wait_exit().success(), "{:?}", server.errors);
}

#[test]
fn a_command_against_a_closed_port_says_how_to_get_a_server() {
    let url = format!("redis://127.0.0.1:{}", free_loopback_port().unwrap());
    for args in [&["stats", "q"][..], &["enqueue", "q", "{}"][..]] {
        let mut all = vec!["--url", url.as_str()];
        all.extend_from_slice(args);
        let run = emq(&all);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert!(
            run.stderr
                .starts_with(&format!("emq: cannot reach {url}: ")),
            "{}",
            run.stderr
        );
        for needle in ["`emq server`", "--url", "EMQ_URL"] {
            assert!(run.stderr.contains(needle), "{needle}: {}", run.stderr);
        }
    }
}

#[test]
fn demo_and_bench_on_an_embedded_server_name_its_binary_and_version() {
    let binary = ServerBinary::locate().unwrap();
    let version = binary.version().unwrap();
    let named = format!(
        "{} {version} (embedded: {})",
        binary.kind,
        binary.path.display()
    );
    for args in [
        &["demo", "--jobs", "20", "--concurrency", "4"][..],
        &["bench", "--jobs", "200"][..],
    ] {
        let run = emq(args);
        assert_ok(&run);
        assert!(
            run.stdout.contains(&named),
            "{args:?}: want {named:?} in {}",
            run.stdout
        );
    }
    let run = emq(&["demo", "--jobs", "20", "--json"]);
    assert_ok(&run);
    let summary = run.json();
    assert_eq!(summary["embedded"], true, "{summary}");
    assert_eq!(
        summary["server_binary"],
        binary.path.display().to_string().as_str(),
        "{summary}"
    );
}
