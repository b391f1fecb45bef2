//! The operator plane: Admin (pause, resume, drain, obliterate, registry),
//! Jobs (update, progress, log, reprocess, list) and the events reader.

mod common;

use common::{Harness, blocked_clients, reclaimed, refusal, wait_for};
use echomq::{
    EventKind, EventsFrom, FailAction, JobContext, JobError, JobId, JobState, NewJob, Refusal,
    Worker,
};
use echomq_testkit::invariant::queue_keys;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const BOUND: Duration = Duration::from_secs(30);
const LEASE: Duration = Duration::from_secs(30);

#[tokio::test]
async fn pause_stops_claims_and_resume_restores_them() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("pause");
    q.enqueue_bulk((0..3).map(|n| json!(n))).await.unwrap();
    let running = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.admin().pause().await.unwrap();
    assert!(q.counts().await.unwrap().paused);
    assert!(
        q.claim("w", LEASE, 10).await.unwrap().is_empty(),
        "a paused queue hands out nothing"
    );
    q.enqueue(json!("while paused")).await.unwrap();
    q.complete(&running.id, running.token, &()).await.unwrap();
    q.admin().resume().await.unwrap();
    assert_eq!(q.claim("w", LEASE, 10).await.unwrap().len(), 3);
    h.check(&q).await;
}

#[tokio::test]
async fn three_idle_workers_claim_nothing_while_paused_and_resume_wakes_them() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("pause_workers");
    q.admin().pause().await.unwrap();
    let workers: Vec<_> = (0..3)
        .map(|_| {
            Worker::new(q.clone(), |_ctx: JobContext<Value>| async move {
                Ok::<_, JobError>(())
            })
            .idle_wait(Duration::from_secs(60))
            .start()
        })
        .collect();
    q.enqueue_bulk((0..30).map(|n| json!(n))).await.unwrap();
    wait_for("all three workers to sleep", BOUND, || async {
        blocked_clients(&h, &q).await == 3
    })
    .await;
    let counts = q.counts().await.unwrap();
    assert_eq!(
        (counts.pending, counts.active, counts.completed),
        (30, 0, 0),
        "nothing claimed while paused"
    );
    q.admin().resume().await.unwrap();
    wait_for("every job to complete after resume", BOUND, || async {
        q.counts().await.unwrap().completed == 30
    })
    .await;
    for worker in workers {
        assert_eq!(worker.shutdown(BOUND).await.lost, 0);
    }
    h.check(&q).await;
}

#[tokio::test]
async fn drain_deletes_pending_and_with_the_flag_scheduled_jobs() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("drain");
    q.enqueue_bulk((0..2500).map(|n| json!(n))).await.unwrap();
    q.enqueue_bulk((0..5).map(|n| NewJob::new(json!(n)).delay(Duration::from_secs(3600))))
        .await
        .unwrap();
    let active = q.claim_one("w", LEASE).await.unwrap().unwrap();
    assert_eq!(q.admin().drain(false).await.unwrap(), 2499);
    h.check(&q).await;
    let counts = q.counts().await.unwrap();
    assert_eq!((counts.pending, counts.scheduled, counts.active), (0, 5, 1));
    assert_eq!(q.admin().drain(true).await.unwrap(), 5);
    assert_eq!(q.counts().await.unwrap().scheduled, 0);
    assert_eq!(
        q.get(&active.id).await.unwrap().unwrap().state,
        JobState::Active,
        "active jobs are left alone"
    );
    h.check(&q).await;
}

#[tokio::test]
async fn obliterate_of_a_running_queue_is_refused_notpaused() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("obliterate_running");
    q.enqueue(json!(1)).await.unwrap();
    assert_eq!(
        refusal(q.admin().obliterate(false).await.unwrap_err()),
        Refusal::NotPaused
    );
    assert_eq!(q.counts().await.unwrap().pending, 1);
}

#[tokio::test]
async fn obliterate_with_active_jobs_is_refused_badstate_active_unless_forced() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("obliterate_active");
    q.enqueue_bulk((0..10).map(|n| json!(n))).await.unwrap();
    q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.admin().pause().await.unwrap();
    assert_eq!(
        refusal(q.admin().obliterate(false).await.unwrap_err()),
        Refusal::BadState(JobState::Active)
    );
    assert_eq!(
        q.counts().await.unwrap().total(),
        10,
        "a refused obliterate deletes nothing"
    );
    q.admin().obliterate(true).await.unwrap();
    assert!(
        queue_keys(h.urls(), q.keys()).await.unwrap().is_empty(),
        "every key of the queue is gone"
    );
    assert!(
        !h.connector
            .queues()
            .await
            .unwrap()
            .contains(&"obliterate_active".to_string())
    );
}

