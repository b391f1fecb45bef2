//! Controls over the worker in hand: cancellation (by the channel and by
//! the checkpoint reply), lease checkpoints, lease loss, the stalled sweep,
//! requeue and forced removal.

use crate::common;

use common::{
    FailoverPair, Harness, cancel_subscribers_via, fail_over, reclaimed, refusal, state_of as state,
};
use echomq::{
    CancelOutcome, CancelReason, Connector, JobContext, JobError, JobId, JobState, NewJob, Refusal,
    Wire, Worker,
};
use echomq_testkit::{ClientAuth, SENTINEL_SERVICE, TestSentinel, wait_for};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

const BOUND: Duration = Duration::from_secs(10);
const LEASE: Duration = Duration::from_secs(30);

/// The lease of the workers whose cancellation must come by the channel:
/// its first checkpoint (`lease / 3`, which also carries a cancellation)
/// comes long after [`BOUND`], so a token that fires within the bound was
/// fired by the cancel channel (or by the checkpoint the worker runs when
/// its subscription opens again, for what was published while it was
/// down).
const CHANNEL_ONLY_LEASE: Duration = Duration::from_secs(600);

/// Each firing: why, and how long after the handler started.
type Firings = mpsc::UnboundedReceiver<(Option<CancelReason>, Duration)>;

/// A worker whose handler reports when it started and then waits for its
/// token, reporting the reason and how long the wait took.
fn waiting_worker(
    q: &echomq::Queue<Value>,
    lease: Duration,
) -> (
    echomq::WorkerHandle,
    mpsc::UnboundedReceiver<JobId>,
    Firings,
) {
    let (started_tx, started) = mpsc::unbounded_channel();
    let (fired_tx, fired) = mpsc::unbounded_channel();
    let worker = Worker::new(q.clone(), move |ctx: JobContext<Value>| {
        let (started_tx, fired_tx) = (started_tx.clone(), fired_tx.clone());
        async move {
            let since = Instant::now();
            started_tx.send(ctx.id.clone()).unwrap();
            ctx.cancelled().await;
            fired_tx
                .send((ctx.cancel_reason(), since.elapsed()))
                .unwrap();
            Err::<(), _>(JobError::Cancelled)
        }
    })
    .lease(lease)
    .start();
    (worker, started, fired)
}

/// Cancels a running job through the channel: the handler's token fires
/// with `Requested` within [`BOUND`], before the worker's first lease
/// checkpoint ([`CHANNEL_ONLY_LEASE`]), and the job lands in `cancelled`
/// without a failure.
async fn cancel_reaches_a_running_handler(h: &Harness, q: &echomq::Queue<Value>) {
    let (worker, mut started, mut fired) = waiting_worker(q, CHANNEL_ONLY_LEASE);
    wait_for("the cancel subscription", BOUND, || async {
        h.cancel_subscribers(q).await == 1
    })
    .await;
    let job = q.enqueue(NewJob::new(json!(1)).attempts(5)).await.unwrap();
    tokio::time::timeout(BOUND, started.recv())
        .await
        .expect("the job started");
    assert_eq!(
        q.jobs().cancel(&job.id).await.unwrap(),
        CancelOutcome::Requested
    );
    let (reason, _) = tokio::time::timeout(BOUND, fired.recv())
        .await
        .expect("the token fired by the cancel channel, before any lease checkpoint")
        .unwrap();
    assert_eq!(reason, Some(CancelReason::Requested));
    wait_for("the job to land in cancelled", BOUND, || async {
        state(q, &job.id).await == Some(JobState::Cancelled)
    })
    .await;
    let stats = worker.shutdown(BOUND).await;
    assert_eq!(stats.cancelled, 1);
    assert_eq!(
        q.jobs().get(&job.id).await.unwrap().unwrap().failures,
        0,
        "a cancellation is not a failure"
    );
    h.check(q).await;
}

