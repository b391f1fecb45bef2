//! `emq bench` and `emq bench --lateness` against a test server: every
//! figure is reported.

mod common;

use common::{assert_ok, emq_on, table_row};
use echomq_testkit::TestServer;

#[test]
fn bench_reports_every_figure() {
    let server = TestServer::start();
    let run = emq_on(&server, &["bench", "--jobs", "2000", "--json"]);
    assert_ok(&run);
    let report = run.json();
    assert_eq!(report["jobs"], 2000, "{report}");
    for (phase, jobs) in [
        ("enqueue", 2000),
        ("process_c50", 2000),
        ("process_c1", 200),
    ] {
        let p = &report[phase];
        assert_eq!(p["jobs"], jobs, "{phase}: {report}");
        assert!(
            p["jobs_per_sec"].as_f64().unwrap() > 0.0,
            "{phase}: {report}"
        );
        assert!(p["seconds"].as_f64().unwrap() > 0.0, "{phase}: {report}");
        assert!(
            p["server_cpu_us_per_job"].as_f64().unwrap() >= 0.0,
            "{phase}: {report}"
        );
    }
    assert_eq!(report["process_c50"]["concurrency"], 50);
    assert_eq!(report["process_c1"]["concurrency"], 1);
    assert!(
        report["lifecycle_server_cpu_us_per_job"].as_f64().unwrap() > 0.0,
        "{report}"
    );
}

#[test]
fn bench_flow_phases_report_their_figures() {
    let server = TestServer::start();
    let args = [
        "bench",
        "--jobs",
        "500",
        "--rate-limit",
        "--concurrency-cap",
        "--dedup",
        "--json",
    ];
    let run = emq_on(&server, &args);
    assert_ok(&run);
    let report = run.json();
    for phase in [
        "process_c50_baseline",
        "process_c50_rate_limited",
        "process_c50_capped",
        "enqueue_single",
        "enqueue_single_dedup",
    ] {
        let p = &report[phase];
        assert_eq!(p["jobs"], 500, "{phase}: {report}");
        assert!(
            p["server_cpu_us_per_job"].as_f64().unwrap() > 0.0,
            "{phase}: {report}"
        );
    }
    // Each feature over its baseline, measured in the same rounds.
    let ratios = &report["flow_ratios"];
    for ratio in [
        "rate_limited_jobs_per_sec",
        "capped_jobs_per_sec",
        "dedup_enqueue_server_cpu",
    ] {
        assert!(ratios[ratio].as_f64().unwrap() > 0.0, "{ratio}: {report}");
    }
    let dedup = &report["flow_ratios"]["dedup_enqueue_server_cpu"];
    let quotient = report["enqueue_single_dedup"]["server_cpu_us_per_job"]
        .as_f64()
        .unwrap()
        / report["enqueue_single"]["server_cpu_us_per_job"]
            .as_f64()
            .unwrap();
    assert!(
        (dedup.as_f64().unwrap() - quotient).abs() < 1e-9,
        "{report}"
    );
    // Without the flags the phases are absent.
    let plain = emq_on(&server, &["bench", "--jobs", "100", "--json"]).json();
    assert!(plain.get("process_c50_capped").is_none(), "{plain}");
    assert!(plain.get("flow_ratios").is_none(), "{plain}");
}

