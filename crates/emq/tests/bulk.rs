//! The verbs on many jobs: several ids per per-job verb (`cancel`,
//! `remove`, `reprocess`, `requeue`), on both wires; and their refusals,
//! each writing nothing.

mod common;

use common::{Run, assert_ok, block_on, claim_all, job, queue, run_on, servers, stats};
use echomq::FailAction;
use echomq_testkit::TestServer;
use serde_json::{Value, json};
use std::time::Duration;

/// Enqueues a job with id `id` on `queue` (1 attempt).
fn enqueue(server: &TestServer, wire: &str, queue: &str, id: &str) {
    assert_ok(&run_on(
        server,
        wire,
        &[
            "enqueue",
            queue,
            r#"{"n":1}"#,
            "--id",
            id,
            "--attempts",
            "1",
        ],
    ));
}

/// Claims every pending job of `queue` and finishes each as `how`:
/// `completed`, `dead` or `cancelled`.
fn finish_all(server: &TestServer, queue_name: &str, how: &str) {
    let claimed = claim_all(server, queue_name, Duration::from_secs(60));
    block_on(async {
        let queue = queue(server, queue_name).await;
        for (id, token) in &claimed {
            match how {
                "completed" => queue.complete(id, *token, "done").await.map(|_| ()),
                "dead" => queue
                    .fail(id, *token, "broke", FailAction::Dead)
                    .await
                    .map(|_| ()),
                _ => queue
                    .fail(id, *token, "stop", FailAction::Cancelled)
                    .await
                    .map(|_| ()),
            }
            .expect("finish");
        }
    });
}

/// `ids` of `queue` enqueued and finished as `how`.
fn finished(server: &TestServer, wire: &str, queue: &str, ids: &[&str], how: &str) {
    for id in ids {
        enqueue(server, wire, queue, id);
    }
    finish_all(server, queue, how);
}

fn state(server: &TestServer, queue: &str, id: &str) -> Value {
    job(server, queue, id)["state"].clone()
}

/// Exit 2, one line on stderr containing every needle, nothing on stdout.
fn assert_usage(run: &Run, needles: &[&str]) {
    assert_eq!(
        run.code, 2,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert_eq!(run.stdout, "");
    for needle in needles {
        assert!(run.stderr.contains(needle), "{needle:?} in {}", run.stderr);
    }
}

#[test]
fn cancel_of_several_ids_cancels_each_with_a_line_each() {
    for (server, wire) in servers() {
        for id in ["a", "b", "c"] {
            enqueue(&server, wire, "q", id);
        }
        let run = run_on(&server, wire, &["cancel", "q", "a", "b", "c"]);
        assert_ok(&run);
        assert_eq!(
            run.stdout, "cancelled a\ncancelled b\ncancelled c\n",
            "{wire}"
        );
        for id in ["a", "b", "c"] {
            assert_eq!(state(&server, "q", id), "cancelled", "{wire} {id}");
        }
    }
}

#[test]
fn several_ids_with_one_refused_handle_the_rest_and_exit_1_naming_it() {
    for (server, wire) in servers() {
        finished(&server, wire, "q", &["done"], "completed");
        enqueue(&server, wire, "q", "a");
        enqueue(&server, wire, "q", "c");
        let run = run_on(&server, wire, &["cancel", "q", "a", "done", "c"]);
        assert_eq!(run.code, 1, "{wire}: {}", run.stderr);
        assert_eq!(run.stdout, "cancelled a\ncancelled c\n", "{wire}");
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{wire}: {}", run.stderr);
        assert!(
            lines[0].contains("done") && lines[0].contains("BADSTATE"),
            "{wire}: {}",
            lines[0]
        );
        assert_eq!(
            lines[1], "emq: cancel failed for 1 of 3 jobs: done",
            "{wire}"
        );
        assert_eq!(state(&server, "q", "c"), "cancelled", "{wire}");
    }
}

#[test]
fn several_ids_with_json_print_one_object_per_id() {
    let server = TestServer::start();
    finished(&server, "script", "q", &["x", "y"], "dead");
    let run = run_on(
        &server,
        "script",
        &["reprocess", "q", "x", "ghost", "y", "--json"],
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    let objects: Vec<Value> = run
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect();
    assert_eq!(objects[0], json!({"id": "x", "reprocessed": true}));
    assert_eq!(objects[1]["id"], "ghost");
    assert!(objects[1]["error"].as_str().unwrap().contains("NOJOB"));
    assert_eq!(objects[2], json!({"id": "y", "reprocessed": true}));
    assert_eq!(objects.len(), 3);
}

#[test]
fn several_ids_with_a_bad_one_send_nothing() {
    let server = TestServer::start();
    enqueue(&server, "script", "q", "a");
    let run = run_on(&server, "script", &["cancel", "q", "a", "bad id"]);
    assert_usage(&run, &["job id \"bad id\"", "whitespace"]);
    assert_eq!(state(&server, "q", "a"), "pending");
}

#[test]
fn remove_reprocess_and_requeue_take_several_ids() {
    for (server, wire) in servers() {
        finished(&server, wire, "q", &["r1", "r2"], "dead");
        let run = run_on(&server, wire, &["reprocess", "q", "r1", "r2"]);
        assert_ok(&run);
        assert_eq!(run.stdout, "reprocessed r1\nreprocessed r2\n", "{wire}");
        claim_all(&server, "q", Duration::from_secs(60));
        let run = run_on(&server, wire, &["requeue", "q", "r1", "r2"]);
        assert_ok(&run);
        assert_eq!(run.stdout, "requeued r1\nrequeued r2\n", "{wire}");
        let run = run_on(&server, wire, &["remove", "q", "r1", "r2"]);
        assert_ok(&run);
        assert_eq!(run.stdout, "removed r1\nremoved r2\n", "{wire}");
        assert_eq!(stats(&server, "q")["total"], 0, "{wire}");
    }
}
