//! `emq flow show` and the edges `emq job` lists, against real servers on
//! both wires: the DAG around a job drawn upstream and downstream across
//! queues with each job's state and each edge's state, `--json`, and each
//! piece of bad input refused (docs/flows.md, "Seeing a flow").

use crate::common::{Run, assert_ok, assert_refused, complete_one, run_on, servers};
use echomq_testkit::TestServer;
use serde_json::{Value, json};
use std::io::Write;

/// fetch → (small, large) → mail → audit, across three queues.
fn submit(server: &TestServer, wire: &str) {
    let flow = json!({"id": "o", "jobs": [
        {"ref": "fetch", "queue": "images", "payload": 1},
        {"ref": "small", "queue": "images", "payload": 2, "after": ["fetch"]},
        {"ref": "large", "queue": "images", "payload": 3, "after": ["fetch"]},
        {"ref": "mail", "queue": "mail", "payload": 4, "after": ["small", "large"]},
        {"ref": "audit", "queue": "audit", "payload": 5, "after": ["mail"]}
    ]});
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(flow.to_string().as_bytes()).unwrap();
    let path = file.path().to_str().unwrap();
    assert_ok(&run_on(server, wire, &["flow", "add", path]));
}

/// fetch completed and its outcome delivered to small and large.
fn fetch_done(server: &TestServer, wire: &str) {
    assert_eq!(complete_one(server, "images").as_str(), "o:fetch");
    assert_ok(&run_on(server, wire, &["flow", "relay", "images"]));
}

/// Exit 2 naming each of `needles`, nothing on stdout.
fn assert_usage(run: &Run, needles: &[&str]) {
    assert_eq!(
        run.code, 2,
        "stdout: {}\nstderr: {}",
        run.stdout, run.stderr
    );
    for needle in needles {
        assert!(run.stderr.contains(needle), "{needle:?} in {}", run.stderr);
    }
    assert_eq!(run.stdout, "");
}

#[test]
fn flow_show_draws_a_job_s_dependencies_and_dependents_with_their_states() {
    for (server, wire) in servers() {
        submit(&server, wire);
        fetch_done(&server, wire);
        let run = run_on(&server, wire, &["flow", "show", "images", "o:small"]);
        assert_ok(&run);
        assert_eq!(
            run.stdout,
            "images o:small (ref small): pending\n\
             upstream, the jobs it runs after:\n  \
             └─ images o:fetch (ref fetch): completed  [edge completed, told]\n\
             downstream, the jobs that run after it:\n  \
             └─ mail o:mail (ref mail): blocked  [edge wait, not told]\n     \
             └─ audit o:audit (ref audit): blocked  [edge wait, not told]\n",
            "{wire}"
        );
        // From the top, the diamond: mail reached twice, followed once;
        // with --depth 1 the drawing stops and says what lies past it.
        let run = run_on(&server, wire, &["flow", "show", "images", "o:fetch"]);
        assert_ok(&run);
        for line in [
            "─ images o:small (ref small): pending  [edge completed, told]\n",
            "─ images o:large (ref large): pending  [edge completed, told]\n",
            "└─ mail o:mail (ref mail): blocked  [edge wait, not told]  (1 dependent past --depth)\n",
            "└─ mail o:mail (ref mail): blocked  [edge wait, not told]  (drawn above)\n",
        ] {
            assert!(run.stdout.contains(line), "{line}: {}", run.stdout);
        }
        assert!(
            run.stdout
                .contains("upstream, the jobs it runs after: no dependencies\n")
        );
        let shallow = run_on(
            &server,
            wire,
            &["flow", "show", "images", "o:fetch", "--depth", "1"],
        );
        assert!(!shallow.stdout.contains("o:mail"), "{}", shallow.stdout);
        assert!(
            shallow.stdout.contains("(1 dependent past --depth)"),
            "{}",
            shallow.stdout
        );
    }
}