#[tokio::test]
async fn cancel_of_a_running_job_reaches_its_handler_through_the_channel() {
    let h = Harness::server().await;
    cancel_reaches_a_running_handler(&h, &h.queue("cancel_running")).await;
}

#[tokio::test]
async fn cancel_reaches_a_running_handler_on_wire_6() {
    let h = Harness::native().await;
    cancel_reaches_a_running_handler(&h, &h.queue("cancel_wire_6")).await;
}

#[tokio::test]
async fn cancel_reaches_a_running_handler_on_a_server_that_asks_for_a_password() {
    // The cancel channel is a connection of its own: it authenticates too.
    let h = Harness::with_password("s3cret pass").await;
    cancel_reaches_a_running_handler(&h, &h.queue("cancel_password")).await;
}

#[tokio::test]
async fn cancel_reaches_a_running_handler_over_tls() {
    // The cancel channel is a socket of its own: it speaks TLS too, and
    // trusts the CA the connector was given.
    let h = Harness::tls(ClientAuth::None).await;
    cancel_reaches_a_running_handler(&h, &h.queue("cancel_tls")).await;
}

#[tokio::test]
async fn cancel_reaches_a_running_handler_over_tls_with_a_client_certificate() {
    let h = Harness::tls(ClientAuth::Required).await;
    cancel_reaches_a_running_handler(&h, &h.queue("cancel_mtls")).await;
}

#[tokio::test]
async fn cancel_reaches_a_running_handler_on_a_tls_cluster() {
    let h = Harness::tls_cluster().await;
    cancel_reaches_a_running_handler(&h, &h.queue("cancel_tls_cluster")).await;
}

#[tokio::test]
async fn cancel_reaches_a_running_handler_after_a_cluster_failover() {
    // The subscription opened before the failover is to the demoted
    // master; cancellations are published on the new one.
    let h = Harness::cluster_with_replicas().await;
    let q = h.queue::<Value>("cancel_after_failover");
    let (worker, mut started, mut fired) = waiting_worker(&q, CHANNEL_ONLY_LEASE);
    wait_for("the cancel subscription", BOUND, || async {
        h.cancel_subscribers(&q).await == 1
    })
    .await;
    let first = q.enqueue(json!("before")).await.unwrap();
    let id = tokio::time::timeout(BOUND, started.recv()).await.unwrap();
    assert_eq!(id, Some(first.id.clone()));
    fail_over(&h, &q, &first.id).await;

    cancelled_after_failover(&q, &first.id, worker, &mut fired).await;
}

/// Subscribers of `q`'s cancel channel on `server` (0 while it cannot
/// answer: a server that just died).
async fn subscribers_on(server: &echomq_testkit::TestServer, q: &echomq::Queue<Value>) -> u64 {
    cancel_subscribers_via(&mut server.connection().await, q)
        .await
        .unwrap_or_default()
}

#[tokio::test]
async fn cancel_reaches_a_running_handler_after_its_primary_dies_behind_sentinel() {
    // The subscription to the dead primary drops; the next one goes where
    // the sentinel now points.
    let sentinel = TestSentinel::start();
    let q = Connector::sentinel([sentinel.url()], SENTINEL_SERVICE)
        .connect()
        .await
        .unwrap()
        .queue::<Value>("cancel_sentinel")
        .unwrap();
    let (worker, mut started, mut fired) = waiting_worker(&q, CHANNEL_ONLY_LEASE);
    wait_for("the cancel subscription", BOUND, || async {
        subscribers_on(sentinel.first_primary(), &q).await == 1
    })
    .await;
    let job = q.enqueue(json!("running")).await.unwrap();
    let id = tokio::time::timeout(BOUND, started.recv()).await.unwrap();
    assert_eq!(id, Some(job.id.clone()));
    sentinel.lose_primary();
    wait_for("the subscription on the new primary", BOUND, || async {
        subscribers_on(sentinel.first_replica(), &q).await == 1
    })
    .await;
    cancelled_after_failover(&q, &job.id, worker, &mut fired).await;
}