#[tokio::test]
async fn obliterate_of_200000_jobs_leaves_no_key_and_the_server_keeps_answering() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("obliterate_big");
    q.enqueue_bulk((0..200_000u32).map(|n| json!(n)))
        .await
        .unwrap();
    q.repeat(
        "beat",
        echomq::Repeat::every(Duration::from_secs(3600)),
        &json!("r"),
    )
    .await
    .unwrap();
    q.jobs()
        .log(&JobId::new("1").unwrap(), "a line")
        .await
        .unwrap();
    q.admin().pause().await.unwrap();
    let url = h.urls()[0].clone();
    let pinger = tokio::spawn(async move {
        let client = redis::Client::open(url).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let (mut pings, mut worst) = (0u32, Duration::ZERO);
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline {
            let sent = Instant::now();
            let pong: String = redis::cmd("PING").query_async(&mut conn).await.unwrap();
            assert_eq!(pong, "PONG");
            worst = worst.max(sent.elapsed());
            pings += 1;
            if pings > 5
                && redis::cmd("EXISTS")
                    .arg("emq:{obliterate_big}:pending")
                    .query_async::<u64>(&mut conn)
                    .await
                    .unwrap()
                    == 0
            {
                break;
            }
        }
        (pings, worst)
    });
    let mut chunks = 0;
    q.admin()
        .obliterate_with(false, |_| chunks += 1)
        .await
        .unwrap();
    let (pings, worst) = pinger.await.unwrap();
    assert!(
        chunks >= 200_000 / echomq::DELETE_CHUNK,
        "deleted in bounded chunks ({chunks})"
    );
    assert!(
        pings > 5,
        "the second client was answered during the obliterate ({pings} pings)"
    );
    assert!(
        worst < Duration::from_secs(2),
        "no ping waited behind a long command (worst {worst:?})"
    );
    assert!(
        queue_keys(h.urls(), q.keys()).await.unwrap().is_empty(),
        "every key of the queue is gone"
    );
}

#[tokio::test]
async fn update_replaces_the_payload() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("update");
    let job = q.enqueue(json!({"v": 1})).await.unwrap();
    q.jobs().update(&job.id, &json!({"v": 2})).await.unwrap();
    assert_eq!(
        q.get(&job.id)
            .await
            .unwrap()
            .unwrap()
            .payload_as::<Value>()
            .unwrap(),
        json!({"v": 2})
    );
    h.check(&q).await;
}

#[tokio::test]
async fn update_of_a_missing_job_is_refused_nojob() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("update_missing");
    let err = q
        .jobs()
        .update(&JobId::new("ghost").unwrap(), &json!(1))
        .await
        .unwrap_err();
    assert_eq!(refusal(err), Refusal::NoJob);
    assert!(queue_keys(h.urls(), q.keys()).await.unwrap().is_empty());
}

#[tokio::test]
async fn progress_with_a_stale_token_is_refused_notactive() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("progress_stale");
    q.enqueue(json!(1)).await.unwrap();
    let (old, new) = reclaimed(&q).await;
    assert_eq!(
        refusal(
            q.jobs()
                .progress(&old.id, old.token, &50)
                .await
                .unwrap_err()
        ),
        Refusal::NotActive
    );
    q.jobs()
        .progress(&new.id, new.token, &json!({"done": 7}))
        .await
        .unwrap();
    assert_eq!(
        q.get(&new.id).await.unwrap().unwrap().progress.as_deref(),
        Some(r#"{"done":7}"#)
    );
    h.check(&q).await;
}

#[tokio::test]
async fn a_handler_writes_progress_and_log_lines() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("progress_log");
    let job = q.enqueue(json!(1)).await.unwrap();
    let worker = Worker::new(q.clone(), |ctx: JobContext<Value>| async move {
        ctx.log("starting").await.map_err(JobError::retry)?;
        ctx.progress(&50).await.map_err(JobError::retry)?;
        ctx.log("half way").await.map_err(JobError::retry)?;
        Ok::<_, JobError>(())
    })
    .start();
    wait_for("completion", BOUND, || async {
        q.get(&job.id).await.unwrap().unwrap().state == JobState::Completed
    })
    .await;
    worker.shutdown(BOUND).await;
    let record = q.get(&job.id).await.unwrap().unwrap();
    assert_eq!((record.progress.as_deref(), record.logs), (Some("50"), 2));
    assert_eq!(
        q.jobs().logs(&job.id, 10).await.unwrap(),
        ["starting", "half way"]
    );
}

