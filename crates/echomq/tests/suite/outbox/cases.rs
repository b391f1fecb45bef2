//! What each deciding or deleting command writes to the outbox of a job
//! with dependents, and what it answers; each case uses its own queue.

use super::common::{Harness, job_field, meta_field, raw_call};
use echomq::{CancelOutcome, FailAction, FailOutcome, JobId, NewJob, Queue, RetentionChange};
use redis::Value;
use serde_json::{Value as Json, json};
use std::collections::HashMap;
use std::time::Duration;

pub(super) const LEASE: Duration = Duration::from_secs(30);

/// `<base>:<what>:<id>`, a flow key of job `id`.
pub(super) fn flow_key<T>(q: &Queue<T>, what: &str, id: &str) -> String {
    format!("{}:{what}:{id}", q.keys().base())
}

/// Makes job `id` a dependency of `dependents` (each `<queue> <id>`, not
/// told yet), with `ref` and `flow` when given, and marks the queue
/// `flows`: what `FLOW.ADD` will write.
pub(super) async fn give_dependents<T>(
    h: &Harness,
    q: &Queue<T>,
    id: &str,
    dependents: &[&str],
    named: Option<(&str, &str)>,
) {
    let mut con = h.raw(q).await;
    let mut told = redis::cmd("HSET");
    told.arg(flow_key(q, "dependents", id));
    for dependent in dependents {
        told.arg(*dependent).arg("0");
    }
    let _: () = told.query_async(&mut con).await.unwrap();
    let mut job = redis::cmd("HSET");
    job.arg(q.keys().job(&JobId::new(id).unwrap()))
        .arg("dependents")
        .arg(dependents.len());
    if let Some((reference, flow)) = named {
        job.arg("ref").arg(reference).arg("flow").arg(flow);
    }
    let _: () = job.query_async(&mut con).await.unwrap();
    mark_flows(h, q).await;
}

/// The queue's `flows` mark, as `FLOW.ADD` sets it.
pub(super) async fn mark_flows<T>(h: &Harness, q: &Queue<T>) {
    let _: () = redis::cmd("HSET")
        .arg(q.keys().meta())
        .arg("flows")
        .arg("1")
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
}

