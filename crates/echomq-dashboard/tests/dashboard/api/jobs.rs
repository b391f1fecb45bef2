//! Reading one job.

use super::client;
use crate::common::on_both_wires;
use axum::http::StatusCode;
use echomq::NewJob;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn api_get_job_answers_the_record_with_its_queue_and_token() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        q.enqueue(NewJob::new(json!({"n": 1})).id("a").unwrap().priority(3))
            .await
            .unwrap();
        let api = client(&site, |d| d);
        let job = api
            .get("/api/v1/queues/q/jobs/a")
            .await
            .expect(StatusCode::OK)
            .body;
        assert_eq!(job["queue"], "q", "{job}");
        assert_eq!(job["id"], "a");
        assert_eq!(job["state"], "pending");
        assert_eq!(job["payload"], json!({"n": 1}));
        assert_eq!(job["priority"], 3);
        assert_eq!(job["token"], json!(null));
        assert!(job.get("payload_raw").is_none(), "{job}");
        let claimed = q.claim("w", Duration::from_secs(30), 1).await.unwrap();
        let job = api
            .get("/api/v1/queues/q/jobs/a")
            .await
            .expect(StatusCode::OK)
            .body;
        assert_eq!(job["state"], "active");
        assert_eq!(job["token"], json!(claimed[0].token), "{job}");
    })
    .await;
}

#[tokio::test]
async fn api_get_job_of_an_unknown_job_answers_404_nojob() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let error = api
            .get("/api/v1/queues/q/jobs/nope")
            .await
            .refused(StatusCode::NOT_FOUND, "NOJOB");
        assert_eq!(error["job"], "nope", "{error}");
    })
    .await;
}

#[tokio::test]
async fn api_answers_503_when_the_server_cannot_be_reached() {
    let mut site = crate::common::Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    api.get("/api/v1/queues/q/jobs/a")
        .await
        .refused(StatusCode::NOT_FOUND, "NOJOB");
    site.server.kill();
    let error = api
        .get("/api/v1/queues/q/jobs/a")
        .await
        .refused(StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE");
    assert!(!error["message"].as_str().unwrap().is_empty(), "{error}");
}
