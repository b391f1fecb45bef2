//! `emq metrics` (printed once, and served with `--listen`) and the last
//! hour `emq stats` shows, against real servers: the text parsed by a
//! strict Prometheus text-format parser; on wire 4 and, with the module
//! loaded, wire 6.

use crate::common::{assert_ok, http_get as get, run_on, servers, spawn_on, wait_for_state};
use openmetrics_parser::prometheus::parse_prometheus;
use openmetrics_parser::{PrometheusType, PrometheusValue};

/// Three jobs on `q`, one completed by a worker: two left pending.
fn known_run(server: &echomq_testkit::TestServer, wire: &str) {
    assert_ok(&run_on(server, wire, &["enqueue", "q", "{}", "--id", "a"]));
    let mut worker = spawn_on(server, &["--wire", wire, "worker", "q", "--exec", "cat"]);
    wait_for_state(server, "q", "a", "completed");
    worker.signal("TERM");
    assert!(worker.wait_exit().success());
    for id in ["b", "c"] {
        assert_ok(&run_on(server, wire, &["enqueue", "q", "{}", "--id", id]));
    }
}

/// The value of `family`'s sample labelled `queue`=q and `extra`.
fn gauge_or_counter(text: &str, family: &str, extra: Option<(&str, &str)>) -> f64 {
    let exposition = parse_prometheus(text).unwrap_or_else(|err| panic!("{err:?}\n{text}"));
    let family = &exposition.families[family];
    let sample = family
        .iter_samples()
        .find(|s| {
            let set = s.get_labelset().unwrap();
            set.get_label_value("queue") == Some("q")
                && extra.is_none_or(|(k, v)| set.get_label_value(k) == Some(v))
        })
        .expect("a sample of q");
    match &sample.value {
        PrometheusValue::Gauge(n) => n.as_f64(),
        PrometheusValue::Counter(c) => c.value.as_f64(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn metrics_prints_the_text_format_of_every_queue() {
    for (server, wire) in servers() {
        known_run(&server, wire);
        let printed = run_on(&server, wire, &["metrics"]);
        assert_ok(&printed);
        let pending = gauge_or_counter(
            &printed.stdout,
            "emq_queue_jobs",
            Some(("state", "pending")),
        );
        assert_eq!(pending, 2.0, "{wire}");
        let completed = gauge_or_counter(
            &printed.stdout,
            "emq_jobs_finished_total",
            Some(("outcome", "completed")),
        );
        assert_eq!(completed, 1.0, "{wire}");
        let exposition = parse_prometheus(&printed.stdout).unwrap();
        assert_eq!(
            exposition.families["emq_job_run_seconds"].family_type,
            PrometheusType::Histogram
        );
    }
}

#[test]
fn metrics_listen_serves_each_scrape_fresh_from_the_server() {
    for (server, wire) in servers() {
        assert_ok(&run_on(&server, wire, &["enqueue", "q", "{}", "--id", "a"]));
        let mut serving = spawn_on(
            &server,
            &["--wire", wire, "metrics", "--listen", "127.0.0.1:0"],
        );
        let line = serving.next_line();
        let addr = line
            .strip_prefix("serving http://")
            .and_then(|rest| rest.strip_suffix("/metrics"))
            .unwrap_or_else(|| panic!("{line}"))
            .to_string();
        let (head, body) = get(&addr, "/metrics");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: text/plain; version=0.0.4"),
            "{head}"
        );
        let pending =
            |body: &str| gauge_or_counter(body, "emq_queue_jobs", Some(("state", "pending")));
        assert_eq!(pending(&body), 1.0, "{wire}");
        // The next scrape reads the server again.
        assert_ok(&run_on(&server, wire, &["enqueue", "q", "{}", "--id", "b"]));
        let (_, body) = get(&addr, "/metrics");
        assert_eq!(pending(&body), 2.0, "{wire}");
        let (head, _) = get(&addr, "/elsewhere");
        assert!(head.starts_with("HTTP/1.1 404"), "{head}");
        serving.signal("TERM");
        assert!(serving.wait_exit().success());
    }
}

#[test]
fn stats_shows_the_last_hour() {
    for (server, wire) in servers() {
        assert_ok(&run_on(&server, wire, &["enqueue", "q", "{}", "--id", "a"]));
        let stats = run_on(&server, wire, &["stats", "q", "--json"]);
        assert_ok(&stats);
        let hour = &stats.json()["last_hour"];
        assert_eq!(hour["window_ms"], 60_000, "{hour}");
        let windows = hour["finished_per_window"].as_array().unwrap().len();
        assert!((60..=61).contains(&windows), "{hour}");
        assert!(hour["wait_ms"]["p50"].is_null(), "{hour}");
        let table = run_on(&server, wire, &["stats", "q"]);
        assert_ok(&table);
        assert!(
            table.stdout.contains("0 finished, peak 0 per"),
            "{}",
            table.stdout
        );
    }
}
