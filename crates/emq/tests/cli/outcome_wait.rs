//! `emq enqueue --wait` and `emq wait` against real servers, on both
//! wires: each outcome printed and exited by (0 completed, 1 dead /
//! cancelled / removed, 3 timed out), the `--json` shape, and every bad
//! input refused with exit 2 and nothing written (docs/outcomes.md, "From
//! the command line").

use crate::common::{Run, Spawned, assert_ok, block_on, job, run_on, servers, spawn_on};
use echomq::{Connector, FailAction, JobId, Queue, Wire};
use echomq_testkit::{TestServer, wait_until};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::time::Duration;

/// How long a bounded wait on the server's state waits.
const PATIENCE: Duration = crate::common::PATIENCE;
/// A stored result whose text reformatting would change: key order,
/// spaces, a float.
const RESULT: &str = r#"{"z": 1, "a": [1.50, "two"]}"#;

/// The library's handle on `name` of `server`, on `wire` (`script` or
/// `native`), as the CLI under test uses it.
async fn queue_on(server: &TestServer, wire: &str, name: &str) -> Queue<Value> {
    let wire = if wire == "native" {
        Wire::Native
    } else {
        Wire::Script
    };
    Connector::builder(server.url())
        .wire(wire)
        .connect()
        .await
        .expect("connect")
        .queue(name)
        .expect("queue name")
}

/// `enqueue q {} --id <id> extra…`.
fn enqueue_args<'a>(id: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    [&["enqueue", "q", "{}", "--id", id], extra].concat()
}

/// Waits until job `id` of `queue` is marked waited for: the waiter's
/// subscription is open and its `OUTCOME` sent.
pub(crate) fn wait_until_waited(server: &TestServer, queue: &str, id: &str) {
    let key = format!("emq:{{{queue}}}:job:{id}");
    wait_until(&format!("job {id} to be waited for"), PATIENCE, || {
        block_on(async {
            let waited: Option<String> = redis::cmd("HGET")
                .arg(&key)
                .arg("waited")
                .query_async(&mut server.connection().await)
                .await
                .expect("HGET");
            waited.as_deref() == Some("1")
        })
    });
}

/// Claims job `id` (the one pending job of `queue`) and completes it with
/// [`RESULT`], stored as its exact text.
pub(crate) fn complete_raw(server: &TestServer, wire: &str, queue: &str, id: &str) {
    block_on(async {
        let queue = queue_on(server, wire, queue).await;
        let token = claimed(&queue, id).await;
        let result = RawValue::from_string(RESULT.to_string()).unwrap();
        let id = JobId::new(id).unwrap();
        queue
            .complete(&id, token, &*result)
            .await
            .expect("complete");
    })
}

/// Fails job `id` of `queue` until it is dead: `attempts` failures with
/// `error` (the job enqueued with `--attempts <attempts>`).
pub(crate) fn fail_to_death(server: &TestServer, wire: &str, queue: &str, id: &str, attempts: u64) {
    block_on(async {
        let queue = queue_on(server, wire, queue).await;
        for _ in 0..attempts {
            let token = claimed(&queue, id).await;
            let job = JobId::new(id).unwrap();
            let retry = FailAction::Retry(Duration::ZERO);
            queue
                .fail(&job, token, "boom: no route", retry)
                .await
                .expect("fail");
        }
    })
}

/// Claims the one pending job of `queue`, which must be `id`; its token.
async fn claimed(queue: &Queue<Value>, id: &str) -> u64 {
    let job = queue
        .claim_one("test", Duration::from_secs(60))
        .await
        .expect("claim")
        .expect("a pending job");
    assert_eq!(job.id.as_str(), id);
    job.token
}

/// `emq --wire <wire> args…` started in the background.
pub(crate) fn spawn_wire(server: &TestServer, wire: &str, args: &[&str]) -> Spawned {
    spawn_on(server, &[&["--wire", wire], args].concat())
}

/// The exit code of a background `emq` once it ends, and its stdout lines.
pub(crate) fn exit_and_stdout(mut child: Spawned, lines: usize) -> (i32, Vec<String>, Vec<String>) {
    let stdout: Vec<String> = (0..lines).map(|_| child.next_line()).collect();
    let status = child.wait_exit();
    let stderr = child.drain_stderr();
    (status.code().expect("an exit code"), stdout, stderr)
}

