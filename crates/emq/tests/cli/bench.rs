//! `emq bench` and `emq bench --lateness` against a test server: every
//! figure is reported.

use crate::common::{self, assert_ok, emq_on, run_on, table_row};
use echomq_testkit::TestServer;
use openmetrics_parser::PrometheusValue;
use openmetrics_parser::prometheus::parse_prometheus;
use serde_json::Value;

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
    assert_eq!(report["configuration"]["name"], "default", "{report}");
    assert_eq!(report["configuration"]["keep_completed"], 1000, "{report}");
}

/// Every phase's busy share and client CPU, and the memory per pending
/// job, are present and sane (not fast: no timing is asserted).
fn assert_cpu_and_memory_figures(report: &Value) {
    for phase in ["enqueue", "process_c50", "process_c1"] {
        let p = &report[phase];
        let figure = |field: &str| {
            p[field]
                .as_f64()
                .unwrap_or_else(|| panic!("{phase}.{field}: {report}"))
        };
        let share = figure("server_busy_share");
        // INFO cpu counts the server's threads, so a little over one core
        // is possible; far over it would be a wrong quotient.
        assert!((0.0..4.0).contains(&share), "{phase}: {report}");
        let expected = figure("server_cpu_seconds") / figure("seconds");
        assert!((share - expected).abs() < 1e-9, "{phase}: {report}");
        assert!(figure("client_cpu_seconds") >= 0.0, "{phase}: {report}");
        let per_job = figure("client_cpu_seconds") * 1e6 / p["jobs"].as_f64().unwrap();
        assert!(
            (figure("client_cpu_us_per_job") - per_job).abs() < 1e-6,
            "{phase}: {report}"
        );
    }
    // A worker draining jobs uses CPU of its own (getrusage's resolution is
    // a microsecond, the phase far longer).
    assert!(
        report["process_c50"]["client_cpu_seconds"]
            .as_f64()
            .unwrap()
            > 0.0,
        "{report}"
    );
    let memory = &report["pending_memory"];
    assert_eq!(memory["jobs"], report["jobs"], "{report}");
    let before = memory["memory_before"].as_u64().unwrap();
    let after = memory["memory_after"].as_u64().unwrap();
    assert!(after > before, "{report}");
    let per_job = memory["bytes_per_job"].as_f64().unwrap();
    // A pending job is its hash and a pending-set entry: tens to hundreds
    // of bytes, not kilobytes.
    assert!((10.0..4096.0).contains(&per_job), "{report}");
}

