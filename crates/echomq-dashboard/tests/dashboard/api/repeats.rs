//! A queue's repeats over HTTP (docs/http.md, "Repeats"): added (the
//! REPEAT.ADD control), listed, removed; a bad one refused naming its
//! field, writing nothing.

use super::tokens::{READER, with_token};
use super::{Answer, Client, client};
use crate::common::{Site, on_both_wires};
use axum::http::StatusCode;
use echomq::Wire;
use serde_json::{Value, json};

/// A queue the tokens of `tokens.rs` cover (`reports-*`).
const REPEATS: &str = "/api/v1/queues/reports-daily/repeats";

async fn add(api: &Client, body: Value) -> Answer {
    api.post(REPEATS, &body).await
}

async fn listed(api: &Client) -> Value {
    api.get(REPEATS).await.expect(StatusCode::OK).body["repeats"].clone()
}

/// Panics unless adding `body` is refused with 400 naming `field`, the
/// queue left without a repeat.
async fn refused_naming(body: Value, field: &str) -> Value {
    let site = Site::start(Wire::Script).await;
    let api = client(&site, |d| d);
    let answer = add(&api, body).await.expect(StatusCode::BAD_REQUEST);
    let error = answer.body["error"].clone();
    assert_eq!(error["field"], field, "{error}");
    assert_eq!(listed(&api).await, json!([]));
    error
}

#[tokio::test]
async fn api_a_repeat_is_added_listed_and_removed() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let body = json!({"key": "tick", "every_ms": 60000, "payload": {"n": 1}, "priority": 3});
        let added = add(&api, body).await.expect(StatusCode::CREATED).body;
        assert_eq!(added["definition"]["key"], "tick", "{added}");
        assert_eq!(added["definition"]["every_ms"], 60000);
        assert_eq!(added["definition"]["priority"], 3);
        assert_eq!(added["replaced"], Value::Null);
        let cron =
            json!({"key": "tick", "cron": "0 3 * * *", "tz": "Europe/Berlin", "payload": {}});
        let replaced = add(&api, cron).await.expect(StatusCode::CREATED).body;
        assert_eq!(replaced["replaced"]["every_ms"], 60000, "{replaced}");
        let repeats = listed(&api).await;
        assert_eq!(repeats.as_array().unwrap().len(), 1, "{repeats}");
        assert_eq!(repeats[0]["cron"], "0 3 * * *");
        assert_eq!(repeats[0]["tz"], "Europe/Berlin");
        assert!(repeats[0]["next_ms"].as_u64().is_some(), "{repeats}");
        let gone = api.send("DELETE", &format!("{REPEATS}/tick"), "").await;
        assert_eq!(
            gone.expect(StatusCode::OK).body,
            json!({"key": "tick", "removed": true})
        );
        assert_eq!(listed(&api).await, json!([]));
    })
    .await;
}

#[tokio::test]
async fn api_removing_a_repeat_that_is_not_there_is_404() {
    let site = Site::start(Wire::Script).await;
    let api = client(&site, |d| d);
    let answer = api.send("DELETE", &format!("{REPEATS}/ghost"), "").await;
    let error = answer.refused(StatusCode::NOT_FOUND, "NOTFOUND");
    assert!(
        error["message"].as_str().unwrap().contains("ghost"),
        "{error}"
    );
}

#[tokio::test]
async fn api_a_repeat_with_a_bad_cron_is_refused_naming_the_field() {
    refused_naming(
        json!({"key": "k", "cron": "every day", "payload": 1}),
        "cron",
    )
    .await;
}

#[tokio::test]
async fn api_a_repeat_with_a_bad_zone_is_refused_naming_the_field() {
    let body = json!({"key": "k", "cron": "0 3 * * *", "tz": "Mars/Olympus", "payload": 1});
    refused_naming(body, "tz").await;
}

#[tokio::test]
async fn api_a_repeat_every_zero_ms_is_refused_naming_the_field() {
    let error = refused_naming(json!({"key": "k", "every_ms": 0, "payload": 1}), "every_ms").await;
    assert!(error["message"].as_str().unwrap().contains("at least 1 ms"));
}

#[tokio::test]
async fn api_a_repeat_without_a_cadence_is_refused_naming_the_field() {
    refused_naming(json!({"key": "k", "payload": 1}), "every_ms").await;
}

#[tokio::test]
async fn api_a_repeat_with_two_cadences_is_refused_naming_the_field() {
    let body = json!({"key": "k", "every_ms": 1000, "cron": "0 3 * * *", "payload": 1});
    refused_naming(body, "every_ms").await;
}

#[tokio::test]
async fn api_a_repeat_that_would_never_fire_is_refused_naming_the_field() {
    let body = json!({"key": "k", "every_ms": 1000, "end_ms": 1, "payload": 1});
    refused_naming(body, "end_ms").await;
}

#[tokio::test]
async fn api_a_repeat_with_a_bad_key_is_refused_naming_the_field() {
    refused_naming(json!({"key": "a:b", "every_ms": 1000, "payload": 1}), "key").await;
}

#[tokio::test]
async fn api_a_reader_lists_repeats_but_may_not_add_or_remove_them() {
    let site = Site::start(Wire::Script).await;
    let api = with_token(&site, READER, false);
    let body = json!({"key": "k", "every_ms": 1000, "payload": 1});
    let error = add(&api, body)
        .await
        .refused(StatusCode::FORBIDDEN, "FORBIDDEN");
    assert!(
        error["message"].as_str().unwrap().contains("REPEAT.ADD"),
        "{error}"
    );
    let gone = api.send("DELETE", &format!("{REPEATS}/k"), "").await;
    gone.refused(StatusCode::FORBIDDEN, "FORBIDDEN");
    assert_eq!(listed(&api).await, json!([]));
}