#[tokio::test]
async fn logs_keep_the_newest_lines() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("log_cap");
    let job = q.enqueue(json!(1)).await.unwrap();
    for n in 0..(echomq::LOG_KEEP + 5) {
        q.jobs().log(&job.id, &format!("line {n}")).await.unwrap();
    }
    assert_eq!(
        q.get(&job.id).await.unwrap().unwrap().logs,
        echomq::LOG_KEEP
    );
    assert_eq!(
        q.jobs().logs(&job.id, 2).await.unwrap(),
        [
            format!("line {}", echomq::LOG_KEEP + 3),
            format!("line {}", echomq::LOG_KEEP + 4)
        ]
    );
    assert_eq!(
        refusal(
            q.jobs()
                .log(&JobId::new("ghost").unwrap(), "x")
                .await
                .unwrap_err()
        ),
        Refusal::NoJob
    );
    h.check(&q).await;
}

#[tokio::test]
async fn reprocess_sends_a_finished_job_back_with_its_counters_cleared() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("reprocess");
    let job = q.enqueue(NewJob::new(json!(1)).attempts(1)).await.unwrap();
    let claimed = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.fail(
        &claimed.id,
        claimed.token,
        "boom",
        FailAction::Retry(Duration::ZERO),
    )
    .await
    .unwrap();
    assert_eq!(q.get(&job.id).await.unwrap().unwrap().state, JobState::Dead);
    q.jobs().reprocess(&job.id).await.unwrap();
    h.check(&q).await;
    let record = q.get(&job.id).await.unwrap().unwrap();
    assert_eq!(
        (record.state, record.failures, record.error, record.claims),
        (JobState::Pending, 0, None, 1)
    );
    assert_eq!(
        q.claim_one("w", LEASE).await.unwrap().unwrap().token,
        2,
        "claims kept: a larger token"
    );
}

#[tokio::test]
async fn reprocess_of_a_pending_job_is_refused_badstate() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("reprocess_pending");
    let job = q.enqueue(json!(1)).await.unwrap();
    assert_eq!(
        refusal(q.jobs().reprocess(&job.id).await.unwrap_err()),
        Refusal::BadState(JobState::Pending)
    );
    h.check(&q).await;
}

#[tokio::test]
async fn list_pages_through_a_state() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("list");
    q.enqueue_bulk((0..25).map(|n| json!(n))).await.unwrap();
    let (page, total) = q.jobs().list(JobState::Pending, 20, 10).await.unwrap();
    assert_eq!(total, 25);
    let payloads: Vec<Value> = page.iter().map(|r| r.payload_as().unwrap()).collect();
    assert_eq!(payloads, (20..25).map(|n| json!(n)).collect::<Vec<_>>());
    assert!(
        q.jobs()
            .list(JobState::Dead, 0, 10)
            .await
            .unwrap()
            .0
            .is_empty()
    );
}

#[tokio::test]
async fn the_events_reader_yields_typed_events_and_resumes_from_an_id() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("events_reader");
    q.enqueue(NewJob::new(json!(1)).id("e1").unwrap())
        .await
        .unwrap();
    let claimed = q.claim_one("wk", LEASE).await.unwrap().unwrap();
    let mut events = q.events(EventsFrom::Beginning).await.unwrap();
    let first = events.next().await.unwrap();
    assert_eq!(
        (first.job.as_ref().map(JobId::as_str), first.kind.clone()),
        (Some("e1"), EventKind::Enqueued)
    );
    let second = events.next().await.unwrap();
    assert_eq!(
        second.kind,
        EventKind::Claimed {
            token: 1,
            worker: "wk".into()
        }
    );
    // Live: an event written now arrives.
    q.complete(&claimed.id, claimed.token, &()).await.unwrap();
    assert_eq!(events.next().await.unwrap().kind, EventKind::Completed);
    // Resumable: a new reader after the first event sees the rest.
    let mut resumed = q.events(EventsFrom::After(first.stream_id)).await.unwrap();
    assert_eq!(resumed.next().await.unwrap().stream_id, second.stream_id);
    assert!(
        q.events(EventsFrom::Now)
            .await
            .unwrap()
            .next_within(Duration::from_millis(50))
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn the_registry_lists_queues_that_were_enqueued_to() {
    let h = Harness::server().await;
    h.queue::<Value>("registry_a")
        .enqueue(json!(1))
        .await
        .unwrap();
    h.queue::<Value>("registry_b")
        .enqueue_bulk([json!(1)])
        .await
        .unwrap();
    let _never_used = h.queue::<Value>("registry_c");
    assert_eq!(
        h.connector.queues().await.unwrap(),
        ["registry_a", "registry_b"]
    );
}
