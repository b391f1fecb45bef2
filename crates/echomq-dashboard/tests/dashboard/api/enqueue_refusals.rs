//! Every refusal of `POST /queues/{q}/jobs`, each its own test; a refused
//! request writes nothing.

use super::{Client, client};
use crate::common::{Site, on_both_wires};
use axum::http::StatusCode;
use serde_json::{Value, json};

/// The queue `q` holds no job at all.
async fn nothing_written(site: &Site) {
    let counts = site.queue("q").admin().counts().await.unwrap();
    assert_eq!(counts.total(), 0, "{counts:?}");
}

async fn refused_field(api: &Client, body: &str) -> Value {
    api.send("POST", "/api/v1/queues/q/jobs", body)
        .await
        .refused(StatusCode::BAD_REQUEST, "BADREQUEST")
}

#[tokio::test]
async fn api_enqueue_refuses_malformed_json_with_400() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let error = refused_field(&api, r#"{"payload": 1"#).await;
        assert!(
            error["message"].as_str().unwrap().contains("not JSON"),
            "{error}"
        );
        assert!(error.get("field").is_none(), "{error}");
        nothing_written(&site).await;
    })
    .await;
}

#[tokio::test]
async fn api_enqueue_refuses_an_unknown_field_naming_it() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let error = refused_field(&api, r#"{"payload": 1, "priorty": 2}"#).await;
        assert_eq!(error["field"], "priorty", "{error}");
        let error = refused_field(&api, r#"[{"payload": 1}, {"payload": 2, "nope": 1}]"#).await;
        assert_eq!(error["field"], "[1].nope", "{error}");
        nothing_written(&site).await;
    })
    .await;
}

#[tokio::test]
async fn api_enqueue_refuses_a_missing_payload_naming_it() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let error = refused_field(&api, r#"{"id": "a"}"#).await;
        assert_eq!(error["field"], "payload", "{error}");
        nothing_written(&site).await;
    })
    .await;
}

#[tokio::test]
async fn api_enqueue_refuses_a_mistyped_field_naming_it() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let error = refused_field(&api, r#"{"payload": 1, "priority": "high"}"#).await;
        assert_eq!(error["field"], "priority", "{error}");
        let error = refused_field(&api, r#"{"payload": 1, "priority": 256}"#).await;
        assert_eq!(error["field"], "priority", "{error}");
        nothing_written(&site).await;
    })
    .await;
}

#[tokio::test]
async fn api_enqueue_refuses_delay_with_run_at() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    let error = refused_field(&api, r#"{"payload": 1, "delay_ms": 5, "run_at": 5}"#).await;
    assert_eq!(error["field"], "run_at", "{error}");
    let error = refused_field(&api, r#"{"payload": 1, "debounce_ms": 5}"#).await;
    assert_eq!(error["field"], "debounce_ms", "{error}");
    nothing_written(&site).await;
}

#[tokio::test]
async fn api_enqueue_refuses_an_argument_the_library_refuses_with_400_badarg() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let body = json!({"payload": 1, "attempts": 0});
        let error = api
            .post("/api/v1/queues/q/jobs", &body)
            .await
            .refused(StatusCode::BAD_REQUEST, "BADARG");
        assert_eq!(error["field"], "attempts", "{error}");
        nothing_written(&site).await;
    })
    .await;
}

#[tokio::test]
async fn api_enqueue_refuses_more_than_1000_jobs() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    let many: Vec<Value> = (0..1001).map(|n| json!({"payload": n})).collect();
    api.post("/api/v1/queues/q/jobs", &Value::Array(many))
        .await
        .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
    nothing_written(&site).await;
}

#[tokio::test]
async fn api_enqueue_refuses_a_wait_for_many_or_a_bad_duration() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    for path in [
        "/api/v1/queues/q/jobs?wait=forever",
        "/api/v1/queues/q/jobs?wait=6m",
    ] {
        let error = api
            .post(path, &json!({"payload": 1}))
            .await
            .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
        assert_eq!(error["field"], "wait", "{error}");
    }
    let error = api
        .post("/api/v1/queues/q/jobs?wait=1s", &json!([{"payload": 1}]))
        .await
        .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
    assert_eq!(error["field"], "wait", "{error}");
    let error = api
        .post("/api/v1/queues/q/jobs?wiat=1s", &json!({"payload": 1}))
        .await
        .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
    assert_eq!(error["field"], "wiat", "{error}");
    nothing_written(&site).await;
}

#[tokio::test]
async fn api_enqueue_refuses_a_body_over_the_limit_with_413() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d.max_body(1000));
        let big = json!({"payload": "x".repeat(1000)});
        let error = api
            .post("/api/v1/queues/q/jobs", &big)
            .await
            .refused(StatusCode::PAYLOAD_TOO_LARGE, "TOOLARGE");
        assert!(
            error["message"].as_str().unwrap().contains("1000"),
            "{error}"
        );
        api.post("/api/v1/queues/q/jobs", &json!({"payload": "small"}))
            .await
            .expect(StatusCode::CREATED);
        let default = client(&site, |d| d);
        let over = json!({"payload": "x".repeat(1 << 20)});
        default
            .post("/api/v1/queues/q/jobs", &over)
            .await
            .refused(StatusCode::PAYLOAD_TOO_LARGE, "TOOLARGE");
    })
    .await;
}

#[tokio::test]
async fn api_enqueue_refuses_a_body_that_is_not_json_with_415() {
    on_both_wires(|site| async move {
        let form =
            client(&site, |d| d).with_header("content-type", "application/x-www-form-urlencoded");
        form.send("POST", "/api/v1/queues/q/jobs", "payload=1")
            .await
            .refused(StatusCode::UNSUPPORTED_MEDIA_TYPE, "UNSUPPORTED");
        let plain = client(&site, |d| d).with_header("content-type", "text/plain");
        plain
            .send("POST", "/api/v1/queues/q/jobs", r#"{"payload": 1}"#)
            .await
            .refused(StatusCode::UNSUPPORTED_MEDIA_TYPE, "UNSUPPORTED");
        // A form with no field sends no body, and its type still.
        form.send("POST", "/api/v1/queues/q/jobs", "")
            .await
            .refused(StatusCode::UNSUPPORTED_MEDIA_TYPE, "UNSUPPORTED");
        nothing_written(&site).await;
    })
    .await;
}

#[tokio::test]
async fn api_enqueue_from_a_foreign_origin_is_refused_with_403() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d).with_header("origin", "http://evil.example");
        api.post("/api/v1/queues/q/jobs", &json!({"payload": 1}))
            .await
            .refused(StatusCode::FORBIDDEN, "FORBIDDEN");
        nothing_written(&site).await;
    })
    .await;
}

#[tokio::test]
async fn api_enqueue_on_a_read_only_server_is_refused_with_403() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d.read_only(true));
        let error = api
            .post("/api/v1/queues/q/jobs", &json!({"payload": 1}))
            .await
            .refused(StatusCode::FORBIDDEN, "FORBIDDEN");
        assert!(
            error["message"].as_str().unwrap().contains("read-only"),
            "{error}"
        );
        nothing_written(&site).await;
    })
    .await;
}
