//! `emq retention` against a real server: set, show, an age removed,
//! `--json`, on wire 4 and, with the module loaded, wire 6; and each kind
//! of bad input its own test: exit 2, nothing written.

use crate::common::{assert_ok, emq_on, run_on, servers};
use echomq_testkit::TestServer;
use serde_json::{Value, json};

/// The queue's retention as `emq retention q --json` shows it.
fn shown(server: &TestServer) -> Value {
    let run = emq_on(server, &["retention", "q", "--json"]);
    assert_ok(&run);
    run.json()
}

#[test]
fn retention_sets_shows_and_removes_an_age() {
    for (server, wire) in servers() {
        let none = run_on(&server, wire, &["retention", "q"]);
        assert_ok(&none);
        assert_eq!(
            none.stdout,
            "queue q keeps\n  completed  the newest 1000 (no age limit)\n  \
             dead       the newest 10000 (no age limit)\n  \
             cancelled  the newest 10000 (no age limit)\n",
            "{wire}"
        );

        let set = run_on(
            &server,
            wire,
            &[
                "retention",
                "q",
                "--completed",
                "500",
                "--completed-for",
                "1d",
                "--cancelled",
                "0",
                "--dead-for",
                "90m",
            ],
        );
        assert_ok(&set);
        assert_eq!(
            set.stdout,
            "queue q keeps\n  completed  the newest 500, each for at most 1d\n  \
             dead       the newest 10000, each for at most 1h30m\n  \
             cancelled  none\n",
            "{wire}"
        );

        let off = run_on(
            &server,
            wire,
            &[
                "retention",
                "q",
                "--completed-for",
                "0",
                "--dead-for",
                "off",
                "--json",
            ],
        );
        assert_ok(&off);
        assert_eq!(
            off.json(),
            json!({"queue": "q", "retention": {
                "completed": 500, "completed_for_ms": null,
                "dead": 10000, "dead_for_ms": null,
                "cancelled": 0, "cancelled_for_ms": null,
            }}),
            "{wire}"
        );
    }
}

/// Sets a retention, runs each of `refused` (exit 2, nothing on stdout),
/// and checks the retention is as it was.
fn refused_and_nothing_written(refused: &[&[&str]]) {
    let server = TestServer::start();
    assert_ok(&emq_on(
        &server,
        &["retention", "q", "--completed", "7", "--dead-for", "1h"],
    ));
    let before = shown(&server);
    for args in refused {
        let run = emq_on(&server, &[&["retention", "q"][..], args].concat());
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
        assert!(run.stderr.contains(args[0]), "{args:?}: {}", run.stderr);
    }
    assert_eq!(shown(&server), before);
}

#[test]
fn retention_refuses_a_negative_count_with_exit_2() {
    refused_and_nothing_written(&[&["--completed", "-1"], &["--dead", "-5"]]);
}

#[test]
fn retention_refuses_a_count_that_is_not_a_whole_number_with_exit_2() {
    refused_and_nothing_written(&[&["--cancelled", "1.5"], &["--completed", "many"]]);
}

#[test]
fn retention_refuses_a_count_above_2_pow_53_with_exit_2() {
    refused_and_nothing_written(&[&["--completed", "9007199254740992"]]);
}

#[test]
fn retention_refuses_a_negative_age_with_exit_2() {
    refused_and_nothing_written(&[&["--dead-for", "-1h"]]);
}

#[test]
fn retention_refuses_an_age_that_is_not_a_duration_with_exit_2() {
    refused_and_nothing_written(&[
        &["--completed-for", "soon"],
        &["--cancelled-for", "1.5h"],
        &["--dead-for", "5"],
    ]);
}

#[test]
fn retention_refuses_an_age_above_2_pow_53_ms_with_exit_2() {
    refused_and_nothing_written(&[&["--completed-for", "300000000d"]]);
}
