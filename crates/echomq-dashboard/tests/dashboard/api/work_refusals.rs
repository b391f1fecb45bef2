//! A worker's calls refused: a stale token (409 NOTACTIVE on every
//! call), a time limit passed (409 TIMELIMIT), each bad field (400 naming
//! it), a server that may not be worked (403); none writes anything.

use super::client;
use super::work::{claimed, job};
use crate::common::{Site, on_both_wires};
use axum::http::StatusCode;
use echomq::NewJob;
use serde_json::json;

#[tokio::test]
async fn api_fail_rate_limited_without_delay_ms_is_refused_naming_it() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let token = claimed(&site, &api, "a").await;
        let body = json!({"token": token, "error": "429", "action": "rate_limited"});
        let error = api
            .post("/api/v1/queues/q/jobs/a/fail", &body)
            .await
            .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
        assert_eq!(error["field"], "delay_ms", "{error}");
        assert_eq!(job(&api, "a").await["state"], "active");
        let held =
            json!({"token": token, "error": "429", "action": "rate_limited", "delay_ms": 1000});
        let answer = api.post("/api/v1/queues/q/jobs/a/fail", &held).await;
        assert_eq!(
            answer.expect(StatusCode::OK).body,
            json!({"outcome": "rate_limited"})
        );
    })
    .await;
}

#[tokio::test]
async fn api_a_stale_token_answers_409_notactive_on_every_call() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let token = claimed(&site, &api, "a").await;
        let stale = token + 1;
        let calls = [
            ("complete", json!({"token": stale})),
            ("fail", json!({"token": stale, "error": "x"})),
            ("extend", json!({"token": stale, "lease_ms": 1000})),
            ("progress", json!({"token": stale, "progress": 1})),
            ("log", json!({"token": stale, "line": "x"})),
            ("delay", json!({"token": stale, "delay_ms": 1})),
        ];
        for (call, body) in calls {
            let path = format!("/api/v1/queues/q/jobs/a/{call}");
            let error = api
                .post(&path, &body)
                .await
                .refused(StatusCode::CONFLICT, "NOTACTIVE");
            assert_eq!(error["job"], "a", "{call}: {error}");
        }
        let record = job(&api, "a").await;
        assert_eq!(
            (record["state"].clone(), record["logs"].clone()),
            (json!("active"), json!(0))
        );
    })
    .await;
}

#[tokio::test]
async fn api_claim_refuses_a_count_out_of_range_naming_it() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    for count in [0, 1001] {
        let error = api
            .post("/api/v1/queues/q/claim", &json!({"count": count}))
            .await
            .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
        assert_eq!(error["field"], "count", "{error}");
    }
}

#[tokio::test]
async fn api_claim_refuses_wait_ms_over_the_cap() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    let error = api
        .post("/api/v1/queues/q/claim", &json!({"wait_ms": 60001}))
        .await
        .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
    assert_eq!(error["field"], "wait_ms", "{error}");
}

#[tokio::test]
async fn api_claim_refuses_an_unknown_field_naming_it() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    let error = api
        .post("/api/v1/queues/q/claim", &json!({"count": 1, "timeout": 5}))
        .await
        .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
    assert_eq!(error["field"], "timeout", "{error}");
}

#[tokio::test]
async fn api_a_read_only_server_refuses_a_claim_with_403() {
    let site = Site::start(echomq::Wire::Script).await;
    site.queue("q").enqueue(json!({})).await.unwrap();
    let api = client(&site, |d| d.read_only(true));
    api.post("/api/v1/queues/q/claim", &json!({}))
        .await
        .refused(StatusCode::FORBIDDEN, "FORBIDDEN");
    let counts = site.queue("q").admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.active), (1, 0));
}

#[tokio::test]
async fn api_fail_refuses_delay_ms_with_dead_naming_it() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    let token = claimed(&site, &api, "a").await;
    let body = json!({"token": token, "error": "x", "action": "dead", "delay_ms": 5});
    let error = api
        .post("/api/v1/queues/q/jobs/a/fail", &body)
        .await
        .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
    assert_eq!(error["field"], "delay_ms", "{error}");
    assert_eq!(job(&api, "a").await["state"], "active");
}

#[tokio::test]
async fn api_a_zero_lease_is_refused_naming_lease_ms() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    let token = claimed(&site, &api, "a").await;
    let refusals = [
        ("/api/v1/queues/q/claim", json!({"lease_ms": 0})),
        (
            "/api/v1/queues/q/jobs/a/extend",
            json!({"token": token, "lease_ms": 0}),
        ),
    ];
    for (path, body) in refusals {
        let error = api
            .post(path, &body)
            .await
            .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
        assert_eq!(error["field"], "lease_ms", "{path}: {error}");
    }
}

#[tokio::test]
async fn api_extend_past_the_time_limit_answers_409_timelimit() {
    on_both_wires(|site| async move {
        let timed = NewJob::new(json!({})).id("a").unwrap();
        let timed = timed.time_limit(std::time::Duration::from_millis(50));
        site.queue("q").enqueue(timed).await.unwrap();
        let api = client(&site, |d| d);
        let answer = api.post("/api/v1/queues/q/claim", &json!({})).await;
        let claimed = answer.expect(StatusCode::OK).body["jobs"][0].clone();
        assert_eq!(
            (
                claimed["time_limit_ms"].clone(),
                claimed["lease_ms"].clone()
            ),
            (json!(50), json!(50))
        );
        let body = json!({"token": claimed["token"], "lease_ms": 30000});
        let limit = std::time::Duration::from_secs(10);
        echomq_testkit::wait_for("the time limit to pass", limit, || async {
            let answer = api.post("/api/v1/queues/q/jobs/a/extend", &body).await;
            answer.status == StatusCode::CONFLICT && answer.body["error"]["code"] == "TIMELIMIT"
        })
        .await;
    })
    .await;
}
