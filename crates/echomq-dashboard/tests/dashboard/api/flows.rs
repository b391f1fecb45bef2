//! Flows over HTTP (docs/http.md, "Flows"): `POST /api/v1/flows` takes
//! the document of `emq flow add`, submits it whole or refuses it
//! writing nothing.

use super::tokens::{PRODUCER, with_token};
use super::{Client, client};
use crate::common::{Site, on_both_wires};
use axum::http::StatusCode;
use echomq::Wire;
use serde_json::{Value, json};

/// `fetch` and `small` on `images`, `mail` on `emails` after both.
fn order() -> Value {
    json!({"id": "order-42", "jobs": [
        {"ref": "fetch", "queue": "images", "payload": {"url": "u"}},
        {"ref": "small", "queue": "images", "payload": {"px": 64}, "after": ["fetch"]},
        {"ref": "mail", "queue": "emails", "payload": {}, "after": ["fetch", "small"]}
    ]})
}

/// Claims one job of `queue` over the API and completes it: its id, or
/// `None` when none was pending.
async fn run_one(api: &Client, queue: &str) -> Option<String> {
    let claim = format!("/api/v1/queues/{queue}/claim");
    let answer = api.post(&claim, &json!({"count": 1})).await;
    let jobs = answer.expect(StatusCode::OK).body["jobs"].clone();
    let job = jobs.as_array().unwrap().first()?.clone();
    let id = job["id"].as_str().unwrap().to_string();
    let complete = format!("/api/v1/queues/{queue}/jobs/{id}/complete");
    let body = json!({"token": job["token"], "result": {"ran": id}});
    api.post(&complete, &body).await.expect(StatusCode::OK);
    Some(id)
}

async fn state(api: &Client, queue: &str, id: &str) -> Value {
    let path = format!("/api/v1/queues/{queue}/jobs/{id}");
    api.get(&path).await.expect(StatusCode::OK).body["state"].clone()
}

/// The queues the site holds, each with its counts.
async fn queues(api: &Client) -> Value {
    let listed = api.get("/api/v1/queues").await.expect(StatusCode::OK).body;
    let queues = listed["queues"].as_array().unwrap().iter();
    queues
        .map(|q| json!({"name": q["name"], "counts": q["counts"]}))
        .collect()
}

#[tokio::test]
async fn api_a_flow_across_two_queues_is_submitted_and_runs_to_completion() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let answer = api.post("/api/v1/flows", &order()).await;
        let body = answer.expect(StatusCode::CREATED).body;
        assert_eq!(body["flow"], "order-42");
        assert_eq!(
            body["jobs"]["fetch"],
            json!({"queue": "images", "id": "order-42:fetch", "created": true})
        );
        assert_eq!(body["jobs"]["mail"]["queue"], "emails", "{body}");
        assert_eq!(state(&api, "emails", "order-42:mail").await, "blocked");
        // Each job runs only once the jobs it runs after have completed.
        assert_eq!(run_one(&api, "emails").await, None);
        let fetch = run_one(&api, "images").await;
        assert_eq!(fetch.as_deref(), Some("order-42:fetch"));
        assert_eq!(run_one(&api, "emails").await, None);
        let small = run_one(&api, "images").await;
        assert_eq!(small.as_deref(), Some("order-42:small"));
        let mail = run_one(&api, "emails").await;
        assert_eq!(mail.as_deref(), Some("order-42:mail"));
        for (queue, id) in [
            ("images", "order-42:fetch"),
            ("images", "order-42:small"),
            ("emails", "order-42:mail"),
        ] {
            assert_eq!(state(&api, queue, id).await, "completed", "{id}");
        }
    })
    .await;
}

#[tokio::test]
async fn api_a_flow_submitted_again_changes_nothing() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        api.post("/api/v1/flows", &order())
            .await
            .expect(StatusCode::CREATED);
        let before = queues(&api).await;
        let again = api.post("/api/v1/flows", &order()).await;
        let body = again.expect(StatusCode::CREATED).body;
        for reference in ["fetch", "small", "mail"] {
            let job = &body["jobs"][reference];
            assert_eq!(job["created"], false, "{body}");
            assert_eq!(job["id"], format!("order-42:{reference}"));
        }
        assert_eq!(queues(&api).await, before);
    })
    .await;
}

#[tokio::test]
async fn api_a_flow_with_a_cycle_is_refused_and_writes_nothing() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let flow = json!({"id": "loop", "jobs": [
            {"ref": "a", "queue": "images", "payload": 1, "after": ["b"]},
            {"ref": "b", "queue": "emails", "payload": 2, "after": ["a"]}
        ]});
        let answer = api.post("/api/v1/flows", &flow).await;
        let error = answer.refused(StatusCode::BAD_REQUEST, "BADARG");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains("cycle through a, b"), "{error}");
        assert_eq!(queues(&api).await, json!([]));
    })
    .await;
}

