//! `emq` as ACL users: a prefix-scoped user's `emq queues` lists its
//! queues; another queue is refused with exit 2 naming the key; a refused
//! `emq worker` exits 2 with the error; `emq acl` prints the rules
//! docs/tenants.md shows, and they run a worker.

use crate::common::{self, PATIENCE, assert_ok, emq, emq_on, run_on, servers};
use echomq_testkit::{TestServer, wait_until};
use serde_json::Value;

const TENANTS: &str = include_str!("../../../../docs/tenants.md");

/// Creates user `name` (password `pw`) with `rules`, and the URL to it.
fn user(server: &TestServer, name: &str, rules: &str) -> String {
    let mut conn = server.client().get_connection().expect("a connection");
    let _: () = echomq_testkit::acl::setuser(name, rules)
        .query(&mut conn)
        .expect("ACL SETUSER");
    format!("redis://{name}:pw@127.0.0.1:{}", server.port())
}

fn as_user(url: &str, args: &[&str]) -> common::Run {
    let mut all = vec!["--url", url];
    all.extend_from_slice(args);
    emq(&all)
}

#[test]
fn a_prefix_scoped_users_emq_queues_lists_its_queues_only() {
    let server = TestServer::start();
    assert_ok(&emq_on(&server, &["enqueue", "theirs", "{}"]));
    let url = user(&server, "acme", "~acme:* &acme:* +@all");
    for queue in ["billing", "mail"] {
        assert_ok(&as_user(
            &url,
            &["--prefix", "acme", "enqueue", queue, "{}"],
        ));
    }
    let run = as_user(&url, &["--prefix", "acme", "queues", "--json"]);
    assert_ok(&run);
    let names: Vec<String> = run
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["queue"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["billing", "mail"]);
}

