//! `emq worker --exec`: commands complete and fail jobs, a cancel from
//! another process stops a running command, a killed worker's jobs are
//! recovered and completed exactly once, and SIGTERM shuts down gracefully.

use crate::common::{
    self, PATIENCE, Spawned, assert_ok, emq_on, job, spawn_on, stats, wait_for_state,
};
use echomq_testkit::{TestServer, wait_until};
use serde_json::{Value, json};
use std::collections::BTreeSet;

fn enqueue(server: &TestServer, queue: &str, id: &str, payload: &str, attempts: &str) {
    assert_ok(&emq_on(
        server,
        &[
            "enqueue",
            queue,
            payload,
            "--id",
            id,
            "--attempts",
            attempts,
        ],
    ));
}

/// The next `--json` line of a worker.
fn report(worker: &mut Spawned) -> Value {
    let line = worker.next_line();
    serde_json::from_str(&line).unwrap_or_else(|err| panic!("{err}: {line}"))
}

/// SIGTERM, then exit 0.
fn stop(mut worker: Spawned) -> Vec<String> {
    worker.signal("TERM");
    let status = worker.wait_exit();
    assert_eq!(status.code(), Some(0), "{:?}", worker.errors);
    worker.errors.clone()
}

/// A generated id is a number: `completed 1` read like a count. Each
/// finished attempt's line names the job: `completed job 1`.
#[test]
fn worker_lines_say_job_before_the_id() {
    let server = TestServer::start();
    let enqueued = emq_on(&server, &["enqueue", "q", "{}", "--json"]);
    assert_ok(&enqueued);
    let id = enqueued.json()["id"].as_str().unwrap().to_string();
    let mut worker = spawn_on(&server, &["worker", "q", "--exec", "cat"]);
    let line = worker.wait_stderr("completed");
    assert_eq!(line, format!("completed job {id}"));
    stop(worker);
}

/// `emq worker`'s stderr mixed tracing's lines (`2026-…Z  WARN
/// echomq::server_check: …`) with its own: the library's warnings now read
/// as the worker's lines do (`warning: … (name=value)`), unless RUST_LOG
/// asks for tracing's format.
#[test]
fn worker_stderr_is_one_plain_line_format() {
    let server = TestServer::start();
    let _: () = redis::cmd("CONFIG")
        .arg(&["SET", "maxmemory-policy", "allkeys-lfu"])
        .query(&mut server.client().get_connection().unwrap())
        .unwrap();
    enqueue(&server, "q", "ok", "{}", "3");
    enqueue(&server, "q", "bad", "{}", "1");
    let command = "test \"$EMQ_JOB_ID\" = ok || { echo nope >&2; exit 3; }";
    let mut worker = spawn_on(&server, &["worker", "q", "--exec", command]);
    worker.wait_stderr("completed job ok");
    worker.wait_stderr("failed job bad");
    let lines = stop(worker);
    let warning = lines
        .iter()
        .find(|line| line.contains("eviction policy"))
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert!(
        warning.starts_with("warning: the server's eviction policy"),
        "{lines:?}"
    );
    assert!(
        warning.ends_with("(maxmemory_policy=allkeys-lfu)"),
        "{lines:?}"
    );
    for line in &lines {
        let raw = line.contains(" WARN ") || line.contains("echomq::");
        let stamped = line.starts_with(|c: char| c.is_ascii_digit());
        assert!(!raw && !stamped, "a raw tracing line: {line}\n{lines:?}");
    }
    let run = common::emq_with_env(
        &["--url", &server.url(), "stats", "q"],
        &[("RUST_LOG", "warn")],
    );
    assert!(
        run.stderr.contains("WARN echomq::server_check"),
        "{}",
        run.stderr
    );
}

