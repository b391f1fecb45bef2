//! The long-polled claim: it waits on the queue's signal set, never
//! polling, woken by an enqueue; a thousand of them share one listener's
//! connection; a lease that runs out is swept by the claims.

use super::client;
use crate::common::{Site, on_both_wires};
use axum::http::StatusCode;
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(30);

/// The test's own connection to the server, for its reads.
type Raw = redis::aio::MultiplexedConnection;

/// The server's `CLIENT LIST`, a line per connection.
async fn clients(mut raw: Raw) -> Vec<String> {
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .query_async(&mut raw)
        .await
        .unwrap();
    list.lines().map(str::to_string).collect()
}

/// Whether a connection is blocked on the signal set.
async fn listening(raw: &Raw) -> bool {
    clients(raw.clone())
        .await
        .iter()
        .any(|c| c.contains("cmd=bzpopmin"))
}

/// `INFO stats`' connections received since the server started.
async fn connections_received(mut raw: Raw) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("stats")
        .query_async(&mut raw)
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("total_connections_received:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn api_a_long_poll_is_woken_by_an_enqueue() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let raw = site.server.connection().await;
        let poll = {
            let api = api.clone();
            tokio::spawn(async move {
                let body = json!({"count": 10, "wait_ms": 60000});
                api.post("/api/v1/queues/q/claim", &body).await
            })
        };
        wait_for("the claim to wait on the signal set", BOUND, || {
            listening(&raw)
        })
        .await;
        let id = site.queue("q").enqueue(json!({"n": 1})).await.unwrap().id;
        let answer = poll.await.unwrap().expect(StatusCode::OK).body;
        assert_eq!(answer["jobs"][0]["id"], id.as_str(), "{answer}");
    })
    .await;
}

#[tokio::test]
async fn api_a_long_poll_with_nothing_to_claim_answers_no_jobs() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    let body = json!({"wait_ms": 20});
    let answer = api.post("/api/v1/queues/q/claim", &body).await;
    assert_eq!(answer.expect(StatusCode::OK).body, json!({"jobs": []}));
}

#[tokio::test]
async fn api_a_lease_that_runs_out_is_swept_and_its_token_refused() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d.claim_sweep_every(Duration::from_millis(1)));
        let id = site.queue("q").enqueue(json!({})).await.unwrap().id;
        let first = api
            .post("/api/v1/queues/q/claim", &json!({"lease_ms": 1}))
            .await
            .expect(StatusCode::OK)
            .body["jobs"][0]
            .clone();
        let again = wait_for("the stalled job to be claimed again", BOUND, || async {
            let answer = api.post("/api/v1/queues/q/claim", &json!({})).await;
            let jobs = answer.expect(StatusCode::OK).body["jobs"].clone();
            jobs.get(0).cloned()
        })
        .await;
        assert_eq!(
            (again["id"].as_str(), again["attempt"].clone()),
            (Some(id.as_str()), json!(1))
        );
        assert!(again["token"].as_u64() > first["token"].as_u64());
        let stale = json!({"token": first["token"]});
        let path = format!("/api/v1/queues/q/jobs/{id}/complete");
        api.post(&path, &stale)
            .await
            .refused(StatusCode::CONFLICT, "NOTACTIVE");
    })
    .await;
}

#[tokio::test]
async fn api_a_thousand_long_polls_share_one_server_connection() {
    const POLLS: usize = 1000;
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    let raw = site.server.connection().await;
    // The API's own connection first, so the count below is the polls'.
    api.post("/api/v1/queues/q/claim", &json!({}))
        .await
        .expect(StatusCode::OK);
    let before = clients(raw.clone()).await.len();
    let received = connections_received(raw.clone()).await;
    let polls: Vec<_> = (0..POLLS)
        .map(|_| {
            let api = api.clone();
            tokio::spawn(async move {
                let body = json!({"count": 1, "wait_ms": 60000});
                api.post("/api/v1/queues/q/claim", &body).await
            })
        })
        .collect();
    wait_for("a claim to wait on the signal set", BOUND, || {
        listening(&raw)
    })
    .await;
    let during = clients(raw.clone()).await.len();
    assert!(
        during <= before + 1,
        "{before} connections before, {during} while polling"
    );
    let q = site.queue("q");
    let jobs: Vec<echomq::NewJob<Value>> =
        (0..POLLS).map(|n| echomq::NewJob::new(json!(n))).collect();
    q.enqueue_bulk(jobs).await.unwrap();
    let mut claimed = Vec::new();
    for poll in polls {
        let answer = poll.await.unwrap().expect(StatusCode::OK).body;
        let jobs = answer["jobs"].as_array().unwrap().clone();
        assert_eq!(jobs.len(), 1, "{answer}");
        claimed.push(jobs[0]["id"].as_str().unwrap().to_string());
    }
    claimed.sort();
    claimed.dedup();
    assert_eq!(claimed.len(), POLLS);
    let opened = connections_received(raw).await - received;
    // The queue's one listener.
    assert!(
        opened <= 2,
        "{opened} connections opened for {POLLS} long polls"
    );
}

/// The jobs the HTTP workers' loops run.
const JOBS: u64 = 200;

#[tokio::test]
async fn api_four_http_workers_drain_a_queue_with_retries() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        let jobs: Vec<echomq::NewJob<Value>> =
            (0..JOBS).map(|n| echomq::NewJob::new(json!(n))).collect();
        q.enqueue_bulk(jobs).await.unwrap();
        let api = client(&site, |d| d);
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let (api, q) = (api.clone(), q.clone());
                tokio::spawn(async move { work_until_done(&api, &q, w).await })
            })
            .collect();
        let mut runs = 0;
        for worker in workers {
            runs += worker.await.unwrap();
        }
        let counts = q.admin().counts().await.unwrap();
        assert_eq!(
            (counts.completed, counts.pending, counts.active),
            (JOBS, 0, 0)
        );
        // Every tenth job failed once and ran again.
        assert_eq!(runs, JOBS + JOBS / 10);
    })
    .await;
}

/// An HTTP worker's loop: claim up to 10 (waiting 1 s), fail every tenth
/// job's first attempt, complete the rest; ends once every job of `q`
/// completed. How many runs it made.
async fn work_until_done(api: &super::Client, q: &echomq::Queue<Value>, worker: u64) -> u64 {
    let mut runs = 0;
    loop {
        let body = json!({"count": 10, "wait_ms": 1000, "worker": format!("w{worker}")});
        let answer = api.post("/api/v1/queues/q/claim", &body).await;
        let jobs = answer.expect(StatusCode::OK).body["jobs"].clone();
        let jobs = jobs.as_array().unwrap();
        if jobs.is_empty() && q.admin().counts().await.unwrap().completed == JOBS {
            return runs;
        }
        for job in jobs {
            runs += 1;
            let path = format!("/api/v1/queues/q/jobs/{}", job["id"].as_str().unwrap());
            let first = job["attempt"] == 1 && job["payload"].as_u64().unwrap() % 10 == 0;
            let (call, body) = match first {
                true => ("fail", json!({"token": job["token"], "error": "flaky"})),
                false => ("complete", json!({"token": job["token"]})),
            };
            let answer = api.post(&format!("{path}/{call}"), &body).await;
            answer.expect(StatusCode::OK);
        }
    }
}