#[test]
fn bench_reports_busy_share_client_cpu_and_memory_per_pending_job() {
    let server = TestServer::start();
    let run = emq_on(&server, &["bench", "--jobs", "2000", "--json"]);
    assert_ok(&run);
    assert_cpu_and_memory_figures(&run.json());

    let run = emq_on(&server, &["bench", "--jobs", "300"]);
    assert_ok(&run);
    let header = table_row(&run.stdout, "phase");
    assert_eq!(
        header[header.len() - 4..],
        ["server", "busy", "client", "µs/job"],
        "{}",
        run.stdout
    );
    // enqueue (bulk), jobs, -, seconds, jobs/s, server µs/job, busy %, client µs/job
    let row = table_row(&run.stdout, "enqueue");
    assert_eq!(row.len(), 9, "{}", run.stdout);
    assert!(row[7].ends_with('%'), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("queues: default (keep_completed 1000, events_max 10000, metrics on)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("memory per pending job: "),
        "{}",
        run.stdout
    );
}

#[test]
fn a_second_bench_on_the_same_server_takes_queues_of_its_own() {
    let server = TestServer::start();
    for _ in 0..2 {
        // A run that met a queue of the first would find jobs it did not
        // create and stop.
        assert_ok(&emq_on(&server, &["bench", "--jobs", "200", "--json"]));
    }
    let list = emq_on(&server, &["queues", "--json"]).json();
    let mut lifecycles: Vec<String> = list
        .as_array()
        .expect("queues")
        .iter()
        .map(|q| q["queue"].as_str().unwrap().to_string())
        .filter(|name| name.starts_with("lifecycle-"))
        .collect();
    lifecycles.sort();
    assert_eq!(lifecycles, ["lifecycle-1", "lifecycle-2"], "{list}");
}

/// The bench queues' completed counts, by the phase in their name.
fn completed_by_phase(server: &TestServer) -> Vec<(String, u64)> {
    let list = emq_on(server, &["queues", "--json"]).json();
    list.as_array()
        .expect("queues")
        .iter()
        .map(|q| {
            let name = q["queue"].as_str().unwrap();
            // `<phase>-<n>`.
            let phase = name.rsplit_once('-').unwrap().0.to_string();
            (phase, q["completed"].as_u64().unwrap())
        })
        .collect()
}

/// The completions the queues' metrics counted, summed over the queues
/// (`emq_jobs_finished_total{outcome="completed"}` of `emq metrics`, read
/// by a Prometheus text-format parser).
fn completions_counted(server: &TestServer) -> f64 {
    let scraped = emq_on(server, &["metrics"]);
    assert_ok(&scraped);
    let exposition = parse_prometheus(&scraped.stdout)
        .unwrap_or_else(|err| panic!("{err:?}\n{}", scraped.stdout));
    exposition.families["emq_jobs_finished_total"]
        .iter_samples()
        .filter(|s| s.get_labelset().unwrap().get_label_value("outcome") == Some("completed"))
        .map(|s| match &s.value {
            PrometheusValue::Counter(c) => c.value.as_f64(),
            other => panic!("{other:?}"),
        })
        .sum()
}

#[test]
fn bench_like_bullmq_keeps_no_completed_jobs_nor_metrics() {
    let server = TestServer::start();
    let run = emq_on(
        &server,
        // 2,000 jobs, as the other bench tests: with 500 (about 75 KB of
        // pending jobs) a busy machine once read used_memory 98 KB lower
        // after the enqueue than before it.
        &["bench", "--like-bullmq", "--jobs", "2000", "--json"],
    );
    assert_ok(&run);
    let report = run.json();
    assert_eq!(report["configuration"]["name"], "like-bullmq", "{report}");
    assert_eq!(report["configuration"]["keep_completed"], 0, "{report}");
    assert_eq!(report["configuration"]["events_max"], 10_000, "{report}");
    assert_eq!(report["configuration"]["metrics"], false, "{report}");
    assert_eq!(report["process_c50"]["jobs"], 2000, "{report}");
    assert_cpu_and_memory_figures(&report);
    // No queue kept metrics: no completion was counted.
    assert_eq!(completions_counted(&server), 0.0, "{report}");
    // Every job completed, and none was kept.
    let completed = completed_by_phase(&server);
    assert_eq!(
        completed,
        [("lifecycle".to_string(), 0), ("serial".to_string(), 0)],
        "{report}"
    );

    // The default run keeps them (the last 1,000 of each queue).
    let server = TestServer::start();
    let run = emq_on(&server, &["bench", "--jobs", "500"]);
    assert_ok(&run);
    assert!(
        run.stdout.contains("queues: default (keep_completed 1000"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("metrics on)"), "{}", run.stdout);
    assert_eq!(completions_counted(&server), 550.0, "{}", run.stdout);
    let completed = completed_by_phase(&server);
    assert_eq!(
        completed,
        [("lifecycle".to_string(), 500), ("serial".to_string(), 50)],
        "{}",
        run.stdout
    );
}

#[test]
fn bench_like_bullmq_text_names_its_configuration() {
    let server = TestServer::start();
    let run = emq_on(&server, &["bench", "--like-bullmq", "--jobs", "100"]);
    assert_ok(&run);
    assert!(
        run.stdout
            .contains("queues: like BullMQ (keep_completed 0, events_max 10000, metrics off)"),
        "{}",
        run.stdout
    );
    let refused = common::emq(&["bench", "--like-bullmq", "--lateness"]);
    assert_eq!(refused.code, 2, "{}{}", refused.stdout, refused.stderr);
}

#[test]
fn bench_claim_ahead_fixes_what_the_workers_hold_and_says_so() {
    let server = TestServer::start();
    let run = emq_on(
        &server,
        &["bench", "--claim-ahead", "1", "--jobs", "200", "--json"],
    );
    assert_ok(&run);
    let report = run.json();
    assert_eq!(report["configuration"]["claim_ahead"], 1, "{report}");
    assert_eq!(report["process_c1"]["jobs"], 20, "{report}");
    let run = emq_on(&server, &["bench", "--claim-ahead", "3", "--jobs", "100"]);
    assert_ok(&run);
    assert!(
        run.stdout.contains("metrics on); workers claim 3 ahead"),
        "{}",
        run.stdout
    );
    let run = emq_on(&server, &["bench", "--jobs", "100", "--json"]);
    assert_ok(&run);
    let report = run.json();
    assert_eq!(
        report["configuration"]["claim_ahead"],
        Value::Null,
        "{report}"
    );
}

#[test]
fn bench_claim_ahead_beyond_10000_is_refused() {
    let refused = common::emq(&["bench", "--claim-ahead", "10001"]);
    assert_eq!(refused.code, 2, "{}{}", refused.stdout, refused.stderr);
    assert!(
        refused.stderr.contains("--claim-ahead"),
        "{}",
        refused.stderr
    );
}

#[test]
fn bench_claim_ahead_with_lateness_is_refused() {
    let refused = common::emq(&["bench", "--claim-ahead", "1", "--lateness"]);
    assert_eq!(refused.code, 2, "{}{}", refused.stdout, refused.stderr);
    assert!(refused.stderr.contains("--lateness"), "{}", refused.stderr);
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
            "--like-bullmq",
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
            for side in ["script", "native"] {
                let configuration = &round[side]["configuration"];
                assert_eq!(configuration["name"], "like-bullmq", "{report}");
                assert_eq!(configuration["keep_completed"], 0, "{report}");
            }
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

#[test]
fn bench_outcomes_reports_the_cost_of_waiters_and_every_wait_delivered() {
    for (server, wire) in common::servers() {
        let run = run_on(
            &server,
            wire,
            &["bench", "--outcomes", "--jobs", "500", "--json"],
        );
        assert_ok(&run);
        let report = run.json();
        assert_eq!(report["wire"], wire, "{report}");
        assert_outcomes_figures(&report["outcomes"], 500, &report);
    }
}

/// The outcome phases' figures of a run of `jobs` jobs (fewer than
/// 10,000): every phase, every wait delivered, the ratios' medians.
fn assert_outcomes_figures(outcomes: &Value, jobs: u64, report: &Value) {
    for phase in [
        "enqueue_nobody_waits",
        "process_c50_nobody_waits",
        "enqueue_waited",
        "process_c50_waited",
        "enqueue_waited_by_id",
        "process_c50_waited_by_id",
    ] {
        let p = &outcomes[phase];
        assert_eq!(p["jobs"], jobs, "{phase}: {report}");
        assert!(
            p["server_cpu_us_per_job"].as_f64().unwrap() > 0.0,
            "{phase}: {report}"
        );
    }
    // Every job of the two waited variants had a wait, and each returned
    // its job's result.
    assert_eq!(outcomes["waits_completed"], 2 * jobs, "{report}");
    for (rounds, median) in [
        ("lifecycle_cpu_ratio_rounds", "lifecycle_cpu_ratio_median"),
        (
            "lifecycle_cpu_ratio_by_id_rounds",
            "lifecycle_cpu_ratio_by_id_median",
        ),
    ] {
        let mut ratios: Vec<f64> = outcomes[rounds]
            .as_array()
            .expect("rounds")
            .iter()
            .map(|r| r.as_f64().unwrap())
            .collect();
        assert_eq!(ratios.len(), 5, "{rounds}: {report}");
        assert!(ratios.iter().all(|r| *r > 0.0), "{rounds}: {report}");
        ratios.sort_by(f64::total_cmp);
        assert_eq!(outcomes[median], ratios[2], "{median}: {report}");
    }
    for lifecycle in [
        "lifecycle_server_cpu_us_per_job_nobody_waits",
        "lifecycle_server_cpu_us_per_job_waited",
        "lifecycle_server_cpu_us_per_job_waited_by_id",
    ] {
        assert!(
            outcomes[lifecycle].as_f64().unwrap() > 0.0,
            "{lifecycle}: {report}"
        );
    }
    // One wait a job, all open at once, all delivered.
    let latency = &outcomes["latency"];
    assert_eq!(latency["waits"], jobs, "{report}");
    assert_eq!(latency["completed"], jobs, "{report}");
    let ms = |field: &str| latency[field].as_f64().unwrap();
    assert!(ms("p50_ms") >= 0.0, "{report}");
    assert!(ms("p50_ms") <= ms("p99_ms"), "{report}");
    assert!(ms("p99_ms") <= ms("max_ms"), "{report}");
}

#[test]
fn bench_outcomes_text_names_the_waits_and_their_latency() {
    let server = TestServer::start();
    let run = emq_on(&server, &["bench", "--outcomes", "--jobs", "100"]);
    assert_ok(&run);
    let needle =
        "outcome waits open at once: 100, completed 100; handler return → wait return: p50 ";
    assert!(run.stdout.contains(needle), "{}", run.stdout);
    let row: Vec<&str> = run
        .stdout
        .lines()
        .find(|line| line.starts_with("process, waiter on each"))
        .unwrap_or_else(|| panic!("no waited row in:\n{}", run.stdout))
        .split_whitespace()
        .collect();
    // process, waiter on each | jobs, concurrency, seconds, jobs/s, server
    // µs/job, busy %, client µs/job
    assert_eq!(row.len(), 11, "{}", run.stdout);
    assert_eq!(row[4..6], ["100", "50"], "{}", run.stdout);

    // Without the flag the phases are absent.
    let plain = emq_on(&server, &["bench", "--jobs", "100", "--json"]).json();
    assert!(plain.get("outcomes").is_none(), "{plain}");
}

#[test]
fn bench_outcomes_with_lateness_is_refused() {
    let run = common::emq(&["bench", "--outcomes", "--lateness"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("--outcomes"), "{}", run.stderr);
}

#[test]
fn bench_many_queues_reports_one_worker_over_three_queues_against_over_one() {
    let server = TestServer::start();
    let run = emq_on(
        &server,
        &["bench", "--jobs", "600", "--many-queues", "--json"],
    );
    assert_ok(&run);
    let report = run.json();
    let many = &report["many_queues"];
    // 600 jobs in 5 rounds of 3 queues: 40 a queue a round, 600 in all.
    for phase in ["process_c50_one_queue", "process_c50_three_queues"] {
        assert_eq!(many[phase]["jobs"], 600, "{phase}: {report}");
        assert!(
            many[phase]["jobs_per_sec"].as_f64().unwrap() > 0.0,
            "{report}"
        );
    }
    let quotient = many["process_c50_three_queues"]["jobs_per_sec"]
        .as_f64()
        .unwrap()
        / many["process_c50_one_queue"]["jobs_per_sec"]
            .as_f64()
            .unwrap();
    let ratio = many["jobs_per_sec_ratio"].as_f64().unwrap();
    assert!((ratio - quotient).abs() < 1e-9, "{report}");
    let text = emq_on(&server, &["bench", "--jobs", "60", "--many-queues"]);
    assert_ok(&text);
    assert!(
        text.stdout
            .contains("one worker over three queues / over one, jobs/s: "),
        "{}",
        text.stdout
    );
    // Without the flag the phases are absent.
    let plain = emq_on(&server, &["bench", "--jobs", "100", "--json"]).json();
    assert!(plain.get("many_queues").is_none(), "{plain}");
}

#[test]
fn bench_flows_reports_fan_out_in_and_chain_against_plain_and_the_unblocking() {
    let server = TestServer::start();
    let run = emq_on(&server, &["bench", "--jobs", "40", "--flows", "--json"]);
    assert_ok(&run);
    let report = run.json();
    let flows = &report["flows"];
    // 40 jobs a variant in each of 5 rounds; a fan-out of 40 a flow.
    for phase in ["plain", "plain_serial", "fan_out_in", "chain", "round_trip"] {
        assert_eq!(flows[phase]["jobs"], 200, "{phase}: {report}");
        assert!(
            flows[phase]["server_cpu_us_per_job"].as_f64().unwrap() > 0.0,
            "{phase}: {report}"
        );
    }
    assert_eq!(flows["fan_jobs"], 40, "{report}");
    let per_job = |phase: &str| flows[phase]["server_cpu_us_per_job"].as_f64().unwrap();
    for (ratio, phase) in [
        ("fan_out_in_cpu_ratio", "fan_out_in"),
        ("chain_cpu_ratio", "chain"),
        ("round_trip_cpu_ratio", "round_trip"),
    ] {
        let quotient = per_job(phase) / per_job("plain");
        let given = flows[ratio].as_f64().unwrap();
        assert!((given - quotient).abs() < 1e-9, "{ratio}: {report}");
    }
    let serial = per_job("chain") / per_job("plain_serial");
    let given = flows["chain_serial_cpu_ratio"].as_f64().unwrap();
    assert!((given - serial).abs() < 1e-9, "{report}");
    let unblock = &flows["unblock"];
    assert_eq!(unblock["pairs"], 20, "{report}");
    let ms = |field: &str| unblock[field].as_f64().unwrap();
    assert!(
        0.0 <= ms("p50_ms") && ms("p50_ms") <= ms("p99_ms") && ms("p99_ms") <= ms("max_ms"),
        "{report}"
    );

    let text = emq_on(&server, &["bench", "--jobs", "10", "--flows"]);
    assert_ok(&text);
    for line in [
        "fan-out / fan-in (10 jobs a flow)",
        "a bare round trip (PING, one at a time, a chain hop's floor) ",
        "last dependency completed → dependent claimable, 5 pairs over two queues: p50 ",
    ] {
        assert!(text.stdout.contains(line), "{line}: {}", text.stdout);
    }
}

#[test]
fn bench_flows_with_lateness_is_refused() {
    let run = common::emq(&["bench", "--flows", "--lateness"]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("--flows"), "{}", run.stderr);
}
