//! Transition cases of the time controls.

use super::common::{Harness, claimed_ids, reclaimed, refusal, server_now};
use echomq::{JobId, JobState, NewJob, Refusal};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const LEASE: Duration = Duration::from_secs(30);
const HOUR: Duration = Duration::from_secs(3600);

async fn last_event(h: &Harness, q: &echomq::Queue<Value>) -> Vec<String> {
    let entries: Vec<(String, Vec<String>)> = redis::cmd("XREVRANGE")
        .arg(q.keys().events())
        .arg("+")
        .arg("-")
        .arg("COUNT")
        .arg(1)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
    entries
        .into_iter()
        .next()
        .map(|(_, fields)| fields)
        .unwrap_or_default()
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_job_with_a_future_run_at_waits_on_the_schedule_set(h: &Harness) {
    let q = h.queue::<Value>("future_run_at");
    let before = server_now(h, &q).await;
    let job = q
        .enqueue(NewJob::new(json!("later")).after(HOUR))
        .await
        .unwrap();
    h.check(&q).await;
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Scheduled);
    let run_at = record.run_at.unwrap();
    assert!(
        (before + 3_600_000..before + 3_610_000).contains(&run_at),
        "run_at {run_at} is one hour after {before} on the server clock"
    );
    assert!(
        q.claim_one("w", LEASE).await.unwrap().is_none(),
        "not claimable before its run-at"
    );
    assert_eq!(q.promote(1000).await.unwrap(), 0);
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.scheduled, counts.pending), (1, 0));
    assert_eq!(
        last_event(h, &q).await,
        [
            "event",
            "scheduled",
            "id",
            job.id.as_str(),
            "run_at",
            &run_at.to_string()
        ]
    );
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_run_at_past_2_53_is_the_same_double_in_the_job_and_the_schedule_set(
    h: &Harness,
) {
    let q = h.queue::<Value>("far_run_at");
    // One bulk call, one clock read: of now + 2^53 - 1 and now + 2^53 - 2
    // one is odd, which no double holds exactly.
    let jobs = q
        .enqueue_bulk(
            [(1u64 << 53) - 1, (1 << 53) - 2]
                .map(|ms| NewJob::new(json!(ms)).after(Duration::from_millis(ms))),
        )
        .await
        .unwrap();
    for job in jobs {
        let run_at = q
            .jobs()
            .get(&job.id)
            .await
            .unwrap()
            .unwrap()
            .run_at
            .unwrap();
        let score: f64 = redis::cmd("ZSCORE")
            .arg(q.keys().schedule())
            .arg(job.id.as_str())
            .query_async(&mut h.raw(&q).await)
            .await
            .unwrap();
        assert!(run_at > 1 << 53, "{run_at}");
        // now + delay computed as a double, as the scripts' Lua does: the
        // job and its score hold the one value.
        assert_eq!(run_at, score as u64, "job {}", job.id);
        assert_eq!(run_at as f64, score, "job {}", job.id);
    }
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_run_at_already_due_goes_straight_to_pending(h: &Harness) {
    let q = h.queue::<Value>("due_run_at");
    let job = q
        .enqueue(NewJob::new(json!("now")).at(SystemTime::now() - HOUR))
        .await
        .unwrap();
    h.check(&q).await;
    assert_eq!(
        q.jobs().get(&job.id).await.unwrap().unwrap().state,
        JobState::Pending
    );
    assert_eq!(
        last_event(h, &q).await,
        ["event", "enqueued", "id", job.id.as_str()]
    );
    assert!(q.claim_one("w", LEASE).await.unwrap().is_some());
}

#[echomq_testkit::case(cluster)]
pub(super) async fn an_absolute_run_at_is_kept_as_given(h: &Harness) {
    let q = h.queue::<Value>("absolute_run_at");
    let at = SystemTime::now() + HOUR;
    let job = q
        .enqueue(NewJob::new(json!(1)).id("abs").unwrap().at(at))
        .await
        .unwrap();
    let expected = at.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    assert_eq!(
        q.jobs().get(&job.id).await.unwrap().unwrap().run_at,
        Some(expected)
    );
    let again = q
        .enqueue(NewJob::new(json!(2)).id("abs").unwrap().at(at + HOUR))
        .await
        .unwrap();
    assert!(!again.created, "scheduling an existing id changes nothing");
    assert_eq!(
        q.jobs().get(&job.id).await.unwrap().unwrap().run_at,
        Some(expected)
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn claim_promotes_due_jobs_itself(h: &Harness) {
    let q = h.queue::<Value>("claim_promotes");
    let now = server_now(h, &q).await;
    // Scheduled for "now" on the server clock: due by the time CLAIM reads the clock.
    let at = UNIX_EPOCH + Duration::from_millis(now + 1);
    let job = q.enqueue(NewJob::new(json!("soon")).at(at)).await.unwrap();
    let claimed = wait_for("the job to fall due", Duration::from_secs(5), || async {
        q.claim_one("w", LEASE).await.unwrap()
    })
    .await;
    assert_eq!(claimed.id, job.id);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn promote_moves_due_jobs_and_counts_them(h: &Harness) {
    let q = h.queue::<Value>("promote");
    // Scheduled an hour out, then rescheduled into the past: due however
    // slowly the machine runs (a run-at only a little ahead could pass
    // before the enqueue lands, which then makes the jobs pending at once).
    let ids: Vec<JobId> = (0..5)
        .map(|n| JobId::new(format!("p{n}")).unwrap())
        .collect();
    q.enqueue_bulk(
        ids.iter()
            .enumerate()
            .map(|(n, id)| NewJob::new(json!(n)).id(id.as_str()).unwrap().after(HOUR)),
    )
    .await
    .unwrap();
    q.enqueue(NewJob::new(json!("far")).after(HOUR))
        .await
        .unwrap();
    assert_eq!(q.admin().counts().await.unwrap().scheduled, 6);
    let now = server_now(h, &q).await;
    for (n, id) in ids.iter().enumerate() {
        let past = UNIX_EPOCH + Duration::from_millis(now - 1_000 + n as u64);
        q.jobs().reschedule(id, past).await.unwrap();
    }
    let mut moved = Vec::new();
    for _ in 0..4 {
        moved.push(q.promote(2).await.unwrap());
    }
    assert_eq!(moved, [2, 2, 1, 0], "LIMIT 2 bounds each call");
    h.check(&q).await;
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.scheduled, counts.pending), (1, 5));
    assert_eq!(last_event(h, &q).await[..2], ["event", "promoted"]);
    // Promoted jobs keep their order: oldest run-at first, then FIFO.
    let first: Value = q
        .claim_one("w", LEASE)
        .await
        .unwrap()
        .unwrap()
        .payload()
        .unwrap();
    assert_eq!(first, json!(0));
}

#[echomq_testkit::case(cluster)]
pub(super) async fn scheduled_and_immediate_jobs_mix_in_one_bulk(h: &Harness) {
    let q = h.queue::<Value>("mixed_bulk");
    let jobs = vec![
        NewJob::new(json!(1)),
        NewJob::new(json!(2)).after(HOUR),
        NewJob::new(json!(3)),
    ];
    let enqueued = q.enqueue_bulk(jobs).await.unwrap();
    assert!(enqueued.iter().all(|e| e.created));
    let states: Vec<JobState> = {
        let mut states = Vec::new();
        for e in &enqueued {
            states.push(q.jobs().get(&e.id).await.unwrap().unwrap().state);
        }
        states
    };
    assert_eq!(
        states,
        [JobState::Pending, JobState::Scheduled, JobState::Pending]
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn delay_sends_the_job_back_without_a_failure(h: &Harness) {
    let q = h.queue::<Value>("delay");
    q.enqueue(NewJob::new(json!(1)).attempts(1)).await.unwrap();
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    let before = server_now(h, &q).await;
    q.delay(&job.id, job.token, HOUR).await.unwrap();
    h.check(&q).await;
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(
        (record.state, record.failures, record.max_attempts),
        (JobState::Scheduled, 0, 1)
    );
    assert!(record.run_at.unwrap() >= before + 3_600_000);
    assert_eq!(
        last_event(h, &q).await,
        [
            "event",
            "delayed",
            "id",
            job.id.as_str(),
            "delay",
            "3600000"
        ]
    );
    // The token no longer fences: the job left active.
    let err = q.complete(&job.id, job.token, &()).await.unwrap_err();
    assert_eq!(refusal(err), Refusal::NotActive);
}

#[echomq_testkit::case(cluster)]
pub(super) async fn delay_with_a_stale_token_is_refused_notactive(h: &Harness) {
    let q = h.queue::<Value>("delay_stale");
    q.enqueue(json!(1)).await.unwrap();
    let (old, new) = reclaimed(&q).await;
    let err = q.delay(&old.id, old.token, HOUR).await.unwrap_err();
    assert_eq!(refusal(err), Refusal::NotActive);
    assert_eq!(
        q.jobs().get(&new.id).await.unwrap().unwrap().state,
        JobState::Active
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn reschedule_moves_a_scheduled_job(h: &Harness) {
    let q = h.queue::<Value>("reschedule");
    let job = q.enqueue(NewJob::new(json!(1)).after(HOUR)).await.unwrap();
    let at = SystemTime::now() + 2 * HOUR;
    q.jobs().reschedule(&job.id, at).await.unwrap();
    h.check(&q).await;
    let expected = at.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(
        (record.state, record.run_at),
        (JobState::Scheduled, Some(expected))
    );
    assert_eq!(
        last_event(h, &q).await,
        [
            "event",
            "rescheduled",
            "id",
            job.id.as_str(),
            "run_at",
            &expected.to_string()
        ]
    );
    // A past run-at stays scheduled until the next claim promotes it.
    q.jobs()
        .reschedule(&job.id, SystemTime::now() - HOUR)
        .await
        .unwrap();
    assert_eq!(
        q.jobs().get(&job.id).await.unwrap().unwrap().state,
        JobState::Scheduled
    );
    assert_eq!(q.claim_one("w", LEASE).await.unwrap().unwrap().id, job.id);
    h.check(&q).await;
}

async fn expect_reschedule_refused(
    h: &Harness,
    q: &echomq::Queue<Value>,
    id: &JobId,
    found: Refusal,
) {
    let err = q
        .jobs()
        .reschedule(id, SystemTime::now() + HOUR)
        .await
        .unwrap_err();
    let refused = err.refused().cloned().expect("a refusal");
    assert_eq!(refused.reason, found);
    assert_eq!(refused.transition, echomq::Transition::Reschedule);
    assert_eq!(refused.job.as_ref(), Some(id));
    h.check(q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn reschedule_of_a_pending_job_is_refused_badstate(h: &Harness) {
    let q = h.queue::<Value>("reschedule_pending");
    let job = q.enqueue(json!(1)).await.unwrap();
    expect_reschedule_refused(h, &q, &job.id, Refusal::BadState(JobState::Pending)).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn reschedule_of_an_active_job_is_refused_badstate(h: &Harness) {
    let q = h.queue::<Value>("reschedule_active");
    let job = q.enqueue(json!(1)).await.unwrap();
    q.claim_one("w", LEASE).await.unwrap().unwrap();
    expect_reschedule_refused(h, &q, &job.id, Refusal::BadState(JobState::Active)).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn reschedule_of_a_finished_job_is_refused_badstate(h: &Harness) {
    let q = h.queue::<Value>("reschedule_finished");
    let job = q.enqueue(json!(1)).await.unwrap();
    let claimed = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.complete(&claimed.id, claimed.token, &()).await.unwrap();
    expect_reschedule_refused(h, &q, &job.id, Refusal::BadState(JobState::Completed)).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn reschedule_of_a_missing_job_is_refused_nojob(h: &Harness) {
    let q = h.queue::<Value>("reschedule_missing");
    expect_reschedule_refused(h, &q, &JobId::new("ghost").unwrap(), Refusal::NoJob).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_claim_that_promotes_takes_the_lowest_of_pending_and_due(h: &Harness) {
    let q = h.queue::<Value>("claim_merges");
    let job = |name: &str, priority: u8| {
        NewJob::new(json!(name))
            .id(name)
            .unwrap()
            .priority(priority)
    };
    q.enqueue(job("p-low", 5)).await.unwrap();
    q.enqueue(job("p-high", 0)).await.unwrap();
    let later = SystemTime::now() + HOUR;
    for (name, priority) in [("d-mid", 1), ("d-top", 0), ("d-late", 9)] {
        q.enqueue(job(name, priority).at(later)).await.unwrap();
        // Due since 1970: the next CLAIM promotes it.
        q.jobs()
            .reschedule(
                &JobId::new(name).unwrap(),
                UNIX_EPOCH + Duration::from_millis(1),
            )
            .await
            .unwrap();
    }
    // The due jobs are promoted oldest first (ties by id: d-late, d-mid,
    // d-top) and take fresh seqs after the two pending ones; the pop then
    // takes the three lowest of all five by priority, then seq.
    assert_eq!(claimed_ids(&q, 3).await, ["p-high", "d-top", "d-mid"]);
    h.check(&q).await;
    assert_eq!(claimed_ids(&q, 5).await, ["p-low", "d-late"]);
    h.check(&q).await;
}
