//! The trace cases; each takes a harness (server, cluster or wire 6) and
//! uses its own queue.

use super::common::{Harness, error_text, meta_field, raw_call};
use echomq::{Error, FailAction, JobState, NewJob, Queue};
use echomq_testkit::invariant::queue_keys;
use redis::Value as Resp;
use serde_json::{Value, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);
const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TP2: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

/// The `traced` mark of the queue's meta hash.
async fn mark<T>(h: &Harness, q: &Queue<T>) -> Option<String> {
    meta_field(h, q, "traced").await
}

/// A job hash's `traceparent`, read raw.
async fn stored<T>(h: &Harness, q: &Queue<T>, id: &echomq::JobId) -> Option<String> {
    redis::cmd("HGET")
        .arg(q.keys().job(id))
        .arg("traceparent")
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// The lengths of a raw CLAIM reply's entries (a trailing wait aside).
fn entry_lengths(reply: &Resp) -> Vec<usize> {
    let Resp::Array(entries) = reply else {
        panic!("CLAIM answered {reply:?}");
    };
    entries
        .iter()
        .filter_map(|entry| match entry {
            Resp::Array(items) => Some(items.len()),
            _ => None,
        })
        .collect()
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_traced_enqueue_stores_its_traceparent_and_marks_the_queue(h: &Harness) {
    let q = h.queue::<Value>("traced_enqueue");
    let plain = q.enqueue(json!(0)).await.unwrap();
    assert_eq!(mark(h, &q).await, None, "no trace, no mark");
    let traced = q
        .enqueue(NewJob::new(json!(1)).traceparent(TP))
        .await
        .unwrap();
    let later = q
        .enqueue(
            NewJob::new(json!(2))
                .traceparent(TP2)
                .after(Duration::from_secs(600)),
        )
        .await
        .unwrap();
    assert_eq!(mark(h, &q).await.as_deref(), Some("1"));
    h.check(&q).await;
    assert_eq!(stored(h, &q, &plain.id).await, None);
    assert_eq!(stored(h, &q, &traced.id).await.as_deref(), Some(TP));
    let record = q.jobs().get(&later.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Scheduled);
    assert_eq!(record.traceparent.as_deref(), Some(TP2));
    // GET lists it last among the fields, before `id` and `logs`.
    let reply = raw_call(h, &q, "get", &[traced.id.as_str()]).await.unwrap();
    let Resp::Array(items) = reply else {
        panic!("GET answered {reply:?}");
    };
    let names: Vec<String> = items
        .iter()
        .step_by(2)
        .map(|name| redis::from_redis_value(name.clone()).unwrap())
        .collect();
    assert_eq!(&names[names.len() - 3..], ["traceparent", "id", "logs"]);
}

#[echomq_testkit::case(cluster)]
pub(super) async fn every_claim_of_a_traced_job_answers_its_traceparent_sixth(h: &Harness) {
    let q = h.queue::<Value>("traced_claim");
    q.enqueue(NewJob::new(json!(1)).id("traced").unwrap().traceparent(TP))
        .await
        .unwrap();
    q.enqueue(NewJob::new(json!(2)).id("plain").unwrap())
        .await
        .unwrap();
    let reply = raw_call(h, &q, "claim", &["w", "30000", "COUNT", "2"])
        .await
        .unwrap();
    assert_eq!(entry_lengths(&reply), [6, 5]);
    let Resp::Array(entries) = &reply else {
        unreachable!()
    };
    let Resp::Array(first) = &entries[0] else {
        unreachable!()
    };
    assert_eq!(first[5], Resp::BulkString(TP.as_bytes().to_vec()));
    h.check(&q).await;
    // A retry keeps it: the next attempt answers the same trace context.
    let token = match &first[1] {
        Resp::Int(token) => *token as u64,
        other => panic!("token {other:?}"),
    };
    let id = echomq::JobId::new("traced").unwrap();
    q.fail(&id, token, "boom", FailAction::Retry(Duration::ZERO))
        .await
        .unwrap();
    let again = q.claim_one("w", LEASE).await.unwrap().expect("the retry");
    assert_eq!((again.id.as_str(), again.attempt()), ("traced", 2));
    assert_eq!(again.traceparent(), Some(TP));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_queue_never_traced_reads_no_traceparent_when_it_claims(h: &Harness) {
    let q = h.queue::<Value>("never_traced");
    let job = q.enqueue(json!(1)).await.unwrap();
    // Written by hand, without the mark: a claim does not read it.
    let _: () = redis::cmd("HSET")
        .arg(q.keys().job(&job.id))
        .arg("traceparent")
        .arg(TP)
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let claimed = q.claim_one("w", LEASE).await.unwrap().expect("the job");
    assert_eq!(claimed.traceparent(), None);
    assert_eq!(mark(h, &q).await, None);
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_bad_traceparent_is_refused_badarg_traceparent(h: &Harness) {
    let q = h.queue::<Value>("bad_traceparent");
    let upper = TP.to_uppercase();
    let zeros = format!("00-{}-00f067aa0ba902b7-01", "0".repeat(32));
    let version_ff = TP.replacen("00", "ff", 1);
    for (script, args) in [
        ("enqueue", vec!["j", "{}", "TRACE", "nope"]),
        ("enqueue", vec!["j", "{}", "TRACE", upper.as_str()]),
        ("enqueue", vec!["j", "{}", "trace", zeros.as_str()]),
        ("enqueue", vec!["j", "{}", "TRACE"]),
        (
            "schedule",
            vec!["j", "{}", "+0", "TRACE", version_ff.as_str()],
        ),
        ("schedule", vec!["j", "{}", "5", "TRACE", &TP[1..]]),
    ] {
        let refused = raw_call(h, &q, script, &args)
            .await
            .map(|reply| panic!("{script} {args:?} answered {reply:?}"))
            .unwrap_err();
        assert_eq!(
            error_text(&refused),
            "BADARG traceparent",
            "{script} {args:?}"
        );
    }
    assert!(
        queue_keys(h.urls(), q.keys()).await.unwrap().is_empty(),
        "a refused enqueue wrote a key"
    );
    // The client refuses it before sending anything.
    let err = q
        .enqueue(NewJob::new(json!(1)).traceparent(upper.as_str()))
        .await
        .unwrap_err();
    assert_bad_traceparent(&err);
    let err = q
        .enqueue_bulk([NewJob::new(json!(1)).traceparent("00-1-2-01")])
        .await
        .unwrap_err();
    assert_bad_traceparent(&err);
    assert!(queue_keys(h.urls(), q.keys()).await.unwrap().is_empty());
}

#[echomq_testkit::case(cluster)]
pub(super) async fn an_enqueue_that_creates_nothing_does_not_mark_the_queue(h: &Harness) {
    let q = h.queue::<Value>("traced_nothing");
    q.enqueue(NewJob::new(json!(1)).id("j").unwrap())
        .await
        .unwrap();
    let again = q
        .enqueue(NewJob::new(json!(2)).id("j").unwrap().traceparent(TP))
        .await
        .unwrap();
    assert!(!again.created);
    q.enqueue(NewJob::new(json!(3)).dedup("k")).await.unwrap();
    let held = q
        .enqueue(NewJob::new(json!(4)).dedup("k").traceparent(TP))
        .await
        .unwrap();
    assert!(!held.created);
    assert_eq!(mark(h, &q).await, None);
    assert_eq!(stored(h, &q, &again.id).await, None);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_bulk_enqueue_sends_a_traced_job_alone_in_order(h: &Harness) {
    let q = h.queue::<Value>("traced_bulk");
    let jobs = q
        .enqueue_bulk([
            NewJob::new(json!(1)),
            NewJob::new(json!(2)).traceparent(TP),
            NewJob::new(json!(3)),
        ])
        .await
        .unwrap();
    assert_eq!(jobs.len(), 3);
    let mut found = Vec::new();
    for job in &jobs {
        found.push(stored(h, &q, &job.id).await);
    }
    assert_eq!(found, [None, Some(TP.to_string()), None]);
    let claimed = q.claim("w", LEASE, 3).await.unwrap();
    let order: Vec<Option<&str>> = claimed.iter().map(|job| job.traceparent()).collect();
    assert_eq!(order, [None, Some(TP), None], "claimed in enqueue order");
    h.check(&q).await;
}

/// The client's refusal of a malformed traceparent, before sending.
fn assert_bad_traceparent(err: &Error) {
    assert!(
        matches!(
            err,
            Error::BadArgument {
                name: "traceparent",
                ..
            }
        ),
        "{err:?}"
    );
}
