//! `POST /queues/{q}/jobs`: one job, many, every option, and `?wait=`.

use super::client;
use crate::common::on_both_wires;
use axum::http::StatusCode;
use echomq::{JobId, JobState};
use echomq_testkit::wait_for;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn api_enqueue_one_job_answers_201_created_then_existed() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let body =
            json!({"payload": {"to": "a@example.com"}, "id": "m1", "priority": 5, "attempts": 2});
        let answer = api
            .post("/api/v1/queues/mail/jobs", &body)
            .await
            .expect(StatusCode::CREATED);
        assert_eq!(answer.body, json!({"id": "m1", "outcome": "created"}));
        let job = site
            .queue("mail")
            .jobs()
            .get(&JobId::new("m1").unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!((job.priority, job.max_attempts), (5, 2));
        assert_eq!(
            job.payload_as::<serde_json::Value>().unwrap(),
            json!({"to": "a@example.com"})
        );
        let again = api
            .post("/api/v1/queues/mail/jobs", &body)
            .await
            .expect(StatusCode::CREATED);
        assert_eq!(again.body, json!({"id": "m1", "outcome": "existed"}));
    })
    .await;
}

#[tokio::test]
async fn api_enqueue_an_array_answers_each_job_in_order() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let body = json!([
            {"payload": 1, "id": "a"},
            {"payload": 2, "id": "b", "delay_ms": 60000},
            {"payload": 3, "id": "a"},
            {"payload": 4, "group": "tenant-1"},
        ]);
        let answer = api
            .post("/api/v1/queues/q/jobs", &body)
            .await
            .expect(StatusCode::CREATED);
        let jobs = answer.body["jobs"].as_array().unwrap().clone();
        assert_eq!(jobs.len(), 4, "{}", answer.body);
        assert_eq!(jobs[0], json!({"id": "a", "outcome": "created"}));
        assert_eq!(jobs[1], json!({"id": "b", "outcome": "created"}));
        assert_eq!(jobs[2], json!({"id": "a", "outcome": "existed"}));
        assert_eq!(jobs[3]["outcome"], "created");
        let counts = site.queue("q").admin().counts().await.unwrap();
        assert_eq!((counts.pending, counts.scheduled), (2, 1));
    })
    .await;
}

#[tokio::test]
async fn api_enqueue_takes_every_option_of_new_job() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let far = 4_102_444_800_000_u64; // 2100-01-01
        let body = json!({
            "payload": "x", "id": "full", "priority": 7, "attempts": 4, "run_at": far - 1000,
            "group": "g1", "time_limit_ms": 5000, "start_by": far, "lifo": true,
            "traceparent": trace,
        });
        api.post("/api/v1/queues/q/jobs", &body)
            .await
            .expect(StatusCode::CREATED);
        let job = api
            .get("/api/v1/queues/q/jobs/full")
            .await
            .expect(StatusCode::OK)
            .body;
        assert_eq!(job["state"], "scheduled", "{job}");
        assert_eq!(
            (job["priority"].clone(), job["max_attempts"].clone()),
            (json!(7), json!(4))
        );
        assert_eq!(job["run_at"], far - 1000);
        assert_eq!(job["group"], "g1");
        assert_eq!(job["time_limit_ms"], 5000);
        assert_eq!(job["start_by"], far);
        assert_eq!(job["lifo"], true);
        assert_eq!(job["traceparent"], trace);
        let within = json!({"payload": 1, "id": "soon", "start_within_ms": 60000});
        api.post("/api/v1/queues/q/jobs", &within)
            .await
            .expect(StatusCode::CREATED);
        let soon = api.get("/api/v1/queues/q/jobs/soon").await.body;
        assert!(
            soon["start_by"].as_u64().unwrap() > soon["created_at"].as_u64().unwrap(),
            "{soon}"
        );
    })
    .await;
}

#[tokio::test]
async fn api_enqueue_answers_deduplicated_and_debounced_with_the_holder() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let first = json!({"payload": 1, "id": "holder", "dedup": "k"});
        api.post("/api/v1/queues/q/jobs", &first)
            .await
            .expect(StatusCode::CREATED);
        let second = json!({"payload": 2, "id": "other", "dedup": "k"});
        let answer = api
            .post("/api/v1/queues/q/jobs", &second)
            .await
            .expect(StatusCode::CREATED);
        assert_eq!(
            answer.body,
            json!({"id": "holder", "outcome": "deduplicated"})
        );
        let debounced = json!({"payload": 1, "id": "d1", "dedup": "b", "debounce_ms": 60000});
        api.post("/api/v1/queues/q/jobs", &debounced)
            .await
            .expect(StatusCode::CREATED);
        let again = json!({"payload": 2, "dedup": "b", "debounce_ms": 60000});
        let answer = api
            .post("/api/v1/queues/q/jobs", &again)
            .await
            .expect(StatusCode::CREATED);
        assert_eq!(answer.body, json!({"id": "d1", "outcome": "debounced"}));
        let throttled = json!({"payload": 1, "id": "t1", "dedup": "t", "dedup_for_ms": 60000});
        api.post("/api/v1/queues/q/jobs", &throttled)
            .await
            .expect(StatusCode::CREATED);
        let job = api.get("/api/v1/queues/q/jobs/t1").await.body;
        assert_eq!(job["dedup_mode"], "throttle", "{job}");
    })
    .await;
}

#[tokio::test]
async fn api_enqueue_with_wait_answers_the_outcome() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let q = site.queue("q");
        let worker = async {
            let claimed = wait_for(
                "the job to be enqueued",
                Duration::from_secs(10),
                || async {
                    q.claim("w", Duration::from_secs(30), 1)
                        .await
                        .unwrap()
                        .pop()
                },
            )
            .await;
            q.complete(&claimed.id, claimed.token, &json!({"sent": true}))
                .await
                .unwrap();
        };
        let body = json!({"payload": 1, "id": "w1"});
        let (answer, ()) = tokio::join!(api.post("/api/v1/queues/q/jobs?wait=30s", &body), worker);
        let answer = answer.expect(StatusCode::OK);
        assert_eq!(
            answer.body,
            json!({"id": "w1", "outcome": "completed", "result": {"sent": true}})
        );
    })
    .await;
}

#[tokio::test]
async fn api_enqueue_with_wait_answers_202_pending_when_the_time_runs_out() {
    on_both_wires(|site| async move {
        let api = client(&site, |d| d);
        let body = json!({"payload": 1, "id": "slow"});
        let answer = api.post("/api/v1/queues/q/jobs?wait=100ms", &body).await;
        let answer = answer.expect(StatusCode::ACCEPTED);
        assert_eq!(answer.body, json!({"id": "slow", "outcome": "pending"}));
        let job = site
            .queue("q")
            .jobs()
            .get(&JobId::new("slow").unwrap())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(job.state, JobState::Pending);
    })
    .await;
}
