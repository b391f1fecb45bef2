//! The CLAIM tail cases; each takes a harness and uses its own queue.

use super::common::{Harness, command_stats, events, raw_call_whole};
use echomq::{JobId, JobState, NewJob, Queue, Wire};
use redis::Value as Reply;
use serde_json::{Value, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);

fn id(id: &str) -> JobId {
    JobId::new(id).unwrap()
}

/// Enqueues jobs `names` (payload: the name), in order.
async fn enqueue(q: &Queue<Value>, names: &[&str]) {
    for name in names {
        q.enqueue(NewJob::new(json!(name)).id(*name).unwrap())
            .await
            .unwrap();
    }
}

/// Claims one job for worker `w` and returns `[id, token, result]` for a
/// completion of it.
async fn claimed(q: &Queue<Value>) -> Vec<String> {
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    vec![job.id.to_string(), job.token.to_string(), String::new()]
}

/// `COMPLETE.BULK` of `completions` with `CLAIM tail-worker 30000 count`.
async fn complete_and_claim(
    h: &Harness,
    q: &Queue<Value>,
    completions: &[Vec<String>],
    count: u64,
) -> Vec<Reply> {
    let mut args: Vec<String> = completions.iter().flatten().cloned().collect();
    args.extend([
        "CLAIM".into(),
        "tail-worker".into(),
        "30000".into(),
        count.to_string(),
    ]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match raw_call_whole(h, q, "complete_bulk", &args).await.unwrap() {
        Reply::Array(items) => items,
        other => panic!("COMPLETE.BULK answered {other:?}"),
    }
}

fn word(reply: &Reply) -> String {
    match reply {
        Reply::SimpleString(word) => word.clone(),
        Reply::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Reply::Okay => "OK".into(),
        other => panic!("not a word: {other:?}"),
    }
}

/// The claim part's job ids, and its trailing wait_ms when it has one.
fn claim_part(reply: &Reply) -> (Vec<String>, Option<i64>) {
    let Reply::Array(items) = reply else {
        panic!("the claim's part is {reply:?}")
    };
    let mut ids = Vec::new();
    let mut wait = None;
    for item in items {
        match item {
            Reply::Array(entry) => ids.push(word(&entry[0])),
            Reply::Int(ms) => wait = Some(*ms),
            other => panic!("a claim entry {other:?}"),
        }
    }
    (ids, wait)
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_claim_tail_completes_then_claims_the_next_batch(h: &Harness) {
    let q = h.queue::<Value>("tail_batch");
    enqueue(&q, &["a", "b", "c", "d", "e"]).await;
    let done = vec![claimed(&q).await, claimed(&q).await];
    let reply = complete_and_claim(h, &q, &done, 2).await;
    assert_eq!(reply.len(), 3, "{reply:?}");
    assert_eq!(
        (word(&reply[0]), word(&reply[1])),
        ("OK".into(), "OK".into())
    );
    assert_eq!(claim_part(&reply[2]), (vec!["c".into(), "d".into()], None));
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.active, counts.completed), (1, 2, 2));
    let c = q.jobs().get(&id("c")).await.unwrap().unwrap();
    assert_eq!((c.state, c.claims), (JobState::Active, 1));
    assert_eq!(c.worker.as_deref(), Some("tail-worker"));
    // The events of the call: the completions, then the claims.
    let kinds: Vec<(String, String)> = events(h, &q)
        .await
        .into_iter()
        .skip(7)
        .map(|fields| (fields[1].clone(), fields[3].clone()))
        .collect();
    let expected = [
        ("completed", "a"),
        ("completed", "b"),
        ("claimed", "c"),
        ("claimed", "d"),
    ];
    assert_eq!(
        kinds,
        expected.map(|(kind, id)| (kind.to_string(), id.to_string()))
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_claim_tail_claims_the_room_its_completions_free(h: &Harness) {
    let q = h.queue::<Value>("tail_room");
    enqueue(&q, &["a", "b", "c"]).await;
    q.admin().set_concurrency_cap(1).await.unwrap();
    let done = vec![claimed(&q).await];
    // The cap is full: a plain claim gets nothing and waits for room.
    let full = q.claim_with_wait("w", LEASE, 1).await.unwrap();
    assert!(full.jobs.is_empty());
    // The completion frees the room the claim then takes.
    let reply = complete_and_claim(h, &q, &done, 5).await;
    assert_eq!(word(&reply[0]), "OK");
    assert_eq!(claim_part(&reply[1]), (vec!["b".into()], Some(0)));
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.active, counts.completed), (1, 1, 1));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_claim_tail_answers_a_withheld_claim_as_claim_does(h: &Harness) {
    let q = h.queue::<Value>("tail_withheld");
    enqueue(&q, &["a", "b"]).await;
    q.admin().set_concurrency_cap(1).await.unwrap();
    let held = claimed(&q).await;
    // A stale token: nothing completes, so nothing makes room.
    let stale = vec![held[0].clone(), "7".into(), String::new()];
    let reply = complete_and_claim(h, &q, &[stale], 1).await;
    assert_eq!(word(&reply[0]), "NOTACTIVE");
    assert_eq!(claim_part(&reply[1]), (vec![], Some(0)));
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.active), (1, 1));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_claim_tail_on_a_paused_queue_completes_and_claims_nothing(h: &Harness) {
    let q = h.queue::<Value>("tail_paused");
    enqueue(&q, &["a", "b"]).await;
    let done = vec![claimed(&q).await];
    q.admin().pause().await.unwrap();
    let reply = complete_and_claim(h, &q, &done, 5).await;
    assert_eq!(word(&reply[0]), "OK");
    assert_eq!(claim_part(&reply[1]), (vec![], None));
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.active, counts.completed), (1, 0, 1));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_refused_claim_tail_leaves_the_completions_written(h: &Harness) {
    let q = h.queue::<Value>("tail_refused");
    enqueue(&q, &["a", "b", "c"]).await;
    let done = vec![claimed(&q).await];
    let _: () = redis::cmd("SET")
        .arg(q.keys().job(&id("c")))
        .arg("not a hash")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let reply = complete_and_claim(h, &q, &done, 5).await;
    assert_eq!(word(&reply[0]), "OK");
    match &reply[1] {
        Reply::ServerError(err) => assert_eq!(err.code(), "WRONGTYPE", "{err:?}"),
        other => panic!("the refused claim's part is {other:?}"),
    }
    // The completion stands; the claim wrote nothing: b and c still
    // pending, no claim event.
    let a = q.jobs().get(&id("a")).await.unwrap().unwrap();
    assert_eq!(a.state, JobState::Completed);
    let b = q.jobs().get(&id("b")).await.unwrap().unwrap();
    assert_eq!((b.state, b.claims), (JobState::Pending, 0));
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.active, counts.completed), (2, 0, 1));
    let last = events(h, &q).await.pop().unwrap();
    assert_eq!((last[1].as_str(), last[3].as_str()), ("completed", "a"));
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_claim_tail_checks_each_key_type_once(h: &Harness) {
    let q = h.queue::<Value>("tail_types");
    enqueue(&q, &["a", "b"]).await;
    let done = vec![claimed(&q).await];
    let mut conn = h.raw(&q).await;
    let before = command_stats(&mut conn, &["type"], &["calls"]).await;
    let reply = complete_and_claim(h, &q, &done, 1).await;
    let after = command_stats(&mut conn, &["type"], &["calls"]).await;
    assert_eq!(word(&reply[0]), "OK");
    assert_eq!(claim_part(&reply[1]).0.len(), 1);
    if h.connector.wire() == Wire::Script {
        // Wire 4: one TYPE per key the call writes, though both of its
        // parts write active and events: the completions' active,
        // completed and events, then the claim's seq, schedule, pending,
        // fifo and signal. (Wire 6 opens the keys directly: no TYPE to
        // count.)
        assert_eq!(after - before, 8, "TYPE calls");
    }
    h.check(&q).await;
}
