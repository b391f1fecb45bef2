//! The verbs on many jobs: several ids per per-job verb (`cancel`,
//! `remove`, `reprocess`, `requeue`), `retry` (ids, or `--all` of a
//! finished state) and `clean` (a finished state, `--older-than`), on both
//! wires; and every refusal of theirs, each writing nothing.

use crate::common::{
    self, Run, assert_ok, block_on, claim_all, job, queue, run_on, servers, stats,
};
use echomq::{FailAction, JobId};
use echomq_testkit::TestServer;
use serde_json::{Value, json};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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
            run.stdout, "cancelled job a\ncancelled job b\ncancelled job c\n",
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
        assert_eq!(run.stdout, "cancelled job a\ncancelled job c\n", "{wire}");
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
    let error = &objects[1]["error"];
    assert!(
        error["message"].as_str().unwrap().contains("NOJOB"),
        "{error}"
    );
    assert_eq!(error["code"], "not_found", "{error}");
    // The run's own error: one JSON line on stderr, as every error under
    // --json.
    let last: Value = serde_json::from_str(run.stderr.trim()).expect("one JSON line");
    assert!(
        last["error"]["message"].as_str().unwrap().contains("ghost"),
        "{last}"
    );
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
        assert_eq!(
            run.stdout, "reprocessed job r1\nreprocessed job r2\n",
            "{wire}"
        );
        claim_all(&server, "q", Duration::from_secs(60));
        let run = run_on(&server, wire, &["requeue", "q", "r1", "r2"]);
        assert_ok(&run);
        assert_eq!(run.stdout, "requeued job r1\nrequeued job r2\n", "{wire}");
        let run = run_on(&server, wire, &["remove", "q", "r1", "r2"]);
        assert_ok(&run);
        assert_eq!(run.stdout, "removed job r1\nremoved job r2\n", "{wire}");
        assert_eq!(stats(&server, "q")["total"], 0, "{wire}");
    }
}

#[test]
fn retry_of_ids_reprocesses_each() {
    for (server, wire) in servers() {
        finished(&server, wire, "q", &["d1", "d2"], "dead");
        let run = run_on(&server, wire, &["retry", "q", "d1", "d2"]);
        assert_ok(&run);
        assert_eq!(
            run.stdout, "reprocessed job d1\nreprocessed job d2\n",
            "{wire}"
        );
        let d1 = job(&server, "q", "d1");
        assert_eq!(d1["state"], "pending", "{wire} {d1}");
        assert_eq!(d1["failures"], 0, "{wire} {d1}");
    }
}

#[test]
fn retry_all_reprocesses_every_job_of_the_state_only() {
    for (server, wire) in servers() {
        finished(&server, wire, "q", &["d1", "d2", "d3"], "dead");
        finished(&server, wire, "q", &["c1"], "completed");
        let run = run_on(&server, wire, &["retry", "q", "--all", "--yes"]);
        assert_ok(&run);
        assert_eq!(run.stdout, "reprocessed 3 dead jobs of queue q\n", "{wire}");
        let counts = stats(&server, "q");
        assert_eq!(
            (counts["dead"].clone(), counts["pending"].clone()),
            (json!(0), json!(3))
        );
        assert_eq!(state(&server, "q", "c1"), "completed", "{wire}");

        let run = run_on(
            &server,
            wire,
            &[
                "retry",
                "q",
                "--all",
                "--state",
                "completed",
                "--yes",
                "--json",
            ],
        );
        assert_ok(&run);
        assert_eq!(
            run.json(),
            json!({"queue": "q", "state": "completed", "finished_before": null,
                   "reprocessed": 1, "refused": []})
        );
        assert_eq!(state(&server, "q", "c1"), "pending", "{wire}");
    }
}

#[test]
fn retry_all_with_ids_is_refused() {
    let server = TestServer::start();
    finished(&server, "script", "q", &["d1"], "dead");
    let run = run_on(&server, "script", &["retry", "q", "d1", "--all", "--yes"]);
    assert_usage(&run, &["ids or --all, not both"]);
    assert_eq!(state(&server, "q", "d1"), "dead");
}

