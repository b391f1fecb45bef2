//! `POST /queues/{q}/complete`: many completions in one request, each
//! job answered on its own, the next jobs claimed in the same request;
//! a refused body writes nothing.

use super::client;
use super::work::job;
use crate::common::{Site, on_both_wires};
use axum::http::StatusCode;
use echomq::NewJob;
use serde_json::{Value, json};

/// Enqueues jobs `j0`..`j{n}` on `q`.
async fn enqueued(site: &Site, n: u64) {
    for i in 0..n {
        site.queue("q")
            .enqueue(NewJob::new(json!({"n": i})).id(format!("j{i}")).unwrap())
            .await
            .unwrap();
    }
}

/// A client of `site`'s API holding job `j0`, claimed: its token.
async fn one_claimed(site: &Site) -> (super::Client, Value) {
    enqueued(site, 1).await;
    let api = client(site, |d| d);
    let claimed = api
        .post("/api/v1/queues/q/claim", &json!({"count": 1}))
        .await
        .expect(StatusCode::OK)
        .body;
    let token = claimed["jobs"][0]["token"].clone();
    (api, token)
}

#[tokio::test]
async fn api_complete_many_answers_each_job_and_claims_the_next() {
    on_both_wires(|site| async move {
        enqueued(&site, 5).await;
        let api = client(&site, |d| d);
        let claimed = api
            .post("/api/v1/queues/q/claim", &json!({"count": 3}))
            .await
            .expect(StatusCode::OK)
            .body["jobs"]
            .clone();
        let mut completions: Vec<Value> = claimed
            .as_array()
            .unwrap()
            .iter()
            .map(|j| json!({"id": j["id"], "token": j["token"], "result": {"of": j["id"]}}))
            .collect();
        // The second's token is stale: its lease counts as lost.
        completions[1]["token"] = json!(completions[1]["token"].as_u64().unwrap() + 1);
        let body = json!({"jobs": completions, "claim": {"count": 10, "lease_ms": 5000}});
        let answer = api
            .post("/api/v1/queues/q/complete", &body)
            .await
            .expect(StatusCode::OK)
            .body;
        let answers = answer["jobs"].as_array().unwrap();
        assert_eq!(answers.len(), 3, "{answer}");
        assert_eq!(answers[0], json!({"id": "j0", "ok": true}));
        assert_eq!(answers[1]["ok"], false);
        assert_eq!(answers[1]["error"]["code"], "NOTACTIVE", "{answer}");
        assert_eq!(answers[2], json!({"id": "j2", "ok": true}));
        assert_eq!(job(&api, "j0").await["state"], "completed");
        assert_eq!(job(&api, "j0").await["result"], json!({"of": "j0"}));
        assert_eq!(job(&api, "j1").await["state"], "active");
        let next: Vec<&Value> = answer["claimed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| &j["id"])
            .collect();
        assert_eq!(next, [&json!("j3"), &json!("j4")], "{answer}");
        assert_eq!(answer["claimed"][0]["lease_ms"], 5000);
    })
    .await;
}

#[tokio::test]
async fn api_complete_many_refuses_no_jobs_or_more_than_1000() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    let error = api
        .post("/api/v1/queues/q/complete", &json!({"jobs": []}))
        .await
        .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
    assert_eq!(error["field"], "jobs");
    let many: Vec<Value> = (0..1001)
        .map(|i| json!({"id": format!("j{i}"), "token": 1}))
        .collect();
    let error = api
        .post("/api/v1/queues/q/complete", &json!({"jobs": many}))
        .await
        .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
    assert_eq!(error["field"], "jobs");
}

#[tokio::test]
async fn api_complete_many_with_a_bad_claim_completes_nothing() {
    let site = Site::start(echomq::Wire::Script).await;
    let (api, token) = one_claimed(&site).await;
    let body = json!({"jobs": [{"id": "j0", "token": token}], "claim": {"count": 0}});
    let error = api
        .post("/api/v1/queues/q/complete", &body)
        .await
        .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
    assert_eq!(error["field"], "claim.count");
    assert_eq!(
        job(&api, "j0").await["state"],
        "active",
        "nothing was written"
    );
}

#[tokio::test]
async fn api_complete_many_with_a_bad_id_completes_nothing() {
    let site = Site::start(echomq::Wire::Script).await;
    let (api, token) = one_claimed(&site).await;
    let body = json!({"jobs": [{"id": "j0", "token": token}, {"id": "", "token": 1}]});
    let error = api
        .post("/api/v1/queues/q/complete", &body)
        .await
        .refused(StatusCode::BAD_REQUEST, "BADARG");
    assert_eq!(error["field"], "jobs[1].id");
    assert_eq!(
        job(&api, "j0").await["state"],
        "active",
        "nothing was written"
    );
}
