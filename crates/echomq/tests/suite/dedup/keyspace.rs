//! What each mode stores (`docs/protocol.md`, "Deduplication"): every key
//! held has an owner entry in `<base>:dedup_owner`, only throttle keys are
//! in `<base>:dedup`; expired throttle entries go lazily, by a throttle
//! enqueue's trim, by an enqueue that takes that very key, or by
//! DEDUP.RELEASE of it.

use super::cases::{job, owner, wait_past};
use super::common::Harness;
use echomq::{DedupMode, EnqueueOutcome, Queue};
use serde_json::{Value, json};
use std::time::Duration;

const LATER: Duration = Duration::from_secs(600);
/// A throttle period short enough to wait out on the server clock.
const BRIEF: Duration = Duration::from_millis(50);

/// The members of `<base>:dedup` (throttle keys, with their scores) and
/// the fields of `<base>:dedup_owner`, sorted.
async fn stored(h: &Harness, q: &Queue<Value>) -> (Vec<(String, u64)>, Vec<String>) {
    let (mut scored, owners): (Vec<(String, u64)>, Vec<String>) = redis::pipe()
        .cmd("ZRANGE")
        .arg(q.keys().dedup())
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .cmd("HKEYS")
        .arg(q.keys().dedup_owner())
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
    scored.sort();
    let mut owners = owners;
    owners.sort();
    (scored, owners)
}

/// The member names of `<base>:dedup`.
fn members(scored: &[(String, u64)]) -> Vec<&str> {
    scored.iter().map(|(key, _)| key.as_str()).collect()
}

/// Throttles each of `keys` for BRIEF and waits until all are expired.
async fn expired_throttle_keys(h: &Harness, q: &Queue<Value>, keys: &[&str]) {
    for key in keys {
        q.enqueue(job(json!(key), key).dedup_for(BRIEF))
            .await
            .unwrap();
    }
    let (scored, _) = stored(h, q).await;
    let last = scored.iter().map(|(_, until)| *until).max().unwrap();
    wait_past(h, q, last).await;
    assert_eq!(q.admin().dedup_keys_held().await.unwrap(), 0);
}

#[echomq_testkit::case]
pub(super) async fn simple_and_debounce_keys_are_owner_entries_only(h: &Harness) {
    let q = h.queue::<Value>("dedup_stored");
    let simple = q.enqueue(job(json!(1), "s")).await.unwrap();
    q.enqueue(job(json!(2), "d").debounce(LATER)).await.unwrap();
    let throttle = q
        .enqueue(job(json!(3), "t").dedup_for(LATER))
        .await
        .unwrap();
    let created = q
        .jobs()
        .get(&throttle.id)
        .await
        .unwrap()
        .unwrap()
        .created_at;
    let (scored, owners) = stored(h, &q).await;
    assert_eq!(scored, [("t".to_string(), created.unwrap() + 600_000)]);
    assert_eq!(owners, ["d", "s", "t"]);
    assert_eq!(q.admin().dedup_keys_held().await.unwrap(), 3);
    // Freeing a simple key deletes its owner entry, nothing else.
    let claimed = q
        .claim_one("w", LATER)
        .await
        .unwrap()
        .expect("the simple job");
    assert_eq!(claimed.id, simple.id);
    q.complete(&claimed.id, claimed.token, &()).await.unwrap();
    let (scored, owners) = stored(h, &q).await;
    assert_eq!(members(&scored), ["t"]);
    assert_eq!(owners, ["d", "t"]);
    h.check(&q).await;
}

