//! The operator-plane cases; each takes a harness (a server on wire 4, or
//! one with the module loaded on wire 6) and uses its own queue.

use super::common::{
    Harness, blocked_clients, claimed_ids, enqueue_named, events, raw_call, reclaimed, refusal,
    retry_now,
};
use echomq::{
    EventKind, EventsFrom, FailAction, JobContext, JobError, JobId, JobState, NewJob, Queue,
    Refusal, Worker,
};
use echomq_testkit::{invariant::queue_keys, wait_for};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[path = "entries.rs"]
mod entries;
#[path = "merged.rs"]
mod merged;

const BOUND: Duration = Duration::from_secs(30);
const LEASE: Duration = Duration::from_secs(30);

fn id(id: &str) -> JobId {
    JobId::new(id).unwrap()
}

/// Every key of the queue with its `DUMP`, to compare before and after.
async fn dump<T>(h: &Harness, q: &Queue<T>) -> Vec<(String, Vec<u8>)> {
    let mut conn = h.raw(q).await;
    let mut out = Vec::new();
    for key in queue_keys(h.urls(), q.keys()).await.unwrap() {
        let value: Vec<u8> = redis::cmd("DUMP")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        out.push((key, value));
    }
    out
}

/// A plain RESP2 `SSUBSCRIBE` to a queue's cancel channel (what a worker
/// holds), to see the ids a verb publishes there.
struct CancelListener {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl CancelListener {
    async fn open<T>(h: &Harness, q: &Queue<T>) -> Self {
        let addr = h.urls()[0]
            .trim_start_matches("redis://")
            .trim_end_matches('/')
            .to_string();
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let channel = q.keys().cancel_channel();
        let command = format!(
            "*2\r\n$10\r\nSSUBSCRIBE\r\n${}\r\n{channel}\r\n",
            channel.len()
        );
        stream.write_all(command.as_bytes()).await.unwrap();
        let mut listener = Self {
            stream,
            buf: Vec::new(),
        };
        assert_eq!(listener.next().await[0], "ssubscribe");
        listener
    }

    /// The next push, as its strings; panics when none arrives within BOUND.
    async fn next(&mut self) -> Vec<String> {
        tokio::time::timeout(BOUND, async {
            loop {
                if let Some((message, used)) = parse_push(&self.buf) {
                    self.buf.drain(..used);
                    return message;
                }
                let mut chunk = [0u8; 4096];
                let n = self.stream.read(&mut chunk).await.unwrap();
                assert!(n > 0, "the subscription was closed");
                self.buf.extend_from_slice(&chunk[..n]);
            }
        })
        .await
        .expect("a message on the cancel channel")
    }

