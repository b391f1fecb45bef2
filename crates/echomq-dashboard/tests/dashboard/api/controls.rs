//! The operating endpoints: a control of the registry at
//! `/controls/{verb}`, its body checked against the row, sent through the
//! library.

use super::client;
use crate::common::{Site, on_both_wires};
use axum::http::StatusCode;
use echomq::NewJob;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn api_queue_controls_pause_drain_and_set_flow_control() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        for _ in 0..3 {
            q.enqueue(json!({})).await.unwrap();
        }
        let api = client(&site, |d| d);
        let post = |verb: &str, body| {
            let api = api.clone();
            let path = format!("/api/v1/queues/q/controls/{verb}");
            async move { api.post(&path, &body).await.expect(StatusCode::OK).body }
        };
        assert_eq!(post("pause", json!({})).await, json!({"paused": true}));
        assert!(q.admin().counts().await.unwrap().paused);
        assert_eq!(post("counts", json!({})).await["pending"], 3);
        assert_eq!(post("resume", json!({})).await, json!({"paused": false}));
        let limit = post("limit", json!({"max": 5, "per": 1000})).await;
        assert_eq!(
            (limit["max"].clone(), limit["per_ms"].clone()),
            (json!(5), json!(1000))
        );
        assert_eq!(post("concurrency", json!({"max": 2})).await["max"], 2);
        assert_eq!(post("concurrency", json!({"off": true})).await["max"], 0);
        assert_eq!(
            post("group-pause", json!({"group": "eu"})).await,
            json!({"paused": true})
        );
        assert_eq!(
            post("group-counts", json!({"group": "eu"})).await["paused"],
            true
        );
        assert_eq!(post("drain", json!({})).await, json!({"drained": 3}));
        assert_eq!(q.admin().counts().await.unwrap().pending, 0);
    })
    .await;
}

#[tokio::test]
async fn api_job_controls_cancel_reschedule_update_and_remove() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        let later = NewJob::new(json!({})).id("a").unwrap();
        q.enqueue(later.after(Duration::from_secs(3600)))
            .await
            .unwrap();
        q.enqueue(NewJob::new(json!({})).id("b").unwrap())
            .await
            .unwrap();
        let api = client(&site, |d| d);
        let post = |path: &str, body| {
            let api = api.clone();
            let path = format!("/api/v1/queues/q/jobs/{path}");
            async move { api.post(&path, &body).await.expect(StatusCode::OK).body }
        };
        let update = json!({"payload": {"to": "x@example.com"}});
        assert_eq!(post("a/controls/update", update).await, json!({"ok": true}));
        let a = q
            .jobs()
            .get(&echomq::JobId::new("a").unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(a.payload, r#"{"to":"x@example.com"}"#);
        let at = json!({"run_at": 4_102_444_800_000u64});
        assert_eq!(post("a/controls/reschedule", at).await, json!({"ok": true}));
        assert_eq!(
            post("b/controls/cancel", json!({})).await,
            json!({"outcome": "cancelled"})
        );
        assert_eq!(
            post("b/controls/reprocess", json!({})).await,
            json!({"ok": true})
        );
        assert_eq!(
            post("b/controls/remove", json!({})).await,
            json!({"removed": true})
        );
        let counts = q.admin().counts().await.unwrap();
        assert_eq!((counts.scheduled, counts.pending), (1, 0));
    })
    .await;
}

#[tokio::test]
async fn api_a_control_refused_by_the_protocol_answers_409() {
    on_both_wires(|site| async move {
        site.queue("q").enqueue(json!({})).await.unwrap();
        let api = client(&site, |d| d);
        let error = api
            .post("/api/v1/queues/q/controls/obliterate", &json!({}))
            .await
            .refused(StatusCode::CONFLICT, "NOTPAUSED");
        assert!(
            error["line"].as_str().unwrap().starts_with("NOTPAUSED"),
            "{error}"
        );
        assert_eq!(site.queue("q").admin().counts().await.unwrap().pending, 1);
    })
    .await;
}