/// A simple key's job stores its key and no mode (a key without a mode is
/// simple); the other modes store theirs.
#[echomq_testkit::case]
pub(super) async fn only_a_simple_keys_job_stores_no_mode(h: &Harness) {
    let q = h.queue::<Value>("dedup_modes");
    let cases = [
        (job(json!(1), "s"), None, DedupMode::Simple),
        (
            job(json!(2), "t").dedup_for(LATER),
            Some("throttle"),
            DedupMode::Throttle,
        ),
        (
            job(json!(3), "d").debounce(LATER),
            Some("debounce"),
            DedupMode::Debounce,
        ),
    ];
    for (new, stored, mode) in cases {
        let id = q.enqueue(new).await.unwrap().id;
        let fields: (Option<String>, Option<String>) = redis::cmd("HMGET")
            .arg(q.keys().job(&id))
            .arg(&["dedup", "dedup_mode"])
            .query_async(&mut h.raw(&q).await)
            .await
            .unwrap();
        assert!(fields.0.is_some(), "{mode}: {fields:?}");
        assert_eq!(fields.1.as_deref(), stored, "{mode}");
        let record = q.jobs().get(&id).await.unwrap().unwrap();
        assert_eq!(record.dedup_mode, Some(mode));
    }
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_simple_enqueue_does_not_trim_expired_keys(h: &Harness) {
    let q = h.queue::<Value>("dedup_no_trim");
    expired_throttle_keys(h, &q, &["a", "b", "c"]).await;
    h.check(&q).await;
    q.enqueue(job(json!("x"), "x")).await.unwrap();
    q.enqueue(job(json!("y"), "y").debounce(LATER))
        .await
        .unwrap();
    let (scored, owners) = stored(h, &q).await;
    assert_eq!(members(&scored), ["a", "b", "c"]);
    assert_eq!(owners, ["a", "b", "c", "x", "y"]);
    assert_eq!(q.admin().dedup_keys_held().await.unwrap(), 2);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_throttle_enqueue_trims_expired_keys(h: &Harness) {
    let q = h.queue::<Value>("dedup_trim");
    expired_throttle_keys(h, &q, &["a", "b", "c"]).await;
    q.enqueue(job(json!("s"), "s")).await.unwrap();
    // A throttle enqueue whose key is held takes nothing and trims nothing.
    q.enqueue(job(json!("held"), "s").dedup_for(LATER))
        .await
        .unwrap();
    assert_eq!(members(&stored(h, &q).await.0), ["a", "b", "c"]);
    let next = q
        .enqueue(job(json!("t"), "t").dedup_for(LATER))
        .await
        .unwrap();
    assert_eq!(next.effect, EnqueueOutcome::Created);
    let (scored, owners) = stored(h, &q).await;
    assert_eq!(members(&scored), ["t"]);
    assert_eq!(owners, ["s", "t"]);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_simple_key_taken_from_an_expired_throttle_key_leaves_the_set(h: &Harness) {
    let q = h.queue::<Value>("dedup_retake");
    expired_throttle_keys(h, &q, &["k", "other"]).await;
    let simple = q.enqueue(job(json!(2), "k")).await.unwrap();
    assert_eq!(simple.effect, EnqueueOutcome::Created);
    let (scored, owners) = stored(h, &q).await;
    // Its own expired entry goes; the other one waits for a throttle trim.
    assert_eq!(members(&scored), ["other"]);
    assert_eq!(owners, ["k", "other"]);
    assert_eq!(owner(&q, "k").await.as_deref(), Some(simple.id.as_str()));
    let hold = q.jobs().dedup_hold("k").await.unwrap().unwrap();
    assert_eq!((hold.owner, hold.until), (simple.id.clone(), None));
    h.check(&q).await;
    // Held until released, as any simple key.
    let again = q.enqueue(job(json!(3), "k")).await.unwrap();
    assert_eq!(again.effect, EnqueueOutcome::Deduplicated);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_throttle_key_taken_again_gets_a_new_time(h: &Harness) {
    let q = h.queue::<Value>("dedup_rethrottle");
    expired_throttle_keys(h, &q, &["k"]).await;
    let next = q
        .enqueue(job(json!(2), "k").dedup_for(LATER))
        .await
        .unwrap();
    assert_eq!(next.effect, EnqueueOutcome::Created);
    let created = q
        .jobs()
        .get(&next.id)
        .await
        .unwrap()
        .unwrap()
        .created_at
        .unwrap();
    let (scored, owners) = stored(h, &q).await;
    assert_eq!(scored, [("k".to_string(), created + 600_000)]);
    assert_eq!(owners, ["k"]);
    assert_eq!(owner(&q, "k").await.as_deref(), Some(next.id.as_str()));
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn release_dedup_removes_an_expired_throttle_key_and_answers_false(h: &Harness) {
    let q = h.queue::<Value>("dedup_release_expired");
    expired_throttle_keys(h, &q, &["k", "other"]).await;
    assert_eq!(owner(&q, "k").await, None);
    assert!(!q.jobs().release_dedup("k").await.unwrap());
    let (scored, owners) = stored(h, &q).await;
    assert_eq!(members(&scored), ["other"]);
    assert_eq!(owners, ["other"]);
    let released = super::cases::events_named(h, &q, "dedup_released").await;
    assert!(released.is_empty(), "no event: {released:?}");
    h.check(&q).await;
}