#[tokio::test]
async fn cancel_reaches_a_running_handler_after_a_failover_of_its_endpoint() {
    // The subscription opened before the failover stays on the demoted
    // primary, which gets the new primary's publications by replication.
    let pair = FailoverPair::start(Wire::Script);
    let q = pair
        .connector(Wire::Script)
        .await
        .queue::<Value>("cancel_endpoint")
        .unwrap();
    let (worker, mut started, mut fired) = waiting_worker(&q, CHANNEL_ONLY_LEASE);
    let on_old = pair.old.connection().await;
    wait_for("the cancel subscription", BOUND, || {
        let mut on_old = on_old.clone();
        let q = &q;
        async move { cancel_subscribers_via(&mut on_old, q).await.unwrap() == 1 }
    })
    .await;
    let job = q.enqueue(json!("running")).await.unwrap();
    let id = tokio::time::timeout(BOUND, started.recv()).await.unwrap();
    assert_eq!(id, Some(job.id.clone()));
    pair.fail_over(&q, &job.id).await;
    cancelled_after_failover(&q, &job.id, worker, &mut fired).await;
}

/// Cancels running job `id`, trying again while the calls fail (a
/// failover in progress): its handler's token fires with `Requested`
/// within [`BOUND`], well before the worker's first lease checkpoint
/// ([`CHANNEL_ONLY_LEASE`]), so by the channel; and the worker counts one
/// cancellation.
async fn cancelled_after_failover(
    q: &echomq::Queue<Value>,
    id: &JobId,
    worker: echomq::WorkerHandle,
    fired: &mut Firings,
) {
    let taken = std::cell::Cell::new(false);
    wait_for("the cancel to be taken", BOUND, || async {
        if !taken.get() {
            taken.set(q.jobs().cancel(id).await.is_ok());
        }
        taken.get()
    })
    .await;
    let (reason, _) = tokio::time::timeout(BOUND, fired.recv())
        .await
        .expect("the token fired by the cancel channel, before any lease checkpoint")
        .unwrap();
    assert_eq!(reason, Some(CancelReason::Requested));
    let stats = worker.shutdown(BOUND).await;
    assert_eq!(stats.cancelled, 1);
}

#[tokio::test]
async fn cancel_reaches_a_running_handler_over_a_unix_socket() {
    let h = Harness::unix_socket().await;
    cancel_reaches_a_running_handler(&h, &h.queue("cancel_unix")).await;
}

#[tokio::test]
async fn cancel_reaches_a_running_handler_on_a_cluster() {
    let h = Harness::cluster().await;
    cancel_reaches_a_running_handler(&h, &h.queue("cancel_cluster")).await;
}

#[tokio::test]
async fn cancel_still_arrives_through_the_checkpoint_when_the_subscription_is_down() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("cancel_checkpoint");
    let (worker, mut started, mut fired) = waiting_worker(&q, Duration::from_millis(600));
    wait_for("the cancel subscription", BOUND, || async {
        h.cancel_subscribers(&q).await == 1
    })
    .await;
    let job = q.enqueue(json!(1)).await.unwrap();
    tokio::time::timeout(BOUND, started.recv())
        .await
        .expect("the job started");
    // Keep the subscription down: forbid SSUBSCRIBE, then kill it.
    let mut admin = h.raw(&q).await;
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("default")
        .arg("-ssubscribe")
        .query_async(&mut admin)
        .await
        .unwrap();
    let _: u64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("pubsub")
        .query_async(&mut admin)
        .await
        .unwrap();
    wait_for("the subscription to drop", BOUND, || async {
        h.cancel_subscribers(&q).await == 0
    })
    .await;
    assert_eq!(
        q.jobs().cancel(&job.id).await.unwrap(),
        CancelOutcome::Requested
    );
    let (reason, _) = tokio::time::timeout(BOUND, fired.recv())
        .await
        .expect("the checkpoint carried the cancellation")
        .unwrap();
    assert_eq!(reason, Some(CancelReason::Requested));
    wait_for("the job to land in cancelled", BOUND, || async {
        state(&q, &job.id).await == Some(JobState::Cancelled)
    })
    .await;
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("default")
        .arg("+ssubscribe")
        .query_async(&mut admin)
        .await
        .unwrap();
    worker.shutdown(BOUND).await;
}

