//! One worker over many queues (`Worker::over`) against real servers, each
//! case on wire 4 and on wire 6: its claims shared by weight or in strict
//! order, a paused, capped or rate-limited queue giving its turns to the
//! others, an idle worker woken by an enqueue on any of its queues, and
//! the refusals of bad input. Strict order, a paused queue and the idle
//! wake-up again on a 3-master cluster, the queues in other slots. The
//! state invariant is checked after the steps.

use crate::common;
use common::Harness;
use echomq::{Error, JobContext, JobError, NewJob, Queue, QueueName, Worker, WorkerHandle};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;

const BOUND: Duration = Duration::from_secs(20);

/// The cluster cases on one 3-master cluster.
#[tokio::test]
async fn worker_over_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}

/// The queues a handler saw, in the order its runs started.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<QueueName>>>);

impl Seen {
    fn all(&self) -> Vec<String> {
        let seen = self.0.lock().unwrap();
        seen.iter().map(|name| name.as_str().to_string()).collect()
    }

    fn count(&self) -> usize {
        self.0.lock().unwrap().len()
    }

    fn of(&self, queue: &Queue<Value>) -> usize {
        let seen = self.0.lock().unwrap();
        seen.iter().filter(|name| *name == queue.name()).count()
    }
}

/// A worker over `queues` whose handler notes each job's queue in `seen`.
fn noting(queues: &[Queue<Value>], seen: &Seen) -> Worker<Value> {
    let seen = seen.clone();
    Worker::over(queues.iter().cloned(), move |job: JobContext<Value>| {
        seen.0.lock().unwrap().push(job.queue().clone());
        std::future::ready(Ok::<_, JobError>(()))
    })
    .unwrap()
    .schedule_repeats(false)
}

async fn enqueue(q: &Queue<Value>, n: usize) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
        q.enqueue_bulk(chunk.iter().map(|i| NewJob::new(json!(i))))
            .await
            .unwrap();
    }
}

fn queues(h: &Harness, names: &[&str]) -> Vec<Queue<Value>> {
    names.iter().map(|name| h.queue::<Value>(name)).collect()
}

async fn check_all(h: &Harness, queues: &[Queue<Value>]) {
    for q in queues {
        h.check(q).await;
    }
}

