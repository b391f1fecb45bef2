//! A worker in any language: the claim and the calls on the job it
//! holds, each fenced by the job's token as the library's worker is.

use super::{Client, client};
use crate::common::{Site, on_both_wires};
use axum::http::StatusCode;
use echomq::{CancelOutcome, JobId, NewJob};
use serde_json::{Value, json};

/// Enqueues job `id` on `q` and claims it over the API: its token.
pub(super) async fn claimed(site: &Site, api: &Client, id: &str) -> u64 {
    site.queue("q")
        .enqueue(NewJob::new(json!({"n": id})).id(id).unwrap())
        .await
        .unwrap();
    let jobs = api
        .post("/api/v1/queues/q/claim", &json!({"count": 1}))
        .await
        .expect(StatusCode::OK)
        .body;
    assert_eq!(jobs["jobs"][0]["id"], id, "{jobs}");
    jobs["jobs"][0]["token"].as_u64().unwrap()
}

pub(super) async fn job(api: &Client, id: &str) -> Value {
    api.get(&format!("/api/v1/queues/q/jobs/{id}"))
        .await
        .expect(StatusCode::OK)
        .body
}

#[tokio::test]
async fn api_claim_hands_out_jobs_with_their_tokens() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        for n in 0..3 {
            q.enqueue(NewJob::new(json!({"n": n})).attempts(4))
                .await
                .unwrap();
        }
        let api = client(&site, |d| d);
        let body = json!({"count": 2, "lease_ms": 5000, "worker": "py-1"});
        let answer = api.post("/api/v1/queues/q/claim", &body).await;
        let jobs = answer.expect(StatusCode::OK).body["jobs"].clone();
        assert_eq!(jobs.as_array().unwrap().len(), 2, "{jobs}");
        assert_eq!(jobs[0]["payload"], json!({"n": 0}));
        assert_eq!(jobs[0]["attempt"], 1);
        assert_eq!(jobs[0]["max_attempts"], 4);
        assert_eq!(jobs[0]["lease_ms"], 5000);
        let id = jobs[0]["id"].as_str().unwrap();
        let record = job(&api, id).await;
        assert_eq!(record["state"], "active");
        assert_eq!(record["worker"], "py-1");
        assert_eq!(record["token"], jobs[0]["token"]);
        let empty = json!({"count": 5});
        let rest = api.post("/api/v1/queues/q/claim", &empty).await;
        assert_eq!(
            rest.expect(StatusCode::OK).body["jobs"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    })
    .await;
}

#[tokio::test]
async fn api_claim_answers_a_payload_that_is_not_json_as_escaped_text() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        let id = q.enqueue(json!({})).await.unwrap().id;
        q.jobs()
            .update_raw(&id, b"caf\xff\xfe".to_vec())
            .await
            .unwrap();
        let api = client(&site, |d| d);
        let answer = api.post("/api/v1/queues/q/claim", &json!({})).await;
        let job = answer.expect(StatusCode::OK).body["jobs"][0].clone();
        assert_eq!(job["payload"], "caf\\xff\\xfe", "{job}");
        assert_eq!(job["payload_raw"], true, "{job}");
    })
    .await;
}

#[tokio::test]
async fn api_complete_stores_the_result() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let token = claimed(&site, &api, "a").await;
        let body = json!({"token": token, "result": {"sent": true}});
        let answer = api.post("/api/v1/queues/q/jobs/a/complete", &body).await;
        assert_eq!(answer.expect(StatusCode::OK).body, json!({"ok": true}));
        let record = job(&api, "a").await;
        assert_eq!(record["state"], "completed");
        assert_eq!(record["result"], json!({"sent": true}));
    })
    .await;
}

#[tokio::test]
async fn api_fail_retries_then_dead_letters() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let token = claimed(&site, &api, "a").await;
        let retry = json!({"token": token, "error": "smtp down", "delay_ms": 0});
        let answer = api.post("/api/v1/queues/q/jobs/a/fail", &retry).await;
        assert_eq!(
            answer.expect(StatusCode::OK).body,
            json!({"outcome": "retry"})
        );
        let again = api.post("/api/v1/queues/q/claim", &json!({})).await;
        let token = again.expect(StatusCode::OK).body["jobs"][0]["token"].clone();
        let dead = json!({"token": token, "error": "bounced", "action": "dead"});
        let answer = api.post("/api/v1/queues/q/jobs/a/fail", &dead).await;
        assert_eq!(
            answer.expect(StatusCode::OK).body,
            json!({"outcome": "dead"})
        );
        let record = job(&api, "a").await;
        assert_eq!(
            (record["state"].clone(), record["error"].clone()),
            (json!("dead"), json!("bounced"))
        );
    })
    .await;
}

#[tokio::test]
async fn api_extend_says_when_a_cancellation_was_requested() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let token = claimed(&site, &api, "a").await;
        let body = json!({"token": token, "lease_ms": 60000});
        let extended = api.post("/api/v1/queues/q/jobs/a/extend", &body).await;
        let extended = extended.expect(StatusCode::OK).body;
        assert_eq!(extended["cancel_requested"], false, "{extended}");
        assert!(extended["deadline_at"].as_u64().unwrap() > 0);
        let cancelled = site
            .queue("q")
            .jobs()
            .cancel(&JobId::new("a").unwrap())
            .await;
        assert_eq!(cancelled.unwrap(), CancelOutcome::Requested);
        let extended = api.post("/api/v1/queues/q/jobs/a/extend", &body).await;
        assert_eq!(
            extended.expect(StatusCode::OK).body["cancel_requested"],
            true
        );
    })
    .await;
}

#[tokio::test]
async fn api_progress_log_and_delay_act_on_the_job_held() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let token = claimed(&site, &api, "a").await;
        let progress = json!({"token": token, "progress": {"done": 3}});
        api.post("/api/v1/queues/q/jobs/a/progress", &progress)
            .await
            .expect(StatusCode::OK);
        let line = json!({"token": token, "line": "step 3"});
        api.post("/api/v1/queues/q/jobs/a/log", &line)
            .await
            .expect(StatusCode::OK);
        let record = job(&api, "a").await;
        assert_eq!(
            (record["progress"].clone(), record["logs"].clone()),
            (json!({"done": 3}), json!(1))
        );
        let delay = json!({"token": token, "delay_ms": 60000});
        api.post("/api/v1/queues/q/jobs/a/delay", &delay)
            .await
            .expect(StatusCode::OK);
        assert_eq!(job(&api, "a").await["state"], "scheduled");
    })
    .await;
}
