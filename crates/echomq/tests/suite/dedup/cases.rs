//! The deduplication cases; each takes a harness and uses its own queue.

use super::common::{
    Harness, command_of_script, error_text, events, meta_field, retry_now, script_text, server_now,
};
use echomq::{
    CancelOutcome, Connector, DedupMode, EnqueueOutcome, Enqueued, Error, FailAction, FailOutcome,
    JobId, JobState, NewJob, Queue, Wire,
};
use echomq_testkit::invariant::queue_keys;
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);
const LATER: Duration = Duration::from_secs(600);

pub(super) fn job(payload: Value, key: &str) -> NewJob<Value> {
    NewJob::new(payload).dedup(key)
}

pub(super) async fn owner(q: &Queue<Value>, key: &str) -> Option<String> {
    q.jobs()
        .dedup_owner(key)
        .await
        .unwrap()
        .map(|id| id.to_string())
}

fn outcome(e: &Enqueued) -> (&str, EnqueueOutcome) {
    (e.id.as_str(), e.effect)
}

/// The events of `name` on the queue, each as its flat field list.
pub(super) async fn events_named(h: &Harness, q: &Queue<Value>, name: &str) -> Vec<Vec<String>> {
    events(h, q)
        .await
        .into_iter()
        .filter(|fields| fields.get(1).map(String::as_str) == Some(name))
        .collect()
}

/// Waits until the server's clock is past `ms`.
pub(super) async fn wait_past(h: &Harness, q: &Queue<Value>, ms: u64) {
    wait_for(
        "the server's clock to pass the key's time",
        Duration::from_secs(10),
        || async { server_now(h, q).await > ms },
    )
    .await;
}

/// Claims the one pending job (worker `w`).
async fn claim(q: &Queue<Value>) -> echomq::Claimed<Value> {
    q.claim_one("w", LEASE)
        .await
        .unwrap()
        .expect("a pending job")
}