#[tokio::test]
async fn api_a_job_control_on_no_job_answers_404_nojob() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    api.post("/api/v1/queues/q/jobs/none/controls/requeue", &json!({}))
        .await
        .refused(StatusCode::NOT_FOUND, "NOJOB");
}

#[tokio::test]
async fn api_an_unknown_control_verb_answers_404() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    for path in [
        "/api/v1/queues/q/controls/explode",
        "/api/v1/queues/q/controls/group.pause",
        "/api/v1/queues/q/controls/cancel",
        "/api/v1/queues/q/jobs/a/controls/drain",
    ] {
        api.post(path, &json!({}))
            .await
            .refused(StatusCode::NOT_FOUND, "NOTFOUND");
    }
}

#[tokio::test]
async fn api_a_control_refuses_an_unknown_field_naming_it() {
    let site = Site::start(echomq::Wire::Script).await;
    site.queue("q").enqueue(json!({})).await.unwrap();
    let api = client(&site, |d| d);
    let error = api
        .post(
            "/api/v1/queues/q/controls/drain",
            &json!({"sheduled": true}),
        )
        .await
        .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
    assert_eq!(error["field"], "sheduled", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("scheduled"),
        "{error}"
    );
    assert_eq!(site.queue("q").admin().counts().await.unwrap().pending, 1);
}

#[tokio::test]
async fn api_a_control_refuses_a_missing_argument_naming_it() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    let error = api
        .post("/api/v1/queues/q/controls/group-pause", &json!({}))
        .await
        .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
    assert_eq!(error["field"], "group", "{error}");
}

#[tokio::test]
async fn api_a_control_refuses_an_integer_out_of_its_rows_range() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    let error = api
        .post("/api/v1/queues/q/controls/concurrency", &json!({"max": 0}))
        .await
        .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
    assert_eq!(error["field"], "max", "{error}");
    let cap = site.queue("q").admin().concurrency_cap().await.unwrap();
    assert_eq!(cap.max, 0);
}

#[tokio::test]
async fn api_a_control_refuses_fields_its_row_makes_exclusive() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    let body = json!({"max": 5, "per": 1000, "off": true});
    let error = api
        .post("/api/v1/queues/q/controls/limit", &body)
        .await
        .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
    assert_eq!(error["field"], "off", "{error}");
}

#[tokio::test]
async fn api_a_read_only_server_refuses_drain_with_403() {
    let site = Site::start(echomq::Wire::Script).await;
    site.queue("q").enqueue(json!({})).await.unwrap();
    let api = client(&site, |d| d.read_only(true));
    let error = api
        .post("/api/v1/queues/q/controls/drain", &json!({}))
        .await
        .refused(StatusCode::FORBIDDEN, "FORBIDDEN");
    assert!(
        error["message"].as_str().unwrap().contains("DRAIN"),
        "{error}"
    );
    assert_eq!(site.queue("q").admin().counts().await.unwrap().pending, 1);
}

#[tokio::test]
async fn api_stalled_check_control_sweeps_a_lease_that_ran_out() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        q.enqueue(json!({})).await.unwrap();
        q.claim("w", Duration::from_millis(1), 1).await.unwrap();
        let api = client(&site, |d| d);
        let swept = echomq_testkit::wait_for(
            "the sweep to recover the job",
            Duration::from_secs(10),
            || {
                let api = api.clone();
                async move {
                    let answer = api
                        .post(
                            "/api/v1/queues/q/controls/stalled-check",
                            &json!({"max_stalls": 1}),
                        )
                        .await;
                    let body = answer.expect(StatusCode::OK).body;
                    (body["recovered"] == 1).then_some(body)
                }
            },
        )
        .await;
        assert_eq!(swept["dead"], 0, "{swept}");
        assert_eq!(q.admin().counts().await.unwrap().pending, 1);
    })
    .await;
}