#[test]
fn retry_without_ids_or_all_is_refused() {
    let server = TestServer::start();
    finished(&server, "script", "q", &["d1"], "dead");
    let run = run_on(&server, "script", &["retry", "q"]);
    assert_usage(&run, &["retry needs the ids", "--all"]);
    assert_eq!(state(&server, "q", "d1"), "dead");
}

#[test]
fn retry_all_without_yes_off_a_terminal_is_refused() {
    let server = TestServer::start();
    finished(&server, "script", "q", &["d1"], "dead");
    let run = run_on(&server, "script", &["retry", "q", "--all"]);
    assert_usage(
        &run,
        &["refusing to retry every dead job of queue q without --yes"],
    );
    assert_eq!(state(&server, "q", "d1"), "dead");
}

#[test]
fn retry_state_without_all_is_refused() {
    let server = TestServer::start();
    finished(&server, "script", "q", &["d1"], "dead");
    let run = run_on(&server, "script", &["retry", "q", "d1", "--state", "dead"]);
    assert_usage(&run, &["--all"]);
    assert_eq!(state(&server, "q", "d1"), "dead");
}

#[test]
fn clean_removes_every_job_of_the_state_only() {
    for (server, wire) in servers() {
        finished(&server, wire, "q", &["c1", "c2"], "completed");
        finished(&server, wire, "q", &["d1"], "dead");
        let run = run_on(
            &server,
            wire,
            &["clean", "q", "--state", "completed", "--yes"],
        );
        assert_ok(&run);
        assert_eq!(
            run.stdout, "removed 2 completed jobs of queue q\n",
            "{wire}"
        );
        let counts = stats(&server, "q");
        assert_eq!(
            (counts["completed"].clone(), counts["dead"].clone()),
            (json!(0), json!(1))
        );
        assert_eq!(
            run_on(&server, wire, &["job", "q", "c1"]).code,
            1,
            "{wire}: c1 is gone"
        );
    }
}

/// Moves job `id`'s finish (its `finished_at` and its score in the state's
/// set) `age` into the past, as if it had finished then.
fn backdate(
    server: &TestServer,
    queue_name: &str,
    state: echomq::JobState,
    id: &str,
    age: Duration,
) {
    let at = (SystemTime::now().duration_since(UNIX_EPOCH).unwrap() - age).as_millis() as u64;
    block_on(async {
        let queue = queue(server, queue_name).await;
        let id = JobId::new(id).unwrap();
        let mut connection = server.connection().await;
        let _: () = redis::pipe()
            .cmd("HSET")
            .arg(queue.keys().job(&id))
            .arg("finished_at")
            .arg(at)
            .cmd("ZADD")
            .arg(queue.keys().state_set(state))
            .arg("XX")
            .arg(at)
            .arg(id.as_str())
            .query_async(&mut connection)
            .await
            .expect("backdate");
    });
}

#[test]
fn clean_older_than_removes_only_jobs_finished_before_the_cutoff() {
    for (server, wire) in servers() {
        finished(&server, wire, "q", &["old1", "old2", "new"], "dead");
        let week_and_a_day = Duration::from_secs(8 * 86_400);
        backdate(&server, "q", echomq::JobState::Dead, "old1", week_and_a_day);
        backdate(
            &server,
            "q",
            echomq::JobState::Dead,
            "old2",
            week_and_a_day * 2,
        );
        let run = run_on(
            &server,
            wire,
            &[
                "clean",
                "q",
                "--state",
                "dead",
                "--older-than",
                "7d",
                "--yes",
                "--json",
            ],
        );
        assert_ok(&run);
        let report = run.json();
        assert_eq!(report["removed"], 2, "{wire} {report}");
        assert!(report["finished_before"].as_u64().is_some(), "{report}");
        assert_eq!(state(&server, "q", "new"), "dead", "{wire}");
        assert_eq!(stats(&server, "q")["dead"], 1, "{wire}");
    }
}

#[test]
fn clean_of_a_state_not_finished_is_refused() {
    let server = TestServer::start();
    enqueue(&server, "script", "q", "p1");
    let run = run_on(
        &server,
        "script",
        &["clean", "q", "--state", "pending", "--yes"],
    );
    assert_usage(
        &run,
        &[
            "\"pending\" is not a finished state",
            "completed, dead, cancelled",
        ],
    );
    assert_eq!(state(&server, "q", "p1"), "pending");
}

