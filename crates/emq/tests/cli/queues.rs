//! The verbs over whole queues — queues, stats, jobs, pause, resume,
//! drain, obliterate, sweep — their output, `--json` shapes and refusals.

use crate::common::{
    PATIENCE, assert_ok, assert_refused, block_on, claim_all, clobber, complete_one, emq_on,
    queue_keys, run_on, servers, stats, table_row,
};
use echomq_testkit::{TestServer, wait_until};
use serde_json::{Value, json};
use std::time::Duration;

fn enqueue(server: &TestServer, queue: &str, payload: &str) {
    assert_ok(&emq_on(server, &["enqueue", queue, payload]));
}

#[test]
fn queues_lists_every_queue_with_its_counts() {
    let server = TestServer::start();
    let run = emq_on(&server, &["queues"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "no queues under prefix emq\n");
    assert_eq!(emq_on(&server, &["queues", "--json"]).json(), json!([]));

    enqueue(&server, "mail", "1");
    enqueue(&server, "mail", "2");
    enqueue(&server, "audit", "3");
    let run = emq_on(&server, &["queues"]);
    assert_ok(&run);
    assert_eq!(
        table_row(&run.stdout, "queue"),
        [
            "queue",
            "scheduled",
            "pending",
            "active",
            "completed",
            "dead",
            "cancelled",
            "blocked",
            "paused"
        ]
    );
    assert_eq!(
        table_row(&run.stdout, "mail"),
        ["mail", "0", "2", "0", "0", "0", "0", "0", "no"]
    );
    let list = emq_on(&server, &["queues", "--json"]).json();
    assert_eq!(list[0]["queue"], "audit", "sorted: {list}");
    assert_eq!(list[1]["queue"], "mail", "{list}");
    assert_eq!(list[1]["pending"], 2, "{list}");
    assert_eq!(list[1]["paused"], false, "{list}");
}

#[test]
fn queues_lists_the_healthy_queues_and_names_a_broken_ones_key_exiting_1() {
    let server = TestServer::start();
    for queue in ["a", "b", "c"] {
        enqueue(&server, queue, "1");
    }
    clobber(&server, "emq:{b}:pending");
    let problem = "emq:{b}:pending holds a string, expected a zset";

    let run = emq_on(&server, &["queues"]);
    assert_eq!(
        run.code, 1,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    assert_eq!(
        table_row(&run.stdout, "a"),
        ["a", "0", "1", "0", "0", "0", "0", "0", "no"]
    );
    assert_eq!(table_row(&run.stdout, "c")[0..3], ["c", "0", "1"]);
    assert!(
        run.stdout.contains(&format!("queue b: {problem}")),
        "{}",
        run.stdout
    );
    assert_eq!(run.stderr, "emq: 1 of 3 queues could not be read: b\n");

    let run = emq_on(&server, &["queues", "--json"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let list = run.json();
    assert_eq!(list[0]["pending"], 1, "{list}");
    assert_eq!(list[1], json!({"queue": "b", "error": problem}));
    assert_eq!(list[2]["queue"], "c", "{list}");
}

/// Runs `cmd` on `server`, raw.
fn raw(server: &TestServer, cmd: &mut redis::Cmd) {
    block_on(async {
        let _: redis::Value = cmd
            .query_async(&mut server.connection().await)
            .await
            .unwrap_or_else(|err| panic!("{cmd:?}: {err}"));
    })
}

#[test]
fn queues_lists_a_queue_made_without_the_client_on_both_wires() {
    for (server, wire) in servers() {
        if wire == "native" {
            raw(
                &server,
                redis::cmd("EMQ.ENQUEUE")
                    .arg("emq:{raw}")
                    .arg("j")
                    .arg("{}"),
            );
        } else {
            // What a raw FCALL of the library leaves: no registry entry.
            enqueue(&server, "raw", "1");
            raw(&server, redis::cmd("SREM").arg("emq:queues").arg("raw"));
        }
        let run = run_on(&server, wire, &["queues", "--json"]);
        assert_ok(&run);
        let list = run.json();
        assert_eq!(list[0]["queue"], "raw", "{wire}: {list}");
        assert_eq!(list[0]["pending"], 1, "{wire}: {list}");
    }
}

#[test]
fn queues_names_a_registry_member_that_is_not_a_queue_name_exiting_1() {
    let server = TestServer::start();
    enqueue(&server, "good", "1");
    raw(
        &server,
        redis::cmd("SADD").arg("emq:queues").arg("bad name"),
    );
    let problem = "emq:queues holds a member that is not a queue name: queue name \"bad name\" holds ' '; only A-Z a-z 0-9 _ . : - are allowed";

    let run = emq_on(&server, &["queues"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(table_row(&run.stdout, "good")[0..3], ["good", "0", "1"]);
    assert!(
        run.stdout.contains(&format!("queue bad name: {problem}")),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stderr,
        "emq: 1 of 2 queues could not be read: bad name\n"
    );
    let list = emq_on(&server, &["queues", "--json"]).json();
    assert_eq!(list[0], json!({"queue": "bad name", "error": problem}));
    assert_eq!(list[1]["pending"], 1, "{list}");
}

#[test]
fn stats_shows_paused_and_the_oldest_pending_age() {
    let server = TestServer::start();
    enqueue(&server, "q", "{}");
    let counts = stats(&server, "q");
    assert_eq!(counts["pending"], 1, "{counts}");
    assert_eq!(counts["total"], 1, "{counts}");
    assert!(
        counts["oldest_pending_age_ms"].as_u64().is_some(),
        "{counts}"
    );

    let run = emq_on(&server, &["stats", "q"]);
    assert_ok(&run);
    let age = table_row(&run.stdout, "oldest");
    assert_eq!(age[1], "pending", "{}", run.stdout);
    assert!(
        age[2].ends_with('s'),
        "an age such as 12ms or 1.5s: {}",
        run.stdout
    );

    complete_one(&server, "q");
    let counts = stats(&server, "q");
    assert_eq!(counts["oldest_pending_age_ms"], Value::Null, "{counts}");
    let run = emq_on(&server, &["stats", "q"]);
    assert_eq!(table_row(&run.stdout, "oldest"), ["oldest", "pending", "-"]);
}

#[test]
fn jobs_pages_through_a_state() {
    let server = TestServer::start();
    for n in 0..5 {
        assert_ok(&emq_on(
            &server,
            &[
                "enqueue",
                "q",
                &format!("{{\"n\":{n}}}"),
                "--id",
                &format!("j{n}"),
            ],
        ));
    }
    let run = emq_on(
        &server,
        &["jobs", "q", "--state", "pending", "--per-page", "2"],
    );
    assert_ok(&run);
    assert_eq!(
        table_row(&run.stdout, "id"),
        ["id", "state", "failures", "created", "run_at", "error"]
    );
    let row = table_row(&run.stdout, "j0");
    assert_eq!(row[1..3], ["pending", "0/3"], "{}", run.stdout);
    assert!(run.stdout.contains("j1"), "{}", run.stdout);
    assert!(!run.stdout.contains("j2"), "{}", run.stdout);
    assert!(
        run.stdout.ends_with("page 1 of 3 (5 jobs)\n"),
        "{}",
        run.stdout
    );

    let run = emq_on(
        &server,
        &["jobs", "q", "--page", "3", "--per-page", "2", "--json"],
    );
    assert_ok(&run);
    let page = run.json();
    assert_eq!(page["state"], "pending", "{page}");
    assert_eq!(page["page"], 3, "{page}");
    assert_eq!(page["pages"], 3, "{page}");
    assert_eq!(page["total"], 5, "{page}");
    let jobs = page["jobs"].as_array().expect("jobs");
    assert_eq!(jobs.len(), 1, "{page}");
    assert_eq!(jobs[0]["id"], "j4", "{page}");
    assert_eq!(jobs[0]["payload"], json!({"n": 4}), "{page}");

    let run = emq_on(&server, &["jobs", "q", "--state", "dead"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "queue q has no dead jobs\n");
}

/// A page past the last one printed an empty table: it prints nothing on
/// stdout and says so on stderr, naming the last page (exit 0: the
/// listing was read; --json says it with `page` and `pages`).
#[test]
fn a_page_past_the_last_says_so_naming_the_last() {
    let server = TestServer::start();
    for n in 0..3 {
        assert_ok(&emq_on(
            &server,
            &["enqueue", "q", "{}", "--id", &format!("j{n}")],
        ));
    }
    let args = [
        "jobs",
        "q",
        "--state",
        "pending",
        "--page",
        "9",
        "--per-page",
        "2",
    ];
    let run = emq_on(&server, &args);
    assert_ok(&run);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "note: page 9 is past the last page (2) of queue q's pending jobs (3)\n"
    );
    let run = emq_on(&server, &[&args[..], &["--json"]].concat());
    assert_ok(&run);
    assert_eq!(run.stderr, "");
    let page = run.json();
    assert_eq!(
        (&page["page"], &page["pages"]),
        (&json!(9), &json!(2)),
        "{page}"
    );
    assert_eq!(page["jobs"], json!([]), "{page}");
    let run = emq_on(&server, &["jobs", "q", "--page", "2", "--per-page", "2"]);
    assert_ok(&run);
    assert!(
        run.stdout.ends_with("page 2 of 2 (3 jobs)\n"),
        "{}",
        run.stdout
    );
    // No jobs at all: page 1 says so; page 2 is past it.
    let run = emq_on(&server, &["jobs", "q", "--state", "dead"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "queue q has no dead jobs\n");
    let run = emq_on(&server, &["jobs", "q", "--state", "dead", "--page", "2"]);
    assert_ok(&run);
    assert!(
        run.stderr.contains("past the last page (1)"),
        "{}",
        run.stderr
    );
}

#[test]
fn pause_and_resume_flip_the_flag() {
    let server = TestServer::start();
    enqueue(&server, "q", "{}");
    let run = emq_on(&server, &["pause", "q"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "paused queue q\n");
    assert_eq!(stats(&server, "q")["paused"], true);
    assert!(claim_all(&server, "q", Duration::from_secs(60)).is_empty());
    let run = emq_on(&server, &["resume", "q", "--json"]);
    assert_ok(&run);
    assert_eq!(run.json(), json!({"queue": "q", "paused": false}));
    let run = emq_on(&server, &["pause", "q", "--json"]);
    assert_eq!(run.json(), json!({"queue": "q", "paused": true}));
}

#[test]
fn drain_deletes_pending_and_with_a_flag_scheduled_jobs() {
    let server = TestServer::start();
    enqueue(&server, "q", "1");
    enqueue(&server, "q", "2");
    assert_ok(&emq_on(&server, &["enqueue", "q", "3", "--in", "1h"]));
    let run = emq_on(&server, &["drain", "q"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "drained 2 jobs from queue q\n");
    assert_eq!(stats(&server, "q")["scheduled"], 1);
    let run = emq_on(&server, &["drain", "q", "--scheduled", "--json"]);
    assert_ok(&run);
    assert_eq!(run.json(), json!({"queue": "q", "drained": 1}));
    assert_eq!(stats(&server, "q")["total"], 0);
}

#[test]
fn drain_deletes_blocked_jobs_with_the_blocked_flag() {
    let server = TestServer::start();
    enqueue(&server, "q", "1");
    // A blocked job written raw, as FLOW.ADD writes one with dependencies.
    block_on(async {
        let _: () = redis::pipe()
            .cmd("HSET")
            .arg("emq:{q}:job:b")
            .arg(&["state", "blocked", "payload", "{}", "created_at", "1"])
            .ignore()
            .cmd("ZADD")
            .arg("emq:{q}:blocked")
            .arg(1)
            .arg("b")
            .ignore()
            .query_async(&mut server.connection().await)
            .await
            .expect("a blocked job");
    });
    assert_ok(&emq_on(&server, &["drain", "q", "--scheduled"]));
    assert_eq!(stats(&server, "q")["blocked"], 1, "not asked for");
    let run = emq_on(&server, &["drain", "q", "--blocked", "--json"]);
    assert_ok(&run);
    assert_eq!(run.json(), json!({"queue": "q", "drained": 1}));
    assert_eq!(stats(&server, "q")["total"], 0);
}

#[test]
fn obliterate_of_a_running_queue_is_refused_naming_notpaused() {
    let server = TestServer::start();
    enqueue(&server, "q", "{}");
    let run = emq_on(&server, &["obliterate", "q", "--yes"]);
    assert_refused(&run, &["obliterate", "queue q", "NOTPAUSED"]);
    assert_eq!(stats(&server, "q")["pending"], 1);
}

#[test]
fn obliterate_with_active_jobs_needs_force() {
    let server = TestServer::start();
    enqueue(&server, "q", "{}");
    claim_all(&server, "q", Duration::from_secs(60));
    assert_ok(&emq_on(&server, &["pause", "q"]));
    let run = emq_on(&server, &["obliterate", "q", "--yes"]);
    assert_refused(
        &run,
        &["obliterate", "queue q", "active", "BADSTATE", "--force"],
    );
    let run = emq_on(&server, &["obliterate", "q", "--yes", "--force", "--json"]);
    assert_ok(&run);
    assert_eq!(
        run.json(),
        json!({"queue": "q", "obliterated": true, "jobs": 1})
    );
    assert_eq!(queue_keys(&server, "q"), Vec::<String>::new());
}

#[test]
fn obliterate_yes_of_a_paused_queue_leaves_no_key() {
    let server = TestServer::start();
    for id in ["j0", "j1", "j2"] {
        assert_ok(&emq_on(&server, &["enqueue", "q", "{}", "--id", id]));
    }
    assert_ok(&emq_on(&server, &["enqueue", "q", "{}", "--in", "1h"]));
    assert_eq!(complete_one(&server, "q").as_str(), "j0");
    assert_ok(&emq_on(&server, &["log", "q", "j0", "a line"]));
    enqueue(&server, "other", "{}");
    assert_ok(&emq_on(&server, &["pause", "q"]));
    assert!(!queue_keys(&server, "q").is_empty());

    let run = emq_on(&server, &["obliterate", "q", "--yes"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "obliterated queue q (4 jobs)\n");
    assert_eq!(queue_keys(&server, "q"), Vec::<String>::new());
    let names: Vec<Value> = emq_on(&server, &["queues", "--json"])
        .json()
        .as_array()
        .expect("list")
        .iter()
        .map(|row| row["queue"].clone())
        .collect();
    assert_eq!(names, [json!("other")]);
    assert_eq!(stats(&server, "other")["pending"], 1);
}

#[test]
fn obliterate_without_yes_and_no_terminal_exits_2() {
    let server = TestServer::start();
    enqueue(&server, "q", "{}");
    assert_ok(&emq_on(&server, &["pause", "q"]));
    let run = emq_on(&server, &["obliterate", "q"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "emq: refusing to obliterate without --yes when stdin is not a terminal\n"
    );
    assert_eq!(stats(&server, "q")["pending"], 1);
}

#[test]
fn sweep_recovers_jobs_whose_lease_ran_out() {
    let server = TestServer::start();
    let run = emq_on(&server, &["sweep", "q", "--json"]);
    assert_ok(&run);
    assert_eq!(
        run.json(),
        json!({"recovered": 0, "dead": 0, "timed_out": 0, "expired": 0})
    );

    enqueue(&server, "q", "1");
    enqueue(&server, "q", "2");
    claim_all(&server, "q", Duration::from_millis(1));
    let mut recovered = 0;
    wait_until("both stalled jobs to be recovered", PATIENCE, || {
        let run = emq_on(&server, &["sweep", "q", "--json"]);
        assert_ok(&run);
        recovered += run.json()["recovered"].as_u64().unwrap();
        recovered == 2
    });
    assert_eq!(stats(&server, "q")["pending"], 2);

    // A second stall is one more than --max-stalls 1 allows.
    claim_all(&server, "q", Duration::from_millis(1));
    let mut dead = 0;
    wait_until("both jobs stalled twice to be dead", PATIENCE, || {
        let run = emq_on(&server, &["sweep", "q"]);
        assert_ok(&run);
        let words: Vec<&str> = run.stdout.split_whitespace().collect();
        dead += words[words.iter().position(|w| *w == "dead-lettered").unwrap() + 1]
            .parse::<u64>()
            .unwrap();
        dead == 2
    });
    assert_eq!(stats(&server, "q")["dead"], 2);
}

#[test]
fn a_setting_on_a_queue_without_jobs_notes_it_and_the_queue_is_listed() {
    for (server, wire) in servers() {
        for args in [
            &["pause", "mial"][..],
            &["rate-limit", "mial", "--max", "5", "--per", "1s"],
            &["concurrency-cap", "mial", "3"],
        ] {
            let run = run_on(&server, wire, args);
            assert_ok(&run);
            assert!(
                run.stderr.contains("queue mial holds no jobs yet"),
                "{wire} {args:?}: {}",
                run.stderr
            );
            let json = run_on(&server, wire, &[&["--json"][..], args].concat());
            assert_ok(&json);
            assert_eq!(json.stderr, "", "{wire}: nothing but JSON under --json");
        }
        let listed = run_on(&server, wire, &["queues"]);
        assert_ok(&listed);
        assert_eq!(
            table_row(&listed.stdout, "mial"),
            ["mial", "0", "0", "0", "0", "0", "0", "0", "yes"],
            "{wire}"
        );
        // A queue that holds a job is set without a note.
        assert_ok(&run_on(&server, wire, &["enqueue", "mail", "{}"]));
        let run = run_on(&server, wire, &["pause", "mail"]);
        assert_ok(&run);
        assert!(
            !run.stderr.contains("holds no jobs"),
            "{wire}: {}",
            run.stderr
        );
    }
}