#[test]
fn cat_completes_jobs_with_the_payload_as_the_result() {
    let server = TestServer::start();
    enqueue(&server, "q", "c1", r#"{"to":"ada","n":[1,2]}"#, "3");
    enqueue(&server, "q", "c2", r#""just text""#, "3");
    let mut worker = spawn_on(&server, &["worker", "q", "--exec", "cat", "--json"]);
    let mut seen = BTreeSet::new();
    for _ in 0..2 {
        let line = report(&mut worker);
        assert_eq!(line["outcome"], "completed", "{line}");
        assert_eq!(line["attempt"], 1, "{line}");
        assert_eq!(line["exit_code"], 0, "{line}");
        seen.insert(line["id"].as_str().unwrap().to_string());
    }
    assert_eq!(seen, BTreeSet::from(["c1".into(), "c2".into()]));
    let done = job(&server, "q", "c1");
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["result"], json!({"n": [1, 2], "to": "ada"}), "{done}");
    assert_eq!(job(&server, "q", "c2")["result"], "just text");
    stop(worker);
}

#[test]
fn commands_see_the_job_in_their_environment() {
    let server = TestServer::start();
    enqueue(&server, "env", "e1", "{}", "3");
    let command =
        r#"printf '%s %s %s/%s' "$EMQ_QUEUE" "$EMQ_JOB_ID" "$EMQ_ATTEMPT" "$EMQ_MAX_ATTEMPTS""#;
    let worker = spawn_on(&server, &["worker", "env", "--exec", command]);
    let done = wait_for_state(&server, "env", "e1", "completed");
    assert_eq!(done["result"], "env e1 1/3", "{done}");
    let errors = stop(worker);
    assert!(
        errors.iter().any(|line| line == "completed job e1"),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|line| line.starts_with("worker stopped: 1 claimed, 1 completed")),
        "{errors:?}"
    );
}