#[tokio::test]
async fn api_a_flow_after_an_unknown_ref_is_refused_and_writes_nothing() {
    let site = Site::start(Wire::Script).await;
    let api = client(&site, |d| d);
    let flow = json!({"id": "f", "jobs": [
        {"ref": "a", "queue": "images", "payload": 1},
        {"ref": "b", "queue": "emails", "payload": 2, "after": ["ghost"]}
    ]});
    let answer = api.post("/api/v1/flows", &flow).await;
    let error = answer.refused(StatusCode::BAD_REQUEST, "BADARG");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("job b runs after ghost"), "{error}");
    assert_eq!(queues(&api).await, json!([]));
}

#[tokio::test]
async fn api_a_flow_after_an_outside_job_that_does_not_exist_is_refused() {
    let site = Site::start(Wire::Script).await;
    let api = client(&site, |d| d);
    let flow = json!({"id": "f", "jobs": [
        {"ref": "a", "queue": "images", "payload": 1,
         "after": [{"queue": "reports", "id": "r-17"}]}
    ]});
    let answer = api.post("/api/v1/flows", &flow).await;
    let error = answer.expect(StatusCode::BAD_REQUEST).body["error"].clone();
    assert!(
        error["message"].as_str().unwrap().contains("r-17"),
        "{error}"
    );
    assert_eq!(queues(&api).await, json!([]));
}

#[tokio::test]
async fn api_a_flow_with_a_bad_duration_is_refused_naming_the_field() {
    let site = Site::start(Wire::Script).await;
    let api = client(&site, |d| d);
    let flow = json!({"id": "f", "jobs": [
        {"ref": "a", "queue": "images", "payload": 1},
        {"ref": "b", "queue": "images", "payload": 2, "delay": "soon"}
    ]});
    let answer = api.post("/api/v1/flows", &flow).await;
    let error = answer.refused(StatusCode::BAD_REQUEST, "BADARG");
    assert_eq!(error["field"], "jobs[1].delay", "{error}");
    assert!(error["message"].as_str().unwrap().contains("job b: delay"));
    assert_eq!(queues(&api).await, json!([]));
}

#[tokio::test]
async fn api_a_flow_with_an_unknown_field_is_refused_naming_it() {
    let site = Site::start(Wire::Script).await;
    let api = client(&site, |d| d);
    let flow = json!({"id": "f", "jobs": [
        {"ref": "a", "queue": "images", "payload": 1, "retries": 3}
    ]});
    let answer = api.post("/api/v1/flows", &flow).await;
    let error = answer.refused(StatusCode::BAD_REQUEST, "BADREQUEST");
    assert_eq!(error["field"], "jobs[0].retries", "{error}");
    assert_eq!(queues(&api).await, json!([]));
}

#[tokio::test]
async fn api_a_producer_is_refused_a_flow_touching_a_queue_outside_its_globs() {
    let site = Site::start(Wire::Script).await;
    let api = with_token(&site, PRODUCER, false);
    let flow = json!({"id": "f", "jobs": [
        {"ref": "a", "queue": "emails", "payload": 1},
        {"ref": "b", "queue": "billing", "payload": 2, "after": ["a"]}
    ]});
    let answer = api.post("/api/v1/flows", &flow).await;
    let error = answer.refused(StatusCode::FORBIDDEN, "FORBIDDEN");
    assert!(
        error["message"].as_str().unwrap().contains("billing"),
        "{error}"
    );
    let operator = client(&site, |d| d);
    assert_eq!(queues(&operator).await, json!([]));
}

#[tokio::test]
async fn api_a_producer_is_refused_a_flow_after_a_job_outside_its_globs() {
    let site = Site::start(Wire::Script).await;
    let api = with_token(&site, PRODUCER, false);
    let flow = json!({"id": "f", "jobs": [
        {"ref": "a", "queue": "emails", "payload": 1,
         "after": [{"queue": "billing", "id": "x"}]}
    ]});
    let answer = api.post("/api/v1/flows", &flow).await;
    let error = answer.refused(StatusCode::FORBIDDEN, "FORBIDDEN");
    assert!(
        error["message"].as_str().unwrap().contains("billing"),
        "{error}"
    );
    let operator = client(&site, |d| d);
    assert_eq!(queues(&operator).await, json!([]));
}