#[test]
fn flow_show_json_lists_the_job_nodes_and_edges() {
    for (server, wire) in servers() {
        submit(&server, wire);
        fetch_done(&server, wire);
        let run = run_on(
            &server,
            wire,
            &["flow", "show", "mail", "o:mail", "--depth", "1", "--json"],
        );
        assert_ok(&run);
        let graph = run.json();
        assert_eq!(
            graph["job"],
            json!({"queue": "mail", "id": "o:mail", "ref": "mail", "state": "blocked",
                   "depth": 0, "deps": 2, "dependents": 1})
        );
        assert_eq!(
            (&graph["depth"], &graph["truncated"]),
            (&json!(1), &json!(false))
        );
        let nodes: Vec<(&str, i64, &str)> = graph["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                (
                    n["id"].as_str().unwrap(),
                    n["depth"].as_i64().unwrap(),
                    n["state"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            nodes,
            [
                ("o:mail", 0, "blocked"),
                ("o:small", -1, "pending"),
                ("o:large", -1, "pending"),
                ("o:audit", 1, "blocked")
            ]
        );
        let edges = graph["edges"].as_array().unwrap();
        assert_eq!(edges.len(), 3);
        assert_eq!(
            edges[0],
            json!({"dependency": {"queue": "images", "id": "o:small"},
                   "dependent": {"queue": "mail", "id": "o:mail"},
                   "state": "wait", "told": false})
        );
    }
}

#[test]
fn flow_show_of_a_plain_job_draws_it_alone() {
    let (server, wire) = servers().pop().expect("a server");
    assert_ok(&run_on(&server, wire, &["enqueue", "q", "1", "--id", "p"]));
    let run = run_on(&server, wire, &["flow", "show", "q", "p"]);
    assert_ok(&run);
    assert_eq!(
        run.stdout,
        "q p: pending\n\
         upstream, the jobs it runs after: no dependencies\n\
         downstream, the jobs that run after it: no dependents\n"
    );
}

#[test]
fn flow_show_refuses_an_unknown_job() {
    let server = TestServer::start();
    let run = run_on(&server, "script", &["flow", "show", "q", "ghost"]);
    assert_refused(&run, &["no job ghost in queue q"]);
}

#[test]
fn flow_show_refuses_a_bad_queue_name() {
    let server = TestServer::start();
    let run = run_on(&server, "script", &["flow", "show", "bad name", "a"]);
    assert_usage(&run, &["bad name"]);
}

#[test]
fn flow_show_refuses_a_bad_job_id() {
    let server = TestServer::start();
    let run = run_on(&server, "script", &["flow", "show", "q", "has space"]);
    assert_usage(&run, &["job id"]);
}

#[test]
fn flow_show_refuses_a_depth_past_its_bound() {
    let server = TestServer::start();
    let run = run_on(
        &server,
        "script",
        &["flow", "show", "q", "a", "--depth", "11"],
    );
    assert_usage(&run, &["--depth", "from 0 to 10"]);
}

#[test]
fn job_lists_its_dependencies_and_dependents() {
    for (server, wire) in servers() {
        submit(&server, wire);
        fetch_done(&server, wire);
        let small = run_on(&server, wire, &["job", "images", "o:small"]);
        assert_ok(&small);
        assert!(
            small.stdout.contains(
                "dependencies (1):\n  images o:fetch (ref fetch): edge completed\n\
                 dependents (1):\n  mail o:mail: not told\n"
            ),
            "{}",
            small.stdout
        );
        let fetch = run_on(&server, wire, &["job", "images", "o:fetch", "--json"]).json();
        let mut told: Vec<Value> = fetch["edges"]["dependents"].as_array().unwrap().clone();
        told.sort_by_key(|d| d["id"].as_str().unwrap().to_string());
        assert_eq!(
            told,
            [
                json!({"queue": "images", "id": "o:large", "told": true}),
                json!({"queue": "images", "id": "o:small", "told": true})
            ]
        );
        assert_eq!(fetch["edges"]["dependencies"], json!([]));
        let mail = run_on(&server, wire, &["job", "mail", "o:mail", "--json"]).json();
        let mut deps: Vec<Value> = mail["edges"]["dependencies"].as_array().unwrap().clone();
        deps.sort_by_key(|d| d["id"].as_str().unwrap().to_string());
        assert_eq!(
            deps,
            [
                json!({"queue": "images", "id": "o:large", "ref": null, "edge": "wait"}),
                json!({"queue": "images", "id": "o:small", "ref": null, "edge": "wait"})
            ]
        );
    }
}