/// Clients blocked across every server of the harness.
async fn blocked_everywhere(h: &Harness) -> u64 {
    let mut blocked = 0;
    for url in h.urls() {
        let client = redis::Client::open(url.as_str()).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let info: String = redis::cmd("INFO")
            .arg("clients")
            .query_async(&mut conn)
            .await
            .unwrap();
        blocked += info
            .lines()
            .find_map(|line| line.strip_prefix("blocked_clients:"))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    blocked
}

async fn until_seen(seen: &Seen, n: usize, what: &str) {
    wait_for(what, BOUND, || async { seen.count() >= n }).await;
}

#[echomq_testkit::case]
async fn weighted_claims_follow_the_weights_within_five_percent(h: &Harness) {
    // Weights 5, 2, 1: over the first 10,000 runs, 6,250, 2,500 and 1,250.
    // Each queue holds more than its share of 10,000 plus everything the
    // worker holds (running and ahead), so all three have jobs until
    // then: the counts measure the round robin, not which queue ran dry.
    let qs = queues(h, &["w_mail", "w_sms", "w_reports"]);
    for (q, jobs) in qs.iter().zip([7000, 3000, 1500]) {
        enqueue(q, jobs).await;
    }
    let seen = Seen::default();
    let worker = noting(&qs, &seen)
        .weights([5, 2, 1])
        .unwrap()
        .concurrency(8)
        .start();
    until_seen(&seen, 10_000, "10,000 runs").await;
    worker.shutdown(BOUND).await;
    let first: Vec<String> = seen.all().into_iter().take(10_000).collect();
    for (q, weight) in qs.iter().zip([5.0, 2.0, 1.0]) {
        let runs = first
            .iter()
            .filter(|name| *name == q.name().as_str())
            .count();
        let expected: f64 = 10_000.0 * weight / 8.0;
        assert!(
            (runs as f64 - expected).abs() <= expected * 0.05,
            "{}: {runs} of the first 10,000 runs, expected {expected} ± 5 %",
            q.name()
        );
    }
    check_all(h, &qs).await;
}

#[echomq_testkit::case(cluster)]
async fn strict_order_serves_a_queue_only_once_those_before_it_are_empty(h: &Harness) {
    let qs = queues(h, &["s_first", "s_second", "s_third"]);
    // Enqueued last first: the order served is the worker's, not the enqueues'.
    for q in qs.iter().rev() {
        enqueue(q, 40).await;
    }
    let seen = Seen::default();
    let worker = noting(&qs, &seen).strict().unwrap().concurrency(4).start();
    until_seen(&seen, 120, "120 runs").await;
    worker.shutdown(BOUND).await;
    let expected: Vec<String> = ["s_first", "s_second", "s_third"]
        .iter()
        .flat_map(|name| std::iter::repeat_n(name.to_string(), 40))
        .collect();
    assert_eq!(seen.all(), expected);
    check_all(h, &qs).await;
}

#[echomq_testkit::case(cluster)]
async fn a_paused_queue_is_skipped_and_served_again_after_resume(h: &Harness) {
    let qs = queues(h, &["p_paused", "p_open"]);
    qs[0].admin().pause().await.unwrap();
    enqueue(&qs[0], 5).await;
    enqueue(&qs[1], 20).await;
    let seen = Seen::default();
    // In strict order the paused queue comes first: skipped all the same.
    let worker = noting(&qs, &seen)
        .strict()
        .unwrap()
        .idle_wait(Duration::from_secs(60))
        .start();
    until_seen(&seen, 20, "the open queue's 20 runs").await;
    assert_eq!(seen.of(&qs[0]), 0, "a job of the paused queue ran");
    assert_eq!(qs[0].admin().counts().await.unwrap().pending, 5);
    qs[0].admin().resume().await.unwrap();
    until_seen(&seen, 25, "the resumed queue's 5 runs").await;
    assert_eq!(seen.of(&qs[0]), 5);
    worker.shutdown(BOUND).await;
    check_all(h, &qs).await;
}

#[echomq_testkit::case(cluster)]
async fn an_idle_worker_wakes_on_an_enqueue_to_any_of_its_queues(h: &Harness) {
    // Slots 9496, 1927 and 12755 (prefix `emq`): on a 3-master cluster,
    // one queue on each master.
    let qs = queues(h, &["idle_mail", "idle_fax", "idle_reports"]);
    let seen = Seen::default();
    // The safety net's claim comes a minute later: only the signal sets
    // can wake the worker within the bound.
    let worker = noting(&qs, &seen)
        .idle_wait(Duration::from_secs(60))
        .start();
    for (round, q) in [&qs[2], &qs[0], &qs[1]].into_iter().enumerate() {
        // Idle: a blocked read on every queue's signal set.
        wait_for("the worker to block on its 3 queues", BOUND, || async {
            blocked_everywhere(h).await >= 3
        })
        .await;
        enqueue(q, 1).await;
        until_seen(&seen, round + 1, "the enqueued job's run").await;
        assert_eq!(seen.of(q), 1, "{} woke the worker", q.name());
    }
    worker.shutdown(BOUND).await;
    check_all(h, &qs).await;
}

/// A worker over `queues` in strict order whose handler, on `held`'s
/// queue, waits for a permit of `gate` (so that queue's job stays active
/// until the test adds permits), and notes every start.
fn gated(
    queues: &[Queue<Value>],
    held: &QueueName,
    seen: &Seen,
    gate: &Arc<Semaphore>,
) -> WorkerHandle {
    let (seen, gate, held) = (seen.clone(), gate.clone(), held.clone());
    Worker::over(queues.iter().cloned(), move |job: JobContext<Value>| {
        seen.0.lock().unwrap().push(job.queue().clone());
        let (gate, held) = (gate.clone(), held.clone());
        async move {
            if *job.queue() == held {
                let _pass = gate.acquire().await.unwrap();
            }
            Ok::<_, JobError>(())
        }
    })
    .unwrap()
    .strict()
    .unwrap()
    .concurrency(4)
    .idle_wait(Duration::from_secs(60))
    .schedule_repeats(false)
    .start()
}

#[echomq_testkit::case]
async fn a_queue_at_its_cap_does_not_hold_up_the_others(h: &Harness) {
    let qs = queues(h, &["c_capped", "c_open"]);
    qs[0].admin().set_concurrency_cap(1).await.unwrap();
    enqueue(&qs[0], 5).await;
    enqueue(&qs[1], 30).await;
    let (seen, gate) = (Seen::default(), Arc::new(Semaphore::new(0)));
    // The capped queue comes first in strict order: its one active job
    // waits at the gate, its cap is full, and the other queue gets every
    // free slot.
    let worker = gated(&qs, qs[0].name(), &seen, &gate);
    wait_for("the open queue's 30 runs", BOUND, || async {
        seen.of(&qs[1]) == 30
    })
    .await;
    assert_eq!(seen.of(&qs[0]), 1, "the cap of 1 held");
    gate.add_permits(5);
    wait_for("the capped queue's 5 runs", BOUND, || async {
        let counts = qs[0].admin().counts().await.unwrap();
        (counts.pending, counts.active) == (0, 0)
    })
    .await;
    assert_eq!(seen.of(&qs[0]), 5);
    worker.shutdown(BOUND).await;
    check_all(h, &qs).await;
}

#[echomq_testkit::case]
async fn a_rate_limited_queue_does_not_hold_up_the_others(h: &Harness) {
    let qs = queues(h, &["r_limited", "r_open"]);
    qs[0]
        .admin()
        .set_rate_limit(1, Duration::from_secs(600))
        .await
        .unwrap();
    enqueue(&qs[0], 5).await;
    enqueue(&qs[1], 30).await;
    let seen = Seen::default();
    let worker = noting(&qs, &seen)
        .strict()
        .unwrap()
        .idle_wait(Duration::from_secs(60))
        .start();
    wait_for("the open queue's 30 runs", BOUND, || async {
        seen.of(&qs[1]) == 30
    })
    .await;
    assert_eq!(seen.of(&qs[0]), 1, "one run in the limit's window");
    assert_eq!(qs[0].admin().counts().await.unwrap().pending, 4);
    worker.shutdown(BOUND).await;
    check_all(h, &qs).await;
}

/// The refusal of `built`: its argument's name and its reason.
fn refusal(built: Result<Worker<Value>, Error>) -> (String, String) {
    match built {
        Err(Error::BadArgument { name, reason }) => (name.to_string(), reason),
        Err(other) => panic!("refused with {other}"),
        Ok(_) => panic!("not refused"),
    }
}

fn worker(queues: Vec<Queue<Value>>) -> Result<Worker<Value>, Error> {
    Worker::over(queues, |_: JobContext<Value>| async {
        Ok::<_, JobError>(())
    })
}

#[echomq_testkit::case]
async fn an_empty_list_of_queues_is_refused(h: &Harness) {
    let _ = h;
    let (name, reason) = refusal(worker(Vec::new()));
    assert_eq!(name, "queues");
    assert_eq!(reason, "a worker needs at least one queue");
}

#[echomq_testkit::case]
async fn a_queue_listed_twice_is_refused(h: &Harness) {
    let qs = queues(h, &["twice", "other", "twice"]);
    let (name, reason) = refusal(worker(qs));
    assert_eq!(
        (name.as_str(), reason.as_str()),
        ("queues", "queue twice is listed twice")
    );
}

#[echomq_testkit::case]
async fn weights_not_one_per_queue_are_refused(h: &Harness) {
    let qs = queues(h, &["a", "b", "c"]);
    let (name, reason) = refusal(worker(qs).unwrap().weights([5, 2]));
    assert_eq!(name, "weights");
    assert_eq!(reason, "2 weights for 3 queues: give one per queue");
}

#[echomq_testkit::case]
async fn a_zero_weight_is_refused(h: &Harness) {
    let qs = queues(h, &["a", "b", "c"]);
    let (name, reason) = refusal(worker(qs).unwrap().weights([5, 0, 1]));
    assert_eq!(name, "weights");
    assert_eq!(reason, "queue b has weight 0: a weight is 1 or more");
}

#[echomq_testkit::case]
async fn weights_and_strict_order_together_are_refused(h: &Harness) {
    let qs = queues(h, &["a", "b"]);
    let expected = "weights and strict order exclude each other: give one or the other";
    let (name, reason) = refusal(
        worker(qs.clone())
            .unwrap()
            .weights([2, 1])
            .unwrap()
            .strict(),
    );
    assert_eq!((name.as_str(), reason.as_str()), ("strict", expected));
    let (name, reason) = refusal(worker(qs).unwrap().strict().unwrap().weights([2, 1]));
    assert_eq!((name.as_str(), reason.as_str()), ("weights", expected));
}
