//! The tenancy cases; each takes a harness (wire 4, or wire 6 with the
//! module) whose default user sets up ACL users, and uses its own queues.

use super::common::{Harness, state_of};
use echomq::acl::{Reach, Role, flow_reach_rule, rules};
use echomq::{Connector, TlsOptions};
use echomq::{
    Denied, EventsFrom, FailAction, JobContext, JobError, JobId, JobMatch, JobState, NewJob,
    Outcome, Queue, Worker,
};
use echomq_testkit::invariant::queue_keys;
use echomq_testkit::wait_for;
use echomq_testkit::{ClientAuth, TlsServer};
use serde_json::{Value, json};
use std::time::{Duration, SystemTime};

const BOUND: Duration = Duration::from_secs(30);
const LEASE: Duration = Duration::from_secs(30);

/// A user limited to queue `queue` under `prefix`, with every command.
fn queue_rules(prefix: &str, queue: &str) -> String {
    format!("~{prefix}:{{{queue}}}* &{prefix}:{{{queue}}}* +@all")
}

/// Whether `err` is the server's ACL refusing `denied` for `queue`.
fn is_refused(err: &echomq::Error, denied: &Denied, queue: Option<&str>) -> bool {
    matches!(err, echomq::Error::NotPermitted { denied: d, queue: q, .. }
        if d == denied && q.as_deref() == queue)
}

/// A worker that completes every job, except one with payload "wait",
/// whose handler waits for its cancellation.
fn completing_worker(queue: &Queue<Value>) -> echomq::WorkerHandle {
    Worker::new(queue.clone(), |job: JobContext<Value>| async move {
        if job.payload == json!("wait") {
            job.cancelled().await;
            return Err(JobError::Cancelled);
        }
        Ok(())
    })
    .concurrency(8)
    .start()
}

/// `n` jobs through `queue` by a worker, and a cancellation reaching a
/// running handler: all as the user `queue` is connected as.
async fn runs_jobs_and_cancels(queue: &Queue<Value>, n: u64) {
    let jobs: Vec<Value> = (0..n).map(|i| json!(i)).collect();
    queue.enqueue_bulk(jobs).await.unwrap();
    queue
        .enqueue(NewJob::new(json!("later")).after(Duration::from_millis(50)))
        .await
        .unwrap();
    let worker = completing_worker(queue);
    wait_for("every job to complete", BOUND, || async {
        queue.admin().counts().await.unwrap().completed == n + 1
    })
    .await;
    let waiting = queue.enqueue(json!("wait")).await.unwrap().id;
    wait_for("the waiting job to run", BOUND, || async {
        state_of(queue, &waiting).await == Some(JobState::Active)
    })
    .await;
    queue.jobs().cancel(&waiting).await.unwrap();
    wait_for("the cancellation to reach the handler", BOUND, || async {
        state_of(queue, &waiting).await == Some(JobState::Cancelled)
    })
    .await;
    assert!(worker.failure().is_none(), "{:?}", worker.failure());
    worker.shutdown(BOUND).await;
}

/// Pause, resume, drain and obliterate, as the user `queue` is connected as.
async fn operates(queue: &Queue<Value>) {
    let admin = queue.admin();
    admin.pause().await.unwrap();
    assert!(queue.claim("w", LEASE, 1).await.unwrap().is_empty());
    admin.resume().await.unwrap();
    queue.enqueue(json!("drained")).await.unwrap();
    assert_eq!(
        admin
            .drain(echomq::DrainScope::PENDING_AND_SCHEDULED)
            .await
            .unwrap(),
        1
    );
    admin.pause().await.unwrap();
    admin.obliterate(echomq::IfActive::Force).await.unwrap();
    assert_eq!(queue.admin().counts().await.unwrap().completed, 0);
}

#[echomq_testkit::case]
pub(super) async fn a_queue_scoped_user_runs_its_queue(h: &Harness) {
    let user = h
        .as_user("tenant-q", &queue_rules("emq", "tq"), "emq")
        .await;
    let queue: Queue<Value> = user.queue("tq").unwrap();
    runs_jobs_and_cancels(&queue, 100).await;
    h.check(&queue).await;
    operates(&queue).await;
    assert!(queue_keys(h.urls(), queue.keys()).await.unwrap().is_empty());
}

