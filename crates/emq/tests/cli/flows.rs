//! `emq flow add FILE|-` against real servers, on both wires: a flow file
//! submitted dependents first and each job printed, submitted again
//! without change, and each piece of bad input refused with exit 2 and
//! nothing written (docs/flows.md, "From the command line").

use crate::common::{Run, assert_ok, command, run_on, servers, stats};
use echomq_testkit::TestServer;
use serde_json::{Value, json};
use std::io::Write;
use std::process::Stdio;

/// Issue 43's example as a file: fetch, then small and large, then mail.
fn diamond() -> Value {
    json!({"id": "order-42", "jobs": [
        {"ref": "fetch", "queue": "images", "payload": {"url": "u"}},
        {"ref": "small", "queue": "images", "payload": {"px": 64}, "after": ["fetch"]},
        {"ref": "large", "queue": "images", "payload": {"px": 1024}, "after": ["fetch"], "priority": 2},
        {"ref": "mail", "queue": "mail", "payload": {}, "after": ["small", "large"], "on_failure": "ignore"}
    ]})
}

/// `emq flow add <a file holding flow>` on `server` over `wire`.
fn flow_add(server: &TestServer, wire: &str, flow: &str, extra: &[&str]) -> Run {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(flow.as_bytes()).unwrap();
    let path = file.path().to_str().unwrap().to_string();
    let mut args = vec!["flow", "add", path.as_str()];
    args.extend_from_slice(extra);
    run_on(server, wire, &args)
}

/// The number of keys on `server`: 0 when a refused flow wrote nothing.
fn dbsize(server: &TestServer) -> u64 {
    crate::common::block_on(async {
        redis::cmd("DBSIZE")
            .query_async(&mut server.connection().await)
            .await
            .unwrap()
    })
}

