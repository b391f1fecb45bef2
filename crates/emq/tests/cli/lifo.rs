//! LIFO from the command line: `emq enqueue --lifo`, the claim order it
//! gives, what `emq job` shows of it, and `LIFO` in `emq controls`; on
//! wire 4 and wire 6.

use crate::common::{assert_ok, emq, emq_on, job, server_for};

/// `emq enqueue --lifo` stores `lifo` (`emq job` shows `yes`, `--json`
/// true; a job without it `no`, false), and the LIFO job is at the head of
/// the queue's `fifo`, before an older FIFO job.
fn enqueue_lifo_and_show(wire: &[&str]) {
    let server = server_for(wire);
    let on = |args: &[&str]| emq_on(&server, &[args, wire].concat());
    assert_ok(&on(&["enqueue", "q", "{}", "--id", "fifo"]));
    let run = on(&["enqueue", "q", "{}", "--id", "lifo", "--lifo"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "enqueued job lifo\n");
    let shown = on(&["job", "q", "lifo"]);
    assert_ok(&shown);
    let row = shown
        .stdout
        .lines()
        .find(|line| line.split_whitespace().next() == Some("lifo"))
        .unwrap_or_else(|| panic!("no lifo row in:\n{}", shown.stdout));
    assert_eq!(row.split_whitespace().nth(1), Some("yes"), "{row}");
    assert_eq!(job(&server, "q", "lifo")["lifo"], true);
    assert_eq!(job(&server, "q", "fifo")["lifo"], false);
    let mut conn = server.client().get_connection().unwrap();
    let head: Vec<String> = redis::cmd("LRANGE")
        .arg("emq:{q}:fifo")
        .arg(0)
        .arg(-1)
        .query(&mut conn)
        .unwrap();
    assert_eq!(head, ["lifo", "fifo"], "the LIFO job is at the front");
}

#[test]
fn enqueue_lifo_is_stored_first_in_line_and_emq_job_shows_it() {
    enqueue_lifo_and_show(&[]);
}

#[test]
fn enqueue_lifo_is_stored_first_in_line_and_emq_job_shows_it_on_wire_6() {
    enqueue_lifo_and_show(&["--wire", "native"]);
}

#[test]
fn emq_controls_shows_lifo_on_enqueue_and_schedule() {
    for control in ["enqueue", "schedule"] {
        let run = emq(&["controls", control]);
        assert_ok(&run);
        assert!(run.stdout.contains("[LIFO]"), "{control}:\n{}", run.stdout);
    }
}
