//! The retention cases; each takes a harness (server, cluster or wire 6)
//! and uses its own queue. A job is aged by moving its score in its
//! finished set into the past (a raw `ZADD XX`): the score is its
//! finished-at, the clock the age rule reads.

use super::common::{Harness, server_now};
use echomq::{FailAction, JobId, JobState, NewJob, Queue};
use serde_json::{Value, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);
/// An age rule no job of a case reaches by itself: one hour.
const HOUR_MS: u64 = 3_600_000;

/// Writes settings of the queue's meta hash raw (`field value …`).
async fn set_meta<T>(h: &Harness, q: &Queue<T>, fields: &[(&str, u64)]) {
    let mut cmd = redis::cmd("HSET");
    cmd.arg(q.keys().meta());
    for (field, value) in fields {
        cmd.arg(*field).arg(*value);
    }
    let _: () = cmd.query_async(&mut h.raw(q).await).await.unwrap();
}

/// Moves `ids`' scores in the finished set of `state` two hours into the
/// past (server clock).
async fn age<T>(h: &Harness, q: &Queue<T>, state: JobState, ids: &[JobId]) {
    let past = server_now(h, q).await - 2 * HOUR_MS;
    let mut cmd = redis::cmd("ZADD");
    cmd.arg(q.keys().key(state.set_key())).arg("XX");
    for id in ids {
        cmd.arg(past).arg(id.as_str());
    }
    let _: () = cmd.query_async(&mut h.raw(q).await).await.unwrap();
}