/// The meta hash's `dedup` marks a queue whose jobs ever took a key: the
/// commands that free keys read a job's dedup fields only then.
#[echomq_testkit::case]
pub(super) async fn the_queue_is_marked_once_a_job_takes_a_key(h: &Harness) {
    let q: Queue<Value> = h.queue("dedup-mark");
    let marked = || meta_field(h, &q, "dedup");
    q.enqueue(json!("plain")).await.unwrap();
    assert_eq!(marked().await, None);
    q.enqueue(job(json!("keyed"), "k")).await.unwrap();
    assert_eq!(marked().await.as_deref(), Some("1"));
    // Deduplicated: no new key, the mark as it was.
    q.enqueue(job(json!("again"), "k")).await.unwrap();
    assert_eq!(marked().await.as_deref(), Some("1"));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn simple_mode_answers_the_holder_while_its_job_is_unfinished(h: &Harness) {
    let q = h.queue::<Value>("dedup_simple");
    let first = q.enqueue(job(json!(1), "sync:7")).await.unwrap();
    assert!(first.created);
    assert_eq!(first.effect, EnqueueOutcome::Created);
    h.check(&q).await;
    let record = q.jobs().get(&first.id).await.unwrap().unwrap();
    assert_eq!(record.dedup.as_deref(), Some("sync:7"));
    assert_eq!(record.dedup_mode, Some(DedupMode::Simple));

    let again = q
        .enqueue(job(json!(2), "sync:7").id("other").unwrap())
        .await
        .unwrap();
    assert_eq!(
        outcome(&again),
        (first.id.as_str(), EnqueueOutcome::Deduplicated)
    );
    assert!(!again.created);
    assert!(
        q.jobs()
            .get(&JobId::new("other").unwrap())
            .await
            .unwrap()
            .is_none()
    );
    h.check(&q).await;
    let dedup = events_named(h, &q, "deduplicated").await;
    assert_eq!(
        dedup,
        [vec![
            "event",
            "deduplicated",
            "id",
            first.id.as_str(),
            "key",
            "sync:7",
            "requested",
            "other"
        ]]
    );
    assert_eq!(
        owner(&q, "sync:7").await.as_deref(),
        Some(first.id.as_str())
    );
    assert_eq!(q.admin().dedup_keys_held().await.unwrap(), 1);
    let hold = q.jobs().dedup_hold("sync:7").await.unwrap().unwrap();
    assert_eq!((hold.owner, hold.until), (first.id.clone(), None));

    // Active: still held.
    let claimed = claim(&q).await;
    let active = q.enqueue(job(json!(3), "sync:7")).await.unwrap();
    assert_eq!(active.effect, EnqueueOutcome::Deduplicated);
    h.check(&q).await;
    // Done: the next enqueue creates a job.
    q.complete(&claimed.id, claimed.token, &()).await.unwrap();
    h.check(&q).await;
    assert_eq!(owner(&q, "sync:7").await, None);
    let next = q.enqueue(job(json!(4), "sync:7")).await.unwrap();
    assert_eq!(next.effect, EnqueueOutcome::Created);
    assert_ne!(next.id, first.id);
    assert_eq!(q.admin().counts().await.unwrap().total(), 2);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_deduplicated_enqueue_of_a_generated_id_takes_no_id(h: &Harness) {
    let q = h.queue::<Value>("dedup_generated");
    let first = q.enqueue(job(json!(1), "k")).await.unwrap();
    for _ in 0..3 {
        let again = q.enqueue(job(json!(2), "k")).await.unwrap();
        assert_eq!(
            outcome(&again),
            (first.id.as_str(), EnqueueOutcome::Deduplicated)
        );
    }
    let requested: Vec<String> = events_named(h, &q, "deduplicated")
        .await
        .into_iter()
        .map(|fields| fields[7].clone())
        .collect();
    assert_eq!(requested, ["*", "*", "*"]);
    // The counter moved once: the next generated id follows the first.
    let plain = q.enqueue(json!(3)).await.unwrap();
    let next: u64 = first.id.as_str().parse::<u64>().unwrap() + 1;
    assert_eq!(plain.id.as_str(), next.to_string());
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn an_existing_id_answers_existed_before_the_key_is_looked_at(h: &Harness) {
    let q = h.queue::<Value>("dedup_existed");
    q.enqueue(NewJob::new(json!(0)).id("plain").unwrap())
        .await
        .unwrap();
    q.enqueue(job(json!(1), "k").id("holder").unwrap())
        .await
        .unwrap();
    // The id exists: answered 0 whatever the key (held or not), nothing taken.
    let existed = q
        .enqueue(job(json!(2), "free").id("plain").unwrap())
        .await
        .unwrap();
    assert_eq!(outcome(&existed), ("plain", EnqueueOutcome::Existed));
    assert_eq!(owner(&q, "free").await, None);
    let held = q
        .enqueue(job(json!(2), "k").id("plain").unwrap())
        .await
        .unwrap();
    assert_eq!(outcome(&held), ("plain", EnqueueOutcome::Existed));
    assert!(events_named(h, &q, "deduplicated").await.is_empty());
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn throttle_holds_for_its_time_on_the_server_clock(h: &Harness) {
    let q = h.queue::<Value>("dedup_throttle");
    let period = Duration::from_millis(300);
    let before = server_now(h, &q).await;
    let first = q
        .enqueue(job(json!(1), "t").dedup_for(period))
        .await
        .unwrap();
    assert!(first.created);
    let record = q.jobs().get(&first.id).await.unwrap().unwrap();
    assert_eq!(record.dedup_mode, Some(DedupMode::Throttle));
    let hold = q.jobs().dedup_hold("t").await.unwrap().unwrap();
    let until = hold.until.expect("a throttle key has a time");
    let created = record.created_at.unwrap();
    assert_eq!(until, created + 300);
    assert!(created >= before);
    h.check(&q).await;

    // Finished or not, the key holds for its time.
    let claimed = claim(&q).await;
    q.complete(&claimed.id, claimed.token, &()).await.unwrap();
    h.check(&q).await;
    if server_now(h, &q).await < until {
        let again = q
            .enqueue(job(json!(2), "t").dedup_for(period))
            .await
            .unwrap();
        assert_eq!(
            outcome(&again),
            (first.id.as_str(), EnqueueOutcome::Deduplicated)
        );
        h.check(&q).await;
    }
    wait_past(h, &q, until).await;
    assert_eq!(owner(&q, "t").await, None);
    assert_eq!(q.admin().dedup_keys_held().await.unwrap(), 0);
    let next = q
        .enqueue(job(json!(3), "t").dedup_for(period))
        .await
        .unwrap();
    assert_eq!(next.effect, EnqueueOutcome::Created);
    assert_eq!(owner(&q, "t").await.as_deref(), Some(next.id.as_str()));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn debounce_replaces_the_payload_and_pushes_the_run_at(h: &Harness) {
    let q = h.queue::<Value>("dedup_debounce");
    let first = q
        .enqueue(job(json!({"v": 1}), "d").debounce(LATER))
        .await
        .unwrap();
    assert!(first.created);
    let record = q.jobs().get(&first.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Scheduled);
    assert_eq!(record.dedup_mode, Some(DedupMode::Debounce));
    let first_run_at = record.run_at.unwrap();
    assert_eq!(first_run_at, record.created_at.unwrap() + 600_000);
    h.check(&q).await;

    wait_past(h, &q, record.created_at.unwrap()).await;
    let again = q
        .enqueue(job(json!({"v": 2}), "d").debounce(LATER))
        .await
        .unwrap();
    assert_eq!(
        outcome(&again),
        (first.id.as_str(), EnqueueOutcome::Debounced)
    );
    assert!(!again.created);
    let record = q.jobs().get(&first.id).await.unwrap().unwrap();
    assert_eq!(record.payload_as::<Value>().unwrap(), json!({"v": 2}));
    assert_eq!(record.state, JobState::Scheduled);
    assert!(record.run_at.unwrap() > first_run_at);
    assert_eq!(q.admin().counts().await.unwrap().total(), 1);
    let debounced = events_named(h, &q, "debounced").await;
    let run_at = record.run_at.unwrap().to_string();
    assert_eq!(
        debounced,
        [vec![
            "event",
            "debounced",
            "id",
            first.id.as_str(),
            "key",
            "d",
            "run_at",
            run_at.as_str()
        ]]
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn debounce_of_a_pending_job_sends_it_back_to_the_schedule_set(h: &Harness) {
    let q = h.queue::<Value>("dedup_debounce_pending");
    let first = q.enqueue(job(json!(1), "d").debounce(LATER)).await.unwrap();
    q.jobs().requeue(&first.id).await.unwrap();
    assert_eq!(q.admin().counts().await.unwrap().pending, 1);
    h.check(&q).await;
    let again = q.enqueue(job(json!(2), "d").debounce(LATER)).await.unwrap();
    assert_eq!(again.effect, EnqueueOutcome::Debounced);
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.scheduled), (0, 1));
    let record = q.jobs().get(&first.id).await.unwrap().unwrap();
    assert_eq!(
        (record.state, record.payload.as_str()),
        (JobState::Scheduled, "2")
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn the_claim_of_a_debounced_job_frees_its_key_for_the_next_job(h: &Harness) {
    let q = h.queue::<Value>("dedup_debounce_claim");
    let first = q.enqueue(job(json!(1), "d").debounce(LATER)).await.unwrap();
    q.jobs().requeue(&first.id).await.unwrap();
    let claimed = claim(&q).await;
    assert_eq!(claimed.id, first.id);
    h.check(&q).await;
    assert_eq!(owner(&q, "d").await, None);
    // The next enqueue with the key is the next job, kept.
    let next = q.enqueue(job(json!(2), "d").debounce(LATER)).await.unwrap();
    assert_eq!(next.effect, EnqueueOutcome::Created);
    assert_ne!(next.id, first.id);
    assert_eq!(owner(&q, "d").await.as_deref(), Some(next.id.as_str()));
    // The running job's end frees nothing of the next one's.
    q.complete(&claimed.id, claimed.token, &()).await.unwrap();
    assert_eq!(owner(&q, "d").await.as_deref(), Some(next.id.as_str()));
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_debounce_on_a_key_held_by_a_simple_job_deduplicates(h: &Harness) {
    let q = h.queue::<Value>("dedup_mixed_modes");
    let first = q.enqueue(job(json!(1), "m")).await.unwrap();
    let debounce = q.enqueue(job(json!(2), "m").debounce(LATER)).await.unwrap();
    assert_eq!(
        outcome(&debounce),
        (first.id.as_str(), EnqueueOutcome::Deduplicated)
    );
    let record = q.jobs().get(&first.id).await.unwrap().unwrap();
    assert_eq!(
        (record.payload.as_str(), record.state),
        ("1", JobState::Pending)
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn complete_frees_a_simple_key(h: &Harness) {
    let q = h.queue::<Value>("dedup_complete");
    q.enqueue(job(json!(1), "k")).await.unwrap();
    let claimed = claim(&q).await;
    q.complete(&claimed.id, claimed.token, &()).await.unwrap();
    assert_eq!(owner(&q, "k").await, None);
    h.check(&q).await;
}

/// Sends the command of script `name` on the harness's wire (the script by
/// `EVAL` on wire 4, its `EMQ.*` twin on wire 6) with `args`.
async fn send(
    h: &Harness,
    q: &Queue<Value>,
    name: &str,
    args: &[&str],
) -> redis::RedisResult<redis::Value> {
    let (transition, _, command) = command_of_script(name);
    let keys = q.keys();
    let mut cmd = match h.connector.wire() {
        Wire::Native => {
            let mut cmd = redis::cmd(command.native);
            cmd.arg(keys.base());
            cmd
        }
        Wire::Script => {
            let mut cmd = redis::cmd("EVAL");
            let key_list = transition.control().keys;
            cmd.arg(script_text(name)).arg(key_list.len());
            for key in key_list {
                cmd.arg(keys.key(*key));
            }
            cmd
        }
    };
    for arg in args {
        cmd.arg(*arg);
    }
    cmd.query_async(&mut h.raw(q).await).await
}

#[echomq_testkit::case]
pub(super) async fn bulk_complete_frees_each_simple_key(h: &Harness) {
    let q = h.queue::<Value>("dedup_complete_bulk");
    q.enqueue(job(json!(1), "a")).await.unwrap();
    q.enqueue(job(json!(2), "b")).await.unwrap();
    q.enqueue(job(json!(3), "c").dedup_for(LATER))
        .await
        .unwrap();
    let batch = q.claim("w", LEASE, 3).await.unwrap();
    let tokens: Vec<String> = batch.iter().map(|job| job.token.to_string()).collect();
    let mut args = Vec::new();
    for (job, token) in batch.iter().zip(&tokens) {
        args.extend([job.id.as_str(), token.as_str(), ""]);
    }
    send(h, &q, "complete_bulk", &args).await.unwrap();
    assert_eq!(q.admin().counts().await.unwrap().completed, 3);
    assert_eq!((owner(&q, "a").await, owner(&q, "b").await), (None, None));
    // A throttle key holds on.
    assert!(owner(&q, "c").await.is_some());
    h.check(&q).await;
}

/// Claims the simple job of key `k` on `queue` and fails it with
/// `action`: it lands in `outcome` and frees the key.
async fn fail_frees_the_key(h: &Harness, queue: &str, action: FailAction, outcome: FailOutcome) {
    let q = h.queue::<Value>(queue);
    q.enqueue(job(json!(1), "k")).await.unwrap();
    let claimed = claim(&q).await;
    let out = q
        .fail(&claimed.id, claimed.token, "no", action)
        .await
        .unwrap();
    assert_eq!(out, outcome);
    assert_eq!(owner(&q, "k").await, None);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn fail_to_dead_frees_a_simple_key(h: &Harness) {
    fail_frees_the_key(h, "dedup_fail_dead", FailAction::Dead, FailOutcome::Dead).await;
}

#[echomq_testkit::case]
pub(super) async fn fail_cancelled_frees_a_simple_key(h: &Harness) {
    let (action, outcome) = (FailAction::Cancelled, FailOutcome::Cancelled);
    fail_frees_the_key(h, "dedup_fail_cancelled", action, outcome).await;
}

#[echomq_testkit::case]
pub(super) async fn a_retry_does_not_free_the_key(h: &Harness) {
    let q = h.queue::<Value>("dedup_retry");
    let first = q.enqueue(job(json!(1), "k")).await.unwrap();
    let claimed = claim(&q).await;
    let out = retry_now(&q, &claimed, "again").await;
    assert_eq!(out, FailOutcome::Retry);
    assert_eq!(owner(&q, "k").await.as_deref(), Some(first.id.as_str()));
    h.check(&q).await;
    let claimed = claim(&q).await;
    q.fail(
        &claimed.id,
        claimed.token,
        "later",
        FailAction::Retry(LATER),
    )
    .await
    .unwrap();
    assert_eq!(owner(&q, "k").await.as_deref(), Some(first.id.as_str()));
    let again = q.enqueue(job(json!(2), "k")).await.unwrap();
    assert_eq!(again.effect, EnqueueOutcome::Deduplicated);
    h.check(&q).await;
}

/// Claims the one pending job under a 1 ms lease and waits until the
/// server's clock has passed its deadline.
async fn claim_and_let_stall(h: &Harness, q: &Queue<Value>) -> echomq::Claimed<Value> {
    let claimed = q
        .claim_one("w", Duration::from_millis(1))
        .await
        .unwrap()
        .unwrap();
    let claimed_at = q
        .jobs()
        .get(&claimed.id)
        .await
        .unwrap()
        .unwrap()
        .claimed_at
        .unwrap();
    wait_past(h, q, claimed_at + 1).await;
    claimed
}

#[echomq_testkit::case]
pub(super) async fn stalled_to_dead_frees_a_simple_key(h: &Harness) {
    let q = h.queue::<Value>("dedup_stalled_dead");
    q.enqueue(job(json!(1), "k")).await.unwrap();
    claim_and_let_stall(h, &q).await;
    let swept = q.sweep_stalled(0, 100).await.unwrap();
    assert_eq!((swept.recovered, swept.dead), (0, 1));
    assert_eq!(owner(&q, "k").await, None);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn stalled_to_cancelled_frees_a_simple_key(h: &Harness) {
    let q = h.queue::<Value>("dedup_stalled_cancelled");
    q.enqueue(job(json!(1), "k")).await.unwrap();
    let claimed = claim_and_let_stall(h, &q).await;
    let asked = q.jobs().cancel(&claimed.id).await.unwrap();
    assert_eq!(asked, CancelOutcome::Requested);
    assert!(owner(&q, "k").await.is_some());
    q.sweep_stalled(5, 100).await.unwrap();
    assert_eq!(
        q.jobs().get(&claimed.id).await.unwrap().unwrap().state,
        JobState::Cancelled
    );
    assert_eq!(owner(&q, "k").await, None);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn cancel_of_a_waiting_job_frees_its_key(h: &Harness) {
    let q = h.queue::<Value>("dedup_cancel");
    let simple = q.enqueue(job(json!(1), "s")).await.unwrap();
    let debounced = q.enqueue(job(json!(2), "d").debounce(LATER)).await.unwrap();
    for id in [&simple.id, &debounced.id] {
        let out = q.jobs().cancel(id).await.unwrap();
        assert_eq!(out, CancelOutcome::Cancelled);
        h.check(&q).await;
    }
    assert_eq!((owner(&q, "s").await, owner(&q, "d").await), (None, None));
}

#[echomq_testkit::case]
pub(super) async fn remove_frees_a_simple_key_but_not_a_throttle_key(h: &Harness) {
    let q = h.queue::<Value>("dedup_remove");
    let simple = q.enqueue(job(json!(1), "s")).await.unwrap();
    let throttled = q
        .enqueue(job(json!(2), "t").dedup_for(LATER))
        .await
        .unwrap();
    assert!(
        q.jobs()
            .remove(&simple.id, echomq::IfActive::Refuse)
            .await
            .unwrap()
    );
    assert!(
        q.jobs()
            .remove(&throttled.id, echomq::IfActive::Refuse)
            .await
            .unwrap()
    );
    h.check(&q).await;
    assert_eq!(owner(&q, "s").await, None);
    assert_eq!(owner(&q, "t").await.as_deref(), Some(throttled.id.as_str()));
    let again = q
        .enqueue(job(json!(3), "t").dedup_for(LATER))
        .await
        .unwrap();
    assert_eq!(
        outcome(&again),
        (throttled.id.as_str(), EnqueueOutcome::Deduplicated)
    );
    // An active simple job removed with FORCE frees it too.
    let forced = q.enqueue(job(json!(4), "s")).await.unwrap();
    claim(&q).await;
    assert!(
        q.jobs()
            .remove(&forced.id, echomq::IfActive::Force)
            .await
            .unwrap()
    );
    assert_eq!(owner(&q, "s").await, None);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn drain_frees_simple_and_debounce_keys_but_not_throttle_keys(h: &Harness) {
    let q = h.queue::<Value>("dedup_drain");
    q.enqueue(job(json!(1), "s")).await.unwrap();
    q.enqueue(job(json!(2), "d").debounce(LATER)).await.unwrap();
    q.enqueue(job(json!(3), "t").dedup_for(LATER))
        .await
        .unwrap();
    q.enqueue(json!(4)).await.unwrap();
    assert_eq!(
        q.admin()
            .drain(echomq::DrainScope::PENDING_AND_SCHEDULED)
            .await
            .unwrap(),
        4
    );
    h.check(&q).await;
    assert_eq!((owner(&q, "s").await, owner(&q, "d").await), (None, None));
    assert!(owner(&q, "t").await.is_some());
    assert_eq!(q.admin().dedup_keys_held().await.unwrap(), 1);
}

#[echomq_testkit::case]
pub(super) async fn obliterate_frees_every_key(h: &Harness) {
    let q = h.queue::<Value>("dedup_obliterate");
    q.enqueue(job(json!(1), "s")).await.unwrap();
    q.enqueue(job(json!(2), "t").dedup_for(LATER))
        .await
        .unwrap();
    q.admin().pause().await.unwrap();
    q.admin()
        .obliterate(echomq::IfActive::Refuse)
        .await
        .unwrap();
    assert_eq!(
        queue_keys(h.urls(), q.keys()).await.unwrap(),
        Vec::<String>::new()
    );
    let again = q
        .enqueue(job(json!(3), "t").dedup_for(LATER))
        .await
        .unwrap();
    assert_eq!(again.effect, EnqueueOutcome::Created);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn release_dedup_frees_a_key_of_any_mode(h: &Harness) {
    let q = h.queue::<Value>("dedup_release");
    let simple = q.enqueue(job(json!(1), "s")).await.unwrap();
    q.enqueue(job(json!(2), "t").dedup_for(LATER))
        .await
        .unwrap();
    q.enqueue(job(json!(3), "d").debounce(LATER)).await.unwrap();
    for key in ["s", "t", "d"] {
        assert!(q.jobs().release_dedup(key).await.unwrap(), "{key}");
        assert_eq!(owner(&q, key).await, None);
        h.check(&q).await;
    }
    assert!(!q.jobs().release_dedup("s").await.unwrap());
    assert!(!q.jobs().release_dedup("never").await.unwrap());
    let released = events_named(h, &q, "dedup_released").await;
    assert_eq!(released.len(), 3);
    assert_eq!(
        released[0],
        [
            "event",
            "dedup_released",
            "id",
            simple.id.as_str(),
            "key",
            "s"
        ]
    );
    // The next enqueue with a freed key creates a job.
    let next = q.enqueue(job(json!(4), "s")).await.unwrap();
    assert_eq!(next.effect, EnqueueOutcome::Created);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_job_frees_no_key_another_job_took_since(h: &Harness) {
    let q = h.queue::<Value>("dedup_owner_check");
    let first = q.enqueue(job(json!(1), "k")).await.unwrap();
    let claimed = claim(&q).await;
    q.jobs().release_dedup("k").await.unwrap();
    let second = q.enqueue(job(json!(2), "k")).await.unwrap();
    assert!(second.created);
    q.complete(&claimed.id, claimed.token, &()).await.unwrap();
    assert_eq!(claimed.id, first.id);
    assert_eq!(owner(&q, "k").await.as_deref(), Some(second.id.as_str()));
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn bulk_enqueue_sends_jobs_with_a_key_alone_in_order(h: &Harness) {
    let q = h.queue::<Value>("dedup_bulk");
    let jobs = vec![
        NewJob::new(json!(1)),
        job(json!(2), "k"),
        NewJob::new(json!(3)),
        job(json!(4), "k"),
        job(json!(5), "later").dedup_for(LATER).after(LATER),
        NewJob::new(json!(6)).after(LATER),
    ];
    let out = q.enqueue_bulk(jobs).await.unwrap();
    let outcomes: Vec<EnqueueOutcome> = out.iter().map(|e| e.effect).collect();
    use EnqueueOutcome::{Created, Deduplicated};
    assert_eq!(
        outcomes,
        [Created, Created, Created, Deduplicated, Created, Created]
    );
    assert_eq!(out[3].id, out[1].id);
    let ids: Vec<u64> = out
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3)
        .map(|(_, e)| e.id.as_str().parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "in order: {ids:?}");
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.scheduled), (3, 2));
    h.check(&q).await;
}

/// The text of a refused call.
fn refused(result: redis::RedisResult<redis::Value>) -> String {
    error_text(&result.expect_err("refused"))
}

/// Sends `args` to script `name`'s command on a fresh queue; it must be
/// refused with `want` and leave the queue without a key.
async fn refuses(h: &Harness, queue: &str, name: &str, args: &[&str], want: &str) {
    let q = h.queue::<Value>(queue);
    assert_eq!(
        refused(send(h, &q, name, args).await),
        want,
        "{name} {args:?}"
    );
    assert_eq!(
        queue_keys(h.urls(), q.keys()).await.unwrap(),
        Vec::<String>::new(),
        "{name} {args:?} wrote"
    );
}

#[echomq_testkit::case]
pub(super) async fn a_bad_dedup_key_is_refused_badarg_dedup_and_writes_nothing(h: &Harness) {
    let long = "k".repeat(257);
    for (n, key) in [
        "a b",
        "{x}",
        "*",
        "",
        long.as_str(),
        "tab\there",
        "esc\u{1b}",
        "nul\0",
    ]
    .iter()
    .enumerate()
    {
        let queue = format!("dedup_bad_key_{n}");
        refuses(
            h,
            &queue,
            "enqueue",
            &["*", "{}", "DEDUP", key],
            "BADARG dedup",
        )
        .await;
        refuses(
            h,
            &queue,
            "schedule",
            &["*", "{}", "+0", "DEDUP", key],
            "BADARG dedup",
        )
        .await;
    }
    refuses(
        h,
        "dedup_bad_key_missing",
        "enqueue",
        &["*", "{}", "DEDUP"],
        "BADARG dedup",
    )
    .await;
}

#[echomq_testkit::case]
pub(super) async fn dedup_for_without_dedup_is_refused_syntax(h: &Harness) {
    let want = "SYNTAX DEDUP_FOR needs DEDUP";
    refuses(
        h,
        "dedup_for_alone",
        "enqueue",
        &["*", "{}", "DEDUP_FOR", "10"],
        want,
    )
    .await;
    refuses(
        h,
        "dedup_for_alone",
        "schedule",
        &["*", "{}", "+0", "dedup_for", "10"],
        want,
    )
    .await;
}

#[echomq_testkit::case]
pub(super) async fn debounce_without_dedup_is_refused_syntax(h: &Harness) {
    let want = "SYNTAX DEBOUNCE needs DEDUP";
    refuses(
        h,
        "debounce_alone",
        "enqueue",
        &["*", "{}", "DEBOUNCE", "10"],
        want,
    )
    .await;
}

#[echomq_testkit::case]
pub(super) async fn dedup_for_and_debounce_together_are_refused_syntax(h: &Harness) {
    let want = "SYNTAX DEDUP_FOR and DEBOUNCE exclude each other";
    let args = ["*", "{}", "DEDUP", "k", "DEDUP_FOR", "10", "DEBOUNCE", "10"];
    refuses(h, "dedup_both", "enqueue", &args, want).await;
    // Checked before whether DEDUP is there.
    refuses(
        h,
        "dedup_both",
        "enqueue",
        &["*", "{}", "DEBOUNCE", "1", "DEDUP_FOR", "1"],
        want,
    )
    .await;
}

#[echomq_testkit::case]
pub(super) async fn debounce_on_schedule_is_refused_syntax(h: &Harness) {
    let args = ["*", "{}", "+0", "DEDUP", "k", "DEBOUNCE", "10"];
    refuses(
        h,
        "debounce_schedule",
        "schedule",
        &args,
        "SYNTAX unknown option DEBOUNCE",
    )
    .await;
}

#[echomq_testkit::case]
pub(super) async fn a_zero_dedup_for_or_debounce_is_refused_badarg(h: &Harness) {
    for (word, want) in [
        ("DEDUP_FOR", "BADARG dedup_for"),
        ("DEBOUNCE", "BADARG debounce"),
    ] {
        for value in ["0", "-1", "1.5", "9007199254740992"] {
            let args = ["*", "{}", "DEDUP", "k", word, value];
            refuses(h, "dedup_zero", "enqueue", &args, want).await;
        }
        refuses(
            h,
            "dedup_zero",
            "enqueue",
            &["*", "{}", "DEDUP", "k", word],
            want,
        )
        .await;
    }
}

#[echomq_testkit::case]
pub(super) async fn dedup_owner_and_release_refuse_a_bad_key_badarg_dedup(h: &Harness) {
    for name in ["dedup_owner", "dedup_release"] {
        for key in ["a b", "*", "{k}", "del\u{7f}"] {
            refuses(h, "dedup_controls", name, &[key], "BADARG dedup").await;
        }
        refuses(h, "dedup_controls", name, &[], "BADARG dedup").await;
        refuses(
            h,
            "dedup_controls",
            name,
            &["k", "x"],
            "SYNTAX unknown option x",
        )
        .await;
    }
    let q = h.queue::<Value>("dedup_controls");
    for result in [
        q.jobs().dedup_owner("a b").await.map(drop),
        q.jobs().release_dedup("*").await.map(drop),
    ] {
        assert!(
            matches!(result, Err(Error::BadArgument { name: "dedup", .. })),
            "{result:?}"
        );
    }
}

#[echomq_testkit::case]
pub(super) async fn the_client_refuses_bad_dedup_options_before_sending(h: &Harness) {
    let q = h.queue::<Value>("dedup_client_refusals");
    let cases: Vec<(NewJob<Value>, &str)> = vec![
        (job(json!(1), "two words"), "dedup"),
        (job(json!(1), "*"), "dedup"),
        (NewJob::new(json!(1)).dedup_for(LATER), "dedup"),
        (NewJob::new(json!(1)).debounce(LATER), "dedup"),
        (job(json!(1), "k").dedup_for(Duration::ZERO), "dedup_for"),
        (
            job(json!(1), "k").debounce(Duration::from_micros(10)),
            "debounce",
        ),
        (job(json!(1), "k").debounce(LATER).after(LATER), "debounce"),
    ];
    for (new_job, want) in cases {
        match q.enqueue(new_job).await {
            Err(Error::BadArgument { name, .. }) => assert_eq!(name, want),
            other => panic!("expected BadArgument {want}, got {other:?}"),
        }
    }
    let bulk = q
        .enqueue_bulk([NewJob::new(json!(1)).dedup_for(LATER)])
        .await;
    assert!(
        matches!(bulk, Err(Error::BadArgument { name: "dedup", .. })),
        "{bulk:?}"
    );
    assert_eq!(
        queue_keys(h.urls(), q.keys()).await.unwrap(),
        Vec::<String>::new()
    );
}

#[echomq_testkit::case]
pub(super) async fn eight_producers_racing_on_one_key_create_one_job(h: &Harness) {
    const TASKS: usize = 8;
    const EACH: usize = 1000;
    let q = h.queue::<Value>("dedup_race");
    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let connector = Connector::builder(h.urls()[0].as_str())
            .wire(h.connector.wire())
            .connect()
            .await
            .unwrap();
        let q: Queue<Value> = connector.queue("dedup_race").unwrap();
        tasks.push(tokio::spawn(async move {
            let mut holders = Vec::with_capacity(EACH);
            for n in 0..EACH {
                let new = NewJob::new(json!({"task": task, "n": n})).dedup("the-one");
                let out = q.enqueue(new).await.unwrap();
                holders.push((out.id, out.effect));
            }
            holders
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    let created: Vec<&(JobId, EnqueueOutcome)> = all
        .iter()
        .filter(|(_, outcome)| *outcome == EnqueueOutcome::Created)
        .collect();
    assert_eq!(created.len(), 1, "exactly one enqueue created the job");
    let the_one = &created[0].0;
    assert!(all.iter().all(|(id, outcome)| id == the_one
        && matches!(
            outcome,
            EnqueueOutcome::Created | EnqueueOutcome::Deduplicated
        )));
    assert_eq!(q.admin().counts().await.unwrap().total(), 1);
    h.check(&q).await;
}
