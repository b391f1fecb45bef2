//! Jobs enqueued for a wait (`NewJob::awaited`, docs/protocol.md "Marked
//! at the enqueue"): their waits get each outcome with no `OUTCOME` read
//! on the server, a job the enqueue did not create is read as for any
//! wait, and a wait that runs out leaves the job to a later one. Every
//! case runs on both wires, each on a server of its own; the server's
//! slow log, told to log every command, shows which reads were sent.

use crate::common::{Harness, complete_unheard};
use echomq::{Error, JobId, NewJob, Outcome, Queue};
use redis::Value as Resp;
use serde_json::{Value, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);
const WAIT: Duration = Duration::from_secs(20);
const HOUR: Duration = Duration::from_secs(3600);

/// Tells the server to log every command in its slow log.
async fn log_every_command(h: &Harness, q: &Queue<Value>) {
    let mut conn = h.raw(q).await;
    for (name, value) in [
        ("slowlog-max-len", "100000"),
        ("slowlog-log-slower-than", "0"),
    ] {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg(name)
            .arg(value)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
}

/// How many commands the slow log holds that read an outcome
/// (`EMQ.OUTCOME…`, or the `outcome` scripts' functions).
async fn outcome_reads(h: &Harness, q: &Queue<Value>) -> usize {
    let entries: Vec<Resp> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
    entries
        .iter()
        .filter(|entry| {
            let Resp::Array(fields) = entry else {
                return false;
            };
            let Some(Resp::Array(args)) = fields.get(3) else {
                return false;
            };
            args.iter().take(1).any(|arg| match arg {
                Resp::BulkString(bytes) => {
                    String::from_utf8_lossy(bytes)
                        .to_lowercase()
                        .contains("outcome")
                        || bytes.eq_ignore_ascii_case(b"fcall")
                            && args.get(1).is_some_and(|name| {
                                matches!(name, Resp::BulkString(name)
                                    if String::from_utf8_lossy(name).contains("outcome"))
                            })
                }
                _ => false,
            })
        })
        .count()
}

/// Claims the next job, `id`, and completes it with `{"done": id}`.
async fn complete_next(q: &Queue<Value>, id: &JobId) {
    let job = q.claim_one("w", LEASE).await.unwrap().expect("a job");
    assert_eq!(&job.id, id);
    q.complete(id, job.token, &json!({"done": id.as_str()}))
        .await
        .unwrap();
}

fn completed(id: &JobId) -> Outcome<Value> {
    Outcome::Completed {
        result: Some(json!({"done": id.as_str()})),
    }
}

#[echomq_testkit::case]
pub(super) async fn an_awaited_job_s_wait_reads_nothing_on_the_server(h: &Harness) {
    let q = h.queue::<Value>("awaited");
    log_every_command(h, &q).await;
    let one = q.enqueue(NewJob::new(json!(1)).awaited()).await.unwrap();
    let later = NewJob::new(json!(2)).awaited().after(Duration::ZERO);
    let bulk = q
        .enqueue_bulk([NewJob::new(json!(3)).awaited(), later])
        .await
        .unwrap();
    for enqueued in [&one, &bulk[0], &bulk[1]] {
        complete_next(&q, &enqueued.id).await;
    }
    for enqueued in [&one, &bulk[0], &bulk[1]] {
        assert_eq!(
            enqueued.outcome::<Value>(WAIT).await.unwrap(),
            completed(&enqueued.id)
        );
    }
    assert_eq!(outcome_reads(h, &q).await, 0, "no OUTCOME was sent");

    // The same wait on a job enqueued without the word reads it once: the
    // slow log does show a read when there is one.
    let plain = q.enqueue(json!(4)).await.unwrap();
    complete_next(&q, &plain.id).await;
    assert_eq!(
        plain.outcome::<Value>(WAIT).await.unwrap(),
        completed(&plain.id)
    );
    assert_eq!(outcome_reads(h, &q).await, 1);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn an_awaited_enqueue_that_created_nothing_reads_the_job_it_names(h: &Harness) {
    let q = h.queue::<Value>("awaited_dedup");
    let throttled = |n| NewJob::new(json!(n)).dedup("once").dedup_for(HOUR);
    let holder = q.enqueue(throttled(1)).await.unwrap();
    complete_next(&q, &holder.id).await;
    // Decided before the second enqueue, which marks nothing: only a read
    // can tell its wait (the channel will say nothing more).
    let again = q.enqueue(throttled(2).awaited()).await.unwrap();
    assert!(!again.created);
    assert_eq!(again.id, holder.id);
    assert_eq!(
        again.outcome::<Value>(WAIT).await.unwrap(),
        completed(&holder.id)
    );
    let existing = NewJob::new(json!(3))
        .id(holder.id.as_str())
        .unwrap()
        .awaited();
    let existed = q.enqueue_bulk([existing]).await.unwrap();
    assert_eq!(
        existed[0].outcome::<Value>(WAIT).await.unwrap(),
        completed(&holder.id)
    );
}

#[echomq_testkit::case]
pub(super) async fn an_awaited_job_s_wait_that_runs_out_leaves_it_to_a_later_wait(h: &Harness) {
    let q = h.queue::<Value>("awaited_timeout");
    let enqueued = q.enqueue(NewJob::new(json!(1)).awaited()).await.unwrap();
    let short = Duration::from_millis(50);
    match enqueued.outcome::<Value>(short).await {
        Err(Error::Timeout { job, waited }) => {
            assert_eq!((job, waited), (enqueued.id.clone(), short));
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    complete_next(&q, &enqueued.id).await;
    assert_eq!(
        enqueued.outcome::<Value>(WAIT).await.unwrap(),
        completed(&enqueued.id)
    );
}

#[echomq_testkit::case]
pub(super) async fn many_awaited_jobs_each_get_their_own_outcome(h: &Harness) {
    // The worker runs while the bulk enqueue goes on: a job may be
    // completed before the reply that registers its wait comes back, and
    // its outcome is then handed from what the listener kept.
    let q = h.queue::<Value>("awaited_many");
    let worker = echomq::Worker::new(q.clone(), |job: echomq::JobContext<Value>| async move {
        Ok::<_, echomq::JobError>(json!({"done": job.id.as_str()}))
    })
    .concurrency(20)
    .start();
    let jobs: Vec<NewJob<Value>> = (0..3000).map(|n| NewJob::new(json!(n)).awaited()).collect();
    let enqueued = q.enqueue_bulk(jobs).await.unwrap();
    for one in &enqueued {
        assert_eq!(
            one.outcome::<Value>(WAIT).await.unwrap(),
            completed(&one.id)
        );
    }
    worker.shutdown(WAIT).await;
}

#[echomq_testkit::case]
pub(super) async fn an_awaited_job_decided_while_the_subscription_was_down_is_read_back(
    h: &Harness,
) {
    let q = h.queue::<Value>("awaited_away");
    let enqueued = q.enqueue(NewJob::new(json!(1)).awaited()).await.unwrap();
    let job = q.claim_one("w", LEASE).await.unwrap().expect("a job");
    // Trusted to the channel at its enqueue, the wait is read back when
    // the subscription opens again.
    complete_unheard(h, &q, enqueued.id.as_str(), job.token, "7").await;
    assert_eq!(
        enqueued.outcome::<Value>(WAIT).await.unwrap(),
        Outcome::Completed {
            result: Some(json!(7))
        }
    );
}