/// The members of the finished set of `state`, oldest first.
async fn members<T>(h: &Harness, q: &Queue<T>, state: JobState) -> Vec<String> {
    redis::cmd("ZRANGE")
        .arg(q.keys().key(state.set_key()))
        .arg(0)
        .arg(-1)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// Enqueues `n` jobs with ids `<prefix>000`, `<prefix>001`, … (so ties
/// of score sort as they were made), claims and completes each; their ids
/// in order.
async fn complete_n(q: &Queue<Value>, prefix: &str, n: usize) -> Vec<JobId> {
    q.enqueue_bulk((0..n).map(|i| NewJob::new(json!(i)).id(format!("{prefix}{i:03}")).unwrap()))
        .await
        .unwrap();
    let mut done = Vec::new();
    while done.len() < n {
        for job in q.claim("w", LEASE, 100).await.unwrap() {
            q.complete(&job.id, job.token, &()).await.unwrap();
            done.push(job.id);
        }
    }
    done
}

/// Claims the next job and fails it for good (attempts 1) → dead.
async fn kill_next(q: &Queue<Value>) -> JobId {
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.fail(
        &job.id,
        job.token,
        "boom",
        FailAction::Retry(Duration::ZERO),
    )
    .await
    .unwrap();
    job.id
}

fn ids(list: &[JobId]) -> Vec<String> {
    list.iter().map(|id| id.to_string()).collect()
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_completion_trims_completed_jobs_older_than_the_age_rule(h: &Harness) {
    let q = h.queue::<Value>("age_completed");
    let old = complete_n(&q, "old", 3).await;
    age(h, &q, JobState::Completed, &old).await;
    set_meta(h, &q, &[("keep_completed_for", HOUR_MS)]).await;
    let new = complete_n(&q, "new", 1).await;
    assert_eq!(members(h, &q, JobState::Completed).await, ids(&new));
    for id in &old {
        assert!(q.jobs().get(id).await.unwrap().is_none(), "{id} kept");
    }
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_job_younger_than_the_age_rule_is_kept(h: &Harness) {
    let q = h.queue::<Value>("age_young");
    set_meta(h, &q, &[("keep_completed_for", HOUR_MS)]).await;
    let done = complete_n(&q, "j", 3).await;
    assert_eq!(members(h, &q, JobState::Completed).await, ids(&done));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_dead_job_trims_dead_jobs_older_than_the_age_rule(h: &Harness) {
    let q = h.queue::<Value>("age_dead");
    q.enqueue_bulk((0..3).map(|n| {
        NewJob::new(json!(n))
            .id(format!("d{n}"))
            .unwrap()
            .attempts(1)
    }))
    .await
    .unwrap();
    let old = vec![kill_next(&q).await, kill_next(&q).await];
    age(h, &q, JobState::Dead, &old).await;
    set_meta(h, &q, &[("keep_dead_for", HOUR_MS)]).await;
    let new = kill_next(&q).await;
    assert_eq!(members(h, &q, JobState::Dead).await, ids(&[new]));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_cancel_trims_cancelled_jobs_older_than_the_age_rule(h: &Harness) {
    let q = h.queue::<Value>("age_cancelled");
    let made: Vec<JobId> = q
        .enqueue_bulk((0..3).map(|n| NewJob::new(json!(n)).id(format!("c{n}")).unwrap()))
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    for id in &made[..2] {
        q.jobs().cancel(id).await.unwrap();
    }
    age(h, &q, JobState::Cancelled, &made[..2]).await;
    set_meta(h, &q, &[("keep_cancelled_for", HOUR_MS)]).await;
    q.jobs().cancel(&made[2]).await.unwrap();
    assert_eq!(members(h, &q, JobState::Cancelled).await, ids(&made[2..]));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn the_count_rule_still_holds_alongside_the_age_rule(h: &Harness) {
    let q = h.queue::<Value>("age_and_count");
    let old = complete_n(&q, "old", 2).await;
    age(h, &q, JobState::Completed, &old).await;
    set_meta(
        h,
        &q,
        &[("keep_completed_for", HOUR_MS), ("keep_completed", 3)],
    )
    .await;
    // Each completion trims to 3 and by age: the aged two go first, then
    // the oldest young ones beyond the count.
    let new = complete_n(&q, "new", 5).await;
    assert_eq!(members(h, &q, JobState::Completed).await, ids(&new[2..]));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_trim_by_age_deletes_at_most_100_jobs_a_call_with_their_logs(h: &Harness) {
    let q = h.queue::<Value>("age_bound");
    let old = complete_n(&q, "old", 150).await;
    q.jobs().log(&old[0], "a line").await.unwrap();
    age(h, &q, JobState::Completed, &old).await;
    set_meta(h, &q, &[("keep_completed_for", HOUR_MS)]).await;
    let first = complete_n(&q, "first", 1).await;
    let left = members(h, &q, JobState::Completed).await;
    assert_eq!(left.len(), 51, "100 of the 150 aged jobs deleted");
    assert_eq!(left[..50], ids(&old[100..]), "the oldest went first");
    let logs: u64 = redis::cmd("EXISTS")
        .arg(q.keys().logs(&old[0]))
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    assert_eq!(logs, 0, "the log went with its job");
    let second = complete_n(&q, "second", 1).await;
    let mut kept = first;
    kept.extend(second);
    assert_eq!(members(h, &q, JobState::Completed).await, ids(&kept));
    h.check(&q).await;
}

/// One stalled sweep, as a worker runs it.
async fn sweep(q: &Queue<Value>) {
    q.sweep_stalled(3, 1000).await.unwrap();
}

#[echomq_testkit::case(cluster)]
pub(super) async fn the_sweep_trims_all_three_sets_of_an_idle_queue_by_age(h: &Harness) {
    let q = h.queue::<Value>("age_idle");
    let done = complete_n(&q, "done", 2).await;
    q.enqueue_bulk((0..2).map(|n| {
        NewJob::new(json!(n))
            .id(format!("x{n}"))
            .unwrap()
            .attempts(1)
    }))
    .await
    .unwrap();
    let dead = kill_next(&q).await;
    let cancelled = JobId::new("x1").unwrap();
    q.jobs().cancel(&cancelled).await.unwrap();
    age(h, &q, JobState::Completed, &done).await;
    age(h, &q, JobState::Dead, &[dead]).await;
    age(h, &q, JobState::Cancelled, &[cancelled]).await;
    set_meta(
        h,
        &q,
        &[
            ("keep_completed_for", HOUR_MS),
            ("keep_dead_for", HOUR_MS),
            ("keep_cancelled_for", HOUR_MS),
        ],
    )
    .await;
    sweep(&q).await;
    let counts = q.admin().counts().await.unwrap();
    assert_eq!(
        (counts.completed, counts.dead, counts.cancelled),
        (0, 0, 0),
        "the sweep left finished jobs past their age"
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn an_idle_queue_is_trimmed_once_the_server_clock_passes_the_age(h: &Harness) {
    let q = h.queue::<Value>("age_clock");
    set_meta(h, &q, &[("keep_completed_for", 200)]).await;
    complete_n(&q, "j", 3).await;
    // No job comes after these: only the sweep, on the server clock, can
    // delete them, once 200 ms have passed.
    echomq_testkit::wait_for(
        "the sweep to trim the aged jobs",
        Duration::from_secs(10),
        || {
            let q = &q;
            async move {
                sweep(q).await;
                q.admin().counts().await.unwrap().completed == 0
            }
        },
    )
    .await;
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn the_sweep_trims_an_idle_queue_to_its_count(h: &Harness) {
    let q = h.queue::<Value>("count_idle");
    let done = complete_n(&q, "j", 5).await;
    set_meta(h, &q, &[("keep_completed", 2)]).await;
    sweep(&q).await;
    assert_eq!(members(h, &q, JobState::Completed).await, ids(&done[3..]));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn the_sweep_deletes_at_most_100_jobs_of_a_set_a_call(h: &Harness) {
    let q = h.queue::<Value>("age_sweep_bound");
    let old = complete_n(&q, "old", 150).await;
    age(h, &q, JobState::Completed, &old).await;
    set_meta(h, &q, &[("keep_completed_for", HOUR_MS)]).await;
    sweep(&q).await;
    assert_eq!(members(h, &q, JobState::Completed).await, ids(&old[100..]));
    sweep(&q).await;
    assert!(members(h, &q, JobState::Completed).await.is_empty());
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_worker_left_idle_trims_the_jobs_it_finished_once_past_their_age(h: &Harness) {
    let q = h.queue::<Value>("age_worker");
    q.admin()
        .set_retention(echomq::RetentionChange::new().completed_for(Duration::from_millis(300)))
        .await
        .unwrap();
    let worker = echomq::Worker::new(q.clone(), |_ctx: echomq::JobContext<Value>| async {
        Ok::<_, echomq::JobError>(())
    })
    .stalled_interval(Duration::from_millis(100))
    .start();
    q.enqueue_bulk((0..3).map(|n| json!(n))).await.unwrap();
    // The worker finishes them; nothing else comes: its sweep alone, on
    // the server clock, deletes them once 300 ms have passed.
    echomq_testkit::wait_for(
        "the worker's sweep to trim",
        Duration::from_secs(10),
        || {
            let q = &q;
            async move {
                let counts = q.admin().counts().await.unwrap();
                counts.pending == 0 && counts.active == 0 && counts.completed == 0
            }
        },
    )
    .await;
    let stats = worker.shutdown(Duration::from_secs(10)).await;
    assert_eq!(stats.completed, 3);
    h.check(&q).await;
}
