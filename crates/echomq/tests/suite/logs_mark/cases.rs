//! The logs-mark cases; each takes a harness (server, cluster or wire 6)
//! and uses its own queue.

use super::common::{Harness, meta_field, raw_call};
use echomq::{JobId, NewJob, Queue, QueueSettings};
use echomq_testkit::invariant::queue_keys;
use serde_json::{Value, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);

/// The queue's logs mark, read raw.
async fn mark<T>(h: &Harness, q: &Queue<T>) -> Option<String> {
    meta_field(h, q, "logs").await
}

/// Runs one raw command on the queue's server.
async fn raw<T>(h: &Harness, q: &Queue<T>, cmd: &mut redis::Cmd) {
    let _: redis::Value = cmd.query_async(&mut h.raw(q).await).await.unwrap();
}

/// Whether a job's log key exists.
async fn has_log<T>(h: &Harness, q: &Queue<T>, id: &JobId) -> bool {
    redis::cmd("EXISTS")
        .arg(q.keys().logs(id))
        .query_async::<u64>(&mut h.raw(q).await)
        .await
        .unwrap()
        == 1
}

/// Deletes completed jobs at once (keep_completed 0), after the queue's
/// first job set its mark.
async fn keep_none<T>(q: &Queue<T>) {
    q.configure(&QueueSettings {
        keep_completed: 0,
        ..QueueSettings::default()
    })
    .await
    .unwrap();
}

/// Claims the queue's next job and completes it.
async fn finish_next<T: serde::de::DeserializeOwned + Send + 'static>(q: &Queue<T>) -> JobId {
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.complete(&job.id, job.token, &()).await.unwrap();
    job.id
}

#[echomq_testkit::case(cluster)]
pub(super) async fn the_first_job_of_an_empty_queue_sets_the_logs_mark_to_0(h: &Harness) {
    let q = h.queue::<Value>("logs_mark_first");
    assert_eq!(mark(h, &q).await, None, "no job, no mark");
    q.enqueue(json!(1)).await.unwrap();
    assert_eq!(mark(h, &q).await.as_deref(), Some("0"));
    h.check(&q).await;
    // Every enqueue form marks an empty queue: a scheduled job, a bulk.
    let later = h.queue::<Value>("logs_mark_scheduled");
    later
        .enqueue(NewJob::new(json!(1)).after(Duration::from_secs(3600)))
        .await
        .unwrap();
    assert_eq!(mark(h, &later).await.as_deref(), Some("0"));
    let bulk = h.queue::<Value>("logs_mark_bulk");
    bulk.enqueue_bulk((0..3).map(|n| NewJob::new(json!(n))))
        .await
        .unwrap();
    assert_eq!(mark(h, &bulk).await.as_deref(), Some("0"));
    // OBLITERATE takes the mark with the queue; the next first job sets it.
    let pending = q.enqueue(json!(2)).await.unwrap().id;
    q.jobs().log(&pending, "x").await.unwrap();
    assert_eq!(mark(h, &q).await.as_deref(), Some("1"));
    q.admin().pause().await.unwrap();
    q.admin()
        .obliterate(echomq::IfActive::Refuse)
        .await
        .unwrap();
    assert!(queue_keys(h.urls(), q.keys()).await.unwrap().is_empty());
    q.enqueue(json!(3)).await.unwrap();
    assert_eq!(mark(h, &q).await.as_deref(), Some("0"));
}

#[echomq_testkit::case(cluster)]
pub(super) async fn an_enqueue_that_creates_nothing_sets_no_logs_mark(h: &Harness) {
    let q = h.queue::<Value>("logs_mark_nothing");
    let job = NewJob::new(json!(1)).id("only").unwrap();
    q.enqueue(job.clone()).await.unwrap();
    raw(h, &q, redis::cmd("HDEL").arg(q.keys().meta()).arg("logs")).await;
    let again = q.enqueue(job).await.unwrap();
    assert!(!again.created, "the id exists");
    assert_eq!(mark(h, &q).await, None, "an enqueue that made no job");
}

