//! A tokens file's grants on the API (docs/http.md, "Tokens and roles"):
//! each token touches only its queues and does only what its role may; a
//! read-only server reads only, whatever the token; every request is
//! logged with its grant's name, never the token.

use super::{Client, client};
use crate::common::{Captured, Site};
use axum::http::StatusCode;
use echomq::{NewJob, Wire};
use echomq_dashboard::grant::{AccessRole, Grant};
use echomq_dashboard::tokens::{Tokens, entry_toml, sha256_hex};
use serde_json::{Value, json};

pub(super) const READER: &str = "api-reader-token";
pub(super) const PRODUCER: &str = "api-producer-token";
const WORKER: &str = "api-worker-token";
const OPERATOR: &str = "api-operator-token";

/// One token per role, each of `emails` and the `reports-*` queues only.
fn tokens() -> Tokens {
    let file: Vec<String> = [
        ("reader", AccessRole::Reader, READER),
        ("producer", AccessRole::Producer, PRODUCER),
        ("worker", AccessRole::Worker, WORKER),
        ("operator", AccessRole::Operator, OPERATOR),
    ]
    .into_iter()
    .map(|(name, role, token)| {
        let grant = Grant {
            name: name.into(),
            role,
            queues: vec!["emails".into(), "reports-*".into()],
        };
        entry_toml(&grant, &sha256_hex(token))
    })
    .collect();
    Tokens::parse(&file.join("\n")).unwrap()
}

/// The API with the tokens file, sending `token`.
pub(super) fn with_token(site: &Site, token: &str, read_only: bool) -> Client {
    client(site, |d| d.tokens(tokens()).read_only(read_only))
        .with_header("authorization", &format!("Bearer {token}"))
}

/// Queues `emails` and `billing`, each with one pending job `a`.
async fn two_queues(site: &Site) {
    for name in ["emails", "billing"] {
        site.queue(name)
            .enqueue(NewJob::new(json!({"n": 1})).id("a").unwrap())
            .await
            .unwrap();
    }
}

async fn pending(site: &Site, queue: &str) -> u64 {
    let counts = site.queue(queue).admin().counts().await.unwrap();
    counts.get(echomq::JobState::Pending)
}

#[tokio::test]
async fn api_a_token_sees_only_its_queues_and_is_refused_the_others() {
    let site = Site::start(Wire::Script).await;
    two_queues(&site).await;
    let api = with_token(&site, OPERATOR, false);
    let listed = api.get("/api/v1/queues").await.expect(StatusCode::OK).body;
    let names: Vec<&Value> = listed["queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| &q["name"])
        .collect();
    assert_eq!(names, [&json!("emails")], "{listed}");
    let error = api
        .get("/api/v1/queues/billing/jobs/a")
        .await
        .refused(StatusCode::FORBIDDEN, "FORBIDDEN");
    assert!(
        error["message"].as_str().unwrap().contains("billing"),
        "{error}"
    );
    api.post("/api/v1/queues/billing/controls/drain", &json!({}))
        .await
        .refused(StatusCode::FORBIDDEN, "FORBIDDEN");
    assert_eq!(pending(&site, "billing").await, 1, "nothing was drained");
    api.get("/api/v1/queues/emails/jobs/a")
        .await
        .expect(StatusCode::OK);
}

#[tokio::test]
async fn api_without_a_token_of_the_file_answers_401() {
    let site = Site::start(Wire::Script).await;
    two_queues(&site).await;
    let none = client(&site, |d| d.tokens(tokens()));
    none.get("/api/v1/queues")
        .await
        .refused(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
    with_token(&site, "not-a-token-of-the-file", false)
        .get("/api/v1/queues")
        .await
        .refused(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
}

#[tokio::test]
async fn api_each_role_does_only_what_it_may() {
    let site = Site::start(Wire::Script).await;
    two_queues(&site).await;
    let enqueue = json!({"payload": 1});
    let claim = json!({"count": 1});
    let drain = json!({});
    // (token, enqueue, claim, drain): the statuses each role gets.
    let table = [
        (READER, 403, 403, 403),
        (PRODUCER, 201, 403, 403),
        (WORKER, 403, 200, 403),
    ];
    for (token, enqueued, claimed, drained) in table {
        let api = with_token(&site, token, false);
        let status = |answer: super::Answer| answer.status.as_u16();
        let got = (
            token,
            status(api.post("/api/v1/queues/emails/jobs", &enqueue).await),
            status(api.post("/api/v1/queues/emails/claim", &claim).await),
            status(
                api.post("/api/v1/queues/emails/controls/drain", &drain)
                    .await,
            ),
        );
        assert_eq!(got, (token, enqueued, claimed, drained));
    }
    let left = site.queue("emails").admin().counts().await.unwrap();
    assert_eq!(
        left.total(),
        2,
        "the producer's job and the worker's claim, none drained"
    );
    with_token(&site, OPERATOR, false)
        .post("/api/v1/queues/emails/controls/drain", &drain)
        .await
        .expect(StatusCode::OK);
}

#[tokio::test]
async fn api_on_a_read_only_server_an_operator_token_only_reads() {
    let site = Site::start(Wire::Script).await;
    two_queues(&site).await;
    let api = with_token(&site, OPERATOR, true);
    api.post("/api/v1/queues/emails/jobs", &json!({"payload": 1}))
        .await
        .refused(StatusCode::FORBIDDEN, "FORBIDDEN");
    api.post("/api/v1/queues/emails/controls/pause", &json!({}))
        .await
        .refused(StatusCode::FORBIDDEN, "FORBIDDEN");
    assert_eq!(pending(&site, "emails").await, 1, "nothing was enqueued");
    api.get("/api/v1/queues/emails")
        .await
        .expect(StatusCode::OK);
}

#[tokio::test]
async fn api_requests_are_logged_with_the_grant_s_name_never_the_token() {
    let site = Site::start(Wire::Script).await;
    two_queues(&site).await;
    let (captured, _guard) = Captured::start();
    let api = with_token(&site, PRODUCER, false);
    // As in the dashboard's log test: once a request has passed, the log's
    // callsite interest (cached for every thread) is asked anew.
    api.get("/api/v1/queues").await.expect(StatusCode::OK);
    tracing::callsite::rebuild_interest_cache();
    api.get("/api/v1/queues/emails/jobs/a")
        .await
        .expect(StatusCode::OK);
    with_token(&site, "wrong-token", false)
        .get("/api/v1/queues")
        .await
        .expect(StatusCode::UNAUTHORIZED);
    let log = captured.text();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("api request")).collect();
    let served = lines
        .iter()
        .find(|l| l.contains("path=/api/v1/queues/emails/jobs/a"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(served.contains("grant=producer"), "{served}");
    assert!(served.contains("status=200"), "{served}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("grant=-") && l.contains("status=401")),
        "{log}"
    );
    for secret in [PRODUCER, "wrong-token", &sha256_hex(PRODUCER)] {
        assert!(!log.contains(secret), "the log holds {secret:?}: {log}");
    }
}
