//! `emq enqueue --group`, `emq groups` and `emq group` against a real
//! server: a group's jobs, its cap, rate limit and pause set and shown,
//! paging, `emq job` naming the group, `--json`, and the usage refusals
//! (exit 2, nothing written); on wire 4 and, with the module loaded, wire 6.

use crate::common::{assert_ok, job, run_on, servers, table_row};
use serde_json::json;

#[test]
fn group_jobs_are_listed_configured_and_shown() {
    for (server, wire) in servers() {
        for (id, group) in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b")] {
            let enqueued = run_on(
                &server,
                wire,
                &["enqueue", "q", "{}", "--id", id, "--group", group],
            );
            assert_ok(&enqueued);
        }
        assert_eq!(job(&server, "q", "a1")["group"], "a", "{wire}");

        let listed = run_on(&server, wire, &["groups", "q"]);
        assert_ok(&listed);
        assert_eq!(
            table_row(&listed.stdout, "a"),
            ["a", "3", "0", "no", "-", "-"],
            "{wire}"
        );
        assert_eq!(
            table_row(&listed.stdout, "b"),
            ["b", "1", "0", "no", "-", "-"],
            "{wire}"
        );

        let first = run_on(&server, wire, &["groups", "q", "--per-page", "1"]);
        assert_ok(&first);
        assert!(
            first.stdout.ends_with("page 1 of 2 (2 groups)\n"),
            "{}",
            first.stdout
        );
        let second = run_on(
            &server,
            wire,
            &["groups", "q", "--per-page", "1", "--page", "2", "--json"],
        );
        assert_ok(&second);
        let second = second.json();
        assert_eq!(second["groups"][0]["group"], "b", "{second}");
        assert_eq!(second["pages"], 2, "{second}");
        assert_eq!(second["total"], 2, "{second}");

        let set = run_on(
            &server,
            wire,
            &[
                "group",
                "q",
                "a",
                "--concurrency-cap",
                "2",
                "--max",
                "5",
                "--per",
                "1s",
                "--pause",
            ],
        );
        assert_ok(&set);
        assert!(
            set.stdout
                .starts_with("queue q group a: 3 pending, 0 active, paused\n"),
            "{}",
            set.stdout
        );
        assert!(
            set.stdout
                .contains("cap: at most 2 jobs active at once (0 active now)"),
            "{}",
            set.stdout
        );
        assert!(
            set.stdout
                .contains("rate limit: at most 5 jobs start per 1s"),
            "{}",
            set.stdout
        );
        let listed = run_on(&server, wire, &["groups", "q"]);
        assert_eq!(
            table_row(&listed.stdout, "a"),
            ["a", "3", "0", "yes", "2", "5", "per", "1s"]
        );

        let cleared = run_on(
            &server,
            wire,
            &[
                "group",
                "q",
                "a",
                "--no-concurrency-cap",
                "--no-rate-limit",
                "--resume",
                "--json",
            ],
        );
        assert_ok(&cleared);
        let cleared = cleared.json();
        assert_eq!(cleared["group"]["paused"], json!(false), "{cleared}");
        assert_eq!(cleared["concurrency"]["max"], json!(0), "{cleared}");
        assert_eq!(cleared["rate_limit"]["max"], json!(0), "{cleared}");
        assert_eq!(cleared["group"]["pending"], json!(3), "{cleared}");
    }
}

/// `groups` paged with `--after GROUP --count N` while `jobs` took
/// `--page N --per-page M`: both page alike now, footer and the note on
/// a page past the last included.
#[test]
fn groups_page_like_jobs() {
    for (server, wire) in servers() {
        for n in 0..5 {
            let group = format!("g{n}");
            let enqueued = run_on(&server, wire, &["enqueue", "q", "{}", "--group", &group]);
            assert_ok(&enqueued);
        }
        let run = run_on(
            &server,
            wire,
            &["groups", "q", "--page", "3", "--per-page", "2"],
        );
        assert_ok(&run);
        assert_eq!(table_row(&run.stdout, "g4")[0], "g4", "{wire}");
        assert!(!run.stdout.contains("g3"), "{wire}: {}", run.stdout);
        assert!(
            run.stdout.ends_with("page 3 of 3 (5 groups)\n"),
            "{wire}: {}",
            run.stdout
        );
        let run = run_on(
            &server,
            wire,
            &["groups", "q", "--page", "4", "--per-page", "2"],
        );
        assert_ok(&run);
        assert_eq!(run.stdout, "", "{wire}");
        assert_eq!(
            run.stderr, "note: page 4 is past the last page (3) of queue q's groups (5)\n",
            "{wire}"
        );
    }
}

/// `group --off` removed only the cap while the queue's `limit --off` /
/// `concurrency --off` remove the setting whole: `--off` now removes the
/// group's flow control, cap and rate limit, and leaves a pause;
/// `--no-concurrency` removes the cap alone.
#[test]
fn group_off_removes_the_cap_and_the_rate_limit() {
    for (server, wire) in servers() {
        let set = [
            "group",
            "q",
            "a",
            "--concurrency-cap",
            "2",
            "--max",
            "5",
            "--per",
            "1s",
            "--pause",
        ];
        assert_ok(&run_on(&server, wire, &set));
        let off = run_on(&server, wire, &["group", "q", "a", "--off", "--json"]);
        assert_ok(&off);
        let off = off.json();
        assert_eq!(off["concurrency"]["max"], json!(0), "{wire}: {off}");
        assert_eq!(off["rate_limit"]["max"], json!(0), "{wire}: {off}");
        assert_eq!(off["group"]["paused"], json!(true), "{wire}: {off}");

        assert_ok(&run_on(&server, wire, &set));
        let cap = run_on(
            &server,
            wire,
            &["group", "q", "a", "--no-concurrency-cap", "--json"],
        );
        assert_ok(&cap);
        let cap = cap.json();
        assert_eq!(cap["concurrency"]["max"], json!(0), "{wire}: {cap}");
        assert_eq!(cap["rate_limit"]["max"], json!(5), "{wire}: {cap}");
        let both = run_on(
            &server,
            wire,
            &["group", "q", "a", "--off", "--max", "3", "--per", "1s"],
        );
        assert_eq!(both.code, 2, "{wire}: {}", both.stderr);
    }
}

#[test]
fn a_bad_group_exits_2_and_writes_nothing() {
    for (server, wire) in servers() {
        for args in [
            &["enqueue", "q", "{}", "--group", "a b"][..],
            &["enqueue", "q", "{}", "--group", ""][..],
            &["group", "q", "{}"][..],
            &["group", "q", "a", "--concurrency-cap", "0"][..],
            &["group", "q", "a", "--concurrency-cap", "2", "--off"][..],
            &["group", "q", "a", "--max", "5"][..],
            &["group", "q", "a", "--pause", "--resume"][..],
            &["groups", "q", "--per-page", "0"][..],
        ] {
            let refused = run_on(&server, wire, args);
            assert_eq!(refused.code, 2, "{wire} {args:?}: {}", refused.stderr);
            assert_eq!(refused.stdout, "", "{args:?}");
        }
        let refused = run_on(&server, wire, &["enqueue", "q", "{}", "--group", "a b"]);
        assert!(refused.stderr.contains("--group"), "{}", refused.stderr);
        let listed = run_on(&server, wire, &["groups", "q"]);
        assert_eq!(
            listed.stdout, "queue q: no groups\n",
            "{wire}: nothing was written"
        );
        let queues = run_on(&server, wire, &["queues"]);
        assert_eq!(queues.stdout, "no queues under prefix emq\n", "{wire}");
    }
}
