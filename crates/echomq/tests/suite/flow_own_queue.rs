//! A completion resolves its own queue's dependents in its own call
//! (docs/protocol.md, "Deciding a job that has dependents"): no outbox
//! entry and no relay for them, the bulk form's `CLAIM` tail claims what
//! it unblocked, and what it cannot or may not resolve (another queue's
//! dependents, a key of another type, edges past the budget) is left to
//! the outbox; a claim that leaves nothing pending on such a queue
//! deletes a due wake-up marker, and a worker runs a chain with one call a
//! job. Each case runs on wire 4 and again on wire 6.

use crate::common::{
    self, Harness, entries_by_name, error_text, events, monitored, monitored_words, raw_call,
    wake_marker, worker_calls, writes,
};
use echomq::{Flow, JobContext, JobError, JobId, JobState, NewJob, Queue, Submitted, Worker};
use echomq_protocol::arg::FLOW_INLINE_EDGES;
use echomq_testkit::wait_for;
use redis::Value;
use serde_json::{Value as Json, json};
use std::collections::HashMap;
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);

/// A flow of `root` then `dependents` (each `(ref, queue)`), every one
/// after the root; submitted.
pub(super) async fn root_and(root: &Queue<Json>, dependents: &[(&str, &Queue<Json>)]) -> Submitted {
    let mut flow = Flow::new("own");
    let first = flow.add_as("root", root, NewJob::new(json!(0)));
    for (reference, queue) in dependents {
        flow.add_as(reference, queue, NewJob::new(json!(1)).depends_on([&first]));
    }
    root.connector().submit(&flow).await.unwrap()
}

/// The id of `reference` in `submitted`.
pub(super) fn id_of(submitted: &Submitted, reference: &str) -> JobId {
    submitted.by_name(reference).unwrap().id.clone()
}

/// Claims the root (the only pending job) and completes it raw with `verb`
/// and `tail` (after id, token and, for the bulk form, the result):
/// answers the reply.
pub(super) async fn complete_root(
    h: &Harness,
    q: &Queue<Json>,
    bulk: bool,
    tail: &[&str],
) -> Value {
    let job = q.claim("w", LEASE, 1).await.unwrap().pop().unwrap();
    let token = job.token.to_string();
    let mut args = vec![job.id.as_str(), token.as_str()];
    let verb = if bulk {
        args.push("\"done\"");
        "complete_bulk"
    } else {
        args.extend(["RESULT", "\"done\""]);
        "complete"
    };
    args.extend(tail);
    raw_call(h, q, verb, &args).await.unwrap()
}