pub(super) async fn a_queue_scoped_user_runs_the_spine(h: &Harness) {
    let user = h
        .as_user("tenant-c", &queue_rules("emq", "tc"), "emq")
        .await;
    let queue: Queue<Value> = user.queue("tc").unwrap();
    runs_jobs_and_cancels(&queue, 50).await;
    h.check(&queue).await;
    let other: Queue<Value> = user.queue("not-mine").unwrap();
    let err = other.enqueue(json!(1)).await.unwrap_err();
    assert!(
        is_refused(
            &err,
            &Denied::Key("emq:{not-mine}".into()),
            Some("not-mine")
        ),
        "{err}"
    );
}

#[echomq_testkit::case]
pub(super) async fn a_prefix_scoped_user_runs_its_queues_and_lists_them(h: &Harness) {
    let user = h.as_user("tenant-p", "~t1:* &t1:* +@all", "t1").await;
    for name in ["one", "two"] {
        let queue: Queue<Value> = user.queue(name).unwrap();
        runs_jobs_and_cancels(&queue, 20).await;
        h.check(&queue).await;
    }
    assert_eq!(user.queues().await.unwrap(), ["one", "two"]);
    let queue: Queue<Value> = user.queue("two").unwrap();
    operates(&queue).await;
    assert_eq!(user.queues().await.unwrap(), ["one"]);
}

/// Every key of `queue` with its `DUMP`.
async fn dump(h: &Harness, queue: &Queue<Value>) -> Vec<(String, Vec<u8>)> {
    let mut conn = h.raw(queue).await;
    let mut out = Vec::new();
    for key in queue_keys(h.urls(), queue.keys()).await.unwrap() {
        let value: Vec<u8> = redis::cmd("DUMP")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        out.push((key, value));
    }
    out.sort();
    out
}

#[echomq_testkit::case]
pub(super) async fn another_tenants_user_is_refused_every_verb_and_writes_nothing(h: &Harness) {
    // Tenant B's queue, with jobs in every state but dead, set up by the
    // server's default user.
    let b: Queue<Value> = h.queue("tenant-b");
    for i in 0..4 {
        b.enqueue(NewJob::new(json!(i)).id(format!("j{i}")).unwrap())
            .await
            .unwrap();
    }
    b.enqueue(NewJob::new(json!("later")).after(Duration::from_secs(3600)))
        .await
        .unwrap();
    let held = b.claim("owner", LEASE, 2).await.unwrap();
    b.complete(&held[0].id, held[0].token, &()).await.unwrap();
    let (active, token) = (held[1].id.clone(), held[1].token);
    b.repeat(
        "digest",
        echomq::Repeat::every(Duration::from_secs(3600)),
        &json!({}),
    )
    .await
    .unwrap();
    let before = dump(h, &b).await;

    // Tenant A's user, limited to A's queue, on B's.
    let user = h
        .as_user("tenant-a", &queue_rules("emq", "tenant-a"), "emq")
        .await;
    let theirs: Queue<Value> = user.queue("tenant-b").unwrap();
    let pending = JobId::new("j3").unwrap();
    let denied = Denied::Key("emq:{tenant-b}".into());
    let mut refused = Vec::new();
    macro_rules! refused {
        ($($verb:literal => $call:expr),* $(,)?) => {$(
            match $call.await {
                Ok(_) => panic!("{} was not refused", $verb),
                Err(err) => {
                    assert!(is_refused(&err, &denied, Some("tenant-b")), "{}: {err}", $verb);
                    assert!(err.to_string().contains("emq:{tenant-b}"), "{}: {err}", $verb);
                    refused.push($verb);
                }
            }
        )*};
    }
    refused!(
        "enqueue" => theirs.enqueue(json!(1)),
        "enqueue_bulk" => theirs.enqueue_bulk([json!(1), json!(2)]),
        "enqueue after" => theirs.enqueue(NewJob::new(json!(1)).after(Duration::from_secs(5))),
        "claim" => theirs.claim("thief", LEASE, 5),
        "complete" => theirs.complete(&active, token, &()),
        "fail" => theirs.fail(&active, token, "no", FailAction::Dead),
        "extend" => theirs.extend(&active, token, LEASE),
        "delay" => theirs.delay(&active, token, Duration::from_secs(1)),
        "get" => theirs.jobs().get(&pending),
        "counts" => theirs.admin().counts(),
        "promote" => theirs.promote(10),
        "sweep_stalled" => theirs.sweep_stalled(0, 10),
        "sweep_if_due" => theirs.sweep_if_due("thief", Duration::from_secs(1), 0),
        "reschedule" => theirs.jobs().reschedule(&pending, SystemTime::now()),
        "configure" => theirs.configure(&Default::default()),
        "repeats" => theirs.repeats(),
        "unrepeat" => theirs.unrepeat("digest"),
        "repeat" => theirs.repeat("mine", echomq::Repeat::every(Duration::from_secs(60)), &json!({})),
        "cancel" => theirs.jobs().cancel(&pending),
        "requeue" => theirs.jobs().requeue(&active),
        "remove" => theirs.jobs().remove(&pending, echomq::IfActive::Force),
        "reprocess" => theirs.jobs().reprocess(&held[0].id),
        "update" => theirs.jobs().update(&pending, &json!("mine")),
        "progress" => theirs.jobs().progress(&active, token, &json!(50)),
        "log" => theirs.jobs().log(&pending, "mine"),
        "logs" => theirs.jobs().logs(&pending, 10),
        "list" => theirs.jobs().list(JobState::Pending, 0, 10),
        "pause" => theirs.admin().pause(),
        "resume" => theirs.admin().resume(),
        "drain" => theirs.admin().drain(echomq::DrainScope::PENDING_AND_SCHEDULED),
        "obliterate" => theirs.admin().obliterate(echomq::IfActive::Force),
        "oldest_pending_age" => theirs.admin().oldest_pending_age(),
        "wrong_types" => theirs.admin().wrong_types(),
        "events" => theirs.events(EventsFrom::Now),
    );
    assert_eq!(refused.len(), 34);
    assert_eq!(
        dump(h, &b).await,
        before,
        "a refused call wrote to tenant B's queue"
    );
}

