//! The reading endpoints: queues, one queue, pages of jobs, a job's log
//! and its outcome.

use super::client;
use crate::common::{Site, on_both_wires};
use axum::http::StatusCode;
use echomq::{JobId, NewJob};
use serde_json::{Value, json};
use std::time::Duration;

async fn enqueue(site: &Site, queue: &str, ids: &[&str]) {
    let q = site.queue(queue);
    for id in ids {
        q.enqueue(NewJob::new(json!({"id": id})).id(*id).unwrap())
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn api_list_queues_answers_each_with_counts_and_settings() {
    on_both_wires(|site| async move {
        enqueue(&site, "a", &["1", "2"]).await;
        enqueue(&site, "b", &["3"]).await;
        site.queue("b").admin().pause().await.unwrap();
        let api = client(&site, |d| d);
        let body = api.get("/api/v1/queues").await.expect(StatusCode::OK).body;
        let queues = body["queues"].as_array().unwrap();
        let names: Vec<&str> = queues.iter().map(|q| q["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["a", "b"], "{body}");
        assert_eq!(queues[0]["counts"]["pending"], 2, "{body}");
        assert_eq!(queues[0]["counts"]["dead"], 0);
        assert_eq!(queues[0]["paused"], false);
        assert_eq!(queues[1]["paused"], true);
        assert!(queues[0]["settings"].is_object(), "{body}");
    })
    .await;
}

#[tokio::test]
async fn api_get_queue_answers_one_queue() {
    on_both_wires(|site| async move {
        enqueue(&site, "a", &["1"]).await;
        let api = client(&site, |d| d);
        let queue = api
            .get("/api/v1/queues/a")
            .await
            .expect(StatusCode::OK)
            .body;
        assert_eq!(queue["name"], "a");
        assert_eq!(queue["counts"]["pending"], 1, "{queue}");
    })
    .await;
}

#[tokio::test]
async fn api_get_queue_of_an_unknown_queue_answers_404() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        api.get("/api/v1/queues/nope")
            .await
            .refused(StatusCode::NOT_FOUND, "NOTFOUND");
        // A queue whose jobs all went is still known (its registry entry).
        enqueue(&site, "a", &["1"]).await;
        site.queue("a")
            .jobs()
            .remove(&JobId::new("1").unwrap(), echomq::IfActive::Refuse)
            .await
            .unwrap();
        api.get("/api/v1/queues/a").await.expect(StatusCode::OK);
    })
    .await;
}

#[tokio::test]
async fn api_list_jobs_pages_with_a_cursor() {
    on_both_wires(|site| async move {
        enqueue(&site, "q", &["a", "b", "c", "d", "e"]).await;
        let api = client(&site, |d| d);
        let mut seen = Vec::new();
        let mut path = "/api/v1/queues/q/jobs?state=pending&limit=2".to_string();
        loop {
            let page = api.get(&path).await.expect(StatusCode::OK).body;
            for job in page["jobs"].as_array().unwrap() {
                seen.push(job["id"].as_str().unwrap().to_string());
                assert_eq!(job["queue"], "q");
            }
            match &page["next"] {
                Value::String(next) => {
                    path = format!("/api/v1/queues/q/jobs?state=pending&limit=2&cursor={next}")
                }
                Value::Null => break,
                other => panic!("next is {other}"),
            }
        }
        assert_eq!(seen, ["a", "b", "c", "d", "e"]);
        let dead = api
            .get("/api/v1/queues/q/jobs?state=dead")
            .await
            .expect(StatusCode::OK)
            .body;
        assert_eq!(dead, json!({"jobs": [], "next": null}));
    })
    .await;
}

#[tokio::test]
async fn api_list_jobs_refuses_a_bad_state_limit_or_cursor_naming_it() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    for (query, field) in [
        ("state=done", "state"),
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("limit=ten", "limit"),
        ("cursor=-1", "cursor"),
        ("page=2", "page"),
    ] {
        let error = api
            .get(&format!("/api/v1/queues/q/jobs?{query}"))
            .await
            .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
        assert_eq!(error["field"], field, "{query}: {error}");
    }
}

#[tokio::test]
async fn api_job_log_answers_its_lines() {
    on_both_wires(|site| async move {
        enqueue(&site, "q", &["a"]).await;
        let jobs = site.queue("q").jobs();
        let id = JobId::new("a").unwrap();
        jobs.log(&id, "first").await.unwrap();
        jobs.log(&id, "second").await.unwrap();
        let api = client(&site, |d| d);
        let log = api
            .get("/api/v1/queues/q/jobs/a/log")
            .await
            .expect(StatusCode::OK)
            .body;
        assert_eq!(log, json!({"lines": ["first", "second"]}));
        api.get("/api/v1/queues/q/jobs/nope/log")
            .await
            .refused(StatusCode::NOT_FOUND, "NOJOB");
    })
    .await;
}

#[tokio::test]
async fn api_outcome_answers_at_once_or_after_a_wait() {
    on_both_wires(|site| async move {
        enqueue(&site, "q", &["a"]).await;
        let api = client(&site, |d| d);
        let pending = api
            .get("/api/v1/queues/q/jobs/a/outcome")
            .await
            .expect(StatusCode::ACCEPTED);
        assert_eq!(pending.body, json!({"id": "a", "outcome": "pending"}));
        let waited = api
            .get("/api/v1/queues/q/jobs/a/outcome?timeout=50ms")
            .await;
        waited.expect(StatusCode::ACCEPTED);
        let q = site.queue("q");
        let claimed = q
            .claim("w", Duration::from_secs(30), 1)
            .await
            .unwrap()
            .pop()
            .unwrap();
        let wait = api.get("/api/v1/queues/q/jobs/a/outcome?timeout=30s");
        let fail = async {
            q.fail(&claimed.id, claimed.token, "boom", echomq::FailAction::Dead)
                .await
                .unwrap();
        };
        let (answer, ()) = tokio::join!(wait, fail);
        let answer = answer.expect(StatusCode::OK);
        assert_eq!(answer.body["outcome"], "dead", "{}", answer.body);
        assert_eq!(answer.body["error"], "boom");
        let now = api
            .get("/api/v1/queues/q/jobs/a/outcome")
            .await
            .expect(StatusCode::OK);
        assert_eq!(now.body["outcome"], "dead");
        let gone = api
            .get("/api/v1/queues/q/jobs/never/outcome")
            .await
            .expect(StatusCode::OK);
        assert_eq!(gone.body, json!({"id": "never", "outcome": "removed"}));
    })
    .await;
}

#[tokio::test]
async fn api_outcome_refuses_a_bad_timeout_naming_it() {
    let site = Site::start(echomq::Wire::Script).await;
    let api = client(&site, |d| d);
    let error = api
        .get("/api/v1/queues/q/jobs/a/outcome?timeout=10m")
        .await
        .refused(StatusCode::BAD_REQUEST, "BADREQUEST");
    assert_eq!(error["field"], "timeout");
}