/// `<base>:<what>:<id>` of queue `q`, field by field.
pub(super) async fn flow_hash(
    h: &Harness,
    q: &Queue<Json>,
    what: &str,
    id: &JobId,
) -> HashMap<String, String> {
    redis::cmd("HGETALL")
        .arg(format!("{}:{what}:{id}", q.keys().base()))
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// How many ids the queue's outbox holds.
pub(super) async fn outbox_len(h: &Harness, q: &Queue<Json>) -> u64 {
    redis::cmd("ZCARD")
        .arg(format!("{}:resolutions", q.keys().base()))
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// Replaces `<base>:<what>` of queue `q` with a string: a key of another
/// type.
async fn set_a_string(h: &Harness, q: &Queue<Json>, what: &str) {
    common::set_a_string(h, q, &format!("{}:{what}", q.keys().base())).await;
}

/// COMPLETE and COMPLETE.BULK of the claimed root `job` are each refused
/// WRONGTYPE, writing nothing; the root stays active.
async fn completing_the_root_is_refused(h: &Harness, q: &Queue<Json>, job: &echomq::Claimed<Json>) {
    let before = writes(h, q).await;
    let (id, token) = (job.id.as_str(), job.token.to_string());
    for (verb, args) in [
        ("complete", vec![id, token.as_str()]),
        ("complete_bulk", vec![id, token.as_str(), ""]),
    ] {
        let err = raw_call(h, q, verb, &args).await.expect_err("refused");
        assert!(error_text(&err).starts_with("WRONGTYPE"), "{verb}: {err}");
    }
    assert_eq!(writes(h, q).await, before, "a refused COMPLETE wrote");
    assert_eq!(state(q, &job.id).await, JobState::Active);
}

pub(super) async fn state(q: &Queue<Json>, id: &JobId) -> JobState {
    q.jobs().get(id).await.unwrap().unwrap().state
}

#[echomq_testkit::case]
pub(super) async fn a_completion_unblocks_its_own_queues_dependents_in_the_same_call(h: &Harness) {
    let q = h.queue::<Json>("own_unblock");
    let submitted = root_and(&q, &[("next", &q)]).await;
    let (root, next) = (id_of(&submitted, "root"), id_of(&submitted, "next"));
    assert_eq!(state(&q, &next).await, JobState::Blocked);
    let reply = complete_root(h, &q, false, &[]).await;
    assert_eq!(
        reply,
        Value::Okay,
        "no relay_completed: nothing is left to relay"
    );
    assert_eq!(state(&q, &next).await, JobState::Pending);
    assert_eq!(outbox_len(h, &q).await, 0);
    assert!(flow_hash(h, &q, "resolution", &root).await.is_empty());
    let told = flow_hash(h, &q, "dependents", &root).await;
    assert_eq!(
        told.get(&format!("{} {next}", q.name()))
            .map(String::as_str),
        Some("1")
    );
    let deps = flow_hash(h, &q, "deps", &next).await;
    let text = deps.get(&format!("{} {root}", q.name())).unwrap();
    assert_eq!(text, "completed root 6 \"done\"");
    // The completion's event first, then the dependent's.
    let names: Vec<String> = events(h, &q).await.iter().map(|e| e[1].clone()).collect();
    let tail = &names[names.len() - 3..];
    assert_eq!(tail, ["completed", "dependency_resolved", "unblocked"]);
    let job = q.claim("w", LEASE, 1).await.unwrap().pop().unwrap();
    assert_eq!(job.id, next);
    let deps = q.jobs().dependencies(&next).await.unwrap();
    assert_eq!(deps.len(), 1);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_completion_unblocks_a_grouped_dependent_into_its_groups_lane(h: &Harness) {
    let q = h.queue::<Json>("own_group");
    let mut flow = Flow::new("own");
    let root = flow.add_as("root", &q, NewJob::new(json!(0)));
    let next = flow.add_as(
        "next",
        &q,
        NewJob::new(json!(1)).group("g").depends_on([&root]),
    );
    let submitted = q.connector().submit(&flow).await.unwrap();
    let group = q.admin().group("g").unwrap();
    assert_eq!(
        group.counts().await.unwrap().pending,
        0,
        "blocked, not pending"
    );
    complete_root(h, &q, true, &[]).await;
    assert_eq!(state(&q, &submitted[&next].id).await, JobState::Pending);
    assert_eq!(
        group.counts().await.unwrap().pending,
        1,
        "in the group's lane"
    );
    // A paused group holds it back: it is not in the queue's plain pending.
    group.pause().await.unwrap();
    assert!(q.claim("w", LEASE, 1).await.unwrap().is_empty());
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_completion_unblocks_dependents_by_their_priority_and_run_at(h: &Harness) {
    let q = h.queue::<Json>("own_options");
    let mut flow = Flow::new("own");
    let root = flow.add_as("root", &q, NewJob::new(json!(0)));
    let hour = Duration::from_secs(3600);
    let late = flow.add_as(
        "late",
        &q,
        NewJob::new(json!(1)).after(hour).depends_on([&root]),
    );
    let low = flow.add_as(
        "low",
        &q,
        NewJob::new(json!(2)).priority(9).depends_on([&root]),
    );
    let high = flow.add_as("high", &q, NewJob::new(json!(3)).depends_on([&root]));
    let submitted = q.connector().submit(&flow).await.unwrap();
    complete_root(h, &q, true, &[]).await;
    assert_eq!(state(&q, &submitted[&late].id).await, JobState::Scheduled);
    let claimed = q.claim("w", LEASE, 3).await.unwrap();
    let ids: Vec<&JobId> = claimed.iter().map(|job| &job.id).collect();
    assert_eq!(
        ids,
        [&submitted[&high].id, &submitted[&low].id],
        "priority 0 first; the late one waits"
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_completion_unblocking_many_writes_one_entry_of_each_event(h: &Harness) {
    let q = h.queue::<Json>("own_entries");
    let submitted = root_and(&q, &[("a", &q), ("b", &q), ("c", &q)]).await;
    let root = id_of(&submitted, "root");
    complete_root(h, &q, false, &[]).await;
    // The dependents' resolved edges share one entry, their unblockings
    // the next: not one entry each, alternating.
    let entries = entries_by_name(h, &q).await;
    let tail = &entries[entries.len() - 3..];
    assert_eq!(tail[0], ("completed".to_string(), vec![root.to_string()]));
    let mut dependents: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|r| id_of(&submitted, r).to_string())
        .collect();
    dependents.sort();
    for (at, name) in [(1, "dependency_resolved"), (2, "unblocked")] {
        let (event, mut ids) = tail[at].clone();
        ids.sort();
        assert_eq!((event.as_str(), ids), (name, dependents.clone()));
    }
    assert_eq!(q.admin().counts().await.unwrap().pending, 3);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_job_completed_twice_in_one_batch_leaves_no_resolution(h: &Harness) {
    let q = h.queue::<Json>("own_twice");
    let submitted = root_and(&q, &[("next", &q)]).await;
    let (root, next) = (id_of(&submitted, "root"), id_of(&submitted, "next"));
    let job = q.claim("w", LEASE, 1).await.unwrap().pop().unwrap();
    let token = job.token.to_string();
    let args = [root.as_str(), &token, "", root.as_str(), &token, ""];
    let reply = raw_call(h, &q, "complete_bulk", &args).await.unwrap();
    // Both entries read the job before the call's first write, so both
    // hold it; the second finds its edge told by the first, through the
    // same read, and writes no resolution (a stale one would sit in the
    // outbox with nothing left to tell).
    let ok = Value::BulkString(b"OK".to_vec());
    assert_eq!(reply, Value::Array(vec![ok.clone(), ok]));
    assert_eq!(state(&q, &next).await, JobState::Pending);
    // Unblocked once: one entry in pending, one edge taken.
    assert_eq!(q.admin().counts().await.unwrap().pending, 1);
    let unblocked = events(h, &q).await;
    let unblocked = unblocked
        .iter()
        .filter(|e| e[..2] == ["event", "unblocked"]);
    assert_eq!(unblocked.count(), 1);
    assert_eq!(outbox_len(h, &q).await, 0);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn the_bulk_forms_claim_tail_claims_the_dependents_it_unblocked(h: &Harness) {
    let q = h.queue::<Json>("own_bulk_claim");
    let submitted = root_and(&q, &[("next", &q)]).await;
    let next = id_of(&submitted, "next");
    let reply = complete_root(h, &q, true, &["CLAIM", "w", "30000", "5"]).await;
    let Value::Array(entries) = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(entries[0], Value::BulkString(b"OK".to_vec()));
    let Value::Array(claimed) = &entries[1] else {
        panic!("{entries:?}")
    };
    let Value::Array(job) = &claimed[0] else {
        panic!("{claimed:?}")
    };
    assert_eq!(job[0], Value::BulkString(next.as_str().as_bytes().to_vec()));
    assert_eq!(state(&q, &next).await, JobState::Active);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn another_queues_dependents_are_left_to_the_outbox(h: &Harness) {
    let q = h.queue::<Json>("own_mixed");
    let other = h.queue::<Json>("own_mixed_other");
    let submitted = root_and(&q, &[("here", &q), ("there", &other)]).await;
    let (root, here, there) = (
        id_of(&submitted, "root"),
        id_of(&submitted, "here"),
        id_of(&submitted, "there"),
    );
    let reply = complete_root(h, &q, false, &[]).await;
    assert_eq!(reply, Value::BulkString(b"relay_completed".to_vec()));
    assert_eq!(state(&q, &here).await, JobState::Pending);
    assert_eq!(state(&other, &there).await, JobState::Blocked);
    let resolution = flow_hash(h, &q, "resolution", &root).await;
    assert_eq!(resolution.get("left").map(String::as_str), Some("1"));
    let told = flow_hash(h, &q, "dependents", &root).await;
    assert_eq!(told[&format!("{} {here}", q.name())], "1");
    assert_eq!(told[&format!("{} {there}", other.name())], "0");
    relay_unblocks(h, &q, &other, &there).await;
}

/// `q`'s relay delivers the one edge left in its outbox, to `there` in
/// `other`, unblocking it: the outbox empty, both queues checked.
pub(super) async fn relay_unblocks(
    h: &Harness,
    q: &Queue<Json>,
    other: &Queue<Json>,
    there: &JobId,
) {
    let relayed = q.relay().await.unwrap();
    assert_eq!((relayed.resolved, relayed.unblocked), (1, 1));
    assert_eq!(state(other, there).await, JobState::Pending);
    assert_eq!(outbox_len(h, q).await, 0);
    h.check(q).await;
    h.check(other).await;
}

#[echomq_testkit::case]
pub(super) async fn own_queue_edges_past_the_budget_go_through_the_outbox(h: &Harness) {
    let q = h.queue::<Json>("own_budget");
    let names: Vec<String> = (0..=FLOW_INLINE_EDGES).map(|i| format!("d{i}")).collect();
    let dependents: Vec<(&str, &Queue<Json>)> = names.iter().map(|n| (n.as_str(), &q)).collect();
    let submitted = root_and(&q, &dependents).await;
    let root = id_of(&submitted, "root");
    let reply = complete_root(h, &q, false, &[]).await;
    assert_eq!(reply, Value::BulkString(b"relay_completed".to_vec()));
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.blocked), (FLOW_INLINE_EDGES, 1));
    let resolution = flow_hash(h, &q, "resolution", &root).await;
    assert_eq!(resolution.get("left").map(String::as_str), Some("1"));
    let relayed = q.relay().await.unwrap();
    assert_eq!((relayed.resolved, relayed.unblocked), (1, 1));
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.blocked), (FLOW_INLINE_EDGES + 1, 0));
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_dependent_whose_deps_hash_has_another_type_is_left_to_the_outbox(
    h: &Harness,
) {
    let q = h.queue::<Json>("own_wrongtype");
    let submitted = root_and(&q, &[("next", &q)]).await;
    let (root, next) = (id_of(&submitted, "root"), id_of(&submitted, "next"));
    let deps = format!("{}:deps:{next}", q.keys().base());
    let _: () = redis::cmd("SET")
        .arg(&deps)
        .arg("x")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let reply = complete_root(h, &q, false, &[]).await;
    assert_eq!(reply, Value::BulkString(b"relay_completed".to_vec()));
    assert_eq!(state(&q, &root).await, JobState::Completed);
    assert_eq!(state(&q, &next).await, JobState::Blocked);
    let told = flow_hash(h, &q, "dependents", &root).await;
    assert_eq!(told[&format!("{} {next}", q.name())], "0");
    // The relay is refused as FLOW.RESOLVE refuses it: left, not lost.
    let relayed = q.relay().await.unwrap();
    assert_eq!(relayed.left, 1);
    assert_eq!(outbox_len(h, &q).await, 1);
}

#[echomq_testkit::case]
pub(super) async fn a_dependent_whose_job_key_has_another_type_is_left_to_the_outbox(h: &Harness) {
    let q = h.queue::<Json>("own_job_wrongtype");
    let submitted = root_and(&q, &[("next", &q)]).await;
    let (root, next) = (id_of(&submitted, "root"), id_of(&submitted, "next"));
    set_a_string(h, &q, &format!("job:{next}")).await;
    let reply = complete_root(h, &q, false, &[]).await;
    assert_eq!(reply, Value::BulkString(b"relay_completed".to_vec()));
    assert_eq!(state(&q, &root).await, JobState::Completed);
    let told = flow_hash(h, &q, "dependents", &root).await;
    assert_eq!(told[&format!("{} {next}", q.name())], "0");
    let deps = flow_hash(h, &q, "deps", &next).await;
    assert_eq!(deps[&format!("{} {root}", q.name())], "wait");
    assert_eq!(outbox_len(h, &q).await, 1);
}

#[echomq_testkit::case]
pub(super) async fn complete_of_a_job_whose_dependents_hash_has_another_type_is_refused(
    h: &Harness,
) {
    let q = h.queue::<Json>("own_dependents_wrongtype");
    let submitted = root_and(&q, &[("next", &q)]).await;
    let root = id_of(&submitted, "root");
    let job = q.claim("w", LEASE, 1).await.unwrap().pop().unwrap();
    assert_eq!(job.id, root);
    set_a_string(h, &q, &format!("dependents:{root}")).await;
    completing_the_root_is_refused(h, &q, &job).await;
}

#[echomq_testkit::case]
pub(super) async fn complete_on_a_flows_queue_whose_blocked_set_has_another_type_is_refused(
    h: &Harness,
) {
    let q = h.queue::<Json>("own_refused");
    let submitted = root_and(&q, &[("next", &q)]).await;
    let root = id_of(&submitted, "root");
    let job = q.claim("w", LEASE, 1).await.unwrap().pop().unwrap();
    assert_eq!(job.id, root);
    assert_eq!(q.admin().counts().await.unwrap().blocked, 1);
    set_a_string(h, &q, "blocked").await;
    completing_the_root_is_refused(h, &q, &job).await;
}

/// Sets the queue's wake-up marker to `score`.
async fn set_marker(h: &Harness, q: &Queue<Json>, score: u64) {
    let _: () = redis::cmd("ZADD")
        .arg(q.keys().signal())
        .arg(score)
        .arg("wake")
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
}

#[echomq_testkit::case]
pub(super) async fn a_claim_that_leaves_nothing_pending_deletes_a_due_wake_marker(h: &Harness) {
    let q = h.queue::<Json>("own_marker_due");
    root_and(&q, &[("next", &q)]).await;
    assert_eq!(
        wake_marker(h, &q).await,
        Some(0.0),
        "the root's enqueue set it"
    );
    assert_eq!(q.claim("w", LEASE, 5).await.unwrap().len(), 1);
    assert_eq!(wake_marker(h, &q).await, None);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_claim_keeps_a_wake_marker_due_later(h: &Harness) {
    let q = h.queue::<Json>("own_marker_later");
    root_and(&q, &[("next", &q)]).await;
    q.claim("w", LEASE, 5).await.unwrap();
    let later = 4_000_000_000_000;
    set_marker(h, &q, later).await;
    assert!(q.claim("w", LEASE, 5).await.unwrap().is_empty());
    assert_eq!(wake_marker(h, &q).await, Some(later as f64));
}

#[echomq_testkit::case]
pub(super) async fn a_claim_that_leaves_jobs_pending_keeps_the_wake_marker(h: &Harness) {
    let q = h.queue::<Json>("own_marker_left");
    let mut flow = Flow::new("two");
    flow.add_as("a", &q, NewJob::new(json!(1)));
    flow.add_as("b", &q, NewJob::new(json!(2)));
    q.connector().submit(&flow).await.unwrap();
    assert_eq!(q.claim("w", LEASE, 1).await.unwrap().len(), 1);
    assert_eq!(wake_marker(h, &q).await, Some(0.0));
}

#[echomq_testkit::case]
pub(super) async fn a_claim_on_a_queue_without_flows_keeps_the_wake_marker(h: &Harness) {
    let q = h.queue::<Json>("own_marker_plain");
    q.enqueue(NewJob::new(json!(1))).await.unwrap();
    assert_eq!(q.claim("w", LEASE, 5).await.unwrap().len(), 1);
    assert_eq!(wake_marker(h, &q).await, Some(0.0));
}

#[echomq_testkit::case]
pub(super) async fn a_worker_runs_a_chain_in_one_queue_with_one_call_a_job(h: &Harness) {
    const JOBS: u64 = 200;
    let q = h.queue::<Json>("own_chain_calls");
    let mut flow = Flow::new("chain");
    let mut before = flow.add_as("j0", &q, NewJob::new(json!(0)));
    for i in 1..JOBS {
        before = flow.add_as(
            &format!("j{i}"),
            &q,
            NewJob::new(json!(i)).depends_on([&before]),
        );
    }
    q.connector().submit(&flow).await.unwrap();
    let mut conn = h.raw(&q).await;
    let before = worker_calls(&mut conn).await;
    // The worker starts once MONITOR listens: it sees every hop.
    let run = async {
        let worker = Worker::new(q.clone(), |_job: JobContext<Json>| async move {
            Ok::<_, JobError>(())
        })
        .concurrency(50)
        .idle_wait(Duration::from_secs(60))
        .stalled_interval(Duration::from_secs(3600))
        .schedule_repeats(false)
        .start();
        wait_for(
            "the chain's completions",
            Duration::from_secs(30),
            || async { q.admin().counts().await.unwrap().completed == JOBS },
        )
        .await;
        worker
    };
    let (lines, worker) = monitored(h, &q, run).await;
    let calls = worker_calls(&mut conn).await - before;
    worker.shutdown(Duration::from_secs(10)).await;
    // The idle worker's read of its schedule (`TIME`, then this queue's
    // first run-at, then its first group window's), by the client: not a
    // script's `ZRANGE`.
    let schedule = q.keys().schedule();
    let schedule_reads = lines
        .iter()
        .filter(|line| !line.contains(" lua]"))
        .filter(|line| matches!(monitored_words(line)[..], ["ZRANGE", key, "0", "0", "WITHSCORES"] if key == schedule))
        .count() as u64;
    // Each hop is one COMPLETE.BULK … CLAIM: its completion unblocks the
    // next job and its tail claims it (before, a hop was a completion, a
    // claim and an empty claim after a wake-up: 3.2 calls a job by this
    // count, BZPOPMIN included). The start's claims, the connections'
    // checks and a hop now and then whose completion went out before its
    // ride are the slack: 1.07–1.13 calls a job on a quiet machine, up to
    // 1.26 with builds and a CI run beside it. Two calls a hop fails.
    assert!(
        calls <= JOBS * 3 / 2,
        "{calls} calls for {JOBS} chained jobs"
    );
    // The idle worker reads the schedule once an idle spell, and a ride
    // keeps the spell. Before, each round sent the read and the ride's
    // answer, first in, dropped it: one more round trip a job (200 reads
    // for 200 jobs).
    assert!(
        schedule_reads <= JOBS / 10,
        "{schedule_reads} schedule reads for {JOBS} chained jobs"
    );
    h.check(&q).await;
}
