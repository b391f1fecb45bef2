//! The spine cases; each takes a harness (server or cluster) and uses its own queue.

use super::common::{
    Harness, claimed_ids, enqueue_named, events, raw_call, reclaimed, refusal, retry_now,
};
use echomq::{Error, FailAction, FailOutcome, JobId, JobState, NewJob, QueueSettings, Refusal};
use serde_json::{Value, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);

fn id(id: &str) -> JobId {
    JobId::new(id).unwrap()
}

#[echomq_testkit::case(cluster)]
pub(super) async fn enqueue_creates_a_pending_job(h: &Harness) {
    let q = h.queue::<Value>("enqueue_creates");
    let job = q.enqueue(json!({"n": 1})).await.unwrap();
    assert!(job.created);
    h.check(&q).await;
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Pending);
    assert_eq!(record.payload_as::<Value>().unwrap(), json!({"n": 1}));
    assert_eq!(
        (
            record.priority,
            record.max_attempts,
            record.claims,
            record.failures
        ),
        (0, 3, 0, 0)
    );
    assert!(record.created_at.is_some());
    assert_eq!(q.admin().counts().await.unwrap().pending, 1);
    let mut conn = h.raw(&q).await;
    let mut fields: Vec<String> = redis::cmd("HKEYS")
        .arg(q.keys().job(&job.id))
        .query_async(&mut conn)
        .await
        .unwrap();
    fields.sort();
    assert_eq!(
        fields,
        ["created_at", "payload", "state"],
        "zero counters and default priority and attempts are not written"
    );
    // Priority and attempts other than the defaults are.
    let other = q
        .enqueue(NewJob::new(json!(2)).priority(4).attempts(5))
        .await
        .unwrap();
    let stored: Vec<Option<String>> = redis::cmd("HMGET")
        .arg(q.keys().job(&other.id))
        .arg("priority")
        .arg("max_attempts")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(stored, [Some("4".to_string()), Some("5".to_string())]);
}