#[tokio::test]
async fn a_handler_that_ignores_a_cancellation_may_complete() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("cancel_ignored");
    let release = Arc::new(tokio::sync::Notify::new());
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let r = release.clone();
    let worker = Worker::new(q.clone(), move |ctx: JobContext<Value>| {
        let (r, started_tx) = (r.clone(), started_tx.clone());
        async move {
            started_tx.send(ctx.id.clone()).unwrap();
            r.notified().await;
            Ok::<_, JobError>("done anyway")
        }
    })
    .start();
    let job = q.enqueue(json!(1)).await.unwrap();
    tokio::time::timeout(BOUND, started.recv())
        .await
        .expect("the job started");
    q.jobs().cancel(&job.id).await.unwrap();
    release.notify_one();
    wait_for("completion", BOUND, || async {
        state(&q, &job.id).await == Some(JobState::Completed)
    })
    .await;
    worker.shutdown(BOUND).await;
}

#[tokio::test]
async fn a_three_second_job_under_a_500_ms_lease_is_never_reaped() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("long_job");
    let job = q.enqueue(json!(1)).await.unwrap();
    let worker = Worker::new(q.clone(), |_ctx: JobContext<Value>| async move {
        // The job's work: three seconds, six leases long.
        tokio::time::sleep(Duration::from_secs(3)).await;
        Ok::<_, JobError>(())
    })
    .lease(Duration::from_millis(500))
    .stalled_interval(Duration::from_millis(100))
    .max_stalls(0)
    .start();
    wait_for("completion", BOUND, || async {
        state(&q, &job.id).await == Some(JobState::Completed)
    })
    .await;
    let stats = worker.shutdown(BOUND).await;
    assert_eq!((stats.completed, stats.lost), (1, 0));
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(
        (record.stalls, record.claims),
        (0, 1),
        "never reaped, never re-claimed"
    );
}

#[tokio::test]
async fn a_lost_lease_fires_the_token_and_nothing_more_is_written() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("lease_lost");
    let (started_tx, mut started) = mpsc::unbounded_channel();
    let seen = Arc::new(Mutex::new(None));
    let s = seen.clone();
    let worker = Worker::new(q.clone(), move |ctx: JobContext<Value>| {
        let (started_tx, s) = (started_tx.clone(), s.clone());
        async move {
            started_tx.send(ctx.id.clone()).unwrap();
            ctx.cancelled().await;
            let checkpoint = ctx.extend(Duration::from_secs(30)).await;
            *s.lock().unwrap() = Some((checkpoint.is_err(), ctx.cancel_reason()));
            Ok::<_, JobError>("must not be written")
        }
    })
    .start();
    let job = q.enqueue(json!(1)).await.unwrap();
    tokio::time::timeout(BOUND, started.recv())
        .await
        .expect("the job started");
    // A forced remove voids the lease (and publishes the id).
    assert!(
        q.jobs()
            .remove(&job.id, echomq::IfActive::Force)
            .await
            .unwrap()
    );
    wait_for("the handler to return", BOUND, || async {
        seen.lock().unwrap().is_some()
    })
    .await;
    let stats = worker.shutdown(BOUND).await;
    assert_eq!(
        (stats.completed, stats.lost, stats.write_errors),
        (0, 0, 0),
        "nothing was even tried after the lease was lost"
    );
    let (refused, reason) = seen.lock().unwrap().unwrap();
    assert!(refused, "the checkpoint answered NOTACTIVE");
    assert_eq!(
        reason,
        Some(CancelReason::Requested),
        "the channel told it first"
    );
    assert!(q.jobs().get(&job.id).await.unwrap().is_none());
    h.check(&q).await;
}

