//! The `OUTCOME` cases; each takes a harness (server, cluster or wire 6)
//! and uses its own queue. A reply is read twice: decoded by the client
//! (`Jobs::outcome_now`) and raw (`raw_call`), as the server sent it.

use super::common::{Harness, error_text, meta_field, raw_call, retry_now, writes};
use echomq::{FailAction, IfActive, JobId, JobState, NewJob, OutcomeNow, Queue, QueueSettings};
use echomq_testkit::invariant::check_invariant;
use redis::Value;
use serde_json::{Value as Json, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);

/// A job's `waited` field, read raw.
pub(super) async fn job_waited<T>(h: &Harness, q: &Queue<T>, id: &str) -> Option<String> {
    redis::cmd("HGET")
        .arg(q.keys().job(&JobId::new(id).unwrap()))
        .arg("waited")
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// `OUTCOME` of `id`, raw, asserting it wrote nothing.
async fn outcome_writing_nothing<T>(h: &Harness, q: &Queue<T>, id: &str) -> Value {
    let before = writes(h, q).await;
    let reply = raw_call(h, q, "outcome", &[id]).await.unwrap();
    assert_eq!(writes(h, q).await, before, "OUTCOME {id} wrote");
    reply
}

fn bulk(text: &str) -> Value {
    Value::BulkString(text.as_bytes().to_vec())
}

/// Enqueues a job named `id` and claims it.
async fn claimed(q: &Queue<Json>, id: &str) -> echomq::Claimed<Json> {
    q.enqueue(NewJob::new(json!(id)).id(id).unwrap())
        .await
        .unwrap();
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    assert_eq!(job.id.as_str(), id);
    job
}

#[echomq_testkit::case(cluster)]
pub(super) async fn outcome_of_a_completed_job_is_its_result_and_writes_nothing(h: &Harness) {
    let q = h.queue::<Json>("outcome_completed");
    let with = claimed(&q, "with").await;
    q.complete(&with.id, with.token, &"done").await.unwrap();
    let without = claimed(&q, "without").await;
    q.complete(&without.id, without.token, &()).await.unwrap();

    assert_eq!(
        q.jobs().outcome_now(&with.id).await.unwrap(),
        OutcomeNow::Completed {
            result: b"\"done\"".to_vec()
        }
    );
    assert_eq!(
        outcome_writing_nothing(h, &q, "with").await,
        Value::Array(vec![bulk("completed"), bulk("\"done\"")])
    );
    assert_eq!(
        outcome_writing_nothing(h, &q, "without").await,
        Value::Array(vec![bulk("completed"), bulk("")]),
        "no result: an empty one"
    );
    assert_eq!(job_waited(h, &q, "with").await, None);
    assert_eq!(meta_field(h, &q, "waited").await, None);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn outcome_of_a_dead_job_is_its_error_and_failures(h: &Harness) {
    let q = h.queue::<Json>("outcome_dead");
    let first = claimed(&q, "d").await;
    retry_now(&q, &first, "first").await;
    let second = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.fail(&second.id, second.token, "bad", FailAction::Dead)
        .await
        .unwrap();

    assert_eq!(
        q.jobs().outcome_now(&second.id).await.unwrap(),
        OutcomeNow::Dead {
            error: "bad".into(),
            failures: 2
        }
    );
    assert_eq!(
        outcome_writing_nothing(h, &q, "d").await,
        Value::Array(vec![bulk("dead"), bulk("bad"), Value::Int(2)]),
        "failures an integer"
    );
    assert_eq!(job_waited(h, &q, "d").await, None);
    assert_eq!(meta_field(h, &q, "waited").await, None);
}

#[echomq_testkit::case]
pub(super) async fn outcome_of_a_cancelled_job_is_cancelled(h: &Harness) {
    let q = h.queue::<Json>("outcome_cancelled");
    let id = q
        .enqueue(NewJob::new(json!(1)).id("c").unwrap())
        .await
        .unwrap()
        .id;
    q.jobs().cancel(&id).await.unwrap();
    assert_eq!(
        q.jobs().outcome_now(&id).await.unwrap(),
        OutcomeNow::Cancelled
    );
    assert_eq!(
        outcome_writing_nothing(h, &q, "c").await,
        Value::Array(vec![bulk("cancelled")])
    );
    assert_eq!(job_waited(h, &q, "c").await, None);
    assert_eq!(meta_field(h, &q, "waited").await, None);
}

#[echomq_testkit::case(cluster)]
pub(super) async fn outcome_of_an_absent_job_is_nil_and_writes_nothing(h: &Harness) {
    let q = h.queue::<Json>("outcome_absent");
    // Never enqueued.
    let never = JobId::new("never").unwrap();
    assert_eq!(
        q.jobs().outcome_now(&never).await.unwrap(),
        OutcomeNow::Absent
    );
    assert_eq!(outcome_writing_nothing(h, &q, "never").await, Value::Nil);
    // Removed.
    let removed = q
        .enqueue(NewJob::new(json!(1)).id("removed").unwrap())
        .await
        .unwrap()
        .id;
    assert!(q.jobs().remove(&removed, IfActive::Refuse).await.unwrap());
    assert_eq!(
        q.jobs().outcome_now(&removed).await.unwrap(),
        OutcomeNow::Absent
    );
    assert_eq!(outcome_writing_nothing(h, &q, "removed").await, Value::Nil);
    // Trimmed by retention the moment it completed.
    q.configure(&QueueSettings {
        keep_completed: 0,
        ..QueueSettings::default()
    })
    .await
    .unwrap();
    let trimmed = claimed(&q, "trimmed").await;
    q.complete(&trimmed.id, trimmed.token, &"gone")
        .await
        .unwrap();
    assert_eq!(
        q.jobs().outcome_now(&trimmed.id).await.unwrap(),
        OutcomeNow::Absent
    );
    assert_eq!(outcome_writing_nothing(h, &q, "trimmed").await, Value::Nil);
    assert_eq!(meta_field(h, &q, "waited").await, None);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn outcome_of_an_unfinished_job_marks_it_and_its_queue_once(h: &Harness) {
    let q = h.queue::<Json>("outcome_unfinished");
    let active = claimed(&q, "active").await;
    q.enqueue(NewJob::new(json!(1)).id("pending").unwrap())
        .await
        .unwrap();
    q.enqueue(
        NewJob::new(json!(2))
            .id("scheduled")
            .unwrap()
            .after(Duration::from_secs(3600)),
    )
    .await
    .unwrap();
    assert_eq!(meta_field(h, &q, "waited").await, None, "no waiter yet");

    let before = writes(h, &q).await;
    assert_eq!(
        q.jobs().outcome_now(&active.id).await.unwrap(),
        OutcomeNow::Unfinished {
            state: JobState::Active
        }
    );
    assert!(writes(h, &q).await > before, "the marks are writes");
    assert_eq!(job_waited(h, &q, "active").await.as_deref(), Some("1"));
    assert_eq!(meta_field(h, &q, "waited").await.as_deref(), Some("1"));
    for (id, state) in [("pending", "pending"), ("scheduled", "scheduled")] {
        assert_eq!(job_waited(h, &q, id).await, None, "{id} not waited for yet");
        let reply = raw_call(h, &q, "outcome", &[id]).await.unwrap();
        assert_eq!(reply, Value::Array(vec![bulk(state)]));
        assert_eq!(job_waited(h, &q, id).await.as_deref(), Some("1"));
    }
    // Marked already: a second wait writes nothing.
    for (id, state) in [
        ("active", "active"),
        ("pending", "pending"),
        ("scheduled", "scheduled"),
    ] {
        assert_eq!(
            outcome_writing_nothing(h, &q, id).await,
            Value::Array(vec![bulk(state)])
        );
    }
    // A queue marked already, a job not yet: only the job is written.
    let later = q
        .enqueue(NewJob::new(json!(3)).id("later").unwrap())
        .await
        .unwrap()
        .id;
    q.jobs().outcome_now(&later).await.unwrap();
    assert_eq!(job_waited(h, &q, "later").await.as_deref(), Some("1"));
    // Once finished, the job answers its outcome; its mark stays.
    q.complete(&active.id, active.token, &7).await.unwrap();
    assert_eq!(
        outcome_writing_nothing(h, &q, "active").await,
        Value::Array(vec![bulk("completed"), bulk("7")])
    );
    assert_eq!(job_waited(h, &q, "active").await.as_deref(), Some("1"));
    h.check(&q).await;
    // The invariant holds the job's mark to the queue's.
    let _: () = redis::cmd("HDEL")
        .arg(q.keys().meta())
        .arg("waited")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let problems = check_invariant(h.urls(), q.keys()).await.unwrap_err();
    assert!(
        problems.contains("job later is waited for but the meta hash has no waited mark"),
        "{problems}"
    );
}

/// `SET key <a string>` on the queue's server: a key of the wrong type.
async fn clobber<T>(h: &Harness, q: &Queue<T>, key: &str) {
    let mut conn = h.raw(q).await;
    let _: () = redis::cmd("DEL")
        .arg(key)
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg(key)
        .arg("not a hash")
        .query_async(&mut conn)
        .await
        .unwrap();
}

/// `OUTCOME` with `args`, refused: its error text; asserts it wrote nothing.
async fn refused<T>(h: &Harness, q: &Queue<T>, args: &[&str]) -> String {
    let before = writes(h, q).await;
    let err = raw_call(h, q, "outcome", args)
        .await
        .expect_err("OUTCOME is refused");
    assert_eq!(writes(h, q).await, before, "a refused OUTCOME wrote");
    error_text(&err)
}

#[echomq_testkit::case]
pub(super) async fn outcome_refuses_a_bad_id_before_reading_any_key(h: &Harness) {
    let q = h.queue::<Json>("outcome_bad_id");
    q.enqueue(json!(1)).await.unwrap();
    // A meta hash of the wrong type is not read: the id is refused first.
    clobber(h, &q, &q.keys().meta()).await;
    for id in ["a b", "", "{x}", "*"] {
        assert_eq!(refused(h, &q, &[id]).await, "BADARG id", "id {id:?}");
    }
    assert_eq!(
        refused(
            h,
            &q,
            &[&"x".repeat(echomq::protocol::name::MAX_JOB_ID + 1)]
        )
        .await,
        "BADARG id"
    );
}

#[echomq_testkit::case]
pub(super) async fn outcome_refuses_a_job_hash_of_the_wrong_type_writing_nothing(h: &Harness) {
    let q = h.queue::<Json>("outcome_job_wrongtype");
    q.enqueue(json!(1)).await.unwrap();
    clobber(h, &q, &q.keys().job(&JobId::new("j").unwrap())).await;
    let text = refused(h, &q, &["j"]).await;
    assert!(text.starts_with("WRONGTYPE"), "{text}");
    assert_eq!(meta_field(h, &q, "waited").await, None);
}

#[echomq_testkit::case]
pub(super) async fn outcome_refuses_a_meta_of_the_wrong_type_writing_nothing(h: &Harness) {
    let q = h.queue::<Json>("outcome_meta_wrongtype");
    q.enqueue(NewJob::new(json!(1)).id("p").unwrap())
        .await
        .unwrap();
    clobber(h, &q, &q.keys().meta()).await;
    let text = refused(h, &q, &["p"]).await;
    assert!(text.starts_with("WRONGTYPE"), "{text}");
    assert_eq!(job_waited(h, &q, "p").await, None, "the job is not marked");
}

#[echomq_testkit::case]
pub(super) async fn outcome_refuses_an_argument_after_the_id(h: &Harness) {
    let q = h.queue::<Json>("outcome_syntax");
    q.enqueue(NewJob::new(json!(1)).id("p").unwrap())
        .await
        .unwrap();
    assert_eq!(
        refused(h, &q, &["p", "FORCE"]).await,
        "SYNTAX unknown option FORCE"
    );
    assert_eq!(job_waited(h, &q, "p").await, None);
}

/// `OUTCOME.BULK` with `ids`, refused: its error text; asserts it wrote
/// nothing.
async fn bulk_refused<T>(h: &Harness, q: &Queue<T>, ids: &[&str]) -> String {
    let before = writes(h, q).await;
    let err = raw_call(h, q, "outcome_bulk", ids)
        .await
        .expect_err("OUTCOME.BULK is refused");
    assert_eq!(writes(h, q).await, before, "a refused OUTCOME.BULK wrote");
    error_text(&err)
}

#[echomq_testkit::case(cluster)]
pub(super) async fn outcome_bulk_answers_each_id_as_outcome_would_in_order(h: &Harness) {
    let q = h.queue::<Json>("outcome_bulk");
    let done = claimed(&q, "done").await;
    q.complete(&done.id, done.token, &json!({"n": 1}))
        .await
        .unwrap();
    for id in ["p1", "p2", "gone"] {
        q.enqueue(NewJob::new(json!(id)).id(id).unwrap())
            .await
            .unwrap();
    }
    q.jobs().cancel(&JobId::new("gone").unwrap()).await.unwrap();
    let ids = ["p1", "done", "absent", "gone", "p2", "p1"];
    let reply = raw_call(h, &q, "outcome_bulk", &ids).await.unwrap();
    let Value::Array(replies) = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(replies.len(), ids.len());
    // The unfinished ones are marked now: each single OUTCOME answers
    // what the bulk answered for it, and writes nothing.
    for (id, bulk_reply) in ids.iter().zip(&replies) {
        assert_eq!(
            &outcome_writing_nothing(h, &q, id).await,
            bulk_reply,
            "{id}"
        );
    }
    assert_eq!(replies[0], Value::Array(vec![bulk("pending")]));
    assert_eq!(
        replies[1],
        Value::Array(vec![bulk("completed"), bulk(r#"{"n":1}"#)])
    );
    assert_eq!(replies[2], Value::Nil);
    assert_eq!(replies[3], Value::Array(vec![bulk("cancelled")]));
    for id in ["p1", "p2"] {
        assert_eq!(job_waited(h, &q, id).await.as_deref(), Some("1"), "{id}");
    }
    assert_eq!(
        job_waited(h, &q, "done").await,
        None,
        "finished: not marked"
    );
    assert_eq!(meta_field(h, &q, "waited").await.as_deref(), Some("1"));
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn outcome_bulk_refuses_a_call_without_an_id(h: &Harness) {
    let q = h.queue::<Json>("outcome_bulk_none");
    q.enqueue(json!(1)).await.unwrap();
    assert_eq!(bulk_refused(h, &q, &[]).await, "BADARG jobs");
}

#[echomq_testkit::case]
pub(super) async fn outcome_bulk_refuses_a_bad_id_before_reading_any_key(h: &Harness) {
    let q = h.queue::<Json>("outcome_bulk_bad_id");
    q.enqueue(NewJob::new(json!(1)).id("p").unwrap())
        .await
        .unwrap();
    clobber(h, &q, &q.keys().meta()).await;
    for id in ["a b", "", "{x}", "*"] {
        assert_eq!(
            bulk_refused(h, &q, &["p", id]).await,
            "BADARG id",
            "id {id:?}"
        );
    }
}

#[echomq_testkit::case]
pub(super) async fn outcome_bulk_refuses_a_job_hash_of_the_wrong_type_writing_nothing(h: &Harness) {
    let q = h.queue::<Json>("outcome_bulk_wrongtype");
    q.enqueue(NewJob::new(json!(1)).id("p").unwrap())
        .await
        .unwrap();
    clobber(h, &q, &q.keys().job(&JobId::new("j").unwrap())).await;
    // The pending job before it is not marked: every key is read first.
    let text = bulk_refused(h, &q, &["p", "j"]).await;
    assert!(text.starts_with("WRONGTYPE"), "{text}");
    assert_eq!(job_waited(h, &q, "p").await, None);
    assert_eq!(meta_field(h, &q, "waited").await, None);
}