#[echomq_testkit::case(cluster)]
pub(super) async fn log_sets_the_logs_mark_and_retention_then_deletes_the_log(h: &Harness) {
    let q = h.queue::<Value>("logs_mark_log");
    let job = q.enqueue(json!(1)).await.unwrap().id;
    keep_none(&q).await;
    assert_eq!(mark(h, &q).await.as_deref(), Some("0"));
    q.jobs().log(&job, "a line").await.unwrap();
    assert_eq!(mark(h, &q).await.as_deref(), Some("1"));
    q.jobs().log(&job, "another").await.unwrap();
    assert_eq!(mark(h, &q).await.as_deref(), Some("1"), "stays 1");
    assert_eq!(finish_next(&q).await, job);
    assert!(
        q.jobs().get(&job).await.unwrap().is_none(),
        "trimmed at once"
    );
    assert!(!has_log(h, &q, &job).await, "its log went with it");
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_queue_from_before_the_mark_is_marked_1_and_its_logs_still_go(h: &Harness) {
    let q = h.queue::<Value>("logs_mark_upgrade");
    let old = q.enqueue(json!("old")).await.unwrap().id;
    keep_none(&q).await;
    // As an earlier version left it: a job with a log line, no mark.
    raw(h, &q, redis::cmd("HDEL").arg(q.keys().meta()).arg("logs")).await;
    raw(
        h,
        &q,
        redis::cmd("RPUSH").arg(q.keys().logs(&old)).arg("old line"),
    )
    .await;
    q.enqueue(json!("new")).await.unwrap();
    assert_eq!(mark(h, &q).await.as_deref(), Some("1"), "jobs were there");
    assert_eq!(finish_next(&q).await, old);
    assert!(!has_log(h, &q, &old).await, "the old log went with its job");
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn retention_under_the_mark_0_deletes_no_log_key(h: &Harness) {
    let q = h.queue::<Value>("logs_mark_zero");
    let job = q.enqueue(json!(1)).await.unwrap().id;
    keep_none(&q).await;
    assert_eq!(mark(h, &q).await.as_deref(), Some("0"));
    // A log key only a client from before the mark could add under 0
    // (docs/protocol.md, "The logs mark"): retention leaves it alone.
    raw(
        h,
        &q,
        redis::cmd("RPUSH").arg(q.keys().logs(&job)).arg("unmarked"),
    )
    .await;
    assert_eq!(finish_next(&q).await, job);
    assert!(
        q.jobs().get(&job).await.unwrap().is_none(),
        "trimmed at once"
    );
    assert!(has_log(h, &q, &job).await, "retention skipped its log key");
}

#[echomq_testkit::case(cluster)]
pub(super) async fn log_on_a_queue_whose_meta_is_not_a_hash_is_refused_wrongtype(h: &Harness) {
    let q = h.queue::<Value>("logs_mark_meta_type");
    let job = q.enqueue(json!(1)).await.unwrap().id;
    let mut conn = h.raw(&q).await;
    let _: () = redis::pipe()
        .cmd("DEL")
        .arg(q.keys().meta())
        .cmd("SET")
        .arg(q.keys().meta())
        .arg("not a hash")
        .query_async(&mut conn)
        .await
        .unwrap();
    let before = queue_keys(h.urls(), q.keys()).await.unwrap();
    let err = raw_call(h, &q, "log", &[job.as_str(), "a line"])
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some("WRONGTYPE"), "{err}");
    assert!(!has_log(h, &q, &job).await, "no line appended");
    assert_eq!(queue_keys(h.urls(), q.keys()).await.unwrap(), before);
    let meta: String = redis::cmd("GET")
        .arg(q.keys().meta())
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(meta, "not a hash");
}