#[test]
fn bench_lateness_reports_percentiles() {
    let server = TestServer::start();
    let run = emq_on(
        &server,
        &["bench", "--lateness", "--jobs", "1500", "--json"],
    );
    assert_ok(&run);
    let report = run.json();
    assert_eq!(report["concurrency"], 50, "{report}");
    assert_eq!(report["chunk"], 1000, "{report}");
    assert_eq!(report["max_delay_ms"], 1000, "{report}");
    assert_eq!(report["settle_ms"], 500, "{report}");
    assert_eq!(report["wire"], "script", "{report}");
    let runs = report["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 1, "{report}");
    let r = &runs[0];
    assert_eq!(r["jobs"], 1500, "{report}");
    let ms = |field: &str| {
        r[field]
            .as_f64()
            .unwrap_or_else(|| panic!("{field}: {report}"))
    };
    // No job is claimable before its due: run-ats are rounded up.
    assert!(ms("min_ms") >= 0.0, "{report}");
    assert!(ms("min_ms") <= ms("p50_ms"), "{report}");
    assert!(ms("p50_ms") <= ms("p90_ms"), "{report}");
    assert!(ms("p90_ms") <= ms("p99_ms"), "{report}");
    assert!(ms("p99_ms") <= ms("max_ms"), "{report}");
    assert!(ms("server_cpu_us_per_job") > 0.0, "{report}");
    assert!(ms("enqueue_seconds") > 0.0, "{report}");
    assert!(
        ms("seconds") >= 0.5,
        "jobs are due up to a second after their chunk starts: {report}"
    );

    let run = emq_on(&server, &["bench", "--lateness", "--jobs", "100"]);
    assert_ok(&run);
    let row = table_row(&run.stdout, "100");
    assert_eq!(row.len(), 9, "{}", run.stdout);
    assert!(run.stdout.contains("p90 ms"), "{}", run.stdout);
}

#[test]
fn bench_compare_runs_both_wires_and_reports_their_ratios() {
    let binary = echomq_server::ServerBinary::locate().expect("a valkey-server");
    let server = TestServer::with_config(binary, false, vec![echomq_testkit::module_path()]);
    let run = emq_on(&server, &["bench", "--compare", "--jobs", "500", "--json"]);
    assert_ok(&run);
    let report = run.json();
    for (side, wire) in [("script", "script"), ("native", "native")] {
        assert_eq!(report[side]["wire"], wire, "{report}");
        assert_eq!(report[side]["process_c50"]["jobs"], 500, "{report}");
        assert!(
            report[side]["lifecycle_server_cpu_us_per_job"]
                .as_f64()
                .unwrap()
                > 0.0,
            "{report}"
        );
    }
    let ratios = &report["native_over_script"];
    for ratio in [
        "enqueue_server_cpu",
        "process_c50_server_cpu",
        "lifecycle_server_cpu",
        "process_c50_jobs_per_sec",
    ] {
        assert!(ratios[ratio].as_f64().unwrap() > 0.0, "{ratio}: {report}");
    }
    let script = report["script"]["lifecycle_server_cpu_us_per_job"]
        .as_f64()
        .unwrap();
    let native = report["native"]["lifecycle_server_cpu_us_per_job"]
        .as_f64()
        .unwrap();
    let ratio = ratios["lifecycle_server_cpu"].as_f64().unwrap();
    assert!((ratio - native / script).abs() < 1e-9, "{report}");
}

#[test]
fn bench_compare_rounds_reports_each_round_and_the_median_ratios() {
    let binary = echomq_server::ServerBinary::locate().expect("a valkey-server");
    let server = TestServer::with_config(binary, false, vec![echomq_testkit::module_path()]);
    let run = emq_on(
        &server,
        &[
            "bench",
            "--compare",
            "--rounds",
            "2",
            "--jobs",
            "200",
            "--json",
        ],
    );
    assert_ok(&run);
    let report = run.json();
    let rounds = report["rounds"].as_array().expect("rounds");
    assert_eq!(rounds.len(), 2, "{report}");
    let lifecycle: Vec<f64> = rounds
        .iter()
        .map(|round| {
            assert_eq!(round["script"]["wire"], "script", "{report}");
            assert_eq!(round["native"]["wire"], "native", "{report}");
            round["native_over_script"]["lifecycle_server_cpu"]
                .as_f64()
                .unwrap()
        })
        .collect();
    // The median of two rounds is their mean.
    let median = report["median"]["lifecycle_server_cpu"].as_f64().unwrap();
    assert!(
        (median - (lifecycle[0] + lifecycle[1]) / 2.0).abs() < 1e-9,
        "{report}"
    );
}

#[test]
fn bench_rounds_without_compare_is_a_usage_error() {
    let run = common::emq(&["bench", "--rounds", "3"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("--compare"), "{}", run.stderr);
}
