//! `emq token new` (a token printed once, its `[[token]]` entry to append)
//! and `emq dashboard --tokens FILE` against a real server: only the
//! file's tokens are served, a file with a mistake is refused naming its
//! line, and --tokens does not mix with --token.

use crate::common::{Run, emq, emq_on, spawn_on};
use echomq_dashboard::grant::AccessRole;
use echomq_dashboard::tokens::Tokens;
use echomq_testkit::TestServer;
use std::io::{Read, Write};

/// `emq token new` with `args`, its token (stderr's last line) and the
/// entry it printed.
fn new_token(args: &[&str]) -> (String, String) {
    let run = emq(&[&["token", "new"], args].concat());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let token = run.stderr.lines().last().unwrap().to_string();
    (token, run.stdout)
}

/// A usage error (exit 2) naming each of `needles`.
#[track_caller]
fn assert_usage(run: &Run, needles: &[&str]) {
    assert_eq!(run.code, 2, "{}", run.stderr);
    for needle in needles {
        assert!(run.stderr.contains(needle), "{needle:?} in {}", run.stderr);
    }
    assert!(!run.stdout.contains("serving"), "{}", run.stdout);
}

/// `GET path` of `addr` with `Authorization: Bearer token` (none when
/// `None`): the status line.
fn status_of(addr: &str, path: &str, token: Option<&str>) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let bearer = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{bearer}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.lines().next().unwrap().to_string()
}

#[test]
fn token_new_prints_the_token_once_and_an_entry_holding_its_hash() {
    let (token, entry) = new_token(&[
        "--name",
        "web-app",
        "--role",
        "producer",
        "--queue",
        "emails",
        "--queue",
        "reports-*",
    ]);
    assert_eq!(token.len(), 64, "{token}");
    assert!(!entry.contains(&token), "{entry}");
    let tokens = Tokens::parse(&entry).unwrap();
    let grant = tokens
        .grant_for(&token)
        .expect("the entry holds the token's hash");
    assert_eq!(grant.name, "web-app");
    assert_eq!(grant.role, AccessRole::Producer);
    assert_eq!(grant.queues, ["emails", "reports-*"]);
    let (again, _) = new_token(&["--name", "web-app", "--role", "producer", "--queue", "q"]);
    assert_ne!(token, again);
}

#[test]
fn token_new_json_holds_the_token_its_hash_and_its_entry() {
    let run = emq(&[
        "token", "new", "--name", "ops", "--role", "operator", "--queue", "*", "--json",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let (token, toml) = (
        json["token"].as_str().unwrap(),
        json["toml"].as_str().unwrap(),
    );
    assert_eq!(json["sha256"], echomq_dashboard::tokens::sha256_hex(token));
    assert_eq!(
        (json["name"].as_str(), json["role"].as_str()),
        (Some("ops"), Some("operator"))
    );
    assert_eq!(
        Tokens::parse(toml).unwrap().grant_for(token).unwrap().name,
        "ops"
    );
}

#[test]
fn token_new_refuses_an_unknown_role() {
    let run = emq(&[
        "token", "new", "--name", "a", "--role", "admin", "--queue", "q",
    ]);
    assert_usage(&run, &["admin", "reader, producer, worker, operator"]);
}

#[test]
fn token_new_refuses_an_empty_name_or_no_queue() {
    let run = emq(&[
        "token", "new", "--name", " ", "--role", "reader", "--queue", "q",
    ]);
    assert_usage(&run, &["--name", "empty"]);
    let run = emq(&["token", "new", "--name", "a", "--role", "reader"]);
    assert_usage(&run, &["--queue"]);
}

#[test]
fn dashboard_tokens_serves_only_the_file_s_tokens_and_their_queues() {
    let server = TestServer::start();
    let (token, entry) = new_token(&["--name", "web", "--role", "reader", "--queue", "emails"]);
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(entry.as_bytes()).unwrap();
    let path = file.path().to_str().unwrap();
    let mut dashboard = spawn_on(
        &server,
        &["dashboard", "--listen", "0.0.0.0:0", "--tokens", path],
    );
    let line = dashboard.next_line();
    let addr = line
        .strip_prefix("serving http://")
        .unwrap()
        .trim_end_matches('/')
        .replace("0.0.0.0", "127.0.0.1");
    assert!(status_of(&addr, "/", None).contains(" 401"));
    assert!(status_of(&addr, "/", Some("guess")).contains(" 401"));
    assert!(status_of(&addr, "/", Some(&token)).contains(" 200"));
    assert!(status_of(&addr, "/queues/emails", Some(&token)).contains(" 200"));
    assert!(status_of(&addr, "/queues/billing", Some(&token)).contains(" 403"));
    dashboard.signal("TERM");
    assert!(dashboard.wait_exit().success());
    let stderr = dashboard.drain_stderr();
    assert!(!stderr.iter().any(|l| l.contains("without")), "{stderr:?}");
}

#[test]
fn dashboard_refuses_a_tokens_file_with_a_mistake_naming_its_line() {
    let server = TestServer::start();
    let mut file = tempfile::NamedTempFile::new().unwrap();
    write!(
        file,
        "[[token]]\nname = \"web\"\nsha256 = \"abc\"\nrole = \"reader\"\nqueues = [\"q\"]\n"
    )
    .unwrap();
    let path = file.path().to_str().unwrap();
    let run = emq_on(
        &server,
        &["dashboard", "--listen", "127.0.0.1:0", "--tokens", path],
    );
    assert_usage(&run, &["--tokens", path, "line 3: sha256", "64"]);
}

#[test]
fn dashboard_refuses_tokens_with_a_single_token() {
    let server = TestServer::start();
    let run = emq_on(
        &server,
        &[
            "dashboard",
            "--listen",
            "127.0.0.1:0",
            "--tokens",
            "t.toml",
            "--token",
            "s3cret",
        ],
    );
    assert_usage(&run, &["--tokens", "--token"]);
}