#[test]
fn another_queue_is_refused_with_exit_2_naming_the_key() {
    let server = TestServer::start();
    assert_ok(&emq_on(&server, &["enqueue", "theirs", "{}"]));
    let url = user(&server, "mail", "~emq:{mail}* &emq:{mail}* +@all");
    for args in [
        &["stats", "theirs"][..],
        &["enqueue", "theirs", "{}"],
        &["pause", "theirs"],
        &["jobs", "theirs"],
    ] {
        let run = as_user(&url, args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("refuses user mail"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("emq:{theirs}"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("server: NoPerm"), "{}", run.stderr);
    }
    let stats = emq_on(&server, &["stats", "theirs", "--json"]);
    assert_ok(&stats);
    assert_eq!(stats.json()["pending"], 1, "{}", stats.stdout);
}

#[test]
fn a_refused_worker_exits_2_with_the_error() {
    let server = TestServer::start();
    let url = user(&server, "mail", "~emq:{mail}* &emq:{mail}* +@all");
    let run = as_user(&url, &["worker", "theirs", "--exec", "cat"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("the worker stopped"), "{}", run.stderr);
    assert!(run.stderr.contains("emq:{theirs}"), "{}", run.stderr);
}

/// The ACL failure that stops the worker was printed twice, as a raw
/// tracing line and as the exit error: it is printed once now, as `emq:
/// the worker stopped: …`. (A refused cancel channel is another refusal,
/// warned of on its own line when the subscription is tried first.)
#[test]
fn a_refused_workers_acl_failure_is_printed_once() {
    let server = TestServer::start();
    let url = user(&server, "mail", "~emq:{mail}* &emq:{mail}* +@all");
    let run = as_user(&url, &["worker", "theirs", "--exec", "cat"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.stderr
            .matches("refuses user mail access to the key emq:{theirs}")
            .count(),
        1,
        "{}",
        run.stderr
    );
    let last = run.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("emq: the worker stopped: the server's ACL refuses user mail"),
        "{}",
        run.stderr
    );
}

/// Each `<!-- emq acl ARGS -->` of docs/tenants.md with the block after it.
fn documented_rules() -> Vec<(Vec<&'static str>, &'static str)> {
    let mut found = Vec::new();
    let mut rest = TENANTS;
    while let Some(at) = rest.find("<!-- emq acl ") {
        let after = &rest[at + "<!-- emq ".len()..];
        let (args, body) = after.split_once(" -->").expect("a closed marker");
        let body = body.trim_start().strip_prefix("```\n").expect("a block");
        let (block, _) = body.split_once("```").expect("a closed block");
        found.push((args.split_whitespace().collect(), block.trim_end()));
        rest = body;
    }
    found
}

#[test]
fn docs_tenants_shows_what_emq_acl_prints() {
    let documented = documented_rules();
    assert_eq!(documented.len(), 4, "{documented:?}");
    for (args, block) in documented {
        let run = emq(&args);
        assert_ok(&run);
        assert_eq!(
            run.stdout.trim_end(),
            block,
            "docs/tenants.md differs from `emq {}`: paste its output",
            args.join(" ")
        );
    }
}

#[test]
fn a_worker_given_what_emq_acl_prints_runs_on_wire_4() {
    let server = TestServer::start();
    let printed = emq(&["acl", "worker", "--queue", "mail", "--user", "w"]);
    assert_ok(&printed);
    let rules = printed
        .stdout
        .trim()
        .strip_prefix("ACL SETUSER w on >PASSWORD ")
        .expect("the line's shape");
    let url = user(&server, "w", rules);
    for n in 0..3 {
        assert_ok(&emq_on(&server, &["enqueue", "mail", &n.to_string()]));
    }
    let mut worker = common::spawn(&["--url", &url, "worker", "mail", "--exec", "cat"]);
    wait_until("the worker to complete the 3 jobs", PATIENCE, || {
        common::stats(&server, "mail")["completed"] == 3
    });
    worker.signal("TERM");
    assert!(worker.wait_exit().success());
}

#[test]
fn emq_acl_json_lists_the_rules_and_commands() {
    let run = emq(&[
        "acl", "producer", "--queue", "mail", "--wire", "native", "--json",
    ]);
    assert_ok(&run);
    let json: Value = run.json();
    assert_eq!(json["role"], "producer");
    assert!(json["rules"].as_str().unwrap().contains("+emq.enqueue"));
    assert!(
        json["commands"]
            .as_array()
            .unwrap()
            .contains(&Value::from("emq.get"))
    );
}

#[test]
fn a_worker_given_emq_acl_flow_queues_relays_into_the_other_queue() {
    for (server, wire) in servers() {
        let printed = emq(&[
            "acl",
            "worker",
            "--queue",
            "mail",
            "--user",
            "w",
            "--wire",
            wire,
            "--flow-queues",
            "audit",
        ]);
        assert_ok(&printed);
        let rules = printed
            .stdout
            .trim()
            .strip_prefix("ACL SETUSER w on >PASSWORD ")
            .expect("the line's shape");
        assert!(rules.ends_with(')'), "a selector last: {rules}");
        let url = user(&server, "w", rules);
        let mut file = tempfile::NamedTempFile::new().unwrap();
        let flow = r#"{"id": "f", "jobs": [
            {"ref": "send", "queue": "mail", "payload": 1},
            {"ref": "log", "queue": "audit", "payload": 2, "after": ["send"]}
        ]}"#;
        std::io::Write::write_all(&mut file, flow.as_bytes()).unwrap();
        let path = file.path().to_str().unwrap();
        assert_ok(&run_on(&server, wire, &["flow", "add", path]));
        let mut worker = common::spawn(&[
            "--url", &url, "--wire", wire, "worker", "mail", "--exec", "cat",
        ]);
        wait_until(
            "the worker's relay to unblock audit's job",
            PATIENCE,
            || common::stats(&server, "audit")["pending"] == 1,
        );
        worker.signal("TERM");
        assert!(worker.wait_exit().success(), "{wire}");
    }
}

#[test]
fn emq_acl_refuses_flow_queues_for_a_role_other_than_worker() {
    let run = emq(&[
        "acl",
        "producer",
        "--queue",
        "mail",
        "--flow-queues",
        "audit",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--flow-queues is for the worker role"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout, "");
}

#[test]
fn emq_acl_refuses_flow_queues_without_a_queue() {
    let run = emq(&["acl", "worker", "--flow-queues", "audit"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--flow-queues needs --queue"),
        "{}",
        run.stderr
    );
}

#[test]
fn emq_acl_refuses_a_bad_flow_queue_name() {
    let run = emq(&[
        "acl",
        "worker",
        "--queue",
        "mail",
        "--flow-queues",
        "audit,bad name",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--flow-queues"), "{}", run.stderr);
    assert!(run.stderr.contains("bad name"), "{}", run.stderr);
}

#[test]
fn emq_acl_json_lists_the_flow_queues_and_their_commands() {
    let run = emq(&[
        "acl",
        "worker",
        "--queue",
        "mail",
        "--wire",
        "native",
        "--json",
        "--flow-queues",
        "audit",
    ]);
    assert_ok(&run);
    let json: Value = run.json();
    assert_eq!(json["flow_queues"]["queues"], serde_json::json!(["audit"]));
    assert!(
        json["flow_queues"]["commands"]
            .as_array()
            .unwrap()
            .contains(&Value::from("emq.flow.resolve"))
    );
}

#[test]
fn emq_acl_refuses_a_bad_queue_name() {
    let run = emq(&["acl", "worker", "--queue", "bad name"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--queue"), "{}", run.stderr);
}

#[test]
fn a_queue_scoped_user_runs_emq_on_its_queue() {
    let server = TestServer::start();
    let url = user(&server, "mail", "~emq:{mail}* &emq:{mail}* +@all");
    let enqueued = as_user(&url, &["enqueue", "mail", "{}", "--id", "m1"]);
    assert_ok(&enqueued);
    assert!(enqueued.stderr.is_empty(), "{}", enqueued.stderr);
    for args in [
        &["stats", "mail"][..],
        &["jobs", "mail"],
        &["job", "mail", "m1"],
        &["log", "mail", "m1", "looked"],
        &["pause", "mail"],
        &["resume", "mail"],
        &["repeat", "list", "mail"],
    ] {
        assert_ok(&as_user(&url, args));
    }
    let mut watch = common::spawn(&["--url", &url, "watch", "mail", "--from-start"]);
    assert!(watch.next_line().contains("enqueued"));
    watch.signal("INT");
    let mut worker = common::spawn(&["--url", &url, "worker", "mail", "--exec", "cat"]);
    wait_until("the worker to complete m1", PATIENCE, || {
        common::stats(&server, "mail")["completed"] == 1
    });
    worker.signal("TERM");
    assert!(worker.wait_exit().success());
}
