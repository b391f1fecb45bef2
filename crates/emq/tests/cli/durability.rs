//! `--durability` and `EMQ_DURABILITY`: the level each command's writes
//! wait for, and its refusals (docs/cli.md, docs/protocol.md Durability).

use crate::common::{assert_ok, emq, emq_on, emq_with_env, servers};
use echomq_testkit::{ServerBinary, TestServer};
use serde_json::Value;

/// How many times `server` ran `WAITAOF`.
fn waitaof_calls(server: &TestServer) -> u64 {
    let mut conn = server.client().get_connection().unwrap();
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut conn)
        .unwrap();
    info.lines()
        .find_map(|line| line.strip_prefix("cmdstat_waitaof:calls="))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

#[test]
fn an_enqueue_at_durability_local_waits_for_the_aof_on_both_wires() {
    for (_, wire) in servers() {
        let binary = ServerBinary::locate().unwrap();
        let server = TestServer::with_config(binary, true, vec![echomq_testkit::module_path()]);
        let args = ["--wire", wire, "--durability", "local"];
        assert_ok(&emq_on(
            &server,
            &[&args[..], &["enqueue", "mail", "1"]].concat(),
        ));
        let before = waitaof_calls(&server);
        assert_ok(&emq_on(
            &server,
            &[&args[..], &["enqueue", "mail", "2"]].concat(),
        ));
        assert_eq!(waitaof_calls(&server) - before, 1, "{wire}");
    }
}

#[test]
fn emq_durability_sets_the_level_as_the_flag_does() {
    let server = TestServer::with_config(ServerBinary::locate().unwrap(), true, Vec::new());
    let url = server.url();
    let run = emq_with_env(
        &["--url", &url, "enqueue", "mail", "1"],
        &[("EMQ_DURABILITY", "local")],
    );
    assert_ok(&run);
    assert!(waitaof_calls(&server) >= 1);
}

#[test]
fn a_level_the_server_cannot_give_is_refused_at_connect_with_code_durability() {
    let server = TestServer::start();
    let run = emq_on(
        &server,
        &[
            "--json",
            "--durability",
            "replicas:1",
            "enqueue",
            "mail",
            "1",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    let error: Value = serde_json::from_str(run.stderr.trim()).unwrap();
    assert_eq!(error["error"]["code"], "durability");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("0 replica(s) online, 1 wanted"),
        "{message}"
    );
    // Nothing was written.
    let run = emq_on(&server, &["stats", "mail", "--json"]);
    assert_eq!(run.json()["pending"], 0, "{}", run.stdout);
}

#[test]
fn a_durability_that_is_no_level_is_a_usage_error_naming_the_levels() {
    let run = emq(&["--durability", "disk", "queues"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("\"disk\" is no durability level"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("replicas:N"), "{}", run.stderr);
    let run = emq(&["--durability", "replicas:0", "queues"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("whole number ≥ 1"), "{}", run.stderr);
}

#[test]
fn emq_acl_grants_the_waits_of_the_durability_level_asked_for() {
    let plain = emq(&["acl", "worker", "--queue", "mail"]);
    assert_ok(&plain);
    assert!(!plain.stdout.contains("+wait"), "{}", plain.stdout);
    let local = emq(&["--durability", "local", "acl", "worker", "--queue", "mail"]);
    assert_ok(&local);
    assert!(
        local.stdout.trim_end().ends_with(" +waitaof"),
        "{}",
        local.stdout
    );
    assert!(!local.stdout.contains("+wait "), "{}", local.stdout);
    let replicas = emq(&["--durability", "replicas:1", "acl", "producer", "--json"]);
    assert_ok(&replicas);
    let commands = replicas.json()["commands"].clone();
    let commands: Vec<String> = serde_json::from_value(commands).unwrap();
    assert!(commands.contains(&"wait".to_string()) && commands.contains(&"waitaof".to_string()));
}
