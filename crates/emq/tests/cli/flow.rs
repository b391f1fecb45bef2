//! `emq limit` and `emq concurrency` against a real server: set, show,
//! off, `--json`, the usage refusals (exit 2, nothing written), and
//! `emq stats` showing both; on wire 4 and, with the module loaded, wire 6.

use crate::common::{self, assert_ok, emq_on, run_on, servers, stats, table_row};
use echomq_testkit::{ServerBinary, TestServer, module_path};
use serde_json::{Value, json};

#[test]
fn limit_sets_shows_and_removes_a_rate_limit() {
    for (server, wire) in servers() {
        let none = run_on(&server, wire, &["rate-limit", "q"]);
        assert_ok(&none);
        assert_eq!(none.stdout, "queue q: no rate limit\n", "{wire}");

        let set = run_on(
            &server,
            wire,
            &["rate-limit", "q", "--max", "100", "--per", "1s"],
        );
        assert_ok(&set);
        assert!(
            set.stdout.starts_with(
                "queue q: at most 100 jobs start per 1s (0 started in this window, which ends in "
            ),
            "{wire}: {}",
            set.stdout
        );

        let shown = run_on(&server, wire, &["rate-limit", "q", "--json"]);
        assert_ok(&shown);
        let shown = shown.json();
        assert_eq!(shown["queue"], "q", "{shown}");
        let limit = &shown["rate_limit"];
        assert_eq!(
            (limit["max"].clone(), limit["per_ms"].clone()),
            (json!(100), json!(1000)),
            "{shown}"
        );
        assert_eq!(
            (limit["used"].clone(), limit["hold_ms"].clone()),
            (json!(0), json!(0)),
            "{shown}"
        );
        assert!(
            limit["reset_ms"].as_u64().is_some_and(|ms| ms <= 1000),
            "{shown}"
        );

        let off = run_on(&server, wire, &["rate-limit", "q", "--off", "--json"]);
        assert_ok(&off);
        assert_eq!(
            off.json(),
            json!({"queue": "q", "rate_limit": {"max": 0, "per_ms": 0, "used": 0, "reset_ms": 0, "hold_ms": 0}}),
            "{wire}"
        );
        assert_eq!(
            run_on(&server, wire, &["rate-limit", "q"]).stdout,
            "queue q: no rate limit\n"
        );
    }
}

#[test]
fn concurrency_sets_shows_and_removes_a_cap() {
    for (server, wire) in servers() {
        let none = run_on(&server, wire, &["concurrency-cap", "q"]);
        assert_ok(&none);
        assert_eq!(
            none.stdout, "queue q: no cap on active jobs (0 active now)\n",
            "{wire}"
        );

        let set = run_on(&server, wire, &["concurrency-cap", "q", "3"]);
        assert_ok(&set);
        assert_eq!(
            set.stdout, "queue q: at most 3 jobs active at once (0 active now)\n",
            "{wire}"
        );

        let shown = run_on(&server, wire, &["concurrency-cap", "q", "--json"]);
        assert_ok(&shown);
        assert_eq!(
            shown.json(),
            json!({"queue": "q", "concurrency": {"max": 3, "active": 0}})
        );

        let off = run_on(&server, wire, &["concurrency-cap", "q", "--off", "--json"]);
        assert_ok(&off);
        assert_eq!(
            off.json(),
            json!({"queue": "q", "concurrency": {"max": 0, "active": 0}})
        );
    }
}

#[test]
fn stats_shows_the_limit_the_windows_use_and_the_cap() {
    for (server, wire) in servers() {
        let counts = stats(&server, "fresh");
        assert_eq!(counts["rate_limit"]["max"], 0, "{counts}");
        assert_eq!(
            counts["concurrency"],
            json!({"max": 0, "active": 0}),
            "{counts}"
        );

        assert_ok(&run_on(&server, wire, &["enqueue", "q", "{}"]));
        assert_ok(&run_on(
            &server,
            wire,
            &["rate-limit", "q", "--max", "5", "--per", "1h"],
        ));
        assert_ok(&run_on(&server, wire, &["concurrency-cap", "q", "2"]));
        let text = run_on(&server, wire, &["stats", "q"]);
        assert_ok(&text);
        let limit = table_row(&text.stdout, "rate");
        assert_eq!(
            &limit[..9],
            [
                "rate", "limit", "at", "most", "5", "jobs", "start", "per", "1h"
            ],
            "{wire}"
        );
        assert_eq!(
            table_row(&text.stdout, "concurrency"),
            [
                "concurrency",
                "at",
                "most",
                "2",
                "jobs",
                "active",
                "at",
                "once",
                "(0",
                "active",
                "now)"
            ]
        );

        let json = run_on(&server, wire, &["stats", "q", "--json"]).json();
        assert_eq!(json["rate_limit"]["max"], 5, "{json}");
        assert_eq!(json["rate_limit"]["per_ms"], 3_600_000, "{json}");
        assert_eq!(json["rate_limit"]["used"], 0, "{json}");
        assert_eq!(
            json["concurrency"],
            json!({"max": 2, "active": 0}),
            "{json}"
        );
        assert_eq!(json["pending"], 1, "{json}");
    }
}

