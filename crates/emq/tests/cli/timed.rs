//! Time limits from the command line: `emq enqueue --time-limit`, what
//! `emq job` shows of it, the options in `emq controls`, and the usage
//! errors (exit 2, nothing sent); on wire 4 and wire 6.

use crate::common::{Run, assert_ok, emq, emq_on, job, server_for};

/// `emq --url <nowhere> enqueue q {} extra…`: no server listens there, so
/// what answers is a check made before connecting.
fn enqueue_nowhere(extra: &[&str]) -> Run {
    let nowhere = ["--url", "redis://127.0.0.1:1", "enqueue", "q", "{}"];
    emq(&[&nowhere[..], extra].concat())
}

/// `emq enqueue --time-limit 1m30s` stores 90 s; `emq job` shows it in the
/// largest unit that divides it, `--json` in ms; a job without one shows
/// `-`, as do the deadline and the reason.
fn enqueue_and_show(wire: &[&str]) {
    let server = server_for(wire);
    let on = |args: &[&str]| emq_on(&server, &[args, wire].concat());
    let run = on(&["enqueue", "q", "{}", "--id", "a", "--time-limit", "1m30s"]);
    assert_ok(&run);
    assert_eq!(run.stdout, "enqueued job a\n");
    assert_ok(&on(&["enqueue", "q", "{}", "--id", "b"]));
    let shown = on(&["job", "q", "a"]);
    assert_ok(&shown);
    let row = |name: &str| {
        shown
            .stdout
            .lines()
            .find(|line| line.split_whitespace().next() == Some(name))
            .map(|line| {
                line.split_whitespace()
                    .skip(1)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_else(|| panic!("no {name} row in:\n{}", shown.stdout))
    };
    assert_eq!(row("time_limit"), "90s");
    assert_eq!((row("start_by"), row("reason")), ("-".into(), "-".into()));
    let a = job(&server, "q", "a");
    assert_eq!(a["time_limit"], 90_000);
    assert!(a["start_by"].is_null() && a["reason"].is_null());
    assert!(job(&server, "q", "b")["time_limit"].is_null());
}

#[test]
fn enqueue_time_limit_is_stored_and_emq_job_shows_it() {
    enqueue_and_show(&[]);
}

#[test]
fn enqueue_time_limit_is_stored_and_emq_job_shows_it_on_wire_6() {
    enqueue_and_show(&["--wire", "native"]);
}

#[test]
fn a_zero_time_limit_is_a_usage_error_before_anything_is_sent() {
    let run = enqueue_nowhere(&["--time-limit", "0s"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--time-limit"), "{}", run.stderr);
}

#[test]
fn a_negative_or_malformed_time_limit_is_a_usage_error() {
    for value in ["-5s", "soon", "1.5s", ""] {
        let run = enqueue_nowhere(&["--time-limit", value]);
        assert_eq!(run.code, 2, "{value:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("time-limit"),
            "{value:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn emq_controls_shows_the_time_options_of_enqueue_and_schedule() {
    for control in ["enqueue", "schedule"] {
        let run = emq(&["controls", control]);
        assert_ok(&run);
        for word in [
            "TIME_LIMIT ms",
            "START_BY ms | START_WITHIN ms",
            "BADARG start_by",
        ] {
            assert!(
                run.stdout.contains(word),
                "{control}: {word} in\n{}",
                run.stdout
            );
        }
    }
    let run = emq(&["controls", "extend"]);
    assert!(run.stdout.contains("TIMELIMIT"), "{}", run.stdout);
    let run = emq(&["controls", "stalled_check"]);
    assert!(run.stdout.contains("RETRY_IN ms [ms …]"), "{}", run.stdout);
}

/// `emq enqueue --start-within 10m` stores now + 10 min, `--start-by` the
/// instant given, each as the job's `start_by` (ms).
fn enqueue_with_deadlines(wire: &[&str]) {
    let server = server_for(wire);
    let on = |args: &[&str]| emq_on(&server, &[args, wire].concat());
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert_ok(&on(&[
        "enqueue",
        "q",
        "{}",
        "--id",
        "a",
        "--start-within",
        "10m",
    ]));
    let start_by = job(&server, "q", "a")["start_by"]
        .as_u64()
        .expect("start_by");
    assert!(
        (before + 600_000..before + 660_000).contains(&start_by),
        "start_by {start_by} is about now + 10 min"
    );
    let at = "2099-01-01T00:00:00Z";
    assert_ok(&on(&["enqueue", "q", "{}", "--id", "b", "--start-by", at]));
    assert_eq!(job(&server, "q", "b")["start_by"], 4_070_908_800_000_u64);
}

#[test]
fn enqueue_start_within_and_start_by_store_the_deadline() {
    enqueue_with_deadlines(&[]);
}

#[test]
fn enqueue_start_within_and_start_by_store_the_deadline_on_wire_6() {
    enqueue_with_deadlines(&["--wire", "native"]);
}

#[test]
fn a_start_by_in_the_past_is_a_usage_error_before_anything_is_sent() {
    let at = "2001-01-01T00:00:00Z";
    let run = enqueue_nowhere(&["--start-by", at]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--start-by 2001-01-01")
            && run.stderr.contains("a start-by deadline is later than now"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_zero_start_within_is_a_usage_error_before_anything_is_sent() {
    let run = enqueue_nowhere(&["--start-within", "0s"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--start-within 0ms") && run.stderr.contains("at least 1ms from now"),
        "{}",
        run.stderr
    );
}

#[test]
fn start_by_with_start_within_is_a_usage_error_before_anything_is_sent() {
    let run = enqueue_nowhere(&[
        "--start-by",
        "2099-01-01T00:00:00Z",
        "--start-within",
        "10m",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("cannot be used with") && run.stderr.contains("--start-within"),
        "{}",
        run.stderr
    );
}
