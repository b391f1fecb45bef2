//! `WAITED` on the enqueues (docs/protocol.md, "Outcome waits", "Marked
//! at the enqueue"): each job the call creates is marked waited for with
//! its other fields, and the queue gets its mark; a job it does not
//! create is left as it was. Sent raw, so the bulk forms' closing word is
//! exercised as the server reads it.

use super::cases::job_waited;
use super::common::{Harness, error_text, meta_field, raw_call, writes};
use echomq::{NewJob, Queue};
use redis::Value;
use serde_json::{Value as Json, json};

/// The `[id, code, …]` reply of an enqueue, as (id, code) pairs.
fn created(reply: Value) -> Vec<(String, i64)> {
    let Value::Array(items) = reply else {
        panic!("{reply:?}")
    };
    items
        .chunks(2)
        .map(|pair| match pair {
            [Value::BulkString(id), Value::Int(code)] => {
                (String::from_utf8(id.clone()).unwrap(), *code)
            }
            other => panic!("{other:?}"),
        })
        .collect()
}

/// `verb` with `args`, refused: its error text; asserts it wrote nothing.
async fn refused<T>(h: &Harness, q: &Queue<T>, verb: &str, args: &[&str]) -> String {
    let before = writes(h, q).await;
    let err = raw_call(h, q, verb, args)
        .await
        .expect_err("the enqueue is refused");
    assert_eq!(writes(h, q).await, before, "a refused {verb} wrote");
    error_text(&err)
}

#[echomq_testkit::case(cluster)]
pub(super) async fn enqueue_waited_marks_the_job_and_its_queue_as_it_creates_them(h: &Harness) {
    let q = h.queue::<Json>("waited_enqueue");
    let reply = raw_call(h, &q, "enqueue", &["w", "1", "WAITED"]).await;
    assert_eq!(created(reply.unwrap()), [("w".to_string(), 1)]);
    let plain = raw_call(h, &q, "enqueue", &["p", "2", "PRIORITY", "3"]).await;
    assert_eq!(created(plain.unwrap()), [("p".to_string(), 1)]);
    let scheduled = raw_call(h, &q, "schedule", &["s", "3", "+3600000", "waited"]).await;
    assert_eq!(created(scheduled.unwrap()), [("s".to_string(), 1)]);

    assert_eq!(job_waited(h, &q, "w").await.as_deref(), Some("1"));
    assert_eq!(
        job_waited(h, &q, "s").await.as_deref(),
        Some("1"),
        "any case"
    );
    assert_eq!(job_waited(h, &q, "p").await, None, "without the word");
    assert_eq!(meta_field(h, &q, "waited").await.as_deref(), Some("1"));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_bulk_enqueue_closed_by_waited_marks_each_job_it_creates_only(h: &Harness) {
    let q = h.queue::<Json>("waited_bulk");
    q.enqueue(NewJob::new(json!(0)).id("old").unwrap())
        .await
        .unwrap();
    let reply = raw_call(
        h,
        &q,
        "enqueue_bulk",
        &[
            "old", "1", "0", "3", "new", "2", "0", "3", "*", "3", "1", "2", "WAITED",
        ],
    )
    .await;
    let jobs = created(reply.unwrap());
    assert_eq!(jobs[..2], [("old".to_string(), 0), ("new".to_string(), 1)]);
    assert_eq!(jobs[2].1, 1);
    assert_eq!(
        job_waited(h, &q, "old").await,
        None,
        "it existed: untouched"
    );
    assert_eq!(job_waited(h, &q, "new").await.as_deref(), Some("1"));
    assert_eq!(job_waited(h, &q, &jobs[2].0).await.as_deref(), Some("1"));

    let reply = raw_call(
        h,
        &q,
        "schedule_bulk",
        &[
            "later", "4", "+3600000", "0", "3", "due", "5", "+0", "0", "3", "Waited",
        ],
    )
    .await;
    assert_eq!(
        created(reply.unwrap()),
        [("later".to_string(), 1), ("due".to_string(), 1)]
    );
    for id in ["later", "due"] {
        assert_eq!(job_waited(h, &q, id).await.as_deref(), Some("1"), "{id}");
    }
    assert_eq!(meta_field(h, &q, "waited").await.as_deref(), Some("1"));
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn an_enqueue_with_waited_that_creates_nothing_marks_nothing(h: &Harness) {
    let q = h.queue::<Json>("waited_nothing");
    q.enqueue(NewJob::new(json!(0)).id("held").unwrap().dedup("k"))
        .await
        .unwrap();
    let deduplicated = raw_call(h, &q, "enqueue", &["x", "1", "DEDUP", "k", "WAITED"]).await;
    assert_eq!(created(deduplicated.unwrap()), [("held".to_string(), 2)]);
    let existed = raw_call(h, &q, "enqueue", &["held", "1", "WAITED"]).await;
    assert_eq!(created(existed.unwrap()), [("held".to_string(), 0)]);
    assert_eq!(job_waited(h, &q, "held").await, None);
    assert_eq!(meta_field(h, &q, "waited").await, None);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_bulk_enqueue_refuses_another_word_after_whole_groups(h: &Harness) {
    let q = h.queue::<Json>("waited_bad_tail");
    q.enqueue(json!(0)).await.unwrap();
    let args = ["a", "1", "0", "3", "WAITING"];
    assert_eq!(refused(h, &q, "enqueue_bulk", &args).await, "BADARG jobs");
    let args = ["a", "1", "+0", "0", "3", "WAITING"];
    assert_eq!(refused(h, &q, "schedule_bulk", &args).await, "BADARG jobs");
    assert_eq!(job_waited(h, &q, "a").await, None);
}

#[echomq_testkit::case]
pub(super) async fn a_bulk_enqueue_refuses_waited_without_a_job(h: &Harness) {
    let q = h.queue::<Json>("waited_alone");
    q.enqueue(json!(0)).await.unwrap();
    assert_eq!(
        refused(h, &q, "enqueue_bulk", &["WAITED"]).await,
        "BADARG jobs"
    );
    assert_eq!(
        refused(h, &q, "schedule_bulk", &["WAITED"]).await,
        "BADARG jobs"
    );
    assert_eq!(meta_field(h, &q, "waited").await, None);
}
