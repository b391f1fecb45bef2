//! `emq watch --job ID --event NAME`: only the events of the jobs named
//! and of the names given show; an unknown name or a bad id is refused
//! before anything is read.

use crate::common::{assert_ok, block_on, claim_all, emq, emq_on, queue, spawn_on};
use echomq_testkit::TestServer;
use std::time::Duration;

/// The event and job id of a human watch line.
fn event_and_job(line: &str) -> Vec<String> {
    line.split_whitespace()
        .skip(1)
        .take(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn watch_shows_only_the_jobs_and_events_asked_for() {
    let server = TestServer::start();
    let mut watch = spawn_on(
        &server,
        &[
            "watch",
            "q",
            "--job",
            "w2",
            "--job",
            "w3",
            "--event",
            "enqueued",
            "--event",
            "completed",
        ],
    );
    watch.wait_stderr("watching the events of queue q from now");
    for id in ["w1", "w2"] {
        assert_ok(&emq_on(&server, &["enqueue", "q", "{}", "--id", id]));
    }
    assert_ok(&emq_on(&server, &["pause", "q"]));
    assert_ok(&emq_on(&server, &["resume", "q"]));
    let claimed = claim_all(&server, "q", Duration::from_secs(60));
    block_on(async {
        let queue = queue(&server, "q").await;
        // w2, then w1: w1's completion, between w2's and w3's enqueue,
        // must not show.
        for (id, token) in claimed.iter().rev() {
            queue.complete(id, *token, "done").await.expect("complete");
        }
    });
    assert_ok(&emq_on(&server, &["enqueue", "q", "{}", "--id", "w3"]));
    // Every event between these was filtered out: claims, pause, w1's.
    assert_eq!(event_and_job(&watch.next_line()), ["enqueued", "w2"]);
    assert_eq!(event_and_job(&watch.next_line()), ["completed", "w2"]);
    assert_eq!(event_and_job(&watch.next_line()), ["enqueued", "w3"]);
    watch.signal("INT");
    assert_eq!(watch.wait_exit().code(), Some(0), "{:?}", watch.errors);
}

#[test]
fn watch_of_an_unknown_event_name_is_refused_with_the_names() {
    let run = emq(&[
        "--url",
        "redis://127.0.0.1:1",
        "watch",
        "q",
        "--event",
        "finished",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("--event \"finished\""),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("completed, concurrency_set, dead"),
        "the names, listed: {}",
        run.stderr
    );
    assert!(!run.stderr.contains("cannot reach"), "{}", run.stderr);
}

#[test]
fn watch_of_a_bad_job_id_is_refused() {
    let run = emq(&[
        "--url",
        "redis://127.0.0.1:1",
        "watch",
        "q",
        "--job",
        "bad id",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("bad id"), "{}", run.stderr);
    assert!(!run.stderr.contains("cannot reach"), "{}", run.stderr);
}