#[test]
fn clean_without_a_state_is_refused() {
    let run = common::emq(&["clean", "q", "--yes"]);
    assert_usage(&run, &["--state"]);
}

#[test]
fn clean_without_yes_off_a_terminal_is_refused() {
    let server = TestServer::start();
    finished(&server, "script", "q", &["c1"], "cancelled");
    let run = run_on(&server, "script", &["clean", "q", "--state", "cancelled"]);
    assert_usage(
        &run,
        &["refusing to delete every cancelled job of queue q without --yes"],
    );
    assert_eq!(state(&server, "q", "c1"), "cancelled");
}

/// The README's `emq <verb> …` line, as arguments.
fn readme_line(verb: &str) -> Vec<String> {
    common::readme::emq_lines()
        .into_iter()
        .find(|line| line.args[0] == verb)
        .unwrap_or_else(|| panic!("README.md has no line `emq {verb} …`"))
        .args
}

#[test]
fn the_readmes_retry_and_clean_lines_run() {
    let server = TestServer::start();
    finished(&server, "script", "mail", &["d1"], "dead");
    finished(&server, "script", "mail", &["c1"], "completed");
    backdate(
        &server,
        "mail",
        echomq::JobState::Completed,
        "c1",
        Duration::from_secs(8 * 86_400),
    );
    let retry = readme_line("retry");
    let run = run_on(
        &server,
        "script",
        &retry.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_ok(&run);
    assert_eq!(run.stdout, "reprocessed 1 dead job of queue mail\n");
    let clean = readme_line("clean");
    let run = run_on(
        &server,
        "script",
        &clean.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_ok(&run);
    assert!(
        run.stdout
            .starts_with("removed 1 completed job of queue mail (finished before "),
        "{}",
        run.stdout
    );
    let counts = stats(&server, "mail");
    assert_eq!(
        (counts["pending"].clone(), counts["completed"].clone()),
        (json!(1), json!(0))
    );
}

/// Enqueues `jobs` jobs on queue `name` and finishes each: dead when
/// `dead`, else completed.
fn fill_finished(server: &TestServer, name: &str, jobs: u64, dead: bool) {
    block_on(async {
        let queue = queue(server, name).await;
        for n in 0..jobs {
            let job = echomq::NewJob::new(json!({ "n": n })).attempts(1);
            queue.enqueue(job).await.expect("enqueue");
        }
        loop {
            let claimed = queue
                .claim("test", Duration::from_secs(60), 1000)
                .await
                .expect("claim");
            if claimed.is_empty() {
                break;
            }
            for job in claimed {
                let finished = if dead {
                    queue
                        .fail(&job.id, job.token, "broke", FailAction::Dead)
                        .await
                        .map(drop)
                } else {
                    queue.complete(&job.id, job.token, "done").await
                };
                finished.expect("finish");
            }
        }
    });
}

#[test]
fn retry_all_and_clean_walk_past_one_page() {
    let server = TestServer::start();
    let jobs = 1_200;
    fill_finished(&server, "q", jobs, true);
    assert_eq!(stats(&server, "q")["dead"], jobs);
    let run = run_on(&server, "script", &["retry", "q", "--all", "--yes"]);
    assert_ok(&run);
    assert_eq!(
        run.stdout,
        format!("reprocessed {jobs} dead jobs of queue q\n")
    );
    assert_eq!(stats(&server, "q")["pending"], jobs);

    let run = run_on(&server, "script", &["drain", "q"]);
    assert_ok(&run);
    fill_finished(&server, "q", jobs, false);
    // The queue keeps the newest 1000 completed jobs (keep_completed).
    let completed = stats(&server, "q")["completed"].as_u64().unwrap();
    assert!(completed > 500, "more than a page: {completed}");
    let run = run_on(
        &server,
        "script",
        &["clean", "q", "--state", "completed", "--yes"],
    );
    assert_ok(&run);
    assert_eq!(
        run.stdout,
        format!("removed {completed} completed jobs of queue q\n")
    );
    assert_eq!(stats(&server, "q")["total"], 0);
}
