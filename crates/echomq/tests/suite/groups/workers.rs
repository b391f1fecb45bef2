//! Groups under real workers: fairness under load, a group's cap across
//! several workers, groups that wait never holding the others back, and a
//! group's reopening window waking an idle worker.

use super::common::Harness;
use echomq::{JobContext, JobError, NewJob, Queue, Worker};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Enqueues `count` jobs of `group`, each carrying its group as payload.
async fn fill(q: &Queue<Value>, group: &str, count: usize) {
    let jobs = (0..count).map(|_| NewJob::new(json!(group)).group(group));
    q.enqueue_bulk(jobs).await.unwrap();
}

#[echomq_testkit::case]
pub(super) async fn small_groups_finish_before_a_big_backlog_does(h: &Harness) {
    const SMALL_GROUPS: u64 = 20;
    const SMALL_JOBS: u64 = 50;
    let q = h.queue::<Value>("fair_load");
    fill(&q, "big", 50_000).await;
    for g in 0..SMALL_GROUPS {
        fill(&q, &format!("small-{g}"), SMALL_JOBS as usize).await;
    }
    let big = Arc::new(AtomicU64::new(0));
    let small = Arc::new(AtomicU64::new(0));
    // The big group's completions when the last small job completed.
    let big_at_last_small = Arc::new(AtomicU64::new(u64::MAX));
    let (b, s, at) = (big.clone(), small.clone(), big_at_last_small.clone());
    let worker = Worker::new(q.clone(), move |job: JobContext<Value>| {
        let (b, s, at) = (b.clone(), s.clone(), at.clone());
        async move {
            if job.payload == json!("big") {
                b.fetch_add(1, Ordering::SeqCst);
            } else if s.fetch_add(1, Ordering::SeqCst) + 1 == SMALL_GROUPS * SMALL_JOBS {
                at.store(b.load(Ordering::SeqCst), Ordering::SeqCst);
            }
            Ok::<_, JobError>(())
        }
    })
    .concurrency(50)
    .start();
    wait_for(
        "every small group's jobs to complete",
        Duration::from_secs(120),
        || async { small.load(Ordering::SeqCst) == SMALL_GROUPS * SMALL_JOBS },
    )
    .await;
    worker.shutdown(Duration::from_secs(10)).await;
    let at = big_at_last_small.load(Ordering::SeqCst);
    assert!(
        at < 5_000,
        "the big group completed {at} jobs before the small groups were done"
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_group_cap_holds_across_four_workers(h: &Harness) {
    let q = h.queue::<Value>("fair_cap");
    q.admin()
        .group("g")
        .unwrap()
        .set_concurrency_cap(3)
        .await
        .unwrap();
    fill(&q, "g", 40).await;
    let running = Arc::new(AtomicI64::new(0));
    let most = Arc::new(AtomicI64::new(0));
    let mut workers = Vec::new();
    for _ in 0..4 {
        let (running, most) = (running.clone(), most.clone());
        let worker = Worker::new(q.clone(), move |_job: JobContext<Value>| {
            let (running, most) = (running.clone(), most.clone());
            async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                // Work that takes a while, so handlers overlap.
                tokio::time::sleep(Duration::from_millis(5)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                Ok::<_, JobError>(())
            }
        })
        .concurrency(5)
        .start();
        workers.push(worker);
    }
    wait_for(
        "every job of g to complete",
        Duration::from_secs(30),
        || async { q.admin().counts().await.unwrap().completed == 40 },
    )
    .await;
    for worker in workers {
        worker.shutdown(Duration::from_secs(10)).await;
    }
    let most = most.load(Ordering::SeqCst);
    assert!(
        (1..=3).contains(&most),
        "{most} jobs of g ran at once under a cap of 3"
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_paused_or_capped_group_never_blocks_the_others(h: &Harness) {
    let q = h.queue::<Value>("fair_blocked");
    let admin = q.admin();
    admin.group("paused").unwrap().pause().await.unwrap();
    admin
        .group("capped")
        .unwrap()
        .set_concurrency_cap(1)
        .await
        .unwrap();
    fill(&q, "paused", 100).await;
    fill(&q, "capped", 100).await;
    fill(&q, "open", 50).await;
    // The capped group's job holds its one place until released.
    let release = Arc::new(Semaphore::new(0));
    let open = Arc::new(AtomicU64::new(0));
    let (hold, done) = (release.clone(), open.clone());
    let worker = Worker::new(q.clone(), move |job: JobContext<Value>| {
        let (hold, done) = (hold.clone(), done.clone());
        async move {
            if job.payload == json!("capped") {
                drop(hold.acquire().await);
            } else {
                done.fetch_add(1, Ordering::SeqCst);
            }
            Ok::<_, JobError>(())
        }
    })
    .concurrency(10)
    .start();
    wait_for(
        "the open group's jobs to complete",
        Duration::from_secs(30),
        || async { open.load(Ordering::SeqCst) == 50 },
    )
    .await;
    let counts = admin.group("capped").unwrap().counts().await.unwrap();
    assert_eq!((counts.active, counts.pending), (1, 99));
    assert_eq!(
        admin
            .group("paused")
            .unwrap()
            .counts()
            .await
            .unwrap()
            .pending,
        100
    );
    h.check(&q).await;
    release.add_permits(1_000);
    worker.shutdown(Duration::from_secs(10)).await;
}

#[echomq_testkit::case]
pub(super) async fn a_group_whose_window_reopens_wakes_an_idle_worker(h: &Harness) {
    let q = h.queue::<Value>("fair_window");
    q.admin()
        .group("g")
        .unwrap()
        .set_rate_limit(1, Duration::from_millis(300))
        .await
        .unwrap();
    fill(&q, "g", 3).await;
    let worker = Worker::new(q.clone(), |_job: JobContext<Value>| async move {
        Ok::<_, JobError>(())
    })
    .start();
    wait_for(
        "three windows' jobs to complete",
        Duration::from_secs(10),
        || async { q.admin().counts().await.unwrap().completed == 3 },
    )
    .await;
    worker.shutdown(Duration::from_secs(10)).await;
    h.check(&q).await;
}