/// Exit 1 (or 3), one `emq: ` line on stderr holding every `needle`,
/// nothing on stdout.
pub(crate) fn assert_exit(run: &Run, code: i32, needles: &[&str]) {
    assert_eq!(
        run.code, code,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.starts_with("emq: "), "{}", run.stderr);
    for needle in needles {
        assert!(run.stderr.contains(needle), "{needle:?} in {}", run.stderr);
    }
    assert_eq!(run.stdout, "");
}

/// A refused line: exit 2, stderr naming every `needle`, stdout empty, and
/// no key written on `server` (a fresh one).
pub(crate) fn assert_refused_writing_nothing(server: &TestServer, run: &Run, needles: &[&str]) {
    assert_eq!(
        run.code, 2,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    for needle in needles {
        assert!(run.stderr.contains(needle), "{needle:?} in {}", run.stderr);
    }
    assert_eq!(run.stdout, "");
    let keys: u64 = block_on(async {
        redis::cmd("DBSIZE")
            .query_async(&mut server.connection().await)
            .await
            .expect("DBSIZE")
    });
    assert_eq!(keys, 0, "nothing written");
}

#[test]
fn enqueue_wait_prints_the_stored_result_as_it_is_and_exits_0() {
    for (server, wire) in servers() {
        let child = spawn_wire(&server, wire, &enqueue_args("r1", &["--wait"]));
        wait_until_waited(&server, "q", "r1");
        complete_raw(&server, wire, "q", "r1");
        let (code, stdout, stderr) = exit_and_stdout(child, 1);
        assert_eq!(
            (code, &stdout[..]),
            (0, &[RESULT.to_string()][..]),
            "{wire}: {stderr:?}"
        );
        assert_eq!(stderr, Vec::<String>::new(), "{wire}");
    }
}

#[test]
fn enqueue_wait_json_prints_the_effect_and_the_outcome_with_its_result() {
    for (server, wire) in servers() {
        let args = enqueue_args("r1", &["--wait", "--json"]);
        let child = spawn_wire(&server, wire, &args);
        wait_until_waited(&server, "q", "r1");
        complete_raw(&server, wire, "q", "r1");
        let (code, stdout, stderr) = exit_and_stdout(child, 1);
        assert_eq!(code, 0, "{wire}: {stderr:?}");
        let printed: Value = serde_json::from_str(&stdout[0]).unwrap();
        let result: Value = serde_json::from_str(RESULT).unwrap();
        let expected = json!({"id": "r1", "created": true, "effect": "created",
                              "outcome": "completed", "result": result});
        assert_eq!(printed, expected, "{wire}");
        // An existing id waits for the job holding it: decided, at once.
        let run = run_on(&server, wire, &args);
        assert_ok(&run);
        let expected = json!({"id": "r1", "created": false, "effect": "existed",
                              "outcome": "completed", "result": result});
        assert_eq!(run.json(), expected, "{wire}");
    }
}

#[test]
fn enqueue_wait_for_a_job_that_dies_exits_1_naming_its_error_and_attempts() {
    for (server, wire) in servers() {
        let args = enqueue_args("d1", &["--attempts", "2", "--wait"]);
        let child = spawn_wire(&server, wire, &args);
        wait_until_waited(&server, "q", "d1");
        fail_to_death(&server, wire, "q", "d1", 2);
        let (code, _, stderr) = exit_and_stdout(child, 0);
        assert_eq!(code, 1, "{wire}: {stderr:?}");
        assert_eq!(stderr.len(), 1, "{wire}: {stderr:?}");
        for needle in ["job d1", "dead", "2 failed attempts", "boom: no route"] {
            assert!(
                stderr[0].contains(needle),
                "{wire}: {needle:?} in {stderr:?}"
            );
        }
        let run = run_on(&server, wire, &[&args[..], &["--json"]].concat());
        assert_eq!(run.code, 1, "{wire}: {}", run.stderr);
        let expected = json!({"id": "d1", "created": false, "effect": "existed",
                              "outcome": "dead", "error": "boom: no route", "attempts": 2});
        assert_eq!(run.json(), expected, "{wire}");
        let error: Value = serde_json::from_str(run.stderr.trim()).unwrap();
        assert_eq!(error["error"]["code"], "dead", "{wire}: {error}");
    }
}

#[test]
fn enqueue_wait_for_a_cancelled_job_exits_1_naming_it() {
    for (server, wire) in servers() {
        assert_ok(&run_on(&server, wire, &enqueue_args("c1", &[])));
        assert_ok(&run_on(&server, wire, &["cancel", "q", "c1"]));
        let args = enqueue_args("c1", &["--wait"]);
        assert_exit(&run_on(&server, wire, &args), 1, &["job c1", "cancelled"]);
        let run = run_on(&server, wire, &[&args[..], &["--json"]].concat());
        assert_eq!(run.code, 1, "{wire}: {}", run.stderr);
        let expected = json!({"id": "c1", "created": false, "effect": "existed",
                              "outcome": "cancelled"});
        assert_eq!(run.json(), expected, "{wire}");
    }
}

#[test]
fn enqueue_wait_that_times_out_exits_3_naming_the_job_left_pending() {
    for (server, wire) in servers() {
        let args = enqueue_args("t1", &["--wait", "--wait-timeout", "200ms"]);
        let run = run_on(&server, wire, &args);
        assert_exit(&run, 3, &["job t1", "200ms", "timed out", "runs on"]);
        assert_eq!(
            job(&server, "q", "t1")["state"],
            "pending",
            "{wire}: left as it was"
        );
        let run = run_on(&server, wire, &[&args[..], &["--json"]].concat());
        assert_eq!(run.code, 3, "{wire}: {}", run.stderr);
        let expected = json!({"id": "t1", "created": false, "effect": "existed"});
        assert_eq!(run.json(), expected, "{wire}: no outcome yet");
        let error: Value = serde_json::from_str(run.stderr.trim()).unwrap();
        assert_eq!(error["error"]["code"], "timeout", "{wire}: {error}");
        assert_eq!(job(&server, "q", "t1")["state"], "pending", "{wire}");
    }
}

/// `emq enqueue q {} --wait <extra…>` on a fresh server: refused with
/// exit 2, its stderr naming each of `needles`, and no job enqueued.
fn assert_enqueue_refused(extra: &[&str], needles: &[&str]) {
    let server = TestServer::start();
    let args = [&["enqueue", "q", "{}"], extra].concat();
    assert_refused_writing_nothing(&server, &run_on(&server, "script", &args), needles);
}

#[test]
fn a_wait_timeout_of_zero_is_refused_before_anything_is_enqueued() {
    assert_enqueue_refused(
        &["--wait", "--wait-timeout", "0s"],
        &["--wait-timeout", "zero"],
    );
}

#[test]
fn a_negative_wait_timeout_is_refused_before_anything_is_enqueued() {
    assert_enqueue_refused(
        &["--wait", "--wait-timeout", "-5s"],
        &["--wait-timeout", "negative"],
    );
}

#[test]
fn a_wait_timeout_that_is_not_a_duration_is_refused_before_anything_is_enqueued() {
    assert_enqueue_refused(
        &["--wait", "--wait-timeout", "soon"],
        &["--wait-timeout", "duration"],
    );
}

#[test]
fn a_wait_timeout_without_wait_is_refused_before_anything_is_enqueued() {
    assert_enqueue_refused(
        &["--wait-timeout", "5s"],
        &["required arguments were not provided", "--wait"],
    );
}

#[test]
fn wait_begun_before_the_completion_prints_the_result_and_exits_0() {
    for (server, wire) in servers() {
        assert_ok(&run_on(&server, wire, &enqueue_args("w1", &[])));
        let child = spawn_wire(&server, wire, &["wait", "q", "w1"]);
        wait_until_waited(&server, "q", "w1");
        complete_raw(&server, wire, "q", "w1");
        let (code, stdout, stderr) = exit_and_stdout(child, 1);
        assert_eq!(
            (code, &stdout[..]),
            (0, &[RESULT.to_string()][..]),
            "{wire}: {stderr:?}"
        );
        // Decided already: the same, at once; --json adds the outcome.
        let run = run_on(&server, wire, &["wait", "q", "w1"]);
        assert_ok(&run);
        assert_eq!(run.stdout, format!("{RESULT}\n"), "{wire}");
        let run = run_on(&server, wire, &["wait", "q", "w1", "--json"]);
        assert_ok(&run);
        let result: Value = serde_json::from_str(RESULT).unwrap();
        let expected = json!({"id": "w1", "outcome": "completed", "result": result});
        assert_eq!(run.json(), expected, "{wire}");
    }
}

#[test]
fn wait_for_a_dead_job_exits_1_naming_its_error_and_attempts() {
    for (server, wire) in servers() {
        let enqueue = enqueue_args("d1", &["--attempts", "1"]);
        assert_ok(&run_on(&server, wire, &enqueue));
        fail_to_death(&server, wire, "q", "d1", 1);
        let run = run_on(&server, wire, &["wait", "q", "d1"]);
        assert_exit(
            &run,
            1,
            &["job d1", "dead", "1 failed attempt:", "boom: no route"],
        );
        let run = run_on(&server, wire, &["wait", "q", "d1", "--json"]);
        assert_eq!(run.code, 1, "{wire}: {}", run.stderr);
        let expected =
            json!({"id": "d1", "outcome": "dead", "error": "boom: no route", "attempts": 1});
        assert_eq!(run.json(), expected, "{wire}");
    }
}

#[test]
fn wait_for_a_cancelled_job_exits_1_naming_it() {
    for (server, wire) in servers() {
        assert_ok(&run_on(&server, wire, &enqueue_args("c1", &[])));
        let child = spawn_wire(&server, wire, &["wait", "q", "c1"]);
        wait_until_waited(&server, "q", "c1");
        assert_ok(&run_on(&server, wire, &["cancel", "q", "c1"]));
        let (code, _, stderr) = exit_and_stdout(child, 0);
        assert_eq!(code, 1, "{wire}: {stderr:?}");
        assert!(
            stderr[0].contains("job c1 in queue q was cancelled"),
            "{wire}: {stderr:?}"
        );
        let run = run_on(&server, wire, &["wait", "q", "c1", "--json"]);
        assert_eq!(run.code, 1, "{wire}: {}", run.stderr);
        assert_eq!(
            run.json(),
            json!({"id": "c1", "outcome": "cancelled"}),
            "{wire}"
        );
    }
}

#[test]
fn wait_for_an_unknown_id_answers_removed_with_exit_1() {
    for (server, wire) in servers() {
        let run = run_on(&server, wire, &["wait", "q", "nosuch"]);
        assert_exit(
            &run,
            1,
            &["job nosuch in queue q", "removed", "never enqueued"],
        );
        let run = run_on(&server, wire, &["wait", "q", "nosuch", "--json"]);
        assert_eq!(run.code, 1, "{wire}: {}", run.stderr);
        assert_eq!(
            run.json(),
            json!({"id": "nosuch", "outcome": "removed"}),
            "{wire}"
        );
        let error: Value = serde_json::from_str(run.stderr.trim()).unwrap();
        assert_eq!(error["error"]["code"], "removed", "{wire}: {error}");
    }
}

#[test]
fn wait_that_times_out_exits_3_naming_the_job_left_pending() {
    for (server, wire) in servers() {
        assert_ok(&run_on(&server, wire, &enqueue_args("t1", &[])));
        let run = run_on(&server, wire, &["wait", "q", "t1", "--timeout", "200ms"]);
        assert_exit(&run, 3, &["job t1", "200ms", "timed out", "runs on"]);
        assert_eq!(
            job(&server, "q", "t1")["state"],
            "pending",
            "{wire}: left as it was"
        );
        let run = run_on(
            &server,
            wire,
            &["wait", "q", "t1", "--timeout", "1ms", "--json"],
        );
        assert_eq!(run.code, 3, "{wire}: {}", run.stderr);
        assert_eq!(run.json(), json!({"id": "t1"}), "{wire}: no outcome yet");
    }
}

/// `emq wait <args…>` on a fresh server: refused with exit 2, its stderr
/// naming each of `needles`, and nothing written.
fn assert_wait_refused(args: &[&str], needles: &[&str]) {
    let server = TestServer::start();
    let args = [&["wait"], args].concat();
    assert_refused_writing_nothing(&server, &run_on(&server, "script", &args), needles);
}

#[test]
fn a_wait_of_zero_is_refused() {
    assert_wait_refused(&["q", "j1", "--timeout", "0ms"], &["--timeout", "zero"]);
}

#[test]
fn a_negative_wait_is_refused() {
    assert_wait_refused(&["q", "j1", "--timeout", "-1s"], &["--timeout", "negative"]);
}

#[test]
fn a_wait_that_is_not_a_duration_is_refused() {
    assert_wait_refused(&["q", "j1", "--timeout", "30"], &["--timeout", "no unit"]);
}

#[test]
fn a_wait_on_an_invalid_queue_name_is_refused() {
    assert_wait_refused(&["bad queue", "j1"], &["queue name", "bad queue"]);
}

#[test]
fn a_wait_on_an_invalid_job_id_is_refused() {
    assert_wait_refused(&["q", "has space"], &["job id", "has space"]);
}
