//! The verbs on one job's row — cancel, update, remove, reprocess,
//! requeue, log — and `emq job`'s log tail: output, `--json` shapes, and
//! every refusal exiting 1 with a message naming job, verb and state.

use crate::common::{
    self, assert_ok, assert_refused, claim_all, complete_one, emq_on, job, stats, table_row,
};
use echomq_testkit::TestServer;
use serde_json::json;
use std::time::Duration;

fn enqueue(server: &TestServer, queue: &str, id: &str) {
    assert_ok(&emq_on(
        server,
        &["enqueue", queue, r#"{"n":1}"#, "--id", id],
    ));
}

#[test]
fn cancel_of_a_pending_job_cancels_it() {
    let server = TestServer::start();
    enqueue(&server, "q", "p1");
    let run = emq_on(&server, &["cancel", "q", "p1"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "cancelled job p1\n");
    assert_eq!(job(&server, "q", "p1")["state"], "cancelled");

    enqueue(&server, "q", "p2");
    let run = emq_on(&server, &["cancel", "q", "p2", "--json"]);
    assert_ok(&run);
    assert_eq!(run.json(), json!({"id": "p2", "outcome": "cancelled"}));
}

#[test]
fn cancel_of_an_active_job_is_a_request() {
    let server = TestServer::start();
    enqueue(&server, "q", "a1");
    claim_all(&server, "q", Duration::from_secs(60));
    let run = emq_on(&server, &["cancel", "q", "a1"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "cancellation requested for job a1\n");
    let job = job(&server, "q", "a1");
    assert_eq!(job["state"], "active", "{job}");
    assert_eq!(job["cancel_requested"], true, "{job}");
    let run = emq_on(&server, &["cancel", "q", "a1", "--json"]);
    assert_eq!(run.json(), json!({"id": "a1", "outcome": "requested"}));
}

#[test]
fn cancel_of_a_completed_job_is_refused() {
    let server = TestServer::start();
    enqueue(&server, "q", "c1");
    complete_one(&server, "q");
    let run = emq_on(&server, &["cancel", "q", "c1"]);
    assert_refused(&run, &["cancel", "c1", "completed", "BADSTATE"]);
    let run = emq_on(&server, &["cancel", "q", "nope"]);
    assert_refused(&run, &["cancel", "nope", "NOJOB"]);
}

/// A missing job was `job 42 not found in queue q`, `no such job in queue
/// q` or `no such job (NOJOB)` (no queue) depending on the verb: every
/// command now says `no job <id> in queue <queue>`, exit 1.
#[test]
fn a_missing_job_reads_alike_in_every_command_naming_the_queue() {
    let server = TestServer::start();
    enqueue(&server, "mail", "other");
    for args in [
        &["job", "mail", "42"][..],
        &["flow", "show", "mail", "42"],
        &["cancel", "mail", "42"],
        &["update", "mail", "42", "{}"],
        &["remove", "mail", "42"],
        &["reprocess", "mail", "42"],
        &["requeue", "mail", "42"],
        &["log", "mail", "42", "a line"],
        &["reschedule", "mail", "42", "--in", "1h"],
    ] {
        let run = emq_on(&server, args);
        assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
        assert!(
            run.stderr.contains("no job 42 in queue mail"),
            "{args:?}: {}",
            run.stderr
        );
        // The reads say it plainly; the verbs say they were refused.
        if !matches!(args[0], "job" | "flow") {
            let verb = format!("emq: {} refused: ", args[0]);
            assert!(run.stderr.starts_with(&verb), "{args:?}: {}", run.stderr);
        }
    }
}

/// The value of a field in `emq job`'s table: the words after its name.
fn field(text: &str, name: &str) -> String {
    table_row(text, name)[1..].join(" ")
}

/// A row kept fields that no longer applied: a requeued job's old run_at,
/// a reprocessed job's old worker and result. They show `-` now (the
/// stored record, `--json`, is unchanged).
#[test]
fn rows_show_a_dash_for_fields_the_state_no_longer_has() {
    let server = TestServer::start();
    assert_ok(&emq_on(
        &server,
        &["enqueue", "q", "{}", "--id", "later", "--in", "1h"],
    ));
    let run = emq_on(&server, &["job", "q", "later"]);
    assert_ne!(field(&run.stdout, "run_at"), "-", "{}", run.stdout);
    assert_ok(&emq_on(&server, &["requeue", "q", "later"]));
    let run = emq_on(&server, &["job", "q", "later"]);
    assert_ok(&run);
    assert_eq!(field(&run.stdout, "run_at"), "-", "{}", run.stdout);
    assert!(
        job(&server, "q", "later")["run_at"].is_u64(),
        "JSON keeps the record"
    );
    let run = emq_on(&server, &["jobs", "q", "--state", "pending"]);
    assert_eq!(table_row(&run.stdout, "later")[4], "-", "{}", run.stdout);

    enqueue(&server, "done", "d1");
    complete_one(&server, "done");
    let run = emq_on(&server, &["job", "done", "d1"]);
    assert_eq!(field(&run.stdout, "worker"), "test", "{}", run.stdout);
    assert_eq!(field(&run.stdout, "result"), "\"done\"", "{}", run.stdout);
    assert_ok(&emq_on(&server, &["reprocess", "done", "d1"]));
    let run = emq_on(&server, &["job", "done", "d1"]);
    assert_ok(&run);
    for name in [
        "claimed_at",
        "finished_at",
        "worker",
        "progress",
        "result",
        "cancel_requested",
    ] {
        assert_eq!(field(&run.stdout, name), "-", "{name}: {}", run.stdout);
    }
}

#[test]
fn update_replaces_the_payload() {
    let server = TestServer::start();
    enqueue(&server, "q", "u1");
    let run = emq_on(&server, &["update", "q", "u1", r#"{"n":2}"#]);
    assert_ok(&run);
    assert_eq!(run.stdout, "updated job u1\n");
    assert_eq!(job(&server, "q", "u1")["payload"], json!({"n": 2}));
    let run = emq_on(&server, &["update", "q", "u1", "[3]", "--json"]);
    assert_ok(&run);
    assert_eq!(run.json(), json!({"id": "u1", "updated": true}));
    assert_eq!(job(&server, "q", "u1")["payload"], json!([3]));
}

#[test]
fn update_of_a_missing_job_is_refused() {
    let server = TestServer::start();
    let run = emq_on(&server, &["update", "q", "ghost", "{}"]);
    assert_refused(&run, &["update", "no job ghost in queue q", "NOJOB"]);
    let run = emq_on(&server, &["update", "q", "ghost", "{nope"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("<json>"), "{}", run.stderr);
}

#[test]
fn remove_deletes_a_job_and_refuses_an_active_one_without_force() {
    let server = TestServer::start();
    enqueue(&server, "q", "r1");
    let run = emq_on(&server, &["remove", "q", "r1"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "removed job r1\n");
    let run = emq_on(&server, &["job", "q", "r1"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let run = emq_on(&server, &["remove", "q", "r1"]);
    assert_refused(&run, &["remove", "no job r1 in queue q", "NOJOB"]);

    enqueue(&server, "q", "r2");
    claim_all(&server, "q", Duration::from_secs(60));
    let run = emq_on(&server, &["remove", "q", "r2"]);
    assert_refused(&run, &["remove", "r2", "active", "BADSTATE"]);
    assert_eq!(job(&server, "q", "r2")["state"], "active");
    let run = emq_on(&server, &["remove", "q", "r2", "--force", "--json"]);
    assert_ok(&run);
    assert_eq!(run.json(), json!({"id": "r2", "removed": true}));
    assert_eq!(stats(&server, "q")["total"], 0);
}

#[test]
fn reprocess_sends_a_finished_job_back_and_refuses_a_pending_one() {
    let server = TestServer::start();
    enqueue(&server, "q", "x1");
    let run = emq_on(&server, &["reprocess", "q", "x1"]);
    assert_refused(&run, &["reprocess", "x1", "pending", "BADSTATE"]);

    complete_one(&server, "q");
    let run = emq_on(&server, &["reprocess", "q", "x1"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "reprocessed job x1\n");
    let job = job(&server, "q", "x1");
    assert_eq!(job["state"], "pending", "{job}");
    assert_eq!(job["result"], json!(null), "{job}");
    assert_eq!(job["claims"], 1, "claims are kept: {job}");
    complete_one(&server, "q");
    let run = emq_on(&server, &["reprocess", "q", "x1", "--json"]);
    assert_eq!(run.json(), json!({"id": "x1", "reprocessed": true}));
}

#[test]
fn requeue_moves_an_active_job_back_and_refuses_a_completed_one() {
    let server = TestServer::start();
    enqueue(&server, "q", "a1");
    claim_all(&server, "q", Duration::from_secs(60));
    let run = emq_on(&server, &["requeue", "q", "a1"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "requeued job a1\n");
    assert_eq!(job(&server, "q", "a1")["state"], "pending");

    complete_one(&server, "q");
    let run = emq_on(&server, &["requeue", "q", "a1"]);
    assert_refused(&run, &["requeue", "a1", "completed", "BADSTATE"]);

    assert_ok(&emq_on(
        &server,
        &["enqueue", "q", "{}", "--id", "s1", "--in", "1h"],
    ));
    let run = emq_on(&server, &["requeue", "q", "s1", "--json"]);
    assert_ok(&run);
    assert_eq!(run.json(), json!({"id": "s1", "requeued": true}));
    assert_eq!(job(&server, "q", "s1")["state"], "pending");
}

#[test]
fn log_appends_and_job_shows_the_newest_ten_lines() {
    let server = TestServer::start();
    enqueue(&server, "q", "l1");
    let run = emq_on(&server, &["log", "q", "l1", "first line"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "logged line 1 of job l1\n");
    for n in 2..=12 {
        let run = emq_on(&server, &["log", "q", "l1", &format!("line {n}"), "--json"]);
        assert_ok(&run);
        assert_eq!(run.json(), json!({"id": "l1", "logs": n}));
    }
    let shown = job(&server, "q", "l1");
    assert_eq!(shown["logs"], 12, "{shown}");
    let tail: Vec<String> = (3..=12).map(|n| format!("line {n}")).collect();
    assert_eq!(shown["log"], json!(tail), "{shown}");

    let run = emq_on(&server, &["job", "q", "l1"]);
    assert_ok(&run);
    assert_eq!(table_row(&run.stdout, "logs"), ["logs", "12"]);
    let after: Vec<&str> = run
        .stdout
        .lines()
        .skip_while(|line| !line.starts_with("log (newest 10 of 12)"))
        .collect();
    assert_eq!(after.len(), 11, "{}", run.stdout);
    assert_eq!(after[1], "  line 3");
    assert_eq!(after[10], "  line 12");

    let run = emq_on(&server, &["log", "q", "ghost", "hello"]);
    assert_refused(&run, &["log", "ghost", "NOJOB"]);
}

#[test]
fn bad_job_ids_exit_2_before_connecting() {
    for verb in ["cancel", "reprocess", "requeue"] {
        let run = common::emq(&["--url", "redis://127.0.0.1:1", verb, "q", "bad id"]);
        assert_eq!(run.code, 2, "{verb}: {}", run.stderr);
        assert!(
            !run.stderr.contains("cannot reach"),
            "{verb}: {}",
            run.stderr
        );
    }
}