#[test]
fn malformed_limits_and_caps_exit_2_and_write_nothing() {
    let server = TestServer::start();
    assert_ok(&emq_on(
        &server,
        &["rate-limit", "q", "--max", "7", "--per", "1m"],
    ));
    assert_ok(&emq_on(&server, &["concurrency-cap", "q", "4"]));
    let before = stats(&server, "q");
    for args in [
        &["rate-limit", "q", "--max", "0", "--per", "1s"][..],
        &["rate-limit", "q", "--max", "5"],
        &["rate-limit", "q", "--per", "1s"],
        &["rate-limit", "q", "--per", "0ms", "--max", "5"],
        &["rate-limit", "q", "--per", "soon", "--max", "5"],
        &["rate-limit", "q", "--off", "--max", "5", "--per", "1s"],
        &["rate-limit", "q", "--off", "--per", "1s"],
        &["concurrency-cap", "q", "0"],
        &["concurrency-cap", "q", "-3"],
        &["concurrency-cap", "q", "3", "--off"],
        &["concurrency-cap", "q", "many"],
    ] {
        let refused = emq_on(&server, args);
        assert_eq!(refused.code, 2, "{args:?}: {}", refused.stderr);
        assert_eq!(refused.stdout, "", "{args:?}");
    }
    let after = stats(&server, "q");
    let flow = |stats: &Value| {
        (
            stats["rate_limit"]["max"].clone(),
            stats["rate_limit"]["per_ms"].clone(),
            stats["concurrency"]["max"].clone(),
        )
    };
    assert_eq!(flow(&after), flow(&before));
    assert_eq!(flow(&after), (json!(7), json!(60_000), json!(4)));
}

#[test]
fn stats_on_a_module_that_does_not_serve_flow_control_shows_the_rest() {
    use echomq_server::{ServerConfig, ServerProcess};
    let dir = std::env::temp_dir().join(format!("emq-cli-no-flow-{}", std::process::id()));
    let mut config = ServerConfig::new(&dir);
    config.extra_args = vec![
        "--loadmodule".into(),
        module_path().to_string_lossy().into_owned(),
        "EXCLUDE".into(),
        "EMQ.LIMIT".into(),
        "EMQ.CONCURRENCY".into(),
    ];
    let mut process = ServerProcess::spawn(&ServerBinary::locate().unwrap(), &config).unwrap();
    let url = format!("redis://127.0.0.1:{}", process.port());
    let on = |args: &[&str]| {
        let mut all = vec!["--url", url.as_str(), "--wire", "native"];
        all.extend_from_slice(args);
        common::emq(&all)
    };
    assert_ok(&on(&["enqueue", "q", "{}"]));
    let text = on(&["stats", "q"]);
    assert_ok(&text);
    assert_eq!(table_row(&text.stdout, "pending"), ["pending", "1"]);
    assert_eq!(
        table_row(&text.stdout, "concurrency"),
        ["concurrency", "-", "(not", "served)"]
    );
    let json = on(&["stats", "q", "--json"]).json();
    assert_eq!(
        (json["pending"].clone(), json["rate_limit"].clone()),
        (json!(1), Value::Null)
    );
    let limit = on(&["rate-limit", "q"]);
    assert_eq!(limit.code, 2, "{}", limit.stderr);
    assert!(limit.stderr.contains("EMQ.LIMIT"), "{}", limit.stderr);
    let _ = process.shutdown(false);
    let _ = std::fs::remove_dir_all(&dir);
}