    /// The next `n` ids published on the channel.
    async fn ids(&mut self, n: usize) -> Vec<String> {
        let mut ids = Vec::new();
        for _ in 0..n {
            let message = self.next().await;
            assert_eq!(message[0], "smessage", "{message:?}");
            ids.push(message[2].clone());
        }
        ids
    }
}

/// One RESP2 array of bulk strings and integers from the front of `buf`,
/// and how many bytes it took; `None` while incomplete.
fn parse_push(buf: &[u8]) -> Option<(Vec<String>, usize)> {
    let line = |at: usize| -> Option<(String, usize)> {
        let end = at + buf.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        Some((String::from_utf8_lossy(&buf[at..end]).into_owned(), end + 2))
    };
    let (head, mut at) = line(0)?;
    let count: usize = head.strip_prefix('*').expect("an array").parse().unwrap();
    let mut items = Vec::with_capacity(count);
    for _ in 0..count {
        let (head, next) = line(at)?;
        if let Some(len) = head.strip_prefix('$') {
            let end = next + len.parse::<usize>().unwrap();
            if buf.len() < end + 2 {
                return None;
            }
            items.push(String::from_utf8_lossy(&buf[next..end]).into_owned());
            at = end + 2;
        } else {
            items.push(head[1..].to_string());
            at = next;
        }
    }
    Some((items, at))
}

#[echomq_testkit::case]
pub(super) async fn pause_stops_claims_and_resume_restores_them(h: &Harness) {
    let q = h.queue::<Value>("pause");
    q.enqueue_bulk((0..3).map(|n| json!(n))).await.unwrap();
    let running = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.admin().pause().await.unwrap();
    assert!(q.admin().counts().await.unwrap().paused);
    assert!(
        q.claim("w", LEASE, 10).await.unwrap().is_empty(),
        "a paused queue hands out nothing"
    );
    q.enqueue(json!("while paused")).await.unwrap();
    q.complete(&running.id, running.token, &()).await.unwrap();
    q.admin().resume().await.unwrap();
    assert!(!q.admin().counts().await.unwrap().paused);
    assert_eq!(q.claim("w", LEASE, 10).await.unwrap().len(), 3);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn three_idle_workers_claim_nothing_while_paused_and_resume_wakes_them(
    h: &Harness,
) {
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
        blocked_clients(h, &q).await == 3
    })
    .await;
    let counts = q.admin().counts().await.unwrap();
    assert_eq!(
        (counts.pending, counts.active, counts.completed),
        (30, 0, 0),
        "nothing claimed while paused"
    );
    q.admin().resume().await.unwrap();
    wait_for("every job to complete after resume", BOUND, || async {
        q.admin().counts().await.unwrap().completed == 30
    })
    .await;
    for worker in workers {
        assert_eq!(worker.shutdown(BOUND).await.lost, 0);
    }
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn drain_deletes_pending_and_with_the_flag_scheduled_jobs(h: &Harness) {
    let q = h.queue::<Value>("drain");
    q.enqueue_bulk((0..2500).map(|n| json!(n))).await.unwrap();
    q.enqueue_bulk((0..5).map(|n| NewJob::new(json!(n)).after(Duration::from_secs(3600))))
        .await
        .unwrap();
    let active = q.claim_one("w", LEASE).await.unwrap().unwrap();
    let logged = q.jobs().list(JobState::Pending, 0, 1).await.unwrap().0[0]
        .id
        .clone();
    q.jobs().log(&logged, "a line").await.unwrap();
    assert_eq!(
        q.admin().drain(echomq::DrainScope::PENDING).await.unwrap(),
        2499
    );
    h.check(&q).await;
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.scheduled, counts.active), (0, 5, 1));
    let mut conn = h.raw(&q).await;
    let logs: u64 = redis::cmd("EXISTS")
        .arg(q.keys().logs(&logged))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(logs, 0, "a drained job's logs go with it");
    assert_eq!(
        q.admin()
            .drain(echomq::DrainScope::PENDING_AND_SCHEDULED)
            .await
            .unwrap(),
        5
    );
    assert_eq!(q.admin().counts().await.unwrap().scheduled, 0);
    assert_eq!(
        q.jobs().get(&active.id).await.unwrap().unwrap().state,
        JobState::Active,
        "active jobs are left alone"
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn drain_of_an_empty_queue_answers_0_and_writes_no_event(h: &Harness) {
    let q = h.queue::<Value>("drain_empty");
    assert_eq!(
        q.admin()
            .drain(echomq::DrainScope::PENDING_AND_SCHEDULED)
            .await
            .unwrap(),
        0
    );
    assert!(queue_keys(h.urls(), q.keys()).await.unwrap().is_empty());
}

#[echomq_testkit::case]
pub(super) async fn obliterate_of_a_running_queue_is_refused_notpaused(h: &Harness) {
    let q = h.queue::<Value>("obliterate_running");
    q.enqueue_bulk([json!(1), json!(2)]).await.unwrap();
    q.claim_one("w", LEASE).await.unwrap().unwrap();
    let before = dump(h, &q).await;
    assert_eq!(
        refusal(
            q.admin()
                .obliterate(echomq::IfActive::Force)
                .await
                .unwrap_err()
        ),
        Refusal::NotPaused,
        "NOTPAUSED is checked first, even with active jobs and FORCE"
    );
    assert_eq!(
        dump(h, &q).await,
        before,
        "a refused obliterate writes nothing"
    );
}

#[echomq_testkit::case]
pub(super) async fn obliterate_with_active_jobs_is_refused_badstate_active_unless_forced(
    h: &Harness,
) {
    let q = h.queue::<Value>("obliterate_active");
    q.enqueue_bulk((0..10).map(|n| json!(n))).await.unwrap();
    q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.admin().pause().await.unwrap();
    let before = dump(h, &q).await;
    assert_eq!(
        refusal(
            q.admin()
                .obliterate(echomq::IfActive::Refuse)
                .await
                .unwrap_err()
        ),
        Refusal::BadState(JobState::Active)
    );
    assert_eq!(
        dump(h, &q).await,
        before,
        "a refused obliterate writes nothing"
    );
    q.admin().obliterate(echomq::IfActive::Force).await.unwrap();
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

#[echomq_testkit::case]
pub(super) async fn obliterate_force_publishes_each_active_id_on_the_cancel_channel(h: &Harness) {
    let q = h.queue::<Value>("obliterate_publishes");
    q.enqueue_bulk((0..5).map(|n| json!(n))).await.unwrap();
    let held = claimed_ids(&q, 3).await;
    let mut listener = CancelListener::open(h, &q).await;
    q.admin().pause().await.unwrap();
    let mut conn = h.raw(&q).await;
    let _: () = redis::cmd("SET")
        .arg(q.keys().sweep_guard())
        .arg("w")
        .query_async(&mut conn)
        .await
        .unwrap();
    q.admin().obliterate(echomq::IfActive::Force).await.unwrap();
    let mut told = listener.ids(3).await;
    told.sort();
    let mut held = held;
    held.sort();
    assert_eq!(told, held);
    assert!(
        queue_keys(h.urls(), q.keys()).await.unwrap().is_empty(),
        "every key of the queue is gone, the sweep guard too"
    );
}

#[echomq_testkit::case]
pub(super) async fn obliterate_of_a_queue_with_no_keys_answers_0(h: &Harness) {
    let q = h.queue::<Value>("obliterate_gone");
    // Never used, so never paused either: nothing is checked, nothing refused.
    q.admin()
        .obliterate(echomq::IfActive::Refuse)
        .await
        .unwrap();
    q.enqueue(json!(1)).await.unwrap();
    q.admin().pause().await.unwrap();
    q.admin()
        .obliterate(echomq::IfActive::Refuse)
        .await
        .unwrap();
    assert!(queue_keys(h.urls(), q.keys()).await.unwrap().is_empty());
    q.admin()
        .obliterate(echomq::IfActive::Refuse)
        .await
        .unwrap();
    let zero = raw_call(h, &q, "obliterate", &[]).await.unwrap();
    assert_eq!(zero, redis::Value::Int(0), "an integer 0 once gone");
}

#[echomq_testkit::case]
pub(super) async fn obliterate_of_200000_jobs_leaves_no_key_and_the_server_keeps_answering(
    h: &Harness,
) {
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
    q.jobs().log(&id("1"), "a line").await.unwrap();
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
        .obliterate_with(echomq::IfActive::Refuse, |_| chunks += 1)
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

#[echomq_testkit::case]
pub(super) async fn update_replaces_the_payload(h: &Harness) {
    let q = h.queue::<Value>("update");
    let job = q.enqueue(json!({"v": 1})).await.unwrap();
    q.jobs().update(&job.id, &json!({"v": 2})).await.unwrap();
    assert_eq!(
        q.jobs()
            .get(&job.id)
            .await
            .unwrap()
            .unwrap()
            .payload_as::<Value>()
            .unwrap(),
        json!({"v": 2})
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn update_of_a_missing_job_is_refused_nojob(h: &Harness) {
    let q = h.queue::<Value>("update_missing");
    let err = q.jobs().update(&id("ghost"), &json!(1)).await.unwrap_err();
    assert_eq!(refusal(err), Refusal::NoJob);
    assert!(queue_keys(h.urls(), q.keys()).await.unwrap().is_empty());
}

#[echomq_testkit::case]
pub(super) async fn progress_with_a_stale_token_is_refused_notactive(h: &Harness) {
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
        q.jobs()
            .get(&new.id)
            .await
            .unwrap()
            .unwrap()
            .progress
            .as_deref(),
        Some(r#"{"done":7}"#)
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn progress_of_a_missing_job_is_refused_notactive(h: &Harness) {
    let q = h.queue::<Value>("progress_missing");
    assert_eq!(
        refusal(q.jobs().progress(&id("ghost"), 1, &50).await.unwrap_err()),
        Refusal::NotActive
    );
    assert!(queue_keys(h.urls(), q.keys()).await.unwrap().is_empty());
}

#[echomq_testkit::case]
pub(super) async fn a_handler_writes_progress_and_log_lines(h: &Harness) {
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
        q.jobs().get(&job.id).await.unwrap().unwrap().state == JobState::Completed
    })
    .await;
    worker.shutdown(BOUND).await;
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!((record.progress.as_deref(), record.logs), (Some("50"), 2));
    assert_eq!(
        q.jobs().logs(&job.id, 10).await.unwrap(),
        ["starting", "half way"]
    );
}

#[echomq_testkit::case]
pub(super) async fn logs_keep_the_newest_lines(h: &Harness) {
    let q = h.queue::<Value>("log_cap");
    let job = q.enqueue(json!(1)).await.unwrap();
    for n in 0..(echomq::LOG_KEEP + 5) {
        let length = q.jobs().log(&job.id, &format!("line {n}")).await.unwrap();
        assert_eq!(length, (n + 1).min(echomq::LOG_KEEP));
    }
    assert_eq!(
        q.jobs().get(&job.id).await.unwrap().unwrap().logs,
        echomq::LOG_KEEP
    );
    assert_eq!(
        q.jobs().logs(&job.id, 2).await.unwrap(),
        [
            format!("line {}", echomq::LOG_KEEP + 3),
            format!("line {}", echomq::LOG_KEEP + 4)
        ]
    );
    let kept = raw_call(h, &q, "log", &[job.id.as_str(), "last", "KEEP", "3"])
        .await
        .unwrap();
    assert_eq!(kept, redis::Value::Int(3), "KEEP caps the reply too");
    assert_eq!(q.jobs().get(&job.id).await.unwrap().unwrap().logs, 3);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn log_of_a_missing_job_is_refused_nojob(h: &Harness) {
    let q = h.queue::<Value>("log_missing");
    assert_eq!(
        refusal(q.jobs().log(&id("ghost"), "x").await.unwrap_err()),
        Refusal::NoJob
    );
    assert!(
        queue_keys(h.urls(), q.keys()).await.unwrap().is_empty(),
        "no orphan log"
    );
}

#[echomq_testkit::case]
pub(super) async fn remove_deletes_a_job_in_any_other_state_with_its_logs(h: &Harness) {
    let q = h.queue::<Value>("remove_any");
    let mut jobs = Vec::new();
    for action in [None, Some(FailAction::Dead), Some(FailAction::Cancelled)] {
        let job = q.enqueue(json!("finished")).await.unwrap().id;
        let claimed = q.claim_one("w", LEASE).await.unwrap().unwrap();
        match action {
            None => q.complete(&claimed.id, claimed.token, &()).await.unwrap(),
            Some(action) => {
                q.fail(&claimed.id, claimed.token, "no", action)
                    .await
                    .unwrap();
            }
        }
        jobs.push(job);
    }
    jobs.push(q.enqueue(json!("pending")).await.unwrap().id);
    jobs.push(
        q.enqueue(NewJob::new(json!("scheduled")).after(Duration::from_secs(3600)))
            .await
            .unwrap()
            .id,
    );
    for job in &jobs {
        q.jobs().log(job, "a line").await.unwrap();
        assert!(
            q.jobs()
                .remove(job, echomq::IfActive::Refuse)
                .await
                .unwrap(),
            "{job}"
        );
        assert!(q.jobs().get(job).await.unwrap().is_none());
        h.check(&q).await;
    }
    let counts = q.admin().counts().await.unwrap();
    assert_eq!(counts.total(), 0, "{counts:?}");
    let keys = queue_keys(h.urls(), q.keys()).await.unwrap();
    assert!(
        !keys.iter().any(|key| key.contains(":logs:")),
        "logs go with their job: {keys:?}"
    );
}

#[echomq_testkit::case]
pub(super) async fn remove_of_a_missing_job_answers_false(h: &Harness) {
    let q = h.queue::<Value>("remove_missing");
    assert!(
        !q.jobs()
            .remove(&id("ghost"), echomq::IfActive::Force)
            .await
            .unwrap()
    );
    let zero = raw_call(h, &q, "remove", &["ghost"]).await.unwrap();
    assert_eq!(zero, redis::Value::Int(0));
    assert!(queue_keys(h.urls(), q.keys()).await.unwrap().is_empty());
}

#[echomq_testkit::case]
pub(super) async fn remove_of_an_active_job_is_refused_badstate_active_unless_forced(h: &Harness) {
    let q = h.queue::<Value>("remove_active");
    let job = q.enqueue(json!(1)).await.unwrap();
    let held = q.claim_one("w", LEASE).await.unwrap().unwrap();
    let before = dump(h, &q).await;
    assert_eq!(
        refusal(
            q.jobs()
                .remove(&job.id, echomq::IfActive::Refuse)
                .await
                .unwrap_err()
        ),
        Refusal::BadState(JobState::Active)
    );
    assert_eq!(dump(h, &q).await, before, "a refused remove writes nothing");
    let mut listener = CancelListener::open(h, &q).await;
    assert!(
        q.jobs()
            .remove(&job.id, echomq::IfActive::Force)
            .await
            .unwrap()
    );
    assert_eq!(
        listener.ids(1).await,
        [job.id.as_str()],
        "FORCE tells the holder to stop"
    );
    assert!(q.jobs().get(&job.id).await.unwrap().is_none());
    assert_eq!(
        refusal(q.complete(&held.id, held.token, &()).await.unwrap_err()),
        Refusal::NotActive,
        "the lease is void"
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn reprocess_sends_a_finished_job_back_with_its_counters_cleared(h: &Harness) {
    let q = h.queue::<Value>("reprocess");
    let job = q.enqueue(NewJob::new(json!(1)).attempts(1)).await.unwrap();
    let claimed = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.jobs()
        .progress(&claimed.id, claimed.token, &90)
        .await
        .unwrap();
    retry_now(&q, &claimed, "boom").await;
    assert_eq!(
        q.jobs().get(&job.id).await.unwrap().unwrap().state,
        JobState::Dead
    );
    q.jobs().reprocess(&job.id).await.unwrap();
    h.check(&q).await;
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(
        (
            record.state,
            record.failures,
            record.error,
            record.progress,
            record.finished_at,
            record.claims
        ),
        (JobState::Pending, 0, None, None, None, 1)
    );
    assert!(record.run_at.is_some());
    let again = q.claim_one("w", LEASE).await.unwrap().unwrap();
    assert!(again.token > claimed.token, "a larger token");
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(record.claims, 2, "claims kept");
}

#[echomq_testkit::case]
pub(super) async fn reprocess_takes_completed_and_cancelled_jobs_too(h: &Harness) {
    let q = h.queue::<Value>("reprocess_finished");
    let done = q.enqueue(json!("done")).await.unwrap().id;
    let claimed = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.complete(&claimed.id, claimed.token, &"result")
        .await
        .unwrap();
    let cancelled = q.enqueue(json!("cancelled")).await.unwrap().id;
    q.jobs().cancel(&cancelled).await.unwrap();
    for job in [&done, &cancelled] {
        q.jobs().reprocess(job).await.unwrap();
        h.check(&q).await;
        let record = q.jobs().get(job).await.unwrap().unwrap();
        assert_eq!(
            (record.state, record.result, record.cancel_requested),
            (JobState::Pending, None, false)
        );
    }
    let counts = q.admin().counts().await.unwrap();
    assert_eq!(
        (counts.pending, counts.completed, counts.cancelled),
        (2, 0, 0)
    );
}

#[echomq_testkit::case]
pub(super) async fn reprocess_of_a_pending_job_is_refused_badstate(h: &Harness) {
    let q = h.queue::<Value>("reprocess_pending");
    let job = q.enqueue(json!(1)).await.unwrap();
    assert_eq!(
        refusal(q.jobs().reprocess(&job.id).await.unwrap_err()),
        Refusal::BadState(JobState::Pending)
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn reprocess_of_a_scheduled_job_is_refused_badstate(h: &Harness) {
    let q = h.queue::<Value>("reprocess_scheduled");
    let job = q
        .enqueue(NewJob::new(json!(1)).after(Duration::from_secs(3600)))
        .await
        .unwrap();
    assert_eq!(
        refusal(q.jobs().reprocess(&job.id).await.unwrap_err()),
        Refusal::BadState(JobState::Scheduled)
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn reprocess_of_an_active_job_is_refused_badstate(h: &Harness) {
    let q = h.queue::<Value>("reprocess_active");
    let job = q.enqueue(json!(1)).await.unwrap();
    q.claim_one("w", LEASE).await.unwrap().unwrap();
    let before = dump(h, &q).await;
    assert_eq!(
        refusal(q.jobs().reprocess(&job.id).await.unwrap_err()),
        Refusal::BadState(JobState::Active)
    );
    assert_eq!(dump(h, &q).await, before);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn reprocess_of_a_missing_job_is_refused_nojob(h: &Harness) {
    let q = h.queue::<Value>("reprocess_missing");
    assert_eq!(
        refusal(q.jobs().reprocess(&id("ghost")).await.unwrap_err()),
        Refusal::NoJob
    );
    assert!(queue_keys(h.urls(), q.keys()).await.unwrap().is_empty());
}

#[echomq_testkit::case]
pub(super) async fn operator_verbs_write_their_events(h: &Harness) {
    let q = h.queue::<Value>("operator_events");
    q.enqueue(NewJob::new(json!(1)).id("a").unwrap())
        .await
        .unwrap();
    q.enqueue(NewJob::new(json!(2)).id("b").unwrap())
        .await
        .unwrap();
    q.admin().pause().await.unwrap();
    q.admin().resume().await.unwrap();
    let held = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.jobs().progress(&held.id, held.token, &7).await.unwrap();
    q.jobs().log(&held.id, "not an event").await.unwrap();
    q.jobs().update(&id("b"), &json!(3)).await.unwrap();
    q.complete(&held.id, held.token, &()).await.unwrap();
    q.jobs().reprocess(&id("a")).await.unwrap();
    q.jobs()
        .remove(&id("a"), echomq::IfActive::Refuse)
        .await
        .unwrap();
    q.admin().drain(echomq::DrainScope::PENDING).await.unwrap();
    let token = held.token.to_string();
    let expected: Vec<Vec<&str>> = vec![
        vec!["event", "enqueued", "id", "a"],
        vec!["event", "enqueued", "id", "b"],
        vec!["event", "paused"],
        vec!["event", "resumed"],
        vec![
            "event", "claimed", "id", "a", "token", &token, "worker", "w",
        ],
        vec!["event", "progress", "id", "a", "progress", "7"],
        vec!["event", "updated", "id", "b"],
        vec!["event", "completed", "id", "a"],
        vec!["event", "reprocessed", "id", "a"],
        vec!["event", "removed", "id", "a"],
        vec!["event", "drained", "count", "1"],
    ];
    assert_eq!(events(h, &q).await, expected);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_wrong_key_type_refuses_each_operator_verb_before_any_write(h: &Harness) {
    let q = h.queue::<Value>("operator_wrong_type");
    q.enqueue(NewJob::new(json!(1)).id("done").unwrap())
        .await
        .unwrap();
    let held = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.complete(&held.id, held.token, &()).await.unwrap();
    q.enqueue(NewJob::new(json!(2)).id("held").unwrap())
        .await
        .unwrap();
    q.enqueue(NewJob::new(json!(3)).id("waiting").unwrap())
        .await
        .unwrap();
    let held = q.claim_one("w", LEASE).await.unwrap().unwrap();
    let mut conn = h.raw(&q).await;
    let _: () = redis::pipe()
        .cmd("DEL")
        .arg(q.keys().events())
        .cmd("SET")
        .arg(q.keys().events())
        .arg("not a stream")
        .cmd("SET")
        .arg(q.keys().logs(&id("waiting")))
        .arg("not a list")
        .query_async(&mut conn)
        .await
        .unwrap();
    let before = dump(h, &q).await;
    let token = held.token.to_string();
    let calls: [(&str, &[&str]); 8] = [
        ("pause", &[]),
        ("resume", &[]),
        ("drain", &[]),
        ("update", &["waiting", "{}"]),
        ("progress", &["held", &token, "1"]),
        ("log", &["waiting", "a line"]),
        ("remove", &["waiting"]),
        ("reprocess", &["done"]),
    ];
    for (verb, args) in calls {
        let err = raw_call(h, &q, verb, args).await.unwrap_err();
        assert_eq!(err.code(), Some("WRONGTYPE"), "{verb}: {err}");
        assert_eq!(dump(h, &q).await, before, "{verb} wrote before refusing");
    }
    // OBLITERATE checks the six state sets.
    let _: () = redis::cmd("SET")
        .arg(q.keys().completed())
        .arg("not a zset")
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = redis::cmd("HSET")
        .arg(q.keys().meta())
        .arg("paused")
        .arg("1")
        .query_async(&mut conn)
        .await
        .unwrap();
    let before = dump(h, &q).await;
    let err = raw_call(h, &q, "obliterate", &["FORCE"]).await.unwrap_err();
    assert_eq!(err.code(), Some("WRONGTYPE"), "obliterate: {err}");
    assert_eq!(
        dump(h, &q).await,
        before,
        "obliterate wrote before refusing"
    );
}

#[echomq_testkit::case]
pub(super) async fn malformed_operator_calls_answer_badarg_or_syntax_and_write_nothing(
    h: &Harness,
) {
    let q = h.queue::<Value>("operator_arguments");
    let cases: &[(&str, &[&str], &str)] = &[
        ("pause", &["NOW"], "SYNTAX unknown option NOW"),
        ("resume", &["later"], "SYNTAX unknown option later"),
        ("drain", &["COUNT", "0"], "BADARG count"),
        ("drain", &["COUNT"], "BADARG count"),
        ("drain", &["scheduled", "COUNT", "x"], "BADARG count"),
        ("drain", &["ALL"], "SYNTAX unknown option ALL"),
        ("obliterate", &["COUNT", "-1"], "BADARG count"),
        ("obliterate", &["force", "NOW"], "SYNTAX unknown option NOW"),
        ("update", &[], "BADARG id"),
        ("update", &["*", "{}"], "BADARG id"),
        ("update", &["a b", "{}"], "BADARG id"),
        ("update", &["j"], "BADARG payload"),
        ("update", &["j", "{}", "X"], "SYNTAX unknown option X"),
        ("progress", &["j"], "BADARG token"),
        ("progress", &["j", "1.5", "v"], "BADARG token"),
        ("progress", &["j", "1"], "BADARG value"),
        ("progress", &["j", "1", "v", "X"], "SYNTAX unknown option X"),
        ("log", &["{j}", "l"], "BADARG id"),
        ("log", &["j"], "BADARG line"),
        ("log", &["j", "l", "KEEP", "0"], "BADARG keep"),
        ("log", &["j", "l", "KEEP"], "BADARG keep"),
        (
            "log",
            &["j", "l", "TRIM", "5"],
            "SYNTAX unknown option TRIM",
        ),
        ("remove", &[], "BADARG id"),
        ("remove", &["j", "HARD"], "SYNTAX unknown option HARD"),
        ("reprocess", &["j k"], "BADARG id"),
        ("reprocess", &["j", "X"], "SYNTAX unknown option X"),
    ];
    for (verb, args, expected) in cases {
        let err = raw_call(h, &q, verb, args).await.unwrap_err();
        let got = format!(
            "{} {}",
            err.code().unwrap_or("?"),
            err.detail().unwrap_or("")
        );
        assert_eq!(got.trim(), *expected, "{verb} {args:?}");
    }
    assert!(
        queue_keys(h.urls(), q.keys()).await.unwrap().is_empty(),
        "a refused call wrote a key"
    );
}

#[echomq_testkit::case]
pub(super) async fn list_pages_through_a_state(h: &Harness) {
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

#[echomq_testkit::case]
pub(super) async fn list_pages_through_pending_in_claim_order_across_fifo_and_pending(h: &Harness) {
    let q = h.queue::<Value>("list_fifo");
    // Interleaved: f<n> of priority 0 (fifo), p<n> of priority 1–3
    // (pending). Claim order: the f's as they came, then the p's by
    // priority, then as they came.
    let mut urgent = Vec::new();
    let mut ranked = Vec::new();
    for n in 0..10u8 {
        let f = format!("f{n}");
        q.enqueue(NewJob::new(json!(f)).id(f.as_str()).unwrap())
            .await
            .unwrap();
        urgent.push(f);
        let (p, priority) = (format!("p{n}"), 1 + n % 3);
        q.enqueue(
            NewJob::new(json!(p))
                .id(p.as_str())
                .unwrap()
                .priority(priority),
        )
        .await
        .unwrap();
        ranked.push((priority, n, p));
    }
    ranked.sort();
    let order: Vec<String> = urgent
        .into_iter()
        .chain(ranked.into_iter().map(|(_, _, p)| p))
        .collect();
    assert_eq!(h.fifo_and_pending(&q).await, (10, 10));
    h.check(&q).await;
    let ids = |page: &[echomq::JobRecord]| -> Vec<String> {
        page.iter().map(|r| r.id.as_str().to_string()).collect()
    };
    // Within fifo, across the boundary, from it, within pending, to the
    // end, past it, everything, and a limit of 0 (read as 1).
    for (offset, limit) in [
        (0, 5),
        (8, 5),
        (9, 1),
        (10, 3),
        (12, 5),
        (18, 5),
        (20, 5),
        (25, 5),
        (0, 100),
        (3, 0),
    ] {
        let (page, total) = q
            .jobs()
            .list(JobState::Pending, offset, limit)
            .await
            .unwrap();
        assert_eq!(total, 20, "offset {offset} limit {limit}");
        let end = (offset + limit.max(1)).min(20) as usize;
        let from = (offset as usize).min(end);
        assert_eq!(
            ids(&page),
            order[from..end],
            "offset {offset} limit {limit}"
        );
    }
    // The listing is the claim order.
    assert_eq!(claimed_ids(&q, 20).await, order);
    let (page, total) = q.jobs().list(JobState::Pending, 0, 10).await.unwrap();
    assert_eq!((page.len(), total), (0, 0));

    // Only pending (no job of priority 0), then only fifo.
    for n in 0..3 {
        q.enqueue(
            NewJob::new(json!(n))
                .id(format!("r{n}"))
                .unwrap()
                .priority(2),
        )
        .await
        .unwrap();
    }
    assert_eq!(h.fifo_and_pending(&q).await, (0, 3));
    let (page, total) = q.jobs().list(JobState::Pending, 1, 5).await.unwrap();
    assert_eq!((ids(&page), total), (vec!["r1".into(), "r2".into()], 3));
    assert_eq!(claimed_ids(&q, 3).await.len(), 3);
    for n in 0..3 {
        q.enqueue(NewJob::new(json!(n)).id(format!("u{n}")).unwrap())
            .await
            .unwrap();
    }
    assert_eq!(h.fifo_and_pending(&q).await, (3, 0));
    let (page, total) = q.jobs().list(JobState::Pending, 1, 5).await.unwrap();
    assert_eq!((ids(&page), total), (vec!["u1".into(), "u2".into()], 3));
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn oldest_pending_age_reads_the_head_of_the_claim_order(h: &Harness) {
    let q = h.queue::<Value>("oldest_fifo");
    let admin = q.admin();
    assert_eq!(admin.oldest_pending_age().await.unwrap(), None);
    enqueue_named(
        h,
        &q,
        &[("ranked", 3, None), ("old", 0, None), ("new", 0, None)],
    )
    .await;
    assert_eq!(h.fifo_and_pending(&q).await, (2, 1));
    // Ages set apart by minutes (the server's clock): no wait, and no
    // bound a slow machine could cross.
    let mut conn = h.raw(&q).await;
    let (secs, _): (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await.unwrap();
    let now = secs * 1000;
    const MINUTE: u64 = 60_000;
    for (name, minutes) in [("ranked", 30), ("old", 20), ("new", 10)] {
        let _: () = redis::cmd("HSET")
            .arg(q.keys().job(&JobId::new(name).unwrap()))
            .arg("created_at")
            .arg(now - minutes * MINUTE)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    let minutes = |age: Option<u64>| age.unwrap() / MINUTE;
    // fifo's head: neither its newest job nor pending's head (the oldest
    // job, but claimed last).
    assert_eq!(minutes(admin.oldest_pending_age().await.unwrap()), 20);
    assert_eq!(claimed_ids(&q, 1).await, ["old"]);
    assert_eq!(minutes(admin.oldest_pending_age().await.unwrap()), 10);
    // fifo empty: pending's head.
    assert_eq!(claimed_ids(&q, 1).await, ["new"]);
    assert_eq!(minutes(admin.oldest_pending_age().await.unwrap()), 30);
    assert_eq!(claimed_ids(&q, 1).await, ["ranked"]);
    assert_eq!(admin.oldest_pending_age().await.unwrap(), None);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn the_events_reader_yields_typed_events_and_resumes_from_an_id(h: &Harness) {
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
            token: claimed.token,
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

#[echomq_testkit::case]
pub(super) async fn recent_events_reads_the_newest_oldest_first(h: &Harness) {
    let q = h.queue::<Value>("recent_events");
    assert!(q.recent_events(10).await.unwrap().is_empty());
    q.enqueue(NewJob::new(json!(1)).id("r1").unwrap())
        .await
        .unwrap();
    let claimed = q.claim_one("wk", LEASE).await.unwrap().unwrap();
    q.complete(&claimed.id, claimed.token, &()).await.unwrap();
    let all = q.recent_events(100).await.unwrap();
    let kinds: Vec<EventKind> = all.iter().map(|e| e.kind.clone()).collect();
    assert_eq!(
        kinds,
        [
            EventKind::Enqueued,
            EventKind::Claimed {
                token: claimed.token,
                worker: "wk".into()
            },
            EventKind::Completed
        ]
    );
    assert!(all.iter().all(|e| e.job == Some(id("r1"))));
    // Bounded: the newest two, still oldest first.
    let newest: Vec<String> = q
        .recent_events(2)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.stream_id)
        .collect();
    assert_eq!(newest, [all[1].stream_id.clone(), all[2].stream_id.clone()]);
    assert!(q.recent_events(0).await.unwrap().is_empty());
}

#[echomq_testkit::case]
pub(super) async fn the_registry_lists_queues_that_were_enqueued_to(h: &Harness) {
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