/// Exit 2, stderr naming each of `needles`, nothing written.
fn assert_bad_input(server: &TestServer, run: &Run, needles: &[&str]) {
    assert_eq!(
        run.code, 2,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    for needle in needles {
        assert!(run.stderr.contains(needle), "{needle:?} in {}", run.stderr);
    }
    assert_eq!(dbsize(server), 0, "a refused flow wrote");
}

#[test]
fn flow_add_submits_a_file_dependents_first_and_prints_each_job() {
    for (server, wire) in servers() {
        let run = flow_add(&server, wire, &diamond().to_string(), &[]);
        assert_ok(&run);
        assert!(
            run.stdout.starts_with("flow order-42: 4 jobs, 4 created\n"),
            "{}",
            run.stdout
        );
        let row = crate::common::table_row(&run.stdout, "mail");
        assert_eq!(row, ["mail", "mail", "order-42:mail", "yes"]);
        let images = stats(&server, "images");
        assert_eq!(
            (images["pending"].clone(), images["blocked"].clone()),
            (json!(1), json!(2))
        );
        assert_eq!(stats(&server, "mail")["blocked"], 1);
        let mail = run_on(&server, wire, &["job", "mail", "order-42:mail", "--json"]).json();
        assert_eq!(
            (&mail["flow"], &mail["ref"], &mail["on_failure"]),
            (&json!("order-42"), &json!("mail"), &json!("ignore"))
        );
        assert_eq!((&mail["deps"], &mail["deps_left"]), (&json!(2), &json!(2)));
        let fetch = run_on(&server, wire, &["job", "images", "order-42:fetch"]);
        assert_eq!(
            crate::common::table_row(&fetch.stdout, "dependents"),
            ["dependents", "2"]
        );
        assert_eq!(
            crate::common::table_row(&fetch.stdout, "on_failure"),
            ["on_failure", "fail"]
        );

        let again = flow_add(&server, wire, &diamond().to_string(), &["--json"]);
        assert_ok(&again);
        let jobs = &again.json()["jobs"];
        assert_eq!(again.json()["flow"], "order-42");
        assert_eq!(
            jobs["fetch"],
            json!({"queue": "images", "id": "order-42:fetch", "created": false})
        );
        assert_eq!(stats(&server, "images")["total"], 3, "nothing more");
    }
}

#[test]
fn flow_add_reads_the_flow_from_stdin() {
    for (server, wire) in servers() {
        let mut emq = command(&[
            "--url",
            &server.url(),
            "--wire",
            wire,
            "flow",
            "add",
            "-",
            "--json",
        ]);
        emq.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = emq.spawn().unwrap();
        let flow = json!({"id": "f", "jobs": [{"ref": "a", "queue": "q", "payload": 1}]});
        child
            .stdin
            .take()
            .unwrap()
            .write_all(flow.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(printed["jobs"]["a"]["id"], "f:a");
        assert_eq!(stats(&server, "q")["pending"], 1);
    }
}

#[test]
fn flow_add_refuses_a_cycle_naming_its_refs() {
    let server = TestServer::start();
    let flow = json!({"id": "f", "jobs": [
        {"ref": "a", "queue": "q", "payload": 1, "after": ["b"]},
        {"ref": "b", "queue": "q", "payload": 2, "after": ["a"]}
    ]});
    let run = flow_add(&server, "script", &flow.to_string(), &[]);
    assert_bad_input(&server, &run, &["cycle through a, b"]);
}

#[test]
fn flow_add_refuses_an_unknown_ref() {
    let server = TestServer::start();
    let flow =
        json!({"id": "f", "jobs": [{"ref": "a", "queue": "q", "payload": 1, "after": ["ghost"]}]});
    let run = flow_add(&server, "script", &flow.to_string(), &[]);
    assert_bad_input(&server, &run, &["job a runs after ghost"]);
}

#[test]
fn flow_add_refuses_a_ref_used_twice() {
    let server = TestServer::start();
    let flow = json!({"id": "f", "jobs": [
        {"ref": "a", "queue": "q", "payload": 1},
        {"ref": "a", "queue": "r", "payload": 2}
    ]});
    let run = flow_add(&server, "script", &flow.to_string(), &[]);
    assert_bad_input(&server, &run, &["ref a is used twice"]);
}

#[test]
fn flow_add_refuses_a_bad_queue_name() {
    let server = TestServer::start();
    let flow = json!({"id": "f", "jobs": [{"ref": "a", "queue": "bad name", "payload": 1}]});
    let run = flow_add(&server, "script", &flow.to_string(), &[]);
    assert_bad_input(&server, &run, &["job a: queue"]);
}

#[test]
fn flow_add_refuses_malformed_json() {
    let server = TestServer::start();
    let run = flow_add(&server, "script", "{\"id\": \"f\", \"jobs\": [", &[]);
    assert_bad_input(&server, &run, &["flow file"]);
}

#[test]
fn flow_add_refuses_an_unknown_field_naming_it() {
    let server = TestServer::start();
    let flow = json!({"id": "f", "jobs": [{"ref": "a", "queue": "q", "payload": 1, "retries": 3}]});
    let run = flow_add(&server, "script", &flow.to_string(), &[]);
    assert_bad_input(&server, &run, &["unknown field `retries`"]);
}

#[test]
fn flow_add_refuses_an_unknown_policy() {
    let server = TestServer::start();
    let flow = json!({"id": "f", "jobs": [{"ref": "a", "queue": "q", "payload": 1, "on_failure": "retry"}]});
    let run = flow_add(&server, "script", &flow.to_string(), &[]);
    assert_bad_input(
        &server,
        &run,
        &["on_failure", "\"retry\" is not fail, ignore or cancel"],
    );
}

#[test]
fn flow_add_refuses_a_bad_duration() {
    let server = TestServer::start();
    let flow =
        json!({"id": "f", "jobs": [{"ref": "a", "queue": "q", "payload": 1, "delay": "soon"}]});
    let run = flow_add(&server, "script", &flow.to_string(), &[]);
    assert_bad_input(&server, &run, &["job a: delay"]);
}

#[test]
fn flow_add_refuses_a_bad_flow_id() {
    let server = TestServer::start();
    let flow = json!({"id": "has space", "jobs": [{"ref": "a", "queue": "q", "payload": 1}]});
    let run = flow_add(&server, "script", &flow.to_string(), &[]);
    assert_bad_input(&server, &run, &["the flow id"]);
}

#[test]
fn flow_add_refuses_a_file_it_cannot_read() {
    let server = TestServer::start();
    let run = run_on(
        &server,
        "script",
        &["flow", "add", "/nonexistent/flow.json"],
    );
    assert_bad_input(
        &server,
        &run,
        &["cannot read flow file /nonexistent/flow.json"],
    );
}

#[test]
fn flow_relay_delivers_an_outbox_nobody_relayed() {
    let (server, wire) = servers().pop().expect("the native server");
    let flow = json!({"id": "p", "jobs": [
        {"ref": "a", "queue": "qa", "payload": 1},
        {"ref": "b", "queue": "qb", "payload": 2, "after": ["a"]}
    ]});
    assert_ok(&flow_add(&server, wire, &flow.to_string(), &[]));
    // Cancelled by a raw command: nothing relayed it.
    let word: String = crate::common::block_on(async {
        redis::cmd("EMQ.CANCEL")
            .arg("emq:{qa}")
            .arg("p:a")
            .query_async(&mut server.connection().await)
            .await
            .unwrap()
    });
    assert_eq!(word, "relay_cancelled");
    assert_eq!(stats(&server, "qb")["blocked"], 1);
    let run = run_on(&server, wire, &["flow", "relay", "qa", "--json"]);
    assert_ok(&run);
    assert_eq!(
        run.json(),
        json!({"queue": "qa", "resolved": 1, "unblocked": 0, "decided": 1, "already": 0, "left": 0,
            "checkup": {"jobs": 0, "edges": 0, "waiting": 0, "missing": 0, "left": 0}})
    );
    let b = run_on(&server, wire, &["job", "qb", "p:b", "--json"]).json();
    assert_eq!(
        (&b["state"], &b["reason"]),
        (&json!("dead"), &json!("dependency"))
    );
    let again = run_on(&server, wire, &["flow", "relay", "qa"]);
    assert_eq!(
        again.stdout,
        "queue qa: 0 edges resolved (0 unblocked, 0 decided by their policy), 0 already, 0 left; \
         check-up of 0 blocked jobs: 0 edges waiting, 0 dependencies missing, 0 left\n"
    );
}

#[test]
fn flow_relay_runs_the_due_check_ups() {
    let (server, wire) = servers().pop().expect("the native server");
    // A submit that died after writing b: its dependency p:a never was.
    crate::common::block_on(async {
        let mut con = server.connection().await;
        let _: redis::Value = redis::cmd("EMQ.FLOW.ADD")
            .arg("emq:{qb}")
            .arg(&["p", "p:b", "b", "2", "qa p:a", ""])
            .query_async(&mut con)
            .await
            .unwrap();
        // Its check-up made due: five minutes are not waited for.
        let _: () = redis::cmd("ZADD")
            .arg("emq:{qb}:blocked")
            .arg(&["XX", "0", "p:b"])
            .query_async(&mut con)
            .await
            .unwrap();
    });
    let run = run_on(&server, wire, &["flow", "relay", "qb", "--json"]);
    assert_ok(&run);
    assert_eq!(
        run.json(),
        json!({"queue": "qb", "resolved": 1, "unblocked": 0, "decided": 1, "already": 0, "left": 0,
            "checkup": {"jobs": 1, "edges": 1, "waiting": 0, "missing": 1, "left": 0}})
    );
    let b = run_on(&server, wire, &["job", "qb", "p:b", "--json"]).json();
    assert_eq!(
        (&b["state"], &b["error"]),
        (&json!("dead"), &json!("dependency qa p:a is removed"))
    );
    assert_eq!(stats(&server, "qb")["blocked"], 0);
}

#[test]
fn flow_relay_refuses_a_bad_queue_name() {
    let server = TestServer::start();
    let run = run_on(&server, "script", &["flow", "relay", "bad name"]);
    assert_bad_input(&server, &run, &["bad name"]);
}

#[test]
fn flow_add_runs_a_job_after_a_job_outside_the_flow() {
    let (server, wire) = servers().pop().expect("the native server");
    let enqueued = run_on(
        &server,
        wire,
        &["enqueue", "qx", "1", "--id", "ext", "--json"],
    );
    assert_ok(&enqueued);
    let flow = json!({"id": "p", "jobs": [
        {"ref": "b", "queue": "qb", "payload": 2, "after": [{"queue": "qx", "id": "ext"}]}
    ]});
    assert_ok(&flow_add(&server, wire, &flow.to_string(), &[]));
    assert_eq!(stats(&server, "qb")["blocked"], 1);
    let b = run_on(&server, wire, &["job", "qb", "p:b", "--json"]).json();
    assert_eq!(b["deps_left"], json!(1));
}

#[test]
fn flow_add_refuses_an_outside_job_that_does_not_exist() {
    let server = TestServer::start();
    let flow = json!({"id": "p", "jobs": [
        {"ref": "b", "queue": "qb", "payload": 2, "after": [{"queue": "qx", "id": "absent"}]}
    ]});
    let run = flow_add(&server, "script", &flow.to_string(), &[]);
    assert_bad_input(
        &server,
        &run,
        &["qx absent, a job outside the flow", "does not exist"],
    );
}