/// `EMQ_TOKEN` is the fencing token of the claim the command runs under:
/// `claimed_at × 1000 + claims mod 1000` of the job's record
/// (docs/protocol.md, Fencing).
#[test]
fn commands_see_their_claims_fencing_token() {
    let server = TestServer::start();
    enqueue(&server, "env", "t1", "{}", "1");
    let worker = spawn_on(
        &server,
        &["worker", "env", "--exec", r#"printf '%s' "$EMQ_TOKEN""#],
    );
    let done = wait_for_state(&server, "env", "t1", "completed");
    let claimed_at = done["claimed_at"].as_u64().expect("claimed_at");
    let claims = done["claims"].as_u64().expect("claims");
    assert_eq!(
        done["result"],
        json!(claimed_at * 1000 + claims % 1000),
        "{done}"
    );
    stop(worker);
}

#[test]
fn a_failing_command_fails_the_job_with_its_stderr() {
    let server = TestServer::start();
    enqueue(&server, "q", "b1", "{}", "1");
    let mut worker = spawn_on(
        &server,
        &["worker", "q", "--exec", "echo boom >&2; exit 3", "--json"],
    );
    let line = report(&mut worker);
    assert_eq!(line["id"], "b1", "{line}");
    assert_eq!(line["outcome"], "failed", "{line}");
    assert_eq!(line["error"], "boom", "{line}");
    assert_eq!(line["exit_code"], 3, "{line}");
    assert_eq!(line["retry"], false, "{line}");
    let dead = wait_for_state(&server, "q", "b1", "dead");
    assert_eq!(dead["error"], "boom", "{dead}");
    assert_eq!(dead["failures"], 1, "{dead}");
    stop(worker);
}

#[test]
fn a_failing_command_is_reported_on_stderr_and_retried() {
    let server = TestServer::start();
    enqueue(&server, "q", "b2", "{}", "3");
    let mut worker = spawn_on(&server, &["worker", "q", "--exec", "echo boom >&2; exit 3"]);
    let line = worker.wait_stderr("failed job b2");
    assert_eq!(line, "failed job b2: boom (attempt 1 of 3, will retry)");
    let errors = stop(worker);
    assert!(
        !errors.iter().any(|line| line.contains("panicked")),
        "{errors:?}"
    );
    let retried = job(&server, "q", "b2");
    assert_eq!(retried["failures"].as_u64(), Some(1), "{retried}");
    assert_eq!(retried["error"], "boom", "{retried}");
}

#[test]
fn a_failure_line_shows_the_escapes_of_the_commands_stderr_escaped() {
    let server = TestServer::start();
    enqueue(&server, "q", "b3", "{}", "3");
    let exec = r"printf 'boom\033[2J\033]52;c;aGk=\007' >&2; exit 3";
    let mut worker = spawn_on(&server, &["worker", "q", "--exec", exec]);
    let line = worker.wait_stderr("failed job b3");
    assert_eq!(
        line,
        r"failed job b3: boom\x1b[2J\x1b]52;c;aGk=\x07 (attempt 1 of 3, will retry)"
    );
    stop(worker);
    let retried = job(&server, "q", "b3");
    assert_eq!(
        retried["error"], "boom\u{1b}[2J\u{1b}]52;c;aGk=\u{7}",
        "{retried}"
    );
}

#[test]
fn cancel_from_another_process_stops_the_running_command() {
    let server = TestServer::start();
    enqueue(&server, "q", "s1", "{}", "3");
    let worker = spawn_on(&server, &["worker", "q", "--exec", "sleep 30"]);
    wait_for_state(&server, "q", "s1", "active");
    let run = emq_on(&server, &["cancel", "q", "s1"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "cancellation requested for job s1\n");
    let cancelled = wait_for_state(&server, "q", "s1", "cancelled");
    assert_eq!(cancelled["failures"], 0, "{cancelled}");
    let errors = stop(worker);
    assert!(
        errors.iter().any(|line| line == "cancelled job s1"),
        "{errors:?}"
    );
}

#[test]
fn sigterm_shuts_down_gracefully_and_releases_the_running_job() {
    let server = TestServer::start();
    enqueue(&server, "q", "g1", "{}", "3");
    let worker = spawn_on(
        &server,
        &[
            "worker",
            "q",
            "--exec",
            "sleep 30",
            "--shutdown-deadline",
            "200ms",
        ],
    );
    wait_for_state(&server, "q", "g1", "active");
    let errors = stop(worker);
    let released = job(&server, "q", "g1");
    assert_eq!(released["state"], "pending", "{released}");
    assert_eq!(released["failures"], 0, "{released}");
    assert!(
        errors
            .iter()
            .any(|line| line == "released job g1 back to pending"),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|line| line.starts_with("worker stopped:") && line.contains("1 released")),
        "{errors:?}"
    );
}

#[test]
fn a_killed_workers_jobs_are_recovered_and_completed_exactly_once() {
    let server = TestServer::start();
    let ids = ["k1", "k2", "k3"];
    for (n, id) in ids.iter().enumerate() {
        enqueue(&server, "q", id, &format!(r#"{{"n":{n}}}"#), "3");
    }
    // Each command records its pid, so the test can end the sleeps the
    // killed worker leaves behind.
    let pids = tempfile::NamedTempFile::new().expect("pid file");
    let command = format!("echo $$ >> {}; exec sleep 30", pids.path().display());
    let mut first = spawn_on(
        &server,
        &[
            "worker",
            "q",
            "--exec",
            &command,
            "--concurrency",
            "3",
            "--lease",
            "1s",
            "--stalled-interval",
            "200ms",
        ],
    );
    wait_until("the first worker to hold every job", PATIENCE, || {
        stats(&server, "q")["active"] == 3
    });
    first.signal("KILL");
    first.wait_exit();

    let mut recovered = 0;
    wait_until(
        "the sweep to recover the killed worker's jobs",
        PATIENCE,
        || {
            let run = emq_on(&server, &["sweep", "q", "--json"]);
            assert_ok(&run);
            recovered += run.json()["recovered"].as_u64().unwrap();
            recovered == 3
        },
    );

    let mut second = spawn_on(&server, &["worker", "q", "--exec", "cat", "--json"]);
    let mut completed = Vec::new();
    for _ in ids {
        let line = report(&mut second);
        assert_eq!(line["outcome"], "completed", "{line}");
        completed.push(line["id"].as_str().unwrap().to_string());
    }
    completed.sort();
    assert_eq!(completed, ids);
    wait_until("every job to be completed", PATIENCE, || {
        stats(&server, "q")["completed"] == 3
    });
    stop(second);
    for (n, id) in ids.iter().enumerate() {
        let done = job(&server, "q", id);
        assert_eq!(done["state"], "completed", "{done}");
        assert_eq!(done["claims"], 2, "claimed by each worker once: {done}");
        assert_eq!(done["stalls"], 1, "{done}");
        assert_eq!(done["failures"], 0, "{done}");
        assert_eq!(done["result"], json!({ "n": n }), "{done}");
    }

    // If the killed worker came back, its tokens (claim 1) would be refused.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let emq = echomq::Connector::connect(server.url()).await.unwrap();
        let queue = emq.queue::<serde_json::Value>("q").unwrap();
        for id in ids {
            let id = echomq::JobId::new(id).unwrap();
            let err = queue.complete(&id, 1, &()).await.unwrap_err();
            assert_eq!(
                err.refused().map(|r| r.reason.clone()),
                Some(echomq::Refusal::NotActive)
            );
            let err = queue
                .fail(&id, 1, "late", echomq::FailAction::Dead)
                .await
                .unwrap_err();
            assert_eq!(
                err.refused().map(|r| r.reason.clone()),
                Some(echomq::Refusal::NotActive)
            );
        }
    });

    let pids = std::fs::read_to_string(pids.path()).expect("pids");
    for pid in pids.split_whitespace() {
        let _ = std::process::Command::new("kill").arg(pid).status();
    }
}

/// Every key on `server`, sorted.
fn every_key(server: &TestServer) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query(&mut server.client().get_connection().unwrap())
        .unwrap();
    keys.sort();
    keys
}