#[echomq_testkit::case]
pub(super) async fn a_worker_refused_the_queue_stops_with_not_permitted(h: &Harness) {
    let owner: Queue<Value> = h.queue("guarded");
    owner.enqueue(json!(1)).await.unwrap();
    let user = h
        .as_user("intruder", &queue_rules("emq", "elsewhere"), "emq")
        .await;
    let worker = completing_worker(&user.queue("guarded").unwrap());
    tokio::time::timeout(BOUND, worker.stopped())
        .await
        .expect("the worker stops by itself");
    let err = worker.failure().expect("the error that stopped it");
    assert!(
        is_refused(&err, &Denied::Key("emq:{guarded}".into()), Some("guarded")),
        "{err}"
    );
    let stats = worker.shutdown(BOUND).await;
    assert_eq!(stats.claimed, 0);
    assert_eq!(owner.admin().counts().await.unwrap().pending, 1);
}

/// A worker on `queue` under `lease` whose handler waits for its
/// cancellation, and the id of the job it runs (active once this returns).
async fn a_job_waiting_for_its_cancel(
    queue: &Queue<Value>,
    lease: Duration,
) -> (echomq::WorkerHandle, JobId) {
    let worker = Worker::new(queue.clone(), |job: JobContext<Value>| async move {
        job.cancelled().await;
        Err::<(), _>(JobError::Cancelled)
    })
    .lease(lease)
    .start();
    let waiting = queue.enqueue(json!("wait")).await.unwrap().id;
    wait_for("the job to run", BOUND, || async {
        state_of(queue, &waiting).await == Some(JobState::Active)
    })
    .await;
    (worker, waiting)
}

#[echomq_testkit::case]
pub(super) async fn a_worker_refused_the_cancel_channel_hears_cancels_at_checkpoints(h: &Harness) {
    // The keys of its queue, and no channel at all: the worker runs on,
    // and a cancellation reaches its handler at a lease checkpoint.
    let user = h
        .as_user("deaf", "~emq:{deaf}* resetchannels +@all", "emq")
        .await;
    let queue: Queue<Value> = user.queue("deaf").unwrap();
    let (worker, waiting) = a_job_waiting_for_its_cancel(&queue, Duration::from_secs(3)).await;
    h.queue::<Value>("deaf")
        .jobs()
        .cancel(&waiting)
        .await
        .unwrap();
    cancelled_by("the checkpoint", &queue, &waiting, worker).await;
}

/// Queue `blind` of a user granted its keys and its cancel channel, not
/// its outcome channel.
async fn blind_to_outcomes(h: &Harness) -> Queue<Value> {
    let user = h
        .as_user(
            "blind",
            "~emq:{blind}* resetchannels &emq:{blind}:cancel +@all",
            "emq",
        )
        .await;
    user.queue("blind").unwrap()
}

/// `err` is the refusal of `blind`'s outcome channel, naming the user.
fn assert_outcomes_refused(err: &echomq::Error) {
    assert!(
        is_refused(
            err,
            &Denied::Channel("emq:{blind}:outcome".into()),
            Some("blind")
        ),
        "{err:?}"
    );
}