/// The ids of the outbox, oldest first.
pub(super) async fn outbox<T>(h: &Harness, q: &Queue<T>) -> Vec<String> {
    redis::cmd("ZRANGE")
        .arg(format!("{}:resolutions", q.keys().base()))
        .arg(0)
        .arg(-1)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// Job `id`'s `resolution:<id>`, field by field (empty when absent).
pub(super) async fn resolution<T>(h: &Harness, q: &Queue<T>, id: &str) -> HashMap<String, String> {
    redis::cmd("HGETALL")
        .arg(flow_key(q, "resolution", id))
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// The text of job `id`'s resolution.
pub(super) async fn text<T>(h: &Harness, q: &Queue<T>, id: &str) -> String {
    resolution(h, q, id)
        .await
        .remove("text")
        .unwrap_or_else(|| panic!("{id} has no resolution"))
}

pub(super) async fn exists<T>(h: &Harness, q: &Queue<T>, key: &str) -> bool {
    redis::cmd("EXISTS")
        .arg(key)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// Enqueues job `id` and claims it: its token.
pub(super) async fn claimed(q: &Queue<Json>, id: &str) -> u64 {
    q.enqueue(NewJob::new(json!(id)).id(id).unwrap())
        .await
        .unwrap();
    let job = q.claim_one("w", LEASE).await.unwrap().expect("the job");
    assert_eq!(job.id.as_str(), id);
    job.token
}

/// Completes job `id` of `q` with a raw COMPLETE: what the decision
/// writes, with no relay after it (the library relays at once).
pub(super) async fn complete_unrelayed(h: &Harness, q: &Queue<Json>, id: &str, token: u64) {
    raw_call(h, q, "complete", &[id, &token.to_string()])
        .await
        .unwrap();
}

fn word(reply: Value) -> String {
    match reply {
        Value::BulkString(bytes) => String::from_utf8(bytes).unwrap(),
        Value::SimpleString(text) => text,
        Value::Okay => "OK".into(),
        other => panic!("{other:?}"),
    }
}

#[echomq_testkit::case]
pub(super) async fn complete_answers_relay_completed_only_for_a_job_with_dependents(h: &Harness) {
    let q = h.queue::<Json>("relay_complete");
    let with = claimed(&q, "with").await;
    let without = claimed(&q, "without").await;
    give_dependents(
        h,
        &q,
        "with",
        &["mail m1", "mail m2"],
        Some(("fetch", "f1")),
    )
    .await;
    let reply = raw_call(
        h,
        &q,
        "complete",
        &["with", &with.to_string(), "RESULT", "r"],
    )
    .await;
    assert_eq!(word(reply.unwrap()), "relay_completed");
    let reply = raw_call(h, &q, "complete", &["without", &without.to_string()]).await;
    assert_eq!(word(reply.unwrap()), "OK");
    assert_eq!(outbox(h, &q).await, ["with"]);
    let written = resolution(h, &q, "with").await;
    assert_eq!(written["text"], "completed fetch 1 r");
    assert_eq!(written["flow"], "f1");
    assert_eq!(written["left"], "2");
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn the_library_reads_relay_completed_as_completed(h: &Harness) {
    let q = h.queue::<Json>("relay_library");
    let token = claimed(&q, "a").await;
    give_dependents(h, &q, "a", &["q b"], None).await;
    let id = JobId::new("a").unwrap();
    q.complete(&id, token, &json!({"ok": 1})).await.unwrap();
    // The library relayed it at once: its one edge (to no job) answered
    // gone and was acknowledged, so nothing is left in the outbox.
    assert!(outbox(h, &q).await.is_empty());
    // A bulk completion (a second job) reads its word as OK too.
    let token = claimed(&q, "b").await;
    give_dependents(h, &q, "b", &["q c"], None).await;
    let reply = raw_call(
        h,
        &q,
        "complete_bulk",
        &["b", &token.to_string(), "", "gone", "1", ""],
    )
    .await
    .unwrap();
    let Value::Array(words) = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(
        words.into_iter().map(word).collect::<Vec<_>>(),
        ["relay_completed", "NOTACTIVE"]
    );
    assert_eq!(text(h, &q, "b").await, "completed - 0 ");
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_result_over_flow_result_max_is_recorded_by_size(h: &Harness) {
    let q = h.queue::<Json>("relay_large");
    let max = echomq_protocol::arg::FLOW_RESULT_MAX as usize;
    for (id, size) in [("at_max", max), ("over_max", max + 1)] {
        let token = claimed(&q, id).await;
        give_dependents(h, &q, id, &["q d"], None).await;
        let result = "x".repeat(size);
        let token = token.to_string();
        let reply = raw_call(h, &q, "complete", &[id, &token, "RESULT", &result]).await;
        assert_eq!(word(reply.unwrap()), "relay_completed");
        let expected = match size == max {
            true => format!("completed - {size} {result}"),
            false => format!("completed - {size} "),
        };
        assert_eq!(text(h, &q, id).await, expected, "{id}");
    }
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_dead_job_s_resolution_holds_its_failures_and_error_to_flow_error_max(
    h: &Harness,
) {
    let q = h.queue::<Json>("relay_dead");
    let token = claimed(&q, "a").await;
    give_dependents(h, &q, "a", &["q b"], Some(("charge", "order"))).await;
    let error = "e".repeat(echomq_protocol::arg::FLOW_ERROR_MAX as usize + 10);
    let reply = raw_call(h, &q, "fail", &["a", &token.to_string(), &error, "DEAD"]).await;
    assert_eq!(word(reply.unwrap()), "relay_dead");
    let cut = &error[..echomq_protocol::arg::FLOW_ERROR_MAX as usize];
    assert_eq!(text(h, &q, "a").await, format!("dead charge 1 {cut}"));
    // The library reads relay_dead as dead.
    let token = claimed(&q, "c").await;
    give_dependents(h, &q, "c", &["q b"], None).await;
    let outcome = q
        .fail(&JobId::new("c").unwrap(), token, "boom", FailAction::Dead)
        .await
        .unwrap();
    assert_eq!(outcome, FailOutcome::Dead);
    assert_eq!(outbox(h, &q).await, ["a"], "the library relayed c's");
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_retry_writes_no_resolution(h: &Harness) {
    let q = h.queue::<Json>("relay_retry");
    let token = claimed(&q, "a").await;
    give_dependents(h, &q, "a", &["q b"], None).await;
    let reply = raw_call(h, &q, "fail", &["a", &token.to_string(), "boom"]).await;
    assert_eq!(word(reply.unwrap()), "retry");
    assert!(outbox(h, &q).await.is_empty());
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn fail_cancelled_answers_relay_cancelled(h: &Harness) {
    let q = h.queue::<Json>("relay_fail_cancelled");
    let token = claimed(&q, "a").await;
    give_dependents(h, &q, "a", &["q b"], None).await;
    let reply = raw_call(
        h,
        &q,
        "fail",
        &["a", &token.to_string(), "stop", "CANCELLED"],
    )
    .await;
    assert_eq!(word(reply.unwrap()), "relay_cancelled");
    assert_eq!(text(h, &q, "a").await, "cancelled -");
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn cancel_of_a_waiting_job_answers_relay_cancelled(h: &Harness) {
    let q = h.queue::<Json>("relay_cancel");
    for id in ["a", "b"] {
        q.enqueue(NewJob::new(json!(1)).id(id).unwrap())
            .await
            .unwrap();
        give_dependents(h, &q, id, &["q x"], Some(("step", "f"))).await;
    }
    let reply = raw_call(h, &q, "cancel", &["a"]).await;
    assert_eq!(word(reply.unwrap()), "relay_cancelled");
    let outcome = q.jobs().cancel(&JobId::new("b").unwrap()).await.unwrap();
    assert_eq!(outcome, CancelOutcome::Cancelled);
    assert_eq!(text(h, &q, "a").await, "cancelled step");
    assert_eq!(outbox(h, &q).await, ["a"], "the library relayed b's");
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn remove_and_remove_force_of_an_undecided_job_resolve_removed(h: &Harness) {
    let q = h.queue::<Json>("relay_remove");
    let running = claimed(&q, "running").await;
    give_dependents(h, &q, "running", &["q y", "q z"], None).await;
    q.enqueue(NewJob::new(json!(1)).id("waiting").unwrap())
        .await
        .unwrap();
    give_dependents(h, &q, "waiting", &["q x"], None).await;
    // Raw: the library relays after a REMOVE.
    for args in [&["waiting"][..], &["running", "FORCE"]] {
        let removed = raw_call(h, &q, "remove", args).await.unwrap();
        assert_eq!(removed, Value::Int(1), "{args:?}");
    }
    let _ = running;
    assert_eq!(text(h, &q, "waiting").await, "removed -");
    assert_eq!(resolution(h, &q, "running").await["left"], "2");
    // The hand-off outlives the job.
    assert!(exists(h, &q, &flow_key(&q, "dependents", "running")).await);
    assert!(!exists(h, &q, &q.keys().job(&JobId::new("running").unwrap())).await);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn remove_of_a_decided_job_keeps_its_resolution_and_drops_its_deps(h: &Harness) {
    let q = h.queue::<Json>("relay_remove_decided");
    let token = claimed(&q, "a").await;
    give_dependents(h, &q, "a", &["q b"], None).await;
    let _: () = redis::cmd("HSET")
        .arg(flow_key(&q, "deps", "a"))
        .arg("q p")
        .arg("completed - 0 ")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    complete_unrelayed(h, &q, "a", token).await;
    let removed = raw_call(h, &q, "remove", &["a"]).await.unwrap();
    assert_eq!(removed, Value::Int(1));
    assert_eq!(text(h, &q, "a").await, "completed - 0 ");
    assert!(!exists(h, &q, &flow_key(&q, "deps", "a")).await);
    assert!(exists(h, &q, &flow_key(&q, "dependents", "a")).await);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn drain_resolves_each_undecided_job_removed(h: &Harness) {
    let q = h.queue::<Json>("relay_drain");
    q.enqueue(NewJob::new(json!(1)).id("now").unwrap())
        .await
        .unwrap();
    q.enqueue(
        NewJob::new(json!(2))
            .id("later")
            .unwrap()
            .after(Duration::from_secs(3600)),
    )
    .await
    .unwrap();
    q.enqueue(NewJob::new(json!(3)).id("plain").unwrap())
        .await
        .unwrap();
    give_dependents(h, &q, "now", &["q x"], None).await;
    give_dependents(h, &q, "later", &["q y"], Some(("r", "f"))).await;
    // Raw: the library relays after a DRAIN.
    let drained = raw_call(h, &q, "drain", &["SCHEDULED"]).await.unwrap();
    assert_eq!(drained, Value::Int(3));
    assert_eq!(text(h, &q, "now").await, "removed -");
    assert_eq!(text(h, &q, "later").await, "removed r");
    assert_eq!(outbox(h, &q).await.len(), 2);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn obliterate_resolves_undecided_jobs_and_leaves_the_hand_off(h: &Harness) {
    let q = h.queue::<Json>("relay_obliterate");
    let token = claimed(&q, "done").await;
    // A dependent told already: the decided job leaves nothing.
    give_dependents(h, &q, "done", &["other y"], None).await;
    let _: () = redis::cmd("HSET")
        .arg(flow_key(&q, "dependents", "done"))
        .arg("other y")
        .arg("1")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    complete_unrelayed(h, &q, "done", token).await;
    q.enqueue(NewJob::new(json!(1)).id("waiting").unwrap())
        .await
        .unwrap();
    give_dependents(h, &q, "waiting", &["other x"], None).await;
    q.admin().pause().await.unwrap();
    // Raw: the library relays after an OBLITERATE.
    while raw_call(h, &q, "obliterate", &[]).await.unwrap() != Value::Int(0) {}
    assert_eq!(outbox(h, &q).await, ["waiting"]);
    assert_eq!(text(h, &q, "waiting").await, "removed -");
    assert!(exists(h, &q, &flow_key(&q, "dependents", "waiting")).await);
    assert!(!exists(h, &q, &flow_key(&q, "dependents", "done")).await);
    assert!(!exists(h, &q, &q.keys().meta()).await);
    // Only the hand-off is left: OBLITERATE counts none of it.
    let left = raw_call(h, &q, "obliterate", &[]).await.unwrap();
    assert_eq!(left, Value::Int(0));
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_job_whose_dependents_were_all_told_writes_no_resolution(h: &Harness) {
    let q = h.queue::<Json>("relay_told");
    let token = claimed(&q, "a").await;
    give_dependents(h, &q, "a", &["q b"], None).await;
    let _: () = redis::cmd("HSET")
        .arg(flow_key(&q, "dependents", "a"))
        .arg("q b")
        .arg("1")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let reply = raw_call(h, &q, "complete", &["a", &token.to_string()]).await;
    assert_eq!(word(reply.unwrap()), "OK");
    assert!(outbox(h, &q).await.is_empty());
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_resolution_still_waiting_keeps_its_text(h: &Harness) {
    let q = h.queue::<Json>("relay_kept");
    let token = claimed(&q, "a").await;
    give_dependents(h, &q, "a", &["q b"], None).await;
    // A first decision's resolution, not delivered yet (REPROCESS since).
    let mut con = h.raw(&q).await;
    let _: () = redis::cmd("HSET")
        .arg(flow_key(&q, "resolution", "a"))
        .arg(&["text", "dead - 3 first", "flow", "", "left", "1"])
        .query_async(&mut con)
        .await
        .unwrap();
    let _: () = redis::cmd("ZADD")
        .arg(format!("{}:resolutions", q.keys().base()))
        .arg(1)
        .arg("a")
        .query_async(&mut con)
        .await
        .unwrap();
    let reply = raw_call(
        h,
        &q,
        "complete",
        &["a", &token.to_string(), "RESULT", "again"],
    )
    .await;
    assert_eq!(word(reply.unwrap()), "OK");
    assert_eq!(text(h, &q, "a").await, "dead - 3 first");
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn retention_keeps_the_dependents_of_a_job_in_resolutions(h: &Harness) {
    let q = h.queue::<Json>("relay_retention");
    q.admin()
        .set_retention(RetentionChange::default().completed(0))
        .await
        .unwrap();
    let token = claimed(&q, "told").await;
    give_dependents(h, &q, "told", &["q b"], None).await;
    let _: () = redis::cmd("HSET")
        .arg(flow_key(&q, "dependents", "told"))
        .arg("q b")
        .arg("1")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    complete_unrelayed(h, &q, "told", token).await;
    let token = claimed(&q, "untold").await;
    give_dependents(h, &q, "untold", &["q c"], None).await;
    complete_unrelayed(h, &q, "untold", token).await;
    // Both trimmed at once (keep 0): the one in resolutions keeps its half.
    for id in ["told", "untold"] {
        assert!(!exists(h, &q, &q.keys().job(&JobId::new(id).unwrap())).await);
    }
    assert!(!exists(h, &q, &flow_key(&q, "dependents", "told")).await);
    assert!(exists(h, &q, &flow_key(&q, "dependents", "untold")).await);
    assert_eq!(outbox(h, &q).await, ["untold"]);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn the_sweep_s_death_of_a_stalled_job_writes_its_resolution(h: &Harness) {
    let q = h.queue::<Json>("relay_stalled");
    q.enqueue(NewJob::new(json!(1)).id("a").unwrap())
        .await
        .unwrap();
    let job = q
        .claim_one("w", Duration::from_millis(1))
        .await
        .unwrap()
        .expect("the job");
    give_dependents(h, &q, "a", &["q b"], None).await;
    echomq_testkit::wait_for(
        "the stalled job to die",
        Duration::from_secs(10),
        || async { q.sweep_stalled(0, 10).await.unwrap().dead == 1 },
    )
    .await;
    let _ = job;
    assert_eq!(text(h, &q, "a").await, "dead - 0 stalled");
    h.check(&q).await;
}

/// Job `id`'s `dependents` and a dependent not told, without the
/// queue's `flows` mark.
async fn unmarked_dependent(h: &Harness, q: &Queue<Json>, id: &str) {
    let mut con = h.raw(q).await;
    let _: () = redis::cmd("HSET")
        .arg(flow_key(q, "dependents", id))
        .arg("q x")
        .arg("0")
        .query_async(&mut con)
        .await
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg(q.keys().job(&JobId::new(id).unwrap()))
        .arg("dependents")
        .arg("1")
        .query_async(&mut con)
        .await
        .unwrap();
}

#[echomq_testkit::case]
pub(super) async fn a_queue_without_flows_reads_no_flow_field(h: &Harness) {
    let q = h.queue::<Json>("relay_unmarked");
    // Written by hand, without the mark: no command reads them.
    let completed = claimed(&q, "completed").await;
    unmarked_dependent(h, &q, "completed").await;
    let dead = claimed(&q, "dead").await;
    unmarked_dependent(h, &q, "dead").await;
    q.enqueue(NewJob::new(json!(1)).id("cancelled").unwrap())
        .await
        .unwrap();
    unmarked_dependent(h, &q, "cancelled").await;
    q.enqueue(NewJob::new(json!(1)).id("removed").unwrap())
        .await
        .unwrap();
    unmarked_dependent(h, &q, "removed").await;
    let reply = raw_call(h, &q, "complete", &["completed", &completed.to_string()]).await;
    assert_eq!(word(reply.unwrap()), "OK");
    let reply = raw_call(h, &q, "fail", &["dead", &dead.to_string(), "e", "DEAD"]).await;
    assert_eq!(word(reply.unwrap()), "dead");
    assert_eq!(
        word(raw_call(h, &q, "cancel", &["cancelled"]).await.unwrap()),
        "cancelled"
    );
    assert_eq!(
        raw_call(h, &q, "remove", &["removed"]).await.unwrap(),
        Value::Int(1)
    );
    assert!(outbox(h, &q).await.is_empty());
    assert_eq!(meta_field(h, &q, "flows").await, None);
    // Its hand-made keys stay as they were: no command touched them.
    assert!(exists(h, &q, &flow_key(&q, "dependents", "removed")).await);
}

#[echomq_testkit::case]
pub(super) async fn a_claim_s_expiry_of_a_job_past_its_start_by_writes_its_resolution(h: &Harness) {
    let q = h.queue::<Json>("relay_claim_expiry");
    // Paused until the deadline has passed on the server's clock, so the
    // claim finds the job late whatever the machine's speed.
    q.admin().pause().await.unwrap();
    q.enqueue(
        NewJob::new(json!(1))
            .id("late")
            .unwrap()
            .start_within(Duration::from_millis(1)),
    )
    .await
    .unwrap();
    give_dependents(h, &q, "late", &["q b"], Some(("step", "f"))).await;
    let start_by: u64 = job_field(h, &q, &echomq::JobId::new("late").unwrap(), "start_by")
        .await
        .unwrap()
        .parse()
        .unwrap();
    echomq_testkit::wait_for("the deadline to pass", Duration::from_secs(10), || async {
        let (secs, micros): (u64, u64) = redis::cmd("TIME")
            .query_async(&mut h.raw(&q).await)
            .await
            .unwrap();
        secs * 1000 + micros / 1000 > start_by
    })
    .await;
    q.admin().resume().await.unwrap();
    assert!(q.claim_one("w", LEASE).await.unwrap().is_none());
    assert!(!outbox(h, &q).await.is_empty(), "the claim expired the job");
    assert_eq!(text(h, &q, "late").await, "cancelled step");
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn the_sweep_s_expiry_of_a_waiting_job_writes_its_resolution(h: &Harness) {
    let q = h.queue::<Json>("relay_sweep_expiry");
    q.enqueue(
        NewJob::new(json!(1))
            .id("late")
            .unwrap()
            .start_within(Duration::from_millis(1)),
    )
    .await
    .unwrap();
    give_dependents(h, &q, "late", &["q b"], None).await;
    echomq_testkit::wait_for(
        "the sweep to expire the job",
        Duration::from_secs(10),
        || async { q.sweep_stalled(3, 10).await.unwrap().expired == 1 },
    )
    .await;
    assert_eq!(text(h, &q, "late").await, "cancelled -");
    h.check(&q).await;
}