/// `emq worker <args…> --exec true` on a server holding queues `a` and
/// `b`: exit 2, one line on stderr containing `needle`, no key written.
fn refused_worker(queues: &str, flags: &[&str], needle: &str) {
    let server = TestServer::start();
    enqueue(&server, "a", "1", "{}", "1");
    enqueue(&server, "b", "1", "{}", "1");
    let before = every_key(&server);
    let mut args = vec!["worker", queues, "--exec", "true"];
    args.extend_from_slice(flags);
    let run = emq_on(&server, &args);
    assert_eq!(
        run.code, 2,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains(needle), "{needle:?} in {}", run.stderr);
    assert_eq!(run.stdout, "");
    assert_eq!(every_key(&server), before, "the refused worker wrote keys");
}

/// One worker over three queues runs the jobs of each, in strict order,
/// with `EMQ_QUEUE` naming each job's queue.
#[test]
fn a_worker_over_three_queues_runs_each_queues_jobs() {
    let server = TestServer::start();
    for queue in ["mail", "sms", "reports"] {
        enqueue(&server, queue, "1", "{}", "1");
    }
    let mut worker = spawn_on(
        &server,
        &[
            "--json",
            "worker",
            "reports,mail,sms",
            "--strict",
            "--exec",
            "echo \"$EMQ_QUEUE\"",
        ],
    );
    let order: Vec<String> = (0..3)
        .map(|_| report(&mut worker)["queue"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(order, ["reports", "mail", "sms"]);
    stop(worker);
    for queue in ["mail", "sms", "reports"] {
        assert_eq!(job(&server, queue, "1")["result"], json!(queue), "{queue}");
    }
}

#[test]
fn a_worker_over_an_unknown_queue_is_refused() {
    refused_worker("a,nosuch", &[], "unknown queue nosuch");
}

#[test]
fn a_worker_over_an_invalid_queue_name_is_refused() {
    refused_worker("a,,b", &[], "queue name is empty");
}

#[test]
fn a_worker_over_a_queue_listed_twice_is_refused() {
    refused_worker("a,b,a", &[], "queue a is listed twice");
}

#[test]
fn weights_that_do_not_match_the_queues_are_refused() {
    refused_worker("a,b", &["--weights", "3"], "1 weights for 2 queues");
}

#[test]
fn a_zero_weight_is_refused() {
    refused_worker("a,b", &["--weights", "3,0"], "queue b has weight 0");
}

#[test]
fn weights_and_strict_order_together_are_refused() {
    refused_worker(
        "a,b",
        &["--weights", "3,1", "--strict"],
        "weights and strict order exclude each other",
    );
}