#[echomq_testkit::case(cluster)]
pub(super) async fn enqueue_with_an_existing_id_changes_nothing(h: &Harness) {
    let q = h.queue::<Value>("enqueue_idempotent");
    let first = q
        .enqueue(NewJob::new(json!("first")).id("order-1").unwrap())
        .await
        .unwrap();
    assert_eq!((first.id.as_str(), first.created), ("order-1", true));
    let again = q
        .enqueue(
            NewJob::new(json!("second"))
                .id("order-1")
                .unwrap()
                .priority(9),
        )
        .await
        .unwrap();
    assert_eq!((again.id.as_str(), again.created), ("order-1", false));
    h.check(&q).await;
    let record = q.jobs().get(&id("order-1")).await.unwrap().unwrap();
    assert_eq!(record.payload, "\"first\"");
    assert_eq!(record.priority, 0);
    // Also once the job has finished: the id stays taken.
    let claimed = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.complete(&claimed.id, claimed.token, &()).await.unwrap();
    let after = q
        .enqueue(NewJob::new(json!("third")).id("order-1").unwrap())
        .await
        .unwrap();
    assert!(!after.created);
    assert_eq!(q.admin().counts().await.unwrap().pending, 0);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn generated_ids_skip_ids_already_taken(h: &Harness) {
    let q = h.queue::<Value>("generated_ids");
    q.enqueue(NewJob::new(json!(0)).id("1").unwrap())
        .await
        .unwrap();
    q.enqueue(NewJob::new(json!(0)).id("3").unwrap())
        .await
        .unwrap();
    let a = q.enqueue(json!(1)).await.unwrap();
    let b = q.enqueue(json!(2)).await.unwrap();
    assert_eq!((a.id.as_str(), b.id.as_str()), ("2", "4"));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn claim_takes_priority_then_fifo(h: &Harness) {
    let q = h.queue::<Value>("claim_order");
    enqueue_named(
        h,
        &q,
        &[
            ("low-a", 5, None),
            ("high-a", 1, None),
            ("low-b", 5, None),
            ("high-b", 1, None),
            ("top", 0, None),
        ],
    )
    .await;
    let mut order = Vec::new();
    while let Some(job) = q.claim_one("w", LEASE).await.unwrap() {
        h.check(&q).await;
        order.push(job.id.to_string());
    }
    assert_eq!(order, ["top", "high-a", "high-b", "low-a", "low-b"]);
}

#[echomq_testkit::case(cluster)]
pub(super) async fn claim_count_takes_a_batch(h: &Harness) {
    let q = h.queue::<Value>("claim_count");
    q.enqueue_bulk((0..10).map(|n| json!(n))).await.unwrap();
    let batch = q.claim("w", LEASE, 4).await.unwrap();
    assert_eq!(batch.len(), 4);
    let payloads: Vec<Value> = batch.iter().map(|job| job.payload().unwrap()).collect();
    assert_eq!(payloads, [json!(0), json!(1), json!(2), json!(3)]);
    h.check(&q).await;
    let rest = q.claim("w", LEASE, 100).await.unwrap();
    assert_eq!(rest.len(), 6);
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.active), (0, 10));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_claim_that_brings_the_active_set_to_32_leases_keeps_it_a_skiplist(
    h: &Harness,
) {
    use echomq::protocol::arg::SKIPLIST_LEASES;
    let q = h.queue::<Value>("claim_skiplist");
    let total = SKIPLIST_LEASES + 8;
    q.enqueue_bulk((0..total).map(|n| json!(n))).await.unwrap();
    let active = q.keys().active();
    let encoding = async || -> String {
        redis::cmd("OBJECT")
            .arg("ENCODING")
            .arg(q.keys().active())
            .query_async(&mut h.raw(&q).await)
            .await
            .unwrap()
    };
    // Below the mark the server keeps its own encoding (a listpack).
    let first = q
        .claim("w", LEASE, (SKIPLIST_LEASES - 1) as usize)
        .await
        .unwrap();
    assert_eq!(encoding().await, "listpack");
    // The claim that reaches it leaves a skiplist holding the leases only.
    let second = q.claim("w", LEASE, 1).await.unwrap();
    assert_eq!(encoding().await, "skiplist");
    let members: Vec<String> = redis::cmd("ZRANGE")
        .arg(&active)
        .arg(0)
        .arg(-1)
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let mut leased: Vec<String> = first
        .iter()
        .chain(&second)
        .map(|job| job.id.to_string())
        .collect();
    let mut members = members;
    leased.sort();
    members.sort();
    assert_eq!(members, leased);
    // It stays one as leases come and go.
    let rest = q.claim("w", LEASE, 100).await.unwrap();
    assert_eq!(rest.len(), 8);
    for job in first.iter().take(20) {
        q.complete(&job.id, job.token, &json!(null)).await.unwrap();
    }
    assert_eq!(encoding().await, "skiplist");
    h.check(&q).await;
}

/// A worker over several queues empties a queue's active set at nearly
/// every batch and refills it with the claim riding on the completions:
/// each refill to `SKIPLIST_LEASES` or more leaves a skiplist again (the
/// module's second one reads the server's setting from its cache).
#[echomq_testkit::case(cluster)]
pub(super) async fn an_active_set_emptied_and_refilled_by_one_claim_is_a_skiplist_again(
    h: &Harness,
) {
    use echomq::protocol::arg::SKIPLIST_LEASES;
    let q = h.queue::<Value>("claim_refill_skiplist");
    let batch = SKIPLIST_LEASES as usize + 8;
    q.enqueue_bulk((0..2 * batch).map(|n| json!(n)))
        .await
        .unwrap();
    let encoding = async || -> String {
        redis::cmd("OBJECT")
            .arg("ENCODING")
            .arg(q.keys().active())
            .query_async(&mut h.raw(&q).await)
            .await
            .unwrap()
    };
    for _ in 0..2 {
        let jobs = q.claim("w", LEASE, batch).await.unwrap();
        assert_eq!(jobs.len(), batch);
        assert_eq!(encoding().await, "skiplist");
        let members: u64 = redis::cmd("ZCARD")
            .arg(q.keys().active())
            .query_async(&mut h.raw(&q).await)
            .await
            .unwrap();
        assert_eq!(members, batch as u64, "the leases only, no pad");
        for job in &jobs {
            q.complete(&job.id, job.token, &json!(null)).await.unwrap();
        }
        assert_eq!(q.admin().counts().await.unwrap().active, 0);
    }
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn claim_of_an_empty_queue_returns_nothing(h: &Harness) {
    let q = h.queue::<Value>("claim_empty");
    assert!(q.claim("w", LEASE, 10).await.unwrap().is_empty());
    h.check(&q).await;
}

/// A claim counts itself in `claims`, stamps `claimed_at`, and hands out
/// the token `claimed_at × 1000 + claims mod 1000`, larger than the job's
/// last (docs/protocol.md, Fencing).
#[echomq_testkit::case(cluster)]
pub(super) async fn claim_issues_a_larger_token_each_time(h: &Harness) {
    let q = h.queue::<Value>("claim_tokens");
    q.enqueue(NewJob::new(json!({"k": "v"})).attempts(5))
        .await
        .unwrap();
    let first = q.claim_one("worker-a", LEASE).await.unwrap().unwrap();
    assert_eq!((first.failures, first.max_attempts), (0, 5));
    assert_eq!(first.payload().unwrap(), json!({"k": "v"}));
    let record = q.jobs().get(&first.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Active);
    assert_eq!(record.worker.as_deref(), Some("worker-a"));
    assert_eq!((record.claims, record.token()), (1, Some(first.token)));
    let claimed_at = record.claimed_at.expect("claimed_at");
    assert_eq!(first.token, claimed_at * 1000 + 1);
    retry_now(&q, &first, "boom").await;
    let second = q.claim_one("worker-b", LEASE).await.unwrap().unwrap();
    assert_eq!((second.id.clone(), second.failures), (first.id.clone(), 1));
    assert!(
        second.token > first.token,
        "{} after {}",
        second.token,
        first.token
    );
    let record = q.jobs().get(&first.id).await.unwrap().unwrap();
    assert_eq!((record.claims, record.token()), (2, Some(second.token)));
    h.check(&q).await;
}

/// One claim of many jobs from `fifo`, some of them retried: each job gets
/// its own token (the hash, the reply and a completion agree), and the
/// jobs after the batch stay in `fifo`, in order.
#[echomq_testkit::case(cluster)]
pub(super) async fn a_batch_claim_gives_each_job_its_own_token(h: &Harness) {
    let q = h.queue::<Value>("batch_tokens");
    let retry = async |job: &echomq::Claimed<Value>| {
        let outcome = retry_now(&q, job, "again").await;
        assert_eq!(outcome, FailOutcome::Retry);
    };
    for name in ["a", "b"] {
        let job = NewJob::new(json!(name)).id(name).unwrap().attempts(5);
        q.enqueue(job).await.unwrap();
    }
    // Each job's last token, by id.
    let mut last = std::collections::HashMap::new();
    for job in q.claim("w", LEASE, 2).await.unwrap() {
        last.insert(job.id.to_string(), job.token);
        retry(&job).await;
    }
    let a = q.claim_one("w", LEASE).await.unwrap().unwrap();
    assert_eq!(a.id.as_str(), "a");
    assert!(
        a.token > last["a"],
        "a's second token {} after {}",
        a.token,
        last["a"]
    );
    last.insert("a".to_string(), a.token);
    retry(&a).await;
    // fifo: b (claimed once), a (twice), then ten new jobs.
    let fresh: Vec<String> = (0..10).map(|n| format!("n{n}")).collect();
    for name in &fresh {
        q.enqueue(NewJob::new(json!(name)).id(name).unwrap())
            .await
            .unwrap();
    }
    let batch = q.claim("w", LEASE, 9).await.unwrap();
    let mut got = Vec::new();
    for job in &batch {
        let record = q.jobs().get(&job.id).await.unwrap().unwrap();
        assert_eq!(record.token(), Some(job.token), "the token of {}", job.id);
        let before = last.get(job.id.as_str()).copied().unwrap_or(0);
        assert!(
            job.token > before,
            "{}: token {} after {before}",
            job.id,
            job.token
        );
        got.push((job.id.to_string(), record.claims));
    }
    let mut want = vec![("b".to_string(), 2), ("a".to_string(), 3)];
    want.extend(fresh[..7].iter().map(|name| (name.clone(), 1)));
    assert_eq!(got, want);
    let left: Vec<String> = redis::cmd("LRANGE")
        .arg(q.keys().fifo())
        .arg(0)
        .arg(-1)
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    assert_eq!(left, fresh[7..]);
    h.check(&q).await;
    for job in &batch {
        q.complete(&job.id, job.token, &json!(null)).await.unwrap();
    }
    assert_eq!(q.admin().counts().await.unwrap().completed, 9);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn complete_moves_active_to_completed(h: &Harness) {
    let q = h.queue::<Value>("complete_moves");
    q.enqueue(json!("work")).await.unwrap();
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.complete(&job.id, job.token, &json!({"sent": true}))
        .await
        .unwrap();
    h.check(&q).await;
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Completed);
    assert_eq!(record.result.as_deref(), Some(r#"{"sent":true}"#));
    assert!(record.finished_at.is_some());
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.active, counts.completed), (0, 1));
}

#[echomq_testkit::case(cluster)]
pub(super) async fn complete_with_a_stale_token_is_refused_notactive(h: &Harness) {
    let q = h.queue::<Value>("stale_complete");
    q.enqueue(json!(1)).await.unwrap();
    let (old, new) = reclaimed(&q).await;
    let err = q.complete(&old.id, old.token, &()).await.unwrap_err();
    assert_eq!(refusal(err), Refusal::NotActive);
    h.check(&q).await;
    assert_eq!(
        q.jobs().get(&new.id).await.unwrap().unwrap().state,
        JobState::Active
    );
    q.complete(&new.id, new.token, &()).await.unwrap();
    h.check(&q).await;
}

/// A token holds the claim count mod 1000: a job's 1000th claim hands out
/// `claimed_at × 1000 + 0`, which completes it, while the 999th's count
/// (`+ 999`) at the same ms would not.
#[echomq_testkit::case(cluster)]
pub(super) async fn a_thousandth_claim_completes_with_its_token(h: &Harness) {
    let q = h.queue::<Value>("many_claims");
    for id in ["a", "b"] {
        q.enqueue(NewJob::new(json!(1)).id(id).unwrap())
            .await
            .unwrap();
        let _: () = redis::cmd("HSET")
            .arg(format!("{}:job:{id}", q.keys().base()))
            .arg("claims")
            .arg(999)
            .query_async(&mut h.raw(&q).await)
            .await
            .unwrap();
    }
    let claimed = q.claim("w", LEASE, 2).await.unwrap();
    for job in &claimed {
        let record = q.jobs().get(&job.id).await.unwrap().unwrap();
        let claimed_at = record.claimed_at.unwrap();
        assert_eq!((record.claims, job.token), (1000, claimed_at * 1000));
        let stale = q.complete(&job.id, claimed_at * 1000 + 999, &()).await;
        assert_eq!(refusal(stale.unwrap_err()), Refusal::NotActive);
    }
    for job in &claimed {
        q.complete(&job.id, job.token, &()).await.unwrap();
    }
    assert_eq!(q.admin().counts().await.unwrap().completed, 2);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn fail_with_a_stale_token_is_refused_notactive(h: &Harness) {
    let q = h.queue::<Value>("stale_fail");
    q.enqueue(json!(1)).await.unwrap();
    let (old, new) = reclaimed(&q).await;
    let err = q
        .fail(&old.id, old.token, "late", FailAction::Dead)
        .await
        .unwrap_err();
    assert_eq!(refusal(err), Refusal::NotActive);
    let record = q.jobs().get(&new.id).await.unwrap().unwrap();
    assert_eq!((record.state, record.failures), (JobState::Active, 1));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn complete_of_a_completed_job_is_refused_notactive(h: &Harness) {
    let q = h.queue::<Value>("complete_twice");
    q.enqueue(json!(1)).await.unwrap();
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.complete(&job.id, job.token, &()).await.unwrap();
    let err = q.complete(&job.id, job.token, &()).await.unwrap_err();
    let refused = err.refused().cloned().expect("a refusal");
    assert_eq!(refused.reason, Refusal::NotActive);
    assert_eq!(refused.job.as_ref(), Some(&job.id));
    assert_eq!(refused.transition, echomq::Transition::Complete);
    assert_eq!(q.admin().counts().await.unwrap().completed, 1);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn complete_of_a_missing_job_is_refused_notactive(h: &Harness) {
    let q = h.queue::<Value>("complete_missing");
    let err = q.complete(&id("ghost"), 1, &()).await.unwrap_err();
    assert_eq!(refusal(err), Refusal::NotActive);
    h.check(&q).await;
}

/// A result serde_json cannot encode (a map keyed by pairs) fails on the
/// client as a result, not a payload, and nothing is sent: the job stays
/// active under its claim, which completes it afterwards.
#[echomq_testkit::case(cluster)]
pub(super) async fn a_result_that_does_not_encode_is_refused_naming_the_result(h: &Harness) {
    let q = h.queue::<Value>("result_not_encoded");
    q.enqueue(json!(1)).await.unwrap();
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    let result = std::collections::BTreeMap::from([((1, 2), 3)]);
    let err = q.complete(&job.id, job.token, &result).await.unwrap_err();
    assert!(matches!(err, Error::JobResult(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "result is not valid for its type: key must be a string"
    );
    h.check(&q).await;
    assert_eq!(
        q.jobs().get(&job.id).await.unwrap().unwrap().state,
        JobState::Active
    );
    q.complete(&job.id, job.token, &()).await.unwrap();
}

#[echomq_testkit::case(cluster)]
pub(super) async fn fail_retries_until_attempts_run_out(h: &Harness) {
    let q = h.queue::<Value>("fail_retries");
    q.enqueue(NewJob::new(json!(1)).attempts(2)).await.unwrap();
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    let outcome = retry_now(&q, &job, "one").await;
    assert_eq!(outcome, FailOutcome::Retry);
    h.check(&q).await;
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(
        (record.state, record.failures, record.error.as_deref()),
        (JobState::Pending, 1, Some("one"))
    );
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    let outcome = retry_now(&q, &job, "two").await;
    assert_eq!(outcome, FailOutcome::Dead);
    h.check(&q).await;
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(
        (record.state, record.failures, record.error.as_deref()),
        (JobState::Dead, 2, Some("two"))
    );
    assert!(record.finished_at.is_some());
}

#[echomq_testkit::case(cluster)]
pub(super) async fn fail_with_retry_in_schedules_the_retry(h: &Harness) {
    let q = h.queue::<Value>("fail_retry_in");
    q.enqueue(json!(1)).await.unwrap();
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.fail(
        &job.id,
        job.token,
        "later",
        FailAction::Retry(Duration::from_secs(3600)),
    )
    .await
    .unwrap();
    h.check(&q).await;
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Scheduled);
    let delay = record.run_at.unwrap() - record.claimed_at.unwrap();
    assert!(
        (3_600_000..3_610_000).contains(&delay),
        "run_at is {delay} ms after the claim"
    );
    assert!(
        q.claim_one("w", LEASE).await.unwrap().is_none(),
        "not claimable before its run-at"
    );
    assert_eq!(q.admin().counts().await.unwrap().scheduled, 1);
}

#[echomq_testkit::case(cluster)]
pub(super) async fn fail_dead_dead_letters_at_once(h: &Harness) {
    let q = h.queue::<Value>("fail_dead");
    q.enqueue(NewJob::new(json!(1)).attempts(10)).await.unwrap();
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    let outcome = q
        .fail(&job.id, job.token, "fatal", FailAction::Dead)
        .await
        .unwrap();
    assert_eq!(outcome, FailOutcome::Dead);
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!((record.state, record.failures), (JobState::Dead, 1));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn fail_cancelled_cancels_without_counting_a_failure(h: &Harness) {
    let q = h.queue::<Value>("fail_cancelled");
    q.enqueue(json!(1)).await.unwrap();
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    let outcome = q
        .fail(&job.id, job.token, "stopped", FailAction::Cancelled)
        .await
        .unwrap();
    assert_eq!(outcome, FailOutcome::Cancelled);
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!((record.state, record.failures), (JobState::Cancelled, 0));
    assert_eq!(q.admin().counts().await.unwrap().cancelled, 1);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn bad_queue_names_are_refused_before_any_key_is_written(h: &Harness) {
    for bad in ["", "has space", "br{ace", "slash/name", &"x".repeat(129)] {
        let err = h.connector.queue::<Value>(bad).unwrap_err();
        assert!(matches!(err, Error::Name(_)), "{bad:?}: {err:?}");
    }
    let q = h.queue::<Value>("bad_names_probe");
    assert!(
        echomq_testkit::invariant::queue_keys(h.urls(), q.keys())
            .await
            .unwrap()
            .is_empty()
    );
}

#[echomq_testkit::case(cluster)]
pub(super) async fn bad_job_ids_are_refused_before_any_key_is_written(h: &Harness) {
    let q = h.queue::<Value>("bad_ids");
    for bad in [
        "",
        "a b",
        "{x}",
        "tab\there",
        "esc\u{1b}[2J",
        "nul\0",
        "del\u{7f}",
    ] {
        assert!(
            matches!(NewJob::new(json!(1)).id(bad), Err(Error::Name(_))),
            "{bad:?}"
        );
    }
    let err = q
        .enqueue(NewJob::new(json!(1)).attempts(0))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::BadArgument {
                name: "attempts",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        echomq_testkit::invariant::queue_keys(h.urls(), q.keys())
            .await
            .unwrap()
            .is_empty()
    );
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_wrong_key_type_is_refused_before_any_write(h: &Harness) {
    let q = h.queue::<Value>("wrong_type");
    let mut conn = h.raw(&q).await;
    let _: () = redis::cmd("SET")
        .arg(q.keys().events())
        .arg("not a stream")
        .query_async(&mut conn)
        .await
        .unwrap();
    let err = q
        .enqueue(NewJob::new(json!(1)).id("j1").unwrap())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("WRONGTYPE"), "{err}");
    let keys = echomq_testkit::invariant::queue_keys(h.urls(), q.keys())
        .await
        .unwrap();
    assert_eq!(keys, [q.keys().events()], "nothing but the bad key exists");
}

/// Every key of the queue with its DUMP, to show nothing changed.
async fn dumps(h: &Harness, q: &echomq::Queue<Value>) -> Vec<(String, Vec<u8>)> {
    let mut conn = h.raw(q).await;
    let mut out = Vec::new();
    for key in echomq_testkit::invariant::queue_keys(h.urls(), q.keys())
        .await
        .unwrap()
    {
        let dump: Vec<u8> = redis::cmd("DUMP")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        out.push((key, dump));
    }
    out
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_claim_that_meets_a_job_key_of_the_wrong_type_writes_nothing(h: &Harness) {
    let q = h.queue::<Value>("wrong_type_job");
    for name in ["a", "b", "c"] {
        q.enqueue(NewJob::new(json!(name)).id(name).unwrap())
            .await
            .unwrap();
    }
    let _: () = redis::cmd("SET")
        .arg(q.keys().job(&id("b")))
        .arg("not a hash")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let before = dumps(h, &q).await;
    let err = q.claim("w", Duration::from_secs(60), 3).await.unwrap_err();
    assert!(err.to_string().contains("WRONGTYPE"), "{err}");
    assert_eq!(dumps(h, &q).await, before, "the refused claim wrote");
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_setting_that_is_not_a_whole_number_reads_as_its_default(h: &Harness) {
    let q = h.queue::<Value>("odd_settings");
    let _: () = redis::cmd("HSET")
        .arg(q.keys().meta())
        .arg("keep_completed")
        .arg("lots")
        .arg("events_max")
        .arg("1.5")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    q.enqueue(NewJob::new(json!(1)).id("j").unwrap())
        .await
        .unwrap();
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.complete(&job.id, job.token, &()).await.unwrap();
    // keep_completed falls back to 1000 (the job is kept), events_max to
    // 10000 (the events are written).
    let kept = q
        .jobs()
        .get(&id("j"))
        .await
        .unwrap()
        .expect("the job is kept");
    assert_eq!(kept.state, JobState::Completed);
    let kinds: Vec<String> = events(h, &q)
        .await
        .into_iter()
        .map(|fields| fields[1].clone())
        .collect();
    assert_eq!(kinds, ["enqueued", "claimed", "completed"]);
}

#[echomq_testkit::case(cluster)]
pub(super) async fn get_of_a_missing_job_is_none(h: &Harness) {
    let q = h.queue::<Value>("get_missing");
    assert!(q.jobs().get(&id("nope")).await.unwrap().is_none());
}

#[echomq_testkit::case(cluster)]
pub(super) async fn retention_keeps_the_newest_completed_jobs(h: &Harness) {
    let q = h.queue::<Value>("retention");
    q.configure(&QueueSettings {
        keep_completed: 100,
        ..QueueSettings::default()
    })
    .await
    .unwrap();
    let ids: Vec<JobId> = q
        .enqueue_bulk((0..1000).map(|n| json!(n)))
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    loop {
        let batch = q.claim("w", LEASE, 50).await.unwrap();
        if batch.is_empty() {
            break;
        }
        for job in batch {
            q.complete(&job.id, job.token, &()).await.unwrap();
        }
    }
    h.check(&q).await;
    let counts = q.admin().counts().await.unwrap();
    assert_eq!(counts.completed, 100);
    // Newest by finish time, a millisecond's: jobs that finished in the
    // same millisecond as the oldest kept one tie, and the set orders
    // ties by id as text.
    let kept: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(q.keys().completed())
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let oldest_kept = kept[0].1;
    for (i, id) in ids.iter().enumerate() {
        let score = kept.iter().find(|(member, _)| member == id.as_str());
        let exists = q.jobs().get(id).await.unwrap().is_some();
        assert_eq!(exists, score.is_some(), "job {id}: a hash iff kept");
        if let Some((_, score)) = score.filter(|_| i < 900) {
            assert_eq!(*score, oldest_kept, "job {id} kept, not tied at the edge");
        }
    }
    assert!(q.jobs().get(&ids[999]).await.unwrap().is_some());
}

#[echomq_testkit::case(cluster)]
pub(super) async fn keep_completed_zero_deletes_at_once(h: &Harness) {
    let q = h.queue::<Value>("keep_zero");
    q.configure(&QueueSettings {
        keep_completed: 0,
        ..QueueSettings::default()
    })
    .await
    .unwrap();
    q.enqueue(json!(1)).await.unwrap();
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.complete(&job.id, job.token, &()).await.unwrap();
    assert!(q.jobs().get(&job.id).await.unwrap().is_none());
    assert_eq!(q.admin().counts().await.unwrap().completed, 0);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn retention_trims_dead_jobs(h: &Harness) {
    let q = h.queue::<Value>("retention_dead");
    q.configure(&QueueSettings {
        keep_dead: 3,
        ..QueueSettings::default()
    })
    .await
    .unwrap();
    q.enqueue_bulk((0..5).map(|n| NewJob::new(json!(n)).attempts(1)))
        .await
        .unwrap();
    for _ in 0..5 {
        let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
        retry_now(&q, &job, "x").await;
    }
    assert_eq!(q.admin().counts().await.unwrap().dead, 3);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn events_record_each_transition(h: &Harness) {
    let q = h.queue::<Value>("events");
    q.enqueue(NewJob::new(json!(1)).id("e1").unwrap().attempts(2))
        .await
        .unwrap();
    let job = q.claim_one("wk", LEASE).await.unwrap().unwrap();
    let first = job.token.to_string();
    retry_now(&q, &job, "oops").await;
    let job = q.claim_one("wk", LEASE).await.unwrap().unwrap();
    let second = job.token.to_string();
    q.complete(&job.id, job.token, &()).await.unwrap();
    q.enqueue(NewJob::new(json!(2)).id("e2").unwrap().attempts(1))
        .await
        .unwrap();
    let job = q.claim_one("wk", LEASE).await.unwrap().unwrap();
    let third = job.token.to_string();
    retry_now(&q, &job, "bad").await;
    let expected: Vec<Vec<&str>> = vec![
        vec!["event", "enqueued", "id", "e1"],
        vec![
            "event", "claimed", "id", "e1", "token", &first, "worker", "wk",
        ],
        vec![
            "event", "retried", "id", "e1", "error", "oops", "delay", "0",
        ],
        vec![
            "event", "claimed", "id", "e1", "token", &second, "worker", "wk",
        ],
        vec!["event", "completed", "id", "e1"],
        vec!["event", "enqueued", "id", "e2"],
        vec![
            "event", "claimed", "id", "e2", "token", &third, "worker", "wk",
        ],
        vec!["event", "dead", "id", "e2", "error", "bad"],
    ];
    assert_eq!(events(h, &q).await, expected);
}

#[echomq_testkit::case(cluster)]
pub(super) async fn bulk_enqueue_matches_single_enqueue(h: &Harness) {
    let q = h.queue::<Value>("bulk");
    q.enqueue(NewJob::new(json!("x")).id("dup").unwrap())
        .await
        .unwrap();
    let jobs = (0..2500)
        .map(|n| NewJob::new(json!(n)).priority((n % 3) as u8))
        .chain([NewJob::new(json!("y")).id("dup").unwrap()]);
    let enqueued = q.enqueue_bulk(jobs).await.unwrap();
    assert_eq!(enqueued.len(), 2501);
    assert_eq!(enqueued.iter().filter(|e| e.created).count(), 2500);
    assert!(!enqueued[2500].created);
    let counts = q.admin().counts().await.unwrap();
    assert_eq!(counts.pending, 2501);
    let first = q.claim_one("w", LEASE).await.unwrap().unwrap();
    assert_eq!(first.id.as_str(), "dup", "priority 0 and first in");
    h.check(&q).await;
}

/// Runs MULTI / SET probe / EXEC on `watcher`, which WATCHes the job key;
/// true when EXEC ran (nothing touched the job since the WATCH).
async fn exec_after_watch(watcher: &mut redis::aio::MultiplexedConnection, probe: &str) -> bool {
    let reply: redis::Value = redis::pipe()
        .atomic()
        .cmd("SET")
        .arg(probe)
        .arg("1")
        .query_async(watcher)
        .await
        .unwrap();
    reply != redis::Value::Nil
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_refused_complete_leaves_a_watch_on_the_job_intact(h: &Harness) {
    let q = h.queue::<Value>("watch_refused");
    q.enqueue(NewJob::new(json!(1)).id("j").unwrap())
        .await
        .unwrap();
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    let key = q.keys().job(&id("j"));
    let probe = format!("{}:probe", q.keys().base());
    let mut watcher = h.raw(&q).await;
    let watch = || redis::cmd("WATCH").arg(&key).clone();

    // A refused transition reads the job and writes nothing: a client
    // watching the job still commits.
    let _: () = watch().query_async(&mut watcher).await.unwrap();
    let err = q.complete(&job.id, job.token + 1, &()).await.unwrap_err();
    assert_eq!(refusal(err), Refusal::NotActive);
    assert!(
        exec_after_watch(&mut watcher, &probe).await,
        "the refused COMPLETE touched the watched job"
    );

    // The completion that is not refused aborts the watcher's transaction.
    let _: () = watch().query_async(&mut watcher).await.unwrap();
    q.complete(&job.id, job.token, &()).await.unwrap();
    assert!(
        !exec_after_watch(&mut watcher, &probe).await,
        "the completion did not touch the watched job"
    );
}

#[echomq_testkit::case(cluster)]
pub(super) async fn jobs_of_priority_0_wait_in_fifo_and_take_no_seq(h: &Harness) {
    let q = h.queue::<Value>("fifo_keys");
    enqueue_named(
        h,
        &q,
        &[
            ("a", 0, None),
            ("b", 0, None),
            ("r", 2, None),
            ("c", 0, None),
        ],
    )
    .await;
    assert_eq!(h.fifo_and_pending(&q).await, (3, 1));
    let seq: Option<String> = redis::cmd("GET")
        .arg(q.keys().seq())
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    assert_eq!(seq.as_deref(), Some("1"), "only the ranked job took a seq");
    assert_eq!(q.admin().counts().await.unwrap().pending, 4);
    // fifo's jobs in arrival order, then the ranked one.
    assert_eq!(claimed_ids(&q, 2).await, ["a", "b"]);
    assert_eq!(claimed_ids(&q, 2).await, ["c", "r"]);
    assert_eq!(h.fifo_and_pending(&q).await, (0, 0));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn the_first_grouped_job_moves_fifo_into_pending_in_order(h: &Harness) {
    let q = h.queue::<Value>("fifo_to_groups");
    enqueue_named(h, &q, &[("a", 0, None), ("b", 0, None), ("r", 1, None)]).await;
    assert_eq!(h.fifo_and_pending(&q).await, (2, 1));
    enqueue_named(h, &q, &[("g", 0, Some("team"))]).await;
    // No fifo on a queue with groups: all four in pending.
    assert_eq!(h.fifo_and_pending(&q).await, (0, 4));
    enqueue_named(h, &q, &[("d", 0, None)]).await;
    assert_eq!(h.fifo_and_pending(&q).await, (0, 5));
    // The ungrouped jobs keep their order (a and b before the ranked r,
    // d after them), whatever turns the group's lane takes.
    let mut ungrouped = Vec::new();
    for _ in 0..5 {
        for id in claimed_ids(&q, 1).await {
            if id != "g" {
                ungrouped.push(id);
            }
        }
    }
    assert_eq!(ungrouped, ["a", "b", "d", "r"]);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn drain_takes_fifo_first_then_pending(h: &Harness) {
    let q = h.queue::<Value>("fifo_drain");
    enqueue_named(
        h,
        &q,
        &[
            ("a", 0, None),
            ("r", 1, None),
            ("b", 0, None),
            ("s", 2, None),
        ],
    )
    .await;
    let drained = raw_call(h, &q, "drain", &["COUNT", "3"]).await.unwrap();
    assert_eq!(drained, redis::Value::Int(3));
    h.check(&q).await;
    // fifo's two, then pending's lowest: s is left.
    assert_eq!(h.fifo_and_pending(&q).await, (0, 1));
    assert_eq!(claimed_ids(&q, 5).await, ["s"]);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_fifo_of_the_wrong_type_is_refused_before_any_write(h: &Harness) {
    let q = h.queue::<Value>("fifo_wrong_type");
    enqueue_named(h, &q, &[("r", 1, None)]).await;
    let mut conn = h.raw(&q).await;
    let _: () = redis::cmd("SET")
        .arg(q.keys().fifo())
        .arg("not a list")
        .query_async(&mut conn)
        .await
        .unwrap();
    let before = dumps(h, &q).await;
    let enqueue = q
        .enqueue(NewJob::new(json!(1)).id("a").unwrap())
        .await
        .unwrap_err();
    assert!(enqueue.to_string().contains("WRONGTYPE"), "{enqueue}");
    let claim = q.claim("w", LEASE, 1).await.unwrap_err();
    assert!(claim.to_string().contains("WRONGTYPE"), "{claim}");
    assert_eq!(dumps(h, &q).await, before, "nothing was written");
}