#[tokio::test]
async fn only_one_of_several_concurrent_sweepers_runs_per_interval() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("sweep_guard");
    let sweepers: Vec<_> = (0..5)
        .map(|n| {
            let q = q.clone();
            tokio::spawn(async move {
                q.sweep_if_due(&format!("sweeper-{n}"), Duration::from_secs(60), 1)
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut ran = 0;
    for sweeper in sweepers {
        ran += sweeper.await.unwrap().is_some() as u32;
    }
    assert_eq!(ran, 1);
}

#[tokio::test]
async fn remove_of_an_active_job_without_force_is_refused_badstate() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("remove_active");
    let job = q.enqueue(json!(1)).await.unwrap();
    q.claim_one("w", LEASE).await.unwrap().unwrap();
    assert_eq!(
        refusal(
            q.jobs()
                .remove(&job.id, echomq::IfActive::Refuse)
                .await
                .unwrap_err()
        ),
        Refusal::BadState(JobState::Active)
    );
    assert_eq!(state(&q, &job.id).await, Some(JobState::Active));
    assert!(
        q.jobs()
            .remove(&job.id, echomq::IfActive::Force)
            .await
            .unwrap()
    );
    assert!(q.jobs().get(&job.id).await.unwrap().is_none());
    assert!(
        !q.jobs()
            .remove(&job.id, echomq::IfActive::Force)
            .await
            .unwrap(),
        "absent answers 0"
    );
    h.check(&q).await;
}

/// The transition-level cases that need no worker, each run on a server
/// of the suite's default kind and again on wire 6 (the module's `EMQ.*`).
mod cases {
    use super::*;

    #[echomq_testkit::case]
    pub(super) async fn cancel_of_a_pending_job_cancels_it_at_once(h: &Harness) {
        let q = h.queue::<Value>("cancel_pending");
        let job = q.enqueue(json!(1)).await.unwrap();
        assert_eq!(
            q.jobs().cancel(&job.id).await.unwrap(),
            CancelOutcome::Cancelled
        );
        let record = q.jobs().get(&job.id).await.unwrap().unwrap();
        assert_eq!((record.state, record.failures), (JobState::Cancelled, 0));
        assert!(q.claim_one("w", LEASE).await.unwrap().is_none());
        h.check(&q).await;
    }

    #[echomq_testkit::case]
    pub(super) async fn cancel_of_a_scheduled_job_cancels_it_at_once(h: &Harness) {
        let q = h.queue::<Value>("cancel_scheduled");
        let job = q
            .enqueue(NewJob::new(json!(1)).after(Duration::from_secs(3600)))
            .await
            .unwrap();
        assert_eq!(
            q.jobs().cancel(&job.id).await.unwrap(),
            CancelOutcome::Cancelled
        );
        assert_eq!(state(&q, &job.id).await, Some(JobState::Cancelled));
        assert_eq!(q.admin().counts().await.unwrap().scheduled, 0);
        h.check(&q).await;
    }

    #[echomq_testkit::case]
    pub(super) async fn cancel_of_a_finished_job_is_refused_badstate(h: &Harness) {
        let q = h.queue::<Value>("cancel_finished");
        let job = q.enqueue(json!(1)).await.unwrap();
        let claimed = q.claim_one("w", LEASE).await.unwrap().unwrap();
        q.complete(&claimed.id, claimed.token, &()).await.unwrap();
        let err = q.jobs().cancel(&job.id).await.unwrap_err();
        assert_eq!(refusal(err), Refusal::BadState(JobState::Completed));
        h.check(&q).await;
    }

    #[echomq_testkit::case]
    pub(super) async fn cancel_of_a_missing_job_is_refused_nojob(h: &Harness) {
        let q = h.queue::<Value>("cancel_missing");
        let err = q
            .jobs()
            .cancel(&JobId::new("ghost").unwrap())
            .await
            .unwrap_err();
        assert_eq!(refusal(err), Refusal::NoJob);
    }

    #[echomq_testkit::case]
    pub(super) async fn extend_with_a_stale_token_is_refused_notactive(h: &Harness) {
        let q = h.queue::<Value>("extend_stale");
        q.enqueue(json!(1)).await.unwrap();
        let (old, new) = reclaimed(&q).await;
        let err = q.extend(&old.id, old.token, LEASE).await.unwrap_err();
        assert_eq!(refusal(err), Refusal::NotActive);
        let extended = q
            .extend(&new.id, new.token, Duration::from_secs(60))
            .await
            .unwrap();
        assert!(!extended.cancel_requested);
        q.jobs().cancel(&new.id).await.unwrap();
        assert!(
            q.extend(&new.id, new.token, LEASE)
                .await
                .unwrap()
                .cancel_requested,
            "the checkpoint carries the cancel flag"
        );
        h.check(&q).await;
    }

    #[echomq_testkit::case]
    pub(super) async fn a_job_that_stalls_more_than_max_stalls_ends_dead_with_error_stalled(
        h: &Harness,
    ) {
        let q = h.queue::<Value>("stalls");
        let job = q.enqueue(json!(1)).await.unwrap();
        for round in 1..=2u64 {
            let claimed = q
                .claim_one("crashed", Duration::from_millis(1))
                .await
                .unwrap()
                .unwrap();
            let record = q.jobs().get(&claimed.id).await.unwrap().unwrap();
            assert_eq!(
                (record.claims, record.token()),
                (round, Some(claimed.token))
            );
            wait_for(
                "the lease to run out and the sweep to take the job",
                BOUND,
                || async {
                    let swept = q.sweep_stalled(1, 1000).await.unwrap();
                    swept.recovered + swept.dead > 0
                },
            )
            .await;
            h.check(&q).await;
            let record = q.jobs().get(&job.id).await.unwrap().unwrap();
            assert_eq!(record.stalls, round);
            if round == 1 {
                assert_eq!(record.state, JobState::Pending);
            } else {
                assert_eq!(
                    (record.state, record.error.as_deref()),
                    (JobState::Dead, Some("stalled"))
                );
            }
        }
    }

    #[echomq_testkit::case]
    pub(super) async fn requeue_of_an_active_job_voids_its_token(h: &Harness) {
        let q = h.queue::<Value>("requeue_active");
        q.enqueue(json!(1)).await.unwrap();
        let held = q.claim_one("w", LEASE).await.unwrap().unwrap();
        q.jobs().requeue(&held.id).await.unwrap();
        h.check(&q).await;
        assert_eq!(state(&q, &held.id).await, Some(JobState::Pending));
        assert_eq!(
            refusal(q.complete(&held.id, held.token, &()).await.unwrap_err()),
            Refusal::NotActive
        );
        let again = q.claim_one("w", LEASE).await.unwrap().unwrap();
        assert!(again.token > held.token);
    }

    #[echomq_testkit::case]
    pub(super) async fn requeue_of_a_scheduled_job_makes_it_pending_now(h: &Harness) {
        let q = h.queue::<Value>("requeue_scheduled");
        let job = q
            .enqueue(NewJob::new(json!(1)).after(Duration::from_secs(3600)))
            .await
            .unwrap();
        q.jobs().requeue(&job.id).await.unwrap();
        assert_eq!(q.claim_one("w", LEASE).await.unwrap().unwrap().id, job.id);
        h.check(&q).await;
    }

    #[echomq_testkit::case]
    pub(super) async fn requeue_of_a_completed_job_is_refused_badstate(h: &Harness) {
        let q = h.queue::<Value>("requeue_completed");
        let job = q.enqueue(json!(1)).await.unwrap();
        let claimed = q.claim_one("w", LEASE).await.unwrap().unwrap();
        q.complete(&claimed.id, claimed.token, &()).await.unwrap();
        assert_eq!(
            refusal(q.jobs().requeue(&job.id).await.unwrap_err()),
            Refusal::BadState(JobState::Completed)
        );
        h.check(&q).await;
    }
}
