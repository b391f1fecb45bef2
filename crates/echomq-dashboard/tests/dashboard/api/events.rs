//! `GET /queues/{q}/events`: server-sent events, live and resumable.

use super::client;
use crate::common::{Site, on_both_wires};
use axum::body::Body;
use axum::http::StatusCode;
use echomq::NewJob;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::time::Duration;

/// One server-sent event: its id, name and data.
#[derive(Debug, PartialEq)]
struct Sent {
    id: String,
    event: String,
    data: Value,
}

/// The next event on `body` (keep-alive comments skipped), within 10 s.
async fn next(body: &mut Body, buffer: &mut String) -> Sent {
    let read = async {
        loop {
            if let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                let field = |name: &str| {
                    block
                        .lines()
                        .find_map(|line| line.strip_prefix(&format!("{name}:")))
                        .map(|v| v.trim_start().to_string())
                };
                let Some(event) = field("event") else {
                    continue;
                };
                return Sent {
                    id: field("id").unwrap(),
                    event,
                    data: serde_json::from_str(&field("data").unwrap()).unwrap(),
                };
            }
            let frame = body.frame().await.expect("the stream ended").unwrap();
            if let Ok(data) = frame.into_data() {
                buffer.push_str(&String::from_utf8_lossy(&data));
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("an event within 10 s")
}

#[tokio::test]
async fn api_events_stream_live_events_from_now() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        q.enqueue(NewJob::new(json!(0)).id("before").unwrap())
            .await
            .unwrap();
        let api = client(&site, |d| d);
        let (status, mut body) = api.open("/api/v1/queues/q/events").await;
        assert_eq!(status, StatusCode::OK);
        q.enqueue(NewJob::new(json!(1)).id("a").unwrap())
            .await
            .unwrap();
        q.claim("w1", Duration::from_secs(30), 1).await.unwrap();
        let mut buffer = String::new();
        let enqueued = next(&mut body, &mut buffer).await;
        assert_eq!(enqueued.event, "enqueued");
        assert_eq!(enqueued.data, json!({"job": "a"}));
        let claimed = next(&mut body, &mut buffer).await;
        assert_eq!(claimed.event, "claimed");
        assert_eq!(claimed.data["job"], "before", "{:?}", claimed);
        assert_eq!(claimed.data["worker"], "w1");
        assert!(claimed.data["token"].is_u64());
    })
    .await;
}

#[tokio::test]
async fn api_events_resume_after_the_last_event_id() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        for id in ["a", "b", "c"] {
            q.enqueue(NewJob::new(json!(id)).id(id).unwrap())
                .await
                .unwrap();
        }
        let kept = q.recent_events(10).await.unwrap();
        let first = &kept[0];
        let last_id = format!("{}/{}", first.stream_id, first.index);
        let api = client(&site, |d| d).with_header("last-event-id", &last_id);
        let (status, mut body) = api.open("/api/v1/queues/q/events").await;
        assert_eq!(status, StatusCode::OK);
        let mut buffer = String::new();
        let b = next(&mut body, &mut buffer).await;
        assert_eq!(
            (b.event.as_str(), b.data["job"].clone()),
            ("enqueued", json!("b"))
        );
        let c = next(&mut body, &mut buffer).await;
        assert_eq!(c.data["job"], "c");
        assert_eq!(c.id, format!("{}/{}", kept[2].stream_id, kept[2].index));
    })
    .await;
}

#[tokio::test]
async fn api_events_refuse_a_last_event_id_that_names_no_event() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d).with_header("last-event-id", "yesterday");
    let error = api
        .get("/api/v1/queues/q/events")
        .await
        .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
    assert_eq!(error["field"], "Last-Event-ID");
}

#[tokio::test]
async fn api_events_past_the_live_slots_answer_503() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d.live_viewers(1));
    let (status, held) = api.open("/api/v1/queues/q/events").await;
    assert_eq!(status, StatusCode::OK);
    api.get("/api/v1/queues/q/events")
        .await
        .refused(StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE");
    drop(held);
    let (status, _again) = api.open("/api/v1/queues/q/events").await;
    assert_eq!(status, StatusCode::OK);
}
