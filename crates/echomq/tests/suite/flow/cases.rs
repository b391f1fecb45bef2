//! The flow-control transitions: a claim under a rate limit, a hold, a cap
//! on active jobs, the wake-up a job leaving `active` sends, LIMIT and
//! CONCURRENCY themselves and each of their refusals. Each case takes a
//! harness (a server on wire 4 or 6, or a cluster) and its own queue.

use super::common::{Harness, error_text, events, raw_call, refusal, server_now, wake_marker};
use echomq::{
    ConcurrencyCap, FailAction, FailOutcome, JobId, NewJob, Queue, RateLimit, Refusal, Withheld,
};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);
/// A window no test sees end: one day, aligned on UTC midnight.
const DAY: Duration = Duration::from_secs(86_400);
const BOUND: Duration = Duration::from_secs(10);

/// `n` pending jobs `j0`…, in that order.
async fn pending(q: &Queue<Value>, n: usize) -> Vec<JobId> {
    let jobs = (0..n).map(|i| NewJob::new(json!(i)).id(format!("j{i}")).unwrap());
    q.enqueue_bulk(jobs)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect()
}

/// The queue's meta hash.
pub(super) async fn meta(h: &Harness, q: &Queue<Value>) -> HashMap<String, String> {
    redis::cmd("HGETALL")
        .arg(q.keys().meta())
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// Deletes the signal set, so the next marker shows.
async fn clear_signal(h: &Harness, q: &Queue<Value>) {
    let _: () = redis::cmd("DEL")
        .arg(q.keys().signal())
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
}

/// Sends the command of `script` with `args` as the harness's wire does,
/// for what the client cannot say; the error text of a refusal.
async fn send(
    h: &Harness,
    q: &Queue<Value>,
    script: &str,
    args: &[&str],
) -> Result<redis::Value, String> {
    raw_call(h, q, script, args)
        .await
        .map_err(|err| error_text(&err))
}

/// The event names of the queue's stream, in order.
async fn event_names(h: &Harness, q: &Queue<Value>) -> Vec<String> {
    events(h, q)
        .await
        .into_iter()
        .map(|fields| fields[1].clone())
        .collect()
}

fn ids(batch: &echomq::ClaimBatch<Value>) -> Vec<&str> {
    batch.jobs.iter().map(|job| job.id.as_str()).collect()
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_claim_under_a_limit_hands_out_what_the_window_has_left(h: &Harness) {
    let q = h.queue::<Value>("limit_window");
    pending(&q, 6).await;
    let set = q.admin().set_rate_limit(3, DAY).await.unwrap();
    assert_eq!((set.max, set.per, set.used), (3, DAY, 0));
    assert!(
        set.reset_in > Duration::ZERO && set.reset_in <= DAY,
        "{set:?}"
    );

    let first = q.claim_with_wait("w", LEASE, 2).await.unwrap();
    assert_eq!(
        (ids(&first), first.withheld),
        (vec!["j0", "j1"], None),
        "the window had room for both"
    );
    let second = q.claim_with_wait("w", LEASE, 5).await.unwrap();
    assert_eq!(ids(&second), ["j2"], "one start left in the window");
    let Some(Withheld::For(wait)) = second.withheld else {
        panic!("the window withheld jobs: {:?}", second.withheld);
    };
    assert!(wait > Duration::ZERO && wait <= DAY, "{wait:?}");
    let third = q.claim_with_wait("w", LEASE, 1).await.unwrap();
    assert!(third.jobs.is_empty());
    assert!(matches!(third.withheld, Some(Withheld::For(later)) if later <= wait));
    h.check(&q).await;

    let limit = q.admin().rate_limit().await.unwrap();
    assert_eq!(
        (limit.max, limit.per, limit.used, limit.hold_for),
        (3, DAY, 3, Duration::ZERO)
    );
    assert!(limit.reset_in <= wait);
    let stored = meta(h, &q).await;
    let now = server_now(h, &q).await;
    let window = now - now % DAY.as_millis() as u64;
    assert_eq!(stored["limit_used"], "3");
    assert_eq!(stored["limit_window"], window.to_string());
    assert_eq!(
        (stored["limit_max"].as_str(), stored["limit_per"].as_str()),
        ("3", "86400000")
    );
    assert_eq!(q.admin().counts().await.unwrap().pending, 3);
}

#[echomq_testkit::case]
pub(super) async fn a_claim_that_takes_exactly_what_the_window_has_left_answers_no_wait(
    h: &Harness,
) {
    let q = h.queue::<Value>("limit_exact");
    pending(&q, 4).await;
    q.admin().set_rate_limit(2, DAY).await.unwrap();
    let exact = q.claim_with_wait("w", LEASE, 2).await.unwrap();
    assert_eq!((exact.jobs.len(), exact.withheld), (2, None));
    let next = q.claim_with_wait("w", LEASE, 2).await.unwrap();
    assert!(next.jobs.is_empty() && matches!(next.withheld, Some(Withheld::For(_))));
    // Nothing pending: nothing withheld, whatever the window says.
    let empty = h.queue::<Value>("limit_exact_empty");
    empty.admin().set_rate_limit(1, DAY).await.unwrap();
    let none = empty.claim_with_wait("w", LEASE, 3).await.unwrap();
    assert_eq!((none.jobs.len(), none.withheld), (0, None));
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_claim_under_a_spent_window_still_promotes_due_jobs(h: &Harness) {
    let q = h.queue::<Value>("limit_promotes");
    q.admin().set_rate_limit(1, DAY).await.unwrap();
    pending(&q, 1).await;
    assert_eq!(q.claim("w", LEASE, 1).await.unwrap().len(), 1);
    let later = q
        .enqueue(NewJob::new(json!("later")).after(Duration::from_millis(30)))
        .await
        .unwrap();
    let due = server_now(h, &q).await + 30;
    wait_for("the job to be due", BOUND, || async {
        server_now(h, &q).await > due
    })
    .await;
    let batch = q.claim_with_wait("w", LEASE, 1).await.unwrap();
    assert!(batch.jobs.is_empty());
    assert!(
        matches!(batch.withheld, Some(Withheld::For(_))),
        "{:?}",
        batch.withheld
    );
    let record = q.jobs().get(&later.id).await.unwrap().unwrap();
    assert_eq!(
        record.state,
        echomq::JobState::Pending,
        "promoted though not claimed"
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_claim_under_the_cap_hands_out_the_room_and_answers_zero(h: &Harness) {
    let q = h.queue::<Value>("cap_room");
    pending(&q, 5).await;
    let cap = q.admin().set_concurrency_cap(2).await.unwrap();
    assert_eq!(cap, ConcurrencyCap { max: 2, active: 0 });
    let first = q.claim_with_wait("w", LEASE, 5).await.unwrap();
    assert_eq!(
        (ids(&first), first.withheld),
        (vec!["j0", "j1"], Some(Withheld::CapFull))
    );
    let full = q.claim_with_wait("w", LEASE, 1).await.unwrap();
    assert_eq!(
        (full.jobs.len(), full.withheld),
        (0, Some(Withheld::CapFull))
    );
    assert_eq!(
        q.admin().concurrency_cap().await.unwrap(),
        ConcurrencyCap { max: 2, active: 2 }
    );

    let done = &first.jobs[0];
    q.complete(&done.id, done.token, &()).await.unwrap();
    let next = q.claim_with_wait("w", LEASE, 3).await.unwrap();
    assert_eq!(
        (ids(&next), next.withheld),
        (vec!["j2"], Some(Withheld::CapFull))
    );
    h.check(&q).await;

    // A cap the window binds first answers the window's wait.
    q.admin().set_rate_limit(1, DAY).await.unwrap();
    q.admin().clear_concurrency_cap().await.unwrap();
    let limited = q.claim_with_wait("w", LEASE, 2).await.unwrap();
    assert_eq!(limited.jobs.len(), 1);
    assert!(
        matches!(limited.withheld, Some(Withheld::For(_))),
        "{:?}",
        limited.withheld
    );
    h.check(&q).await;
}

/// A way a job leaves `active`.
#[derive(Debug, Clone, Copy)]
enum Leave {
    Complete,
    CompleteBulk,
    Fail(FailAction),
    Delay,
    RemoveForce,
    Requeue,
}

/// Claims one job of `q` (which has jobs pending), clears the signal set,
/// takes the job out of `active` by `how`, and returns the marker's score.
async fn signal_after(h: &Harness, q: &Queue<Value>, how: Leave) -> Option<f64> {
    let job = q
        .claim_one("w", LEASE)
        .await
        .unwrap()
        .expect("a job to claim");
    clear_signal(h, q).await;
    let token = job.token.to_string();
    match how {
        Leave::Complete => q.complete(&job.id, job.token, &()).await.unwrap(),
        Leave::CompleteBulk => {
            let bulk = send(h, q, "complete_bulk", &[job.id.as_str(), &token, ""]).await;
            assert!(bulk.is_ok(), "{bulk:?}");
        }
        Leave::Fail(action) => {
            q.fail(&job.id, job.token, "boom", action).await.unwrap();
        }
        Leave::Delay => q
            .delay(&job.id, job.token, Duration::from_secs(3600))
            .await
            .unwrap(),
        Leave::RemoveForce => assert!(
            q.jobs()
                .remove(&job.id, echomq::IfActive::Force)
                .await
                .unwrap()
        ),
        Leave::Requeue => q.jobs().requeue(&job.id).await.unwrap(),
    }
    let score = wake_marker(h, q).await;
    h.check(q).await;
    score
}

#[echomq_testkit::case(cluster)]
pub(super) async fn every_job_leaving_active_under_a_cap_wakes_a_worker(h: &Harness) {
    let q = h.queue::<Value>("cap_wakes");
    pending(&q, 12).await;
    q.admin().set_concurrency_cap(50).await.unwrap();
    for how in [
        Leave::Complete,
        Leave::CompleteBulk,
        Leave::Fail(FailAction::Dead),
        Leave::Fail(FailAction::Cancelled),
        Leave::Fail(FailAction::Retry(Duration::from_secs(3600))),
        Leave::Fail(FailAction::RateLimited(Duration::ZERO)),
        Leave::Delay,
        Leave::RemoveForce,
        Leave::Requeue,
    ] {
        assert_eq!(signal_after(h, &q, how).await, Some(0.0), "{how:?}");
    }
    // The stalled sweep dead-letters a job whose 1 ms lease ran out.
    let job = send(h, &q, "claim", &["w", "1"]).await.unwrap();
    assert!(
        matches!(job, redis::Value::Array(ref jobs) if jobs.len() == 1),
        "{job:?}"
    );
    clear_signal(h, &q).await;
    let start = server_now(h, &q).await;
    wait_for("the 1 ms lease to run out", BOUND, || async {
        server_now(h, &q).await > start + 1
    })
    .await;
    let swept = q.sweep_stalled(0, 10).await.unwrap();
    assert_eq!((swept.recovered, swept.dead), (0, 1));
    assert_eq!(wake_marker(h, &q).await, Some(0.0), "stalled check");
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn without_a_cap_a_completion_sets_no_marker(h: &Harness) {
    let q = h.queue::<Value>("no_cap_no_marker");
    pending(&q, 3).await;
    assert_eq!(signal_after(h, &q, Leave::Complete).await, None);
    // Nor under a cap with nothing pending.
    let quiet = h.queue::<Value>("cap_nothing_pending");
    pending(&quiet, 1).await;
    quiet.admin().set_concurrency_cap(1).await.unwrap();
    assert_eq!(signal_after(h, &quiet, Leave::Complete).await, None);
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_rate_limited_failure_holds_the_queue_without_counting_a_failure(h: &Harness) {
    let q = h.queue::<Value>("hold");
    let ids = pending(&q, 2).await;
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    let before = server_now(h, &q).await;
    let outcome = q
        .fail(
            &job.id,
            job.token,
            "429 from the partner",
            FailAction::RateLimited(Duration::from_millis(400)),
        )
        .await
        .unwrap();
    assert_eq!(outcome, FailOutcome::RateLimited);
    h.check(&q).await;
    let record = q.jobs().get(&ids[0]).await.unwrap().unwrap();
    assert_eq!(record.state, echomq::JobState::Pending);
    assert_eq!(
        (record.failures, record.claims),
        (0, 1),
        "no failure, no attempt used"
    );
    assert_eq!(record.error.as_deref(), Some("429 from the partner"));
    let hold: u64 = meta(h, &q).await["limit_hold"].parse().unwrap();
    assert!(
        (before + 400..before + 1000).contains(&hold),
        "{hold} after {before}"
    );

    let held = q.claim_with_wait("w", LEASE, 5).await.unwrap();
    assert!(held.jobs.is_empty(), "nothing while held");
    let Some(Withheld::For(wait)) = held.withheld else {
        panic!("the hold withheld jobs: {:?}", held.withheld);
    };
    assert!(wait <= Duration::from_millis(400), "{wait:?}");
    let limit = q.admin().rate_limit().await.unwrap();
    assert_eq!(
        (limit.max, limit.per),
        (0, Duration::ZERO),
        "a hold without a limit"
    );
    assert!(limit.hold_for > Duration::ZERO && limit.hold_for <= wait);

    // A shorter hold keeps the longer one.
    q.admin().set_concurrency_cap(10).await.unwrap();
    wait_for("the hold to end", BOUND, || async {
        server_now(h, &q).await >= hold
    })
    .await;
    let after = q.claim_with_wait("w", LEASE, 1).await.unwrap();
    assert_eq!(
        after.jobs.len(),
        1,
        "claims hand out jobs once the hold is over"
    );
    let again = &after.jobs[0];
    q.fail(
        &again.id,
        again.token,
        "429",
        FailAction::RateLimited(Duration::from_secs(3600)),
    )
    .await
    .unwrap();
    let long: u64 = meta(h, &q).await["limit_hold"].parse().unwrap();
    let next = q.claim_one("w", LEASE).await.unwrap();
    assert!(next.is_none());
    let kept = q.admin().rate_limit().await.unwrap();
    assert!(kept.hold_for > Duration::from_secs(3500), "{kept:?}");
    let names = event_names(h, &q).await;
    assert_eq!(
        names.iter().filter(|n| *n == "rate_limited").count(),
        2,
        "{names:?}"
    );
    let first = events(h, &q)
        .await
        .into_iter()
        .find(|e| e[1] == "rate_limited")
        .unwrap();
    assert_eq!(
        first,
        ["event", "rate_limited", "id", "j0", "retry_in", "400"]
    );
    assert!(long > hold);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_cancel_requested_job_that_meets_a_rate_limit_is_cancelled(h: &Harness) {
    let q = h.queue::<Value>("hold_cancelled");
    pending(&q, 1).await;
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.jobs().cancel(&job.id).await.unwrap();
    let outcome = q
        .fail(
            &job.id,
            job.token,
            "429",
            FailAction::RateLimited(Duration::from_secs(60)),
        )
        .await
        .unwrap();
    assert_eq!(outcome, FailOutcome::Cancelled);
    assert!(!meta(h, &q).await.contains_key("limit_hold"), "no hold");
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn limit_sets_reads_and_clears_and_says_so_in_the_events(h: &Harness) {
    let q = h.queue::<Value>("limit_control");
    assert_eq!(
        q.admin().rate_limit().await.unwrap(),
        RateLimit::default(),
        "no limit: all 0"
    );
    assert!(events(h, &q).await.is_empty(), "a read writes no event");
    q.admin().set_rate_limit(10, DAY).await.unwrap();
    pending(&q, 3).await;
    q.claim("w", LEASE, 2).await.unwrap();
    // A new limit keeps the window's count (a day's window: a minute's
    // could turn between the claim and the change, and start over).
    let changed = q.admin().set_rate_limit(5, DAY).await.unwrap();
    assert_eq!((changed.max, changed.used), (5, 2));
    let fail_job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.fail(
        &fail_job.id,
        fail_job.token,
        "429",
        FailAction::RateLimited(Duration::from_secs(60)),
    )
    .await
    .unwrap();
    let cleared = q.admin().clear_rate_limit().await.unwrap();
    assert_eq!(cleared, RateLimit::default(), "OFF clears the hold too");
    let stored = meta(h, &q).await;
    assert!(
        stored.keys().all(|field| !field.starts_with("limit_")),
        "{stored:?}"
    );
    let limit_events: Vec<Vec<String>> = events(h, &q)
        .await
        .into_iter()
        .filter(|e| e[1] == "limit_set")
        .collect();
    assert_eq!(
        limit_events,
        [
            ["event", "limit_set", "max", "10", "per", "86400000"],
            ["event", "limit_set", "max", "5", "per", "86400000"],
            ["event", "limit_set", "max", "0", "per", "0"],
        ]
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn concurrency_sets_reads_and_clears_and_wakes_a_waiting_worker(h: &Harness) {
    let q = h.queue::<Value>("cap_control");
    assert_eq!(
        q.admin().concurrency_cap().await.unwrap(),
        ConcurrencyCap::default()
    );
    pending(&q, 2).await;
    q.claim("w", LEASE, 1).await.unwrap();
    clear_signal(h, &q).await;
    let set = q.admin().set_concurrency_cap(1).await.unwrap();
    assert_eq!(set, ConcurrencyCap { max: 1, active: 1 });
    assert_eq!(
        wake_marker(h, &q).await,
        Some(0.0),
        "a change wakes a worker when jobs are pending"
    );
    assert_eq!(meta(h, &q).await["concurrency"], "1");
    let cleared = q.admin().clear_concurrency_cap().await.unwrap();
    assert_eq!(cleared, ConcurrencyCap { max: 0, active: 1 });
    assert!(!meta(h, &q).await.contains_key("concurrency"));
    let cap_events: Vec<Vec<String>> = events(h, &q)
        .await
        .into_iter()
        .filter(|e| e[1] == "concurrency_set")
        .collect();
    assert_eq!(
        cap_events,
        [
            ["event", "concurrency_set", "max", "1"],
            ["event", "concurrency_set", "max", "0"],
        ]
    );
    h.check(&q).await;
}

/// Sends `args` to `script` on a queue holding jobs and a limit: the
/// refusal's text, with the keyspace as it was.
async fn refused_unwritten(h: &Harness, name: &str, script: &str, args: &[&str]) -> String {
    let q = h.queue::<Value>(name);
    pending(&q, 1).await;
    q.admin().set_rate_limit(3, DAY).await.unwrap();
    q.admin().set_concurrency_cap(2).await.unwrap();
    let before = (meta(h, &q).await, events(h, &q).await.len());
    let refused = send(h, &q, script, args).await.expect_err("refused");
    assert_eq!(
        (meta(h, &q).await, events(h, &q).await.len()),
        before,
        "{refused}: nothing written"
    );
    h.check(&q).await;
    refused
}

#[echomq_testkit::case]
pub(super) async fn limit_max_zero_is_refused_badarg_max(h: &Harness) {
    let refused = refused_unwritten(h, "limit_max_0", "limit", &["MAX", "0", "PER", "1000"]).await;
    assert_eq!(refused, "BADARG max");
    let err = h
        .queue::<Value>("limit_max_0")
        .admin()
        .set_rate_limit(0, DAY)
        .await
        .unwrap_err();
    assert_eq!(refusal(err), Refusal::BadArg("max".into()));
}

#[echomq_testkit::case]
pub(super) async fn limit_per_zero_is_refused_badarg_per(h: &Harness) {
    let refused = refused_unwritten(h, "limit_per_0", "limit", &["MAX", "5", "PER", "0"]).await;
    assert_eq!(refused, "BADARG per");
    let err = h
        .queue::<Value>("limit_per_0")
        .admin()
        .set_rate_limit(5, Duration::from_micros(999))
        .await
        .unwrap_err();
    assert_eq!(refusal(err), Refusal::BadArg("per".into()));
}

#[echomq_testkit::case(cluster)]
pub(super) async fn limit_max_without_per_is_refused_badarg_per(h: &Harness) {
    let refused = refused_unwritten(h, "limit_no_per", "limit", &["MAX", "5"]).await;
    assert_eq!(refused, "BADARG per");
}

#[echomq_testkit::case]
pub(super) async fn limit_per_without_max_is_refused_badarg_max(h: &Harness) {
    let refused = refused_unwritten(h, "limit_no_max", "limit", &["PER", "1000"]).await;
    assert_eq!(refused, "BADARG max");
}

#[echomq_testkit::case]
pub(super) async fn limit_off_with_max_is_refused_syntax(h: &Harness) {
    let args = ["MAX", "5", "PER", "1000", "OFF"];
    let refused = refused_unwritten(h, "limit_off_max", "limit", &args).await;
    assert_eq!(refused, "SYNTAX MAX and OFF exclude each other");
}

#[echomq_testkit::case]
pub(super) async fn concurrency_max_zero_is_refused_badarg_max(h: &Harness) {
    let refused = refused_unwritten(h, "cap_max_0", "concurrency", &["MAX", "0"]).await;
    assert_eq!(refused, "BADARG max");
    let err = h
        .queue::<Value>("cap_max_0")
        .admin()
        .set_concurrency_cap(0)
        .await
        .unwrap_err();
    assert_eq!(refusal(err), Refusal::BadArg("max".into()));
}

#[echomq_testkit::case]
pub(super) async fn concurrency_off_with_max_is_refused_syntax(h: &Harness) {
    let refused = refused_unwritten(h, "cap_off_max", "concurrency", &["OFF", "MAX", "2"]).await;
    assert_eq!(refused, "SYNTAX MAX and OFF exclude each other");
}

#[echomq_testkit::case]
pub(super) async fn fail_rate_limited_with_dead_is_refused_syntax(h: &Harness) {
    let q = h.queue::<Value>("fail_rl_dead");
    pending(&q, 1).await;
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    let token = job.token.to_string();
    let refused = send(
        h,
        &q,
        "fail",
        &[job.id.as_str(), &token, "e", "RATE_LIMITED", "5", "DEAD"],
    )
    .await
    .unwrap_err();
    assert_eq!(
        refused,
        "SYNTAX RETRY_IN, DEAD, CANCELLED and RATE_LIMITED exclude each other"
    );
    assert_eq!(
        q.admin().counts().await.unwrap().active,
        1,
        "nothing written"
    );
    assert!(!meta(h, &q).await.contains_key("limit_hold"));
    h.check(&q).await;
}
