//! The flow chaos run of issue 43: 200 flows of 1 → 100 → 1 jobs across
//! three queues (on the cluster, each queue on a master of its own; 1 →
//! 10 → 1 on one server, where wire 4 and wire 6 each take a run: each
//! job is a process of `sh`). Every tenth flow first goes to an `emq flow
//! add` SIGKILLed at a random moment of its submit, then a producer
//! submits every flow again; `emq worker --exec` processes drain them,
//! SIGKILLed and restarted all along. Every flow ends with each of its
//! jobs completed, each dependent first run only after its dependencies'
//! last runs (the order of the runs' log), no job left blocked, and the
//! state invariant (flows included) holding on every queue.

use crate::common::{Spawned, block_on, spawn};
use echomq::{
    Connector, DependencyOutcome, Flow, JobId, JobRef, JobState, NewJob, Queue, QueueSettings,
};
use echomq_protocol::Keyspace;
use echomq_testkit::{TestCluster, TestServer};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// The three queues: the root's, the middle jobs', the last job's; on a
/// 3-master cluster, each on a master of its own.
const QUEUES: [&str; 3] = ["chaos_first", "chaos_middle", "chaos_last"];
/// Flows submitted.
const FLOWS: usize = 200;
/// Worker processes, each over the three queues.
const WORKERS: usize = 3;
/// How long the run may take before the test fails.
const DRAIN: Duration = Duration::from_secs(600);

/// Where the run happens: the `emq` arguments that reach it, and its URLs.
struct Target {
    args: Vec<String>,
    urls: Vec<String>,
}

impl Target {
    fn on(server: &TestServer, wire: &str) -> Self {
        Target {
            args: vec!["--url".into(), server.url(), "--wire".into(), wire.into()],
            urls: vec![server.url()],
        }
    }

    fn on_cluster(cluster: &TestCluster) -> Self {
        let urls = cluster.urls();
        Target {
            args: vec!["--cluster".into(), urls.join(",")],
            urls,
        }
    }

    /// `emq <target> args…` in the background.
    fn spawn(&self, args: &[&str]) -> Spawned {
        let mut all: Vec<&str> = self.args.iter().map(String::as_str).collect();
        all.extend_from_slice(args);
        spawn(&all)
    }

    async fn connector(&self) -> Connector {
        let builder = if self.urls.len() > 1 {
            Connector::cluster(self.urls.clone())
        } else {
            Connector::builder(&self.urls[0])
        };
        builder.connect().await.expect("connect")
    }
}

/// The file of flow `i`: a root in the first queue, `width` jobs after it
/// in the second, one job after those in the third. Attempts enough that
/// no kill ever kills a job.
fn flow_file(dir: &Path, i: usize, width: usize) -> PathBuf {
    let job = |reference: String, queue: &str, after: Vec<String>| json!({"ref": reference, "queue": queue, "payload": i, "after": after, "attempts": 1000});
    let middle: Vec<String> = (0..width).map(|k| format!("m{k}")).collect();
    let mut jobs = vec![job("root".into(), QUEUES[0], vec![])];
    for reference in &middle {
        jobs.push(job(reference.clone(), QUEUES[1], vec!["root".into()]));
    }
    jobs.push(job("last".into(), QUEUES[2], middle));
    let path = dir.join(format!("f{i}.json"));
    std::fs::write(
        &path,
        json!({"id": format!("f{i}"), "jobs": jobs}).to_string(),
    )
    .unwrap();
    path
}

/// Flow `i` as [`flow_file`] writes it, for the library's submit.
fn flow(i: usize, width: usize, queues: &[Queue<Value>]) -> Flow {
    let mut flow = Flow::new(format!("f{i}"));
    let job = || NewJob::new(json!(i)).attempts(1000);
    let root = flow.add_as("root", &queues[0], job());
    let middle: Vec<JobRef> = (0..width)
        .map(|k| flow.add_as(&format!("m{k}"), &queues[1], job().depends_on([&root])))
        .collect();
    flow.add_as("last", &queues[2], job().depends_on(&middle));
    flow
}