#[echomq_testkit::case]
pub(super) async fn a_wait_refused_the_outcome_channel_is_not_permitted_naming_it(h: &Harness) {
    // The keys and the cancel channel of its queue, not its outcome
    // channel: the wait fails at once, naming the rule that grants it.
    let queue = blind_to_outcomes(h).await;
    let enqueued = queue.enqueue(json!(1)).await.unwrap();
    let err = enqueued.outcome::<Value>(BOUND).await.unwrap_err();
    assert_outcomes_refused(&err);
    assert!(err.to_string().contains("&emq:{blind}:outcome"), "{err}");
}

#[echomq_testkit::case]
pub(super) async fn an_awaited_enqueue_refused_the_outcome_channel_enqueues_nothing(h: &Harness) {
    // An awaited job's enqueue opens the subscription before it sends:
    // refused, it fails naming the rule, and no job is created.
    let queue = blind_to_outcomes(h).await;
    let job = NewJob::new(json!(1)).id("a").unwrap().awaited();
    let err = queue.enqueue(job.clone()).await.unwrap_err();
    assert_outcomes_refused(&err);
    let err = queue.enqueue_bulk([job]).await.unwrap_err();
    assert!(err.to_string().contains("&emq:{blind}:outcome"), "{err}");
    assert_eq!(
        state_of(&queue, &JobId::new("a").unwrap()).await,
        None,
        "nothing enqueued"
    );
}

#[echomq_testkit::case]
pub(super) async fn a_cancel_sent_while_the_subscription_is_down_reaches_the_handler_when_it_is_back(
    h: &Harness,
) {
    // The worker's user loses its channel, which drops the subscription;
    // the cancellation is published to no one. When the channel is given
    // back the subscription opens again and carries it: the lease's first
    // checkpoint is 200 s out, far past the bound.
    let user = h
        .as_user("regain", "~emq:{regain}* &emq:{regain}* +@all", "emq")
        .await;
    let queue: Queue<Value> = user.queue("regain").unwrap();
    let (worker, waiting) = a_job_waiting_for_its_cancel(&queue, Duration::from_secs(600)).await;
    let listening = |n: u64| {
        let queue = &queue;
        move || async move { h.cancel_subscribers(queue).await == n }
    };
    wait_for("the subscription", BOUND, listening(1)).await;
    set_rules(h, "regain", "resetchannels").await;
    wait_for("the subscription to drop", BOUND, listening(0)).await;
    h.queue::<Value>("regain")
        .jobs()
        .cancel(&waiting)
        .await
        .unwrap();
    assert_eq!(state_of(&queue, &waiting).await, Some(JobState::Active));
    set_rules(h, "regain", "&emq:{regain}*").await;
    cancelled_by("the subscription, open again,", &queue, &waiting, worker).await;
}

/// Waits until `waiting` is cancelled (`carrier` names what should carry
/// the cancellation), then stops `worker`: it ran on and counted one.
async fn cancelled_by(
    carrier: &str,
    queue: &Queue<Value>,
    waiting: &JobId,
    worker: echomq::WorkerHandle,
) {
    let what = format!("{carrier} to carry the cancellation");
    wait_for(&what, BOUND, || async {
        state_of(queue, waiting).await == Some(JobState::Cancelled)
    })
    .await;
    assert!(worker.failure().is_none(), "{:?}", worker.failure());
    assert_eq!(worker.shutdown(BOUND).await.cancelled, 1);
}

/// Adds `rule` to ACL user `name` (keeping the rest) on every server of
/// the harness.
async fn set_rules(h: &Harness, name: &str, rule: &str) {
    for url in h.urls() {
        let client = redis::Client::open(url.as_str()).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let _: () = redis::cmd("ACL")
            .arg("SETUSER")
            .arg(name)
            .arg(rule)
            .query_async(&mut conn)
            .await
            .unwrap_or_else(|err| panic!("ACL SETUSER {name} {rule}: {err}"));
    }
}

