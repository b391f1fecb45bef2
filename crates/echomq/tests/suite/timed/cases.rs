//! What a timed enqueue writes, on both wires, and the client's checks.

use super::common::{Harness, job_field as field, meta_field, server_now};
use echomq::{Error, JobState, NewJob, Queue};
use echomq_testkit::invariant::check_invariant;
use serde_json::{Value, json};
use std::time::{Duration, SystemTime};

/// The `deadlines` set, member and score, in order.
async fn deadlines<T>(h: &Harness, q: &Queue<T>) -> Vec<(String, u64)> {
    redis::cmd("ZRANGE")
        .arg(q.keys().deadlines())
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// How many keys the queue has (all in one slot).
async fn key_count<T>(h: &Harness, q: &Queue<T>) -> u64 {
    let mut exists = redis::cmd("EXISTS");
    for key in &echomq::protocol::QueueKey::ALL[1..] {
        exists.arg(q.keys().key(*key));
    }
    exists.query_async(&mut h.raw(q).await).await.unwrap()
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_timed_enqueue_stores_its_fields_marks_the_queue_and_lists_its_deadline(
    h: &Harness,
) {
    let q = h.queue::<Value>("timed_enqueue");
    let plain = q.enqueue(json!(0)).await.unwrap();
    assert_eq!(meta_field(h, &q, "timed").await, None, "no option, no mark");
    assert_eq!(field(h, &q, &plain.id, "time_limit").await, None);

    let before = server_now(h, &q).await;
    let limited = q
        .enqueue(NewJob::new(json!(1)).time_limit(Duration::from_millis(1500)))
        .await
        .unwrap();
    assert_eq!(meta_field(h, &q, "timed").await.as_deref(), Some("1"));
    assert_eq!(
        field(h, &q, &limited.id, "time_limit").await.as_deref(),
        Some("1500")
    );
    assert_eq!(field(h, &q, &limited.id, "start_by").await, None);
    assert!(deadlines(h, &q).await.is_empty(), "no deadline, no member");

    let within = q
        .enqueue(NewJob::new(json!(2)).start_within(Duration::from_secs(600)))
        .await
        .unwrap();
    let after = server_now(h, &q).await;
    let start_by: u64 = field(h, &q, &within.id, "start_by")
        .await
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (before + 600_000..=after + 600_000).contains(&start_by),
        "start_by {start_by} is now + 600000 on the server's clock"
    );

    let deadline = SystemTime::now() + Duration::from_secs(7200);
    let scheduled = q
        .enqueue(
            NewJob::new(json!(3))
                .after(Duration::from_secs(60))
                .start_by(deadline)
                .time_limit(Duration::from_secs(30)),
        )
        .await
        .unwrap();
    let deadline_ms = deadline
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert_eq!(
        field(h, &q, &scheduled.id, "start_by").await,
        Some(deadline_ms.to_string())
    );
    assert_eq!(
        deadlines(h, &q).await,
        [
            (within.id.to_string(), start_by),
            (scheduled.id.to_string(), deadline_ms)
        ]
    );
    let record = q.jobs().get(&scheduled.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Scheduled);
    // GET answers both fields, as integers, on both wires.
    assert_eq!(
        (record.time_limit, record.start_by, record.reason),
        (Some(30_000), Some(deadline_ms), None)
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn an_existing_id_keeps_its_options_and_marks_nothing(h: &Harness) {
    let q = h.queue::<Value>("timed_existing");
    let id = "same";
    let first = q
        .enqueue(NewJob::new(json!(1)).id(id).unwrap())
        .await
        .unwrap();
    let again = q
        .enqueue(
            NewJob::new(json!(2))
                .id(id)
                .unwrap()
                .time_limit(Duration::from_secs(5))
                .start_within(Duration::from_secs(60)),
        )
        .await
        .unwrap();
    assert!(first.created && !again.created);
    assert_eq!(field(h, &q, &first.id, "time_limit").await, None);
    assert_eq!(field(h, &q, &first.id, "start_by").await, None);
    assert_eq!(meta_field(h, &q, "timed").await, None);
    assert!(deadlines(h, &q).await.is_empty());
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_bulk_enqueue_sends_timed_jobs_alone_in_order(h: &Harness) {
    let q = h.queue::<Value>("timed_bulk");
    let jobs = vec![
        NewJob::new(json!(0)),
        NewJob::new(json!(1)).time_limit(Duration::from_secs(9)),
        NewJob::new(json!(2)),
        NewJob::new(json!(3)).start_within(Duration::from_secs(60)),
        NewJob::new(json!(4)),
    ];
    let enqueued = q.enqueue_bulk(jobs).await.unwrap();
    assert_eq!(enqueued.len(), 5);
    assert!(enqueued.iter().all(|job| job.created));
    let claimed = q.claim("w", Duration::from_secs(30), 5).await.unwrap();
    let payloads: Vec<Value> = claimed.iter().map(|job| job.payload().unwrap()).collect();
    assert_eq!(payloads, [json!(0), json!(1), json!(2), json!(3), json!(4)]);
    assert_eq!(
        field(h, &q, &enqueued[1].id, "time_limit").await.as_deref(),
        Some("9000")
    );
    assert!(field(h, &q, &enqueued[3].id, "start_by").await.is_some());
    for plain in [0, 2, 4] {
        assert_eq!(field(h, &q, &enqueued[plain].id, "time_limit").await, None);
        assert_eq!(field(h, &q, &enqueued[plain].id, "start_by").await, None);
    }
}

/// The argument the client names refusing `jobs` (one job, or a bulk of
/// several) before it sends anything, and why.
async fn refused_before_sending(
    q: &Queue<Value>,
    mut jobs: Vec<NewJob<Value>>,
) -> (&'static str, String) {
    let err = if jobs.len() == 1 {
        q.enqueue(jobs.remove(0)).await.unwrap_err()
    } else {
        q.enqueue_bulk(jobs).await.unwrap_err()
    };
    match err {
        Error::BadArgument { name, reason } => (name, reason),
        err => panic!("{err:?}"),
    }
}

#[echomq_testkit::case]
pub(super) async fn the_client_refuses_a_zero_time_limit_and_sends_nothing(h: &Harness) {
    let q = h.queue::<Value>("client_tl_zero");
    let zero = || NewJob::new(json!(1)).time_limit(Duration::ZERO);
    for jobs in [vec![zero()], vec![NewJob::new(json!(0)), zero()]] {
        assert_eq!(refused_before_sending(&q, jobs).await.0, "time_limit");
    }
    assert_eq!(key_count(h, &q).await, 0, "nothing sent");
}

#[echomq_testkit::case]
pub(super) async fn the_client_refuses_a_deadline_in_the_past_and_sends_nothing(h: &Harness) {
    let q = h.queue::<Value>("client_sb_past");
    let past = SystemTime::now() - Duration::from_secs(1);
    let (name, reason) =
        refused_before_sending(&q, vec![NewJob::new(json!(1)).start_by(past)]).await;
    assert_eq!(name, "start_by");
    assert!(reason.contains("not in the future"), "{reason}");
    let at = SystemTime::now() + Duration::from_secs(3600);
    let not_after_run_at = NewJob::new(json!(1)).at(at).start_by(at);
    assert_eq!(
        refused_before_sending(&q, vec![not_after_run_at]).await.0,
        "start_by"
    );
    assert_eq!(key_count(h, &q).await, 0, "nothing sent");
}

#[echomq_testkit::case]
pub(super) async fn the_client_refuses_a_zero_start_within_and_sends_nothing(h: &Harness) {
    let q = h.queue::<Value>("client_sw_zero");
    let minute = Duration::from_secs(60);
    for job in [
        NewJob::new(json!(1)).start_within(Duration::ZERO),
        NewJob::new(json!(1)).after(minute).start_within(minute),
        NewJob::new(json!(1))
            .dedup("k")
            .debounce(Duration::from_secs(1))
            .start_within(minute),
    ] {
        assert_eq!(
            refused_before_sending(&q, vec![job]).await.0,
            "start_within"
        );
    }
    assert_eq!(key_count(h, &q).await, 0, "nothing sent");
}

#[echomq_testkit::case]
pub(super) async fn the_invariant_sees_a_waiting_job_missing_from_deadlines(h: &Harness) {
    let q = h.queue::<Value>("timed_invariant");
    let job = q
        .enqueue(NewJob::new(json!(1)).start_within(Duration::from_secs(60)))
        .await
        .unwrap();
    h.check(&q).await;
    let _: u64 = redis::cmd("ZREM")
        .arg(q.keys().deadlines())
        .arg(job.id.as_str())
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let problems = check_invariant(h.urls(), q.keys()).await.unwrap_err();
    assert!(problems.contains("in deadlines"), "{problems}");
    let _: u64 = redis::cmd("HDEL")
        .arg(q.keys().meta())
        .arg("timed")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let problems = check_invariant(h.urls(), q.keys()).await.unwrap_err();
    assert!(problems.contains("no timed mark"), "{problems}");
}