/// `emq flow add` of `file` to its end, exit 0.
fn submit(target: &Target, file: &Path) {
    let mut producer = target.spawn(&["flow", "add", file.to_str().unwrap()]);
    let status = producer.wait_exit();
    assert!(status.success(), "flow add: {:?}", producer.drain_stderr());
}

/// A worker over the three queues, each run logging its job's id.
fn worker(target: &Target, runs: &Path) -> Spawned {
    // `read`, a builtin of sh, takes the payload: one process a job.
    let exec = format!("echo \"$EMQ_JOB_ID\" >> {}; read -r _ || :", runs.display());
    target.spawn(&[
        "worker",
        &QUEUES.join(","),
        "--exec",
        &exec,
        "--concurrency",
        "8",
        "--lease",
        "2s",
        "--stalled-interval",
        "500ms",
        "--max-stalls",
        "1000",
        "--quiet",
    ])
}

/// Runs the chaos on `target`, flows of 1 → `width` → 1, and checks what
/// it left.
fn run_chaos(target: &Target, width: usize) {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    // The files of every tenth flow, for `emq flow add`.
    let files: Vec<PathBuf> = (0..FLOWS)
        .step_by(10)
        .map(|i| flow_file(dir.path(), i, width))
        .collect();
    block_on(keep_every_job(target));
    // The first flow makes the queues known to the workers' list.
    let started = std::time::Instant::now();
    submit(target, &files[0]);

    let stop = Arc::new(AtomicBool::new(false));
    let kills = Arc::new(AtomicU64::new(0));
    let killer = {
        let (stop, kills) = (stop.clone(), kills.clone());
        let (args, urls, runs) = (target.args.clone(), target.urls.clone(), runs.clone());
        std::thread::spawn(move || {
            let target = Target { args, urls };
            let mut workers: Vec<Spawned> = (0..WORKERS).map(|_| worker(&target, &runs)).collect();
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(300 + fastrand::u64(..400)));
                let at = fastrand::usize(..WORKERS);
                workers[at].signal("KILL");
                workers[at].wait_exit();
                kills.fetch_add(1, Ordering::Relaxed);
                workers[at] = worker(&target, &runs);
            }
            // Each left to drop: killed.
        })
    };

    // Every tenth flow first goes to an `emq flow add` SIGKILLed at a
    // random moment of what a whole submit takes (its start included);
    // then a producer submits every flow, which finishes those.
    let lifetime = started.elapsed();
    for file in &files[1..] {
        let mut producer = target.spawn(&["flow", "add", file.to_str().unwrap()]);
        std::thread::sleep(lifetime.mul_f64(fastrand::f64()));
        producer.signal("KILL");
        producer.wait_exit();
    }
    block_on(async {
        let connector = target.connector().await;
        let queues: Vec<Queue<Value>> =
            QUEUES.iter().map(|q| connector.queue(q).unwrap()).collect();
        for i in 0..FLOWS {
            connector.submit(&flow(i, width, &queues)).await.unwrap();
        }
    });
    let flows = FLOWS as u64;
    let expected = [flows, flows * width as u64, flows];
    block_on(async {
        let connector = target.connector().await;
        let queues: Vec<Queue<Value>> =
            QUEUES.iter().map(|q| connector.queue(q).unwrap()).collect();
        let mut done = false;
        let deadline = std::time::Instant::now() + DRAIN;
        while !done {
            assert!(
                std::time::Instant::now() < deadline,
                "the flows did not end within {DRAIN:?}"
            );
            done = true;
            for (queue, want) in queues.iter().zip(expected) {
                done &= queue.admin().counts().await.unwrap().completed == want;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    stop.store(true, Ordering::Relaxed);
    killer.join().unwrap();
    assert!(kills.load(Ordering::Relaxed) > 0, "no worker was killed");

    block_on(check_the_end(target, &expected, width));
    check_the_order(&std::fs::read_to_string(&runs).unwrap(), width);
}

/// Retention keeps every completed job, for the checks to read.
async fn keep_every_job(target: &Target) {
    let connector = target.connector().await;
    for name in QUEUES {
        let queue = connector.queue::<Value>(name).unwrap();
        queue
            .configure(&QueueSettings {
                keep_completed: 1_000_000,
                ..QueueSettings::default()
            })
            .await
            .unwrap();
    }
}

/// Every job completed, none elsewhere, each last job's dependencies all
/// completed, the invariant on every queue.
async fn check_the_end(target: &Target, expected: &[u64; 3], width: usize) {
    let connector = target.connector().await;
    for (name, want) in QUEUES.iter().zip(expected) {
        let queue = connector.queue::<Value>(name).unwrap();
        let counts = queue.admin().counts().await.unwrap();
        assert_eq!(counts.total(), *want, "{name}: {counts:?}");
        assert_eq!(counts.completed, *want, "{name}: {counts:?}");
        let keys = Keyspace::new("emq", queue.name()).unwrap();
        echomq_testkit::invariant::assert_invariant(&target.urls, &keys).await;
    }
    let join = connector.queue::<Value>(QUEUES[2]).unwrap();
    for i in 0..FLOWS {
        let last = JobId::new(format!("f{i}:last")).unwrap();
        assert_eq!(
            join.jobs().get(&last).await.unwrap().unwrap().state,
            JobState::Completed
        );
        let deps = join.jobs().dependencies(&last).await.unwrap();
        assert_eq!(deps.len(), width, "f{i}");
        assert!(
            deps.iter()
                .all(|d| matches!(d.outcome, DependencyOutcome::Completed { .. })),
            "f{i}: {deps:?}"
        );
    }
}

/// In the runs' log (one line per run, appended as it starts), each
/// flow's middle jobs first run after its root's last run, and its last
/// job after every middle job's last run; every job ran.
fn check_the_order(log: &str, width: usize) {
    let mut first: HashMap<&str, usize> = HashMap::new();
    let mut last: HashMap<&str, usize> = HashMap::new();
    for (at, id) in log.lines().enumerate() {
        first.entry(id).or_insert(at);
        last.insert(id, at);
    }
    for i in 0..FLOWS {
        let root = format!("f{i}:root");
        let end = format!("f{i}:last");
        let root_last = last[root.as_str()];
        let end_first = first[end.as_str()];
        for k in 0..width {
            let middle = format!("f{i}:m{k}");
            assert!(
                first[middle.as_str()] > root_last,
                "{middle} ran before {root} ended"
            );
            assert!(
                end_first > last[middle.as_str()],
                "{end} ran before {middle} ended"
            );
        }
    }
}

#[test]
fn chaos_flows_end_in_order_on_wire_4() {
    let server = TestServer::start();
    run_chaos(&Target::on(&server, "script"), 10);
}

#[test]
fn chaos_flows_end_in_order_on_wire_6() {
    let server = TestServer::with_config(
        echomq_testkit::ServerBinary::locate().unwrap(),
        false,
        vec![echomq_testkit::module_path()],
    );
    run_chaos(&Target::on(&server, "native"), 10);
}

#[test]
fn chaos_flows_end_in_order_on_a_cluster() {
    let cluster = TestCluster::start(3);
    let mut masters: Vec<u16> = QUEUES
        .iter()
        .map(|q| cluster.master_of(&format!("{{{q}}}")).port())
        .collect();
    masters.sort_unstable();
    masters.dedup();
    assert_eq!(masters.len(), 3, "the queues share a master: {masters:?}");
    run_chaos(&Target::on_cluster(&cluster), 100);
}