#[echomq_testkit::case]
pub(super) async fn a_script_command_the_user_lacks_is_named(h: &Harness) {
    // A worker's rules without the command CLAIM needs first.
    let wire = h.connector.wire();
    let (lacking, rules) = match wire {
        // CLAIM's first call reads the settings.
        echomq::Wire::Script => (
            "hgetall",
            rules("emq", &Reach::Queue("lacks".into()), Role::Worker, wire)
                .unwrap()
                .replace(" +hgetall", ""),
        ),
        echomq::Wire::Native => (
            "emq.claim",
            rules("emq", &Reach::Queue("lacks".into()), Role::Worker, wire)
                .unwrap()
                .replace(" +emq.claim", ""),
        ),
    };
    let user = h.as_user("lacking", &rules, "emq").await;
    let queue: Queue<Value> = user.queue("lacks").unwrap();
    let err = queue.claim("w", LEASE, 1).await.unwrap_err();
    let echomq::Error::NotPermitted {
        denied,
        queue: named,
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(named.as_deref(), Some("lacks"));
    match denied {
        Denied::Command(command) => {
            assert!(command.eq_ignore_ascii_case(lacking), "{err}");
            assert!(err.to_string().contains(&format!("+{command}")), "{err}");
        }
        // Redis 7.0 does not name a command refused inside a script.
        Denied::ScriptCommand => {
            assert_eq!(wire, echomq::Wire::Script, "{err}");
            assert!(err.to_string().contains("ACL LOG"), "{err}");
        }
        other => panic!("{other:?}: {err}"),
    }
}

#[echomq_testkit::case]
pub(super) async fn a_queue_scoped_user_is_refused_the_registry_by_name(h: &Harness) {
    let user = h
        .as_user("tenant-r", &queue_rules("emq", "tr"), "emq")
        .await;
    // Its enqueues succeed without the registry, which stays unwritten;
    // a listing of the whole prefix finds the queue by its keys.
    let queue: Queue<Value> = user.queue("tr").unwrap();
    queue.enqueue(json!(1)).await.unwrap();
    queue.enqueue(json!(2)).await.unwrap();
    let registered: Vec<String> = redis::cmd("SMEMBERS")
        .arg("emq:queues")
        .query_async(&mut h.raw(&queue).await)
        .await
        .unwrap();
    assert!(registered.is_empty(), "{registered:?}");
    assert_eq!(h.connector.queues().await.unwrap(), ["tr"]);
    let err = user.queues().await.unwrap_err();
    assert!(
        is_refused(&err, &Denied::Key("emq:queues".into()), None),
        "{err}"
    );
    assert!(err.to_string().contains("~emq:queues"), "{err}");
}

#[echomq_testkit::case]
pub(super) async fn users_with_the_rules_of_their_role_produce_work_and_operate(h: &Harness) {
    let wire = h.connector.wire();
    let reach = Reach::Queue("roles".into());
    let as_role = |role: Role| rules("emq", &reach, role, wire).unwrap();
    let producer = h.as_user("producer", &as_role(Role::Producer), "emq").await;
    let worker_user = h.as_user("worker", &as_role(Role::Worker), "emq").await;
    let operator = h.as_user("operator", &as_role(Role::Operator), "emq").await;

    let produced: Queue<Value> = producer.queue("roles").unwrap();
    let jobs: Vec<Value> = (0..30).map(|i| json!(i)).collect();
    produced.enqueue_bulk(jobs).await.unwrap();
    let later = produced
        .enqueue(NewJob::new(json!("later")).after(Duration::from_millis(50)))
        .await
        .unwrap();
    assert!(produced.jobs().get(&later.id).await.unwrap().is_some());

    let worked: Queue<Value> = worker_user.queue("roles").unwrap();
    let operated: Queue<Value> = operator.queue("roles").unwrap();
    let worker = completing_worker(&worked);
    wait_for("every job to complete", BOUND, || async {
        operated.admin().counts().await.unwrap().completed == 31
    })
    .await;
    // The producer waits for a job's outcome: its subscription to the
    // outcome channel, then OUTCOME.
    let awaited = produced.enqueue(json!("awaited")).await.unwrap();
    assert_eq!(
        awaited.outcome::<Value>(BOUND).await.unwrap(),
        Outcome::Completed { result: None }
    );
    let waiting = produced.enqueue(json!("wait")).await.unwrap().id;
    wait_for("the waiting job to run", BOUND, || async {
        state_of(&operated, &waiting).await == Some(JobState::Active)
    })
    .await;
    operated.jobs().cancel(&waiting).await.unwrap();
    wait_for("the cancellation to reach the handler", BOUND, || async {
        state_of(&operated, &waiting).await == Some(JobState::Cancelled)
    })
    .await;
    assert!(worker.failure().is_none(), "{:?}", worker.failure());
    let stats = worker.shutdown(BOUND).await;
    assert_eq!(stats.cancelled, 1);

    let (page, total) = operated
        .jobs()
        .list(JobState::Completed, 0, 5)
        .await
        .unwrap();
    assert_eq!((page.len(), total), (5, 32));
    let mut events = operated.events(EventsFrom::Beginning).await.unwrap();
    assert!(events.next_within(BOUND).await.unwrap().is_some());
    operated.jobs().log(&waiting, "looked at").await.unwrap();
    assert_eq!(operated.jobs().logs(&waiting, 5).await.unwrap().len(), 1);

    // Deduplication: the producer enqueues by key, the operator reads and
    // frees it (what emq dedup and emq stats send).
    let keyed = produced
        .enqueue(NewJob::new(json!("keyed")).dedup("roles:1").after(BOUND))
        .await
        .unwrap();
    let jobs = operated.jobs();
    assert_eq!(
        jobs.dedup_owner("roles:1").await.unwrap(),
        Some(keyed.id.clone())
    );
    let hold = jobs.dedup_hold("roles:1").await.unwrap().unwrap();
    assert_eq!(hold.owner, keyed.id);
    assert_eq!(operated.admin().dedup_keys_held().await.unwrap(), 1);
    assert!(jobs.release_dedup("roles:1").await.unwrap());
    assert!(
        jobs.remove(&keyed.id, echomq::IfActive::Refuse)
            .await
            .unwrap()
    );

    // The operator's reads of pending (emq jobs, emq stats, the
    // dashboard), in fifo and in pending.
    let first = produced.enqueue(json!("first")).await.unwrap().id;
    let ranked = produced
        .enqueue(NewJob::new(json!("ranked")).priority(5))
        .await
        .unwrap()
        .id;
    let (page, total) = jobs.list(JobState::Pending, 0, 10).await.unwrap();
    assert_eq!((page.len(), total), (2, 2));
    let found = jobs
        .search(JobState::Pending, &JobMatch::All, 0, 10, 100)
        .await
        .unwrap();
    assert_eq!(found.jobs.len(), 2);
    assert!(
        operated
            .admin()
            .oldest_pending_age()
            .await
            .unwrap()
            .is_some()
    );
    for id in [&first, &ranked] {
        assert!(jobs.remove(id, echomq::IfActive::Refuse).await.unwrap());
    }
    operates(&operated).await;
}

#[echomq_testkit::case]
pub(super) async fn users_with_the_rules_of_their_role_run_a_flow_in_their_queue(h: &Harness) {
    let wire = h.connector.wire();
    let reach = Reach::Queue("roles_flow".into());
    let as_role = |role: Role| rules("emq", &reach, role, wire).unwrap();
    let producer = h
        .as_user("flow_producer", &as_role(Role::Producer), "emq")
        .await;
    let worker_user = h
        .as_user("flow_worker", &as_role(Role::Worker), "emq")
        .await;
    let produced: Queue<Value> = producer.queue("roles_flow").unwrap();
    let mut flow = echomq::Flow::new("f");
    let first = flow.add_as("first", &produced, NewJob::new(json!(1)));
    let then = flow.add_as(
        "then",
        &produced,
        NewJob::new(json!(2)).depends_on([&first]),
    );
    let submitted = producer.submit(&flow).await.unwrap();
    // The worker relays its own completion under its role's rules: the
    // dependent runs.
    let worker = completing_worker(&worker_user.queue("roles_flow").unwrap());
    assert_eq!(
        submitted[&then].outcome::<Value>(BOUND).await.unwrap(),
        Outcome::Completed { result: None }
    );
    assert!(worker.failure().is_none(), "{:?}", worker.failure());
    worker.shutdown(BOUND).await;
}

#[echomq_testkit::case]
pub(super) async fn a_worker_with_the_rules_of_its_role_spawns_and_waits_in_its_queue(h: &Harness) {
    let wire = h.connector.wire();
    let reach = Reach::Queue("roles_spawn".into());
    let user = h
        .as_user(
            "spawn_worker",
            &rules("emq", &reach, Role::Worker, wire).unwrap(),
            "emq",
        )
        .await;
    let queue: Queue<Value> = user.queue("roles_spawn").unwrap();
    // The parent spawns one child in its own queue and, run again, sums.
    let worker = Worker::new(queue.clone(), {
        let queue = queue.clone();
        move |ctx: JobContext<Value>| {
            let queue = queue.clone();
            async move {
                if ctx.payload == json!("child") {
                    return Ok(json!(7));
                }
                let mut children = echomq::Flow::new("ignored");
                children.add_as("kid", &queue, NewJob::new(json!("child")));
                let done = ctx.spawn_and_wait(&children).await?;
                Ok(json!(done[0].result::<u64>().unwrap().unwrap() + 1))
            }
        }
    })
    .start();
    // Enqueued and read by the harness's own user.
    let produced = h.queue::<Value>("roles_spawn");
    produced
        .enqueue(NewJob::new(json!("parent")).id("p").unwrap())
        .await
        .unwrap();
    let id = JobId::new("p").unwrap();
    let done = wait_for("the parent completes", BOUND, || async {
        produced
            .jobs()
            .get(&id)
            .await
            .unwrap()
            .filter(|job| job.state == JobState::Completed)
    })
    .await;
    assert_eq!(done.result.as_deref(), Some("8"));
    assert!(worker.failure().is_none(), "{:?}", worker.failure());
    worker.shutdown(BOUND).await;
}

/// The rules of a worker of `reach_a` whose flows reach `flow_queues`
/// (`emq acl worker --queue reach_a --flow-queues …`).
fn reaching_worker_rules(wire: echomq::Wire, flow_queues: &[String]) -> String {
    let own = rules("emq", &Reach::Queue("reach_a".into()), Role::Worker, wire).unwrap();
    let reach = flow_reach_rule("emq", flow_queues, wire).unwrap();
    format!("{own} {reach}")
}

/// Flow f: job a in `reach_a`, then b in `reach_b`, submitted by the
/// harness's user; b's handle in `reach_b`.
async fn a_then_b_across_queues(h: &Harness) -> (Queue<Value>, JobId) {
    let (qa, qb) = (h.queue::<Value>("reach_a"), h.queue::<Value>("reach_b"));
    let mut flow = echomq::Flow::new("f");
    let a = flow.add_as("a", &qa, NewJob::new(json!(1)));
    flow.add_as("b", &qb, NewJob::new(json!(2)).depends_on([&a]));
    h.connector.submit(&flow).await.unwrap();
    (qb, JobId::new("f:b").unwrap())
}

#[echomq_testkit::case]
pub(super) async fn a_worker_s_relay_resolves_in_another_queue_only_with_its_flow_queues(
    h: &Harness,
) {
    let wire = h.connector.wire();
    let (qb, b) = a_then_b_across_queues(h).await;
    // A worker of reach_a with its role's rules alone: its completion's
    // relay is refused reach_b, and leaves the edge, failing nothing.
    let alone = h
        .as_user("reach_alone", &reaching_worker_rules(wire, &[]), "emq")
        .await;
    let own: Queue<Value> = alone.queue("reach_a").unwrap();
    let claimed = own.claim_one("w", LEASE).await.unwrap().unwrap();
    own.complete(&claimed.id, claimed.token, &()).await.unwrap();
    let again = own.relay().await.unwrap();
    assert_eq!((again.resolved, again.left), (0, 1), "{again:?}");
    assert_eq!(state_of(&qb, &b).await, Some(JobState::Blocked));
    // The same worker given reach_b as a flow queue resolves it.
    let reaching = h
        .as_user(
            "reach_b_too",
            &reaching_worker_rules(wire, &["reach_b".into()]),
            "emq",
        )
        .await;
    let relayed = reaching.queue::<Value>("reach_a").unwrap().relay().await;
    let relayed = relayed.unwrap();
    assert_eq!(
        (relayed.resolved, relayed.unblocked, relayed.left),
        (1, 1, 0),
        "{relayed:?}"
    );
    assert_eq!(state_of(&qb, &b).await, Some(JobState::Pending));
    // Only the relay's commands: reach_b refuses it a claim (on wire 4
    // inside the script, which Redis 7.0 words as a key it cannot access)
    // and the claim takes nothing.
    let other: Queue<Value> = reaching.queue("reach_b").unwrap();
    let refused = other.claim_one("w", LEASE).await.unwrap_err();
    if wire == echomq::Wire::Native {
        assert!(
            matches!(refused, echomq::Error::NotPermitted { .. }),
            "{refused:?}"
        );
    }
    assert_eq!(state_of(&qb, &b).await, Some(JobState::Pending));
}

#[echomq_testkit::case]
pub(super) async fn a_worker_given_its_flow_queues_unblocks_a_dependent_in_another_queue(
    h: &Harness,
) {
    let wire = h.connector.wire();
    let (qb, b) = a_then_b_across_queues(h).await;
    let user = h
        .as_user(
            "reach_worker",
            &reaching_worker_rules(wire, &["reach_b".into()]),
            "emq",
        )
        .await;
    let worker = completing_worker(&user.queue("reach_a").unwrap());
    wait_for("b unblocked by the worker's relay", BOUND, || async {
        state_of(&qb, &b).await == Some(JobState::Pending)
    })
    .await;
    assert!(worker.failure().is_none(), "{:?}", worker.failure());
    worker.shutdown(BOUND).await;
}

#[echomq_testkit::case]
pub(super) async fn a_producer_with_its_role_s_rules_runs_a_flow_after_a_job_outside_it(
    h: &Harness,
) {
    let wire = h.connector.wire();
    let reach = Reach::Queue("roles_outside".into());
    let as_role = |role: Role| rules("emq", &reach, role, wire).unwrap();
    let producer = h
        .as_user("outside_producer", &as_role(Role::Producer), "emq")
        .await;
    let admin: Queue<Value> = h.queue("roles_outside");
    let ext = admin.enqueue(json!(0)).await.unwrap().id;
    let job = admin.claim_one("w", BOUND).await.unwrap().unwrap();
    admin
        .complete(&job.id, job.token, &json!("r"))
        .await
        .unwrap();
    let produced: Queue<Value> = producer.queue("roles_outside").unwrap();
    let mut flow = echomq::Flow::new("f");
    let outside = flow.existing(&produced, &ext);
    flow.add_as("b", &produced, NewJob::new(json!(1)).depends_on([&outside]));
    // Read, linked and told its outcome under the producer's rules: b is
    // unblocked at the submit. On wire 6 the acknowledgement (FLOW.ACK,
    // not a producer's) is left to a process that may send it.
    producer.submit(&flow).await.unwrap();
    let b = admin.jobs().get(&JobId::new("f:b").unwrap()).await.unwrap();
    assert_eq!(b.unwrap().state, JobState::Pending);
    let relayed = admin.relay().await.unwrap();
    assert_eq!(relayed.resolved, 0, "resolved once, at the submit");
    let outbox: u64 = redis::cmd("ZCARD")
        .arg(format!("{}:resolutions", admin.keys().base()))
        .query_async(&mut h.raw(&admin).await)
        .await
        .unwrap();
    assert_eq!(outbox, 0, "acknowledged");
    h.check(&admin).await;
}

/// A client certificate (the server requires one) and an ACL user in the
/// URL: the certificate lets the client connect, the user limits it to
/// its queue, the cancel subscription's own socket does both.
pub(super) async fn a_queue_scoped_user_over_mutual_tls_runs_its_queue() {
    let server = TlsServer::start(ClientAuth::Required);
    let mut admin = server.plain().connection().await;
    let _: () = echomq_testkit::acl::setuser("tls-tenant", &queue_rules("emq", "tls"))
        .query_async(&mut admin)
        .await
        .unwrap();
    let certs = server.certificates();
    let tls = TlsOptions::new()
        .root_certificates(certs.ca.clone())
        .client_certificate(certs.client_cert.clone(), certs.client_key.clone());
    let url = server
        .url()
        .replacen("rediss://", "rediss://tls-tenant:pw@", 1);
    let user = Connector::builder(url).tls(tls).connect().await.unwrap();
    assert_eq!(user.user(), "tls-tenant");
    let queue: Queue<Value> = user.queue("tls").unwrap();
    runs_jobs_and_cancels(&queue, 20).await;
    let err = user
        .queue::<Value>("not-tls")
        .unwrap()
        .admin()
        .counts()
        .await
        .unwrap_err();
    assert!(
        is_refused(&err, &Denied::Key("emq:{not-tls}".into()), Some("not-tls")),
        "{err}"
    );
}

/// A user the ACL keeps from `INFO` (and, on wire 6, `EMQ.VERSION`):
/// the connect skips those checks and the queue works.
#[echomq_testkit::case]
pub(super) async fn a_user_refused_the_connects_checks_connects_and_works(h: &Harness) {
    let mut rules = format!("{} -info", queue_rules("emq", "unchecked"));
    if h.connector.wire() == echomq::Wire::Native {
        rules.push_str(" -emq.version");
    }
    let user = h.as_user("unchecked", &rules, "emq").await;
    assert!(user.eviction_policy().is_none(), "INFO was read");
    let queue: Queue<Value> = user.queue("unchecked").unwrap();
    queue.enqueue(json!(1)).await.unwrap();
    let claimed = queue.claim("w", LEASE, 1).await.unwrap();
    assert_eq!(claimed.len(), 1);
    queue
        .complete(&claimed[0].id, claimed[0].token, &())
        .await
        .unwrap();
    assert_eq!(queue.admin().counts().await.unwrap().completed, 1);
}
