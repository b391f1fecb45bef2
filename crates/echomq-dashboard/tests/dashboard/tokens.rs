//! A tokens file's grants on the dashboard (docs/http.md, "Tokens and
//! roles"), against real servers: each request sees only its token's
//! queues and may do only what its role may; a signed-in session keeps
//! the grant (never the token); every request is logged with the grant's
//! name, never the token.

use crate::common::{Browser, Captured, Site, on_both_wires};
use axum::http::StatusCode;
use echomq::{NewJob, Wire};
use echomq_dashboard::grant::{AccessRole, Grant};
use echomq_dashboard::tokens::{Tokens, entry_toml, sha256_hex};
use serde_json::json;

const READER: &str = "reader-token-of-emails";
const PRODUCER: &str = "producer-token-of-emails";
const OPERATOR: &str = "operator-token-of-emails";

/// A tokens file: a reader, a producer and an operator, each of `emails`
/// and the `reports-*` queues only.
fn tokens() -> Tokens {
    let entry = |name: &str, role, token: &str| {
        let grant = Grant {
            name: name.into(),
            role,
            queues: vec!["emails".into(), "reports-*".into()],
        };
        entry_toml(&grant, &sha256_hex(token))
    };
    let file = [
        entry("web-reader", AccessRole::Reader, READER),
        entry("web-producer", AccessRole::Producer, PRODUCER),
        entry("web-operator", AccessRole::Operator, OPERATOR),
    ]
    .join("\n");
    Tokens::parse(&file).unwrap()
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

/// A script of the dashboard with the tokens file, sending `token`.
fn script(site: &Site, token: &str) -> Browser {
    site.browse(|d| d.tokens(tokens()))
        .with_header("authorization", &format!("Bearer {token}"))
}

/// A browser signed in with `token` through the login form.
async fn signed_in(site: &Site, token: &str) -> Browser {
    let browser = site.browse(|d| d.tokens(tokens()));
    let form = browser.get("/login").await.expect(StatusCode::OK);
    browser
        .post_raw("/login", &[("token", token), ("_csrf", &form.csrf())])
        .await
        .expect(StatusCode::SEE_OTHER);
    browser
}

async fn paused(site: &Site, queue: &str) -> bool {
    site.queue(queue).admin().counts().await.unwrap().paused
}

#[tokio::test]
async fn without_a_token_of_the_file_every_page_answers_401() {
    let site = Site::start(Wire::Script).await;
    two_queues(&site).await;
    let browser = site.browse(|d| d.tokens(tokens()));
    for path in ["/", "/queues/emails", "/queues/emails/jobs/a", "/metrics"] {
        let page = browser.get(path).await.expect(StatusCode::UNAUTHORIZED);
        assert!(page.body.contains(r#"name="token""#), "{path}");
    }
    browser
        .post_raw("/queues/emails/act/pause", &[])
        .await
        .expect(StatusCode::UNAUTHORIZED);
    assert!(!paused(&site, "emails").await);
}

#[tokio::test]
async fn a_wrong_token_answers_401_as_bearer_and_at_sign_in() {
    let site = Site::start(Wire::Script).await;
    two_queues(&site).await;
    // The hash of a token is no token.
    for wrong in ["guess", &sha256_hex(OPERATOR)] {
        script(&site, wrong)
            .get("/")
            .await
            .expect(StatusCode::UNAUTHORIZED);
        script(&site, wrong)
            .post_raw("/queues/emails/act/pause", &[])
            .await
            .expect(StatusCode::UNAUTHORIZED);
    }
    let browser = site.browse(|d| d.tokens(tokens()));
    let form = browser.get("/login").await.expect(StatusCode::OK);
    let page = browser
        .post_raw("/login", &[("token", "guess"), ("_csrf", &form.csrf())])
        .await
        .expect(StatusCode::UNAUTHORIZED);
    assert!(page.body.contains("wrong token"), "{}", page.body);
    assert!(!paused(&site, "emails").await);
}

#[tokio::test]
async fn a_token_outside_its_queues_gets_403_and_does_not_see_them_listed() {
    on_both_wires(|site| async move {
        two_queues(&site).await;
        let operator = signed_in(&site, OPERATOR).await;
        let list = operator.get("/").await.expect(StatusCode::OK);
        assert!(
            list.body.contains(r#"data-queue="emails""#),
            "{}",
            list.body
        );
        assert!(!list.body.contains("billing"), "{}", list.body);
        for path in [
            "/queues/billing",
            "/queues/billing/jobs/a",
            "/live/queues/billing",
        ] {
            let page = operator.get(path).await.expect(StatusCode::FORBIDDEN);
            assert!(
                page.body.contains("may not see queue"),
                "{path}: {}",
                page.body
            );
        }
        operator
            .post("/queues/billing/act/pause", &[])
            .await
            .expect(StatusCode::FORBIDDEN);
        operator
            .post("/queues/billing/jobs/a/act/cancel", &[])
            .await
            .expect(StatusCode::FORBIDDEN);
        assert!(!paused(&site, "billing").await);
        let billing = site.queue("billing");
        let a = echomq::JobId::new("a").unwrap();
        assert_eq!(
            billing.jobs().get(&a).await.unwrap().unwrap().state,
            echomq::JobState::Pending
        );
        // Its own queue it may act on: the refusals above are the grant's.
        operator
            .post("/queues/emails/act/pause", &[])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert!(paused(&site, "emails").await);
    })
    .await;
}

#[tokio::test]
async fn the_metrics_page_shows_only_the_token_s_queues() {
    let site = Site::start(Wire::Script).await;
    two_queues(&site).await;
    let metrics = script(&site, READER)
        .get("/metrics")
        .await
        .expect(StatusCode::OK);
    assert!(
        metrics.body.contains(r#"queue="emails""#),
        "{}",
        metrics.body
    );
    assert!(!metrics.body.contains("billing"), "{}", metrics.body);
}

#[tokio::test]
async fn a_reader_s_action_is_refused_and_its_buttons_are_not_drawn() {
    on_both_wires(|site| async move {
        two_queues(&site).await;
        let reader = signed_in(&site, READER).await;
        for path in ["/", "/queues/emails", "/queues/emails/jobs/a"] {
            let page = reader.get(path).await.expect(StatusCode::OK);
            assert!(page.body.contains("web-reader"), "{path}: {}", page.body);
            assert!(!page.body.contains("data-action"), "{path}: {}", page.body);
            assert!(!page.body.contains(r#"id="bulk""#), "{path}");
            assert!(!page.body.contains(r#"id="drain""#), "{path}");
        }
        let refused = reader
            .post("/queues/emails/act/pause", &[])
            .await
            .expect(StatusCode::FORBIDDEN);
        assert!(
            refused.body.contains("web-reader") && refused.body.contains("reader"),
            "{}",
            refused.body
        );
        reader
            .post("/queues/emails/jobs/a/act/cancel", &[])
            .await
            .expect(StatusCode::FORBIDDEN);
        assert!(!paused(&site, "emails").await);
        // The operator of the same queues sees the buttons.
        let operator = signed_in(&site, OPERATOR).await;
        let page = operator.get("/queues/emails").await.expect(StatusCode::OK);
        for action in [r#"data-action="pause""#, r#"id="bulk""#, r#"id="drain""#] {
            assert!(page.body.contains(action), "{action}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_producer_s_drain_is_refused_and_deletes_nothing() {
    on_both_wires(|site| async move {
        two_queues(&site).await;
        let drain = [("confirm", "emails")];
        script(&site, PRODUCER)
            .post_raw("/queues/emails/act/drain", &drain)
            .await
            .expect(StatusCode::FORBIDDEN);
        let counts = site.queue("emails").admin().counts().await.unwrap();
        assert_eq!(counts.get(echomq::JobState::Pending), 1);
        let page = script(&site, PRODUCER)
            .get("/queues/emails")
            .await
            .expect(StatusCode::OK);
        assert!(!page.body.contains(r#"id="drain""#), "{}", page.body);
        script(&site, OPERATOR)
            .post_raw("/queues/emails/act/drain", &drain)
            .await
            .expect(StatusCode::SEE_OTHER);
        let counts = site.queue("emails").admin().counts().await.unwrap();
        assert_eq!(counts.get(echomq::JobState::Pending), 0);
    })
    .await;
}

#[tokio::test]
async fn the_single_token_is_an_operator_of_every_queue() {
    let site = Site::start(Wire::Script).await;
    two_queues(&site).await;
    let browser = site
        .browse(|d| d.token("s3cret"))
        .with_header("authorization", "Bearer s3cret");
    let page = browser.get("/").await.expect(StatusCode::OK);
    assert!(page.body.contains(r#"data-queue="billing""#));
    browser
        .post_raw("/queues/billing/act/pause", &[])
        .await
        .expect(StatusCode::SEE_OTHER);
    assert!(paused(&site, "billing").await);
}

#[tokio::test]
async fn every_request_is_logged_with_the_grant_s_name_never_the_token() {
    let site = Site::start(Wire::Script).await;
    two_queues(&site).await;
    let (captured, _guard) = Captured::start();
    // Another test's thread may have been registering the log's callsite
    // (its interest, cached for every thread) while this subscriber was
    // set: once a request has passed here, its interest is asked anew.
    script(&site, PRODUCER)
        .get("/login")
        .await
        .expect(StatusCode::OK);
    tracing::callsite::rebuild_interest_cache();
    script(&site, PRODUCER)
        .get("/queues/emails?state=pending")
        .await
        .expect(StatusCode::OK);
    let browser = signed_in(&site, READER).await;
    browser
        .post("/queues/emails/act/pause", &[])
        .await
        .expect(StatusCode::FORBIDDEN);
    script(&site, "wrong-token")
        .get("/")
        .await
        .expect(StatusCode::UNAUTHORIZED);
    let log = captured.text();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("request")).collect();
    let served = lines
        .iter()
        .find(|l| l.contains("path=/queues/emails"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(served.contains("grant=web-producer"), "{served}");
    assert!(served.contains("status=200"), "{served}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("grant=web-reader") && l.contains("status=403")),
        "{log}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("grant=-") && l.contains("status=401")),
        "{log}"
    );
    for secret in [PRODUCER, READER, "wrong-token"] {
        assert!(!log.contains(secret), "{secret} in:\n{log}");
        assert!(
            !log.contains(&sha256_hex(secret)),
            "{secret}'s hash in:\n{log}"
        );
    }
}

#[tokio::test]
async fn a_flow_graph_hides_the_jobs_of_queues_the_token_does_not_see() {
    on_both_wires(|site| async move {
        let (emails, billing) = (site.queue("emails"), site.queue("billing"));
        let mut flow = echomq::Flow::new("order");
        let charge = flow.add_as("charge", &billing, NewJob::new(json!(1)));
        flow.add_as("mail", &emails, NewJob::new(json!(2)).depends_on([&charge]));
        site.connector.submit(&flow).await.unwrap();
        let reader = script(&site, READER);
        let page = reader
            .get("/queues/emails/jobs/order%3Amail")
            .await
            .expect(StatusCode::OK);
        assert!(page.body.contains(r#"id="flow-graph""#), "{}", page.body);
        assert!(
            page.body
                .contains("a job of a queue your token does not see"),
            "{}",
            page.body
        );
        assert!(!page.body.contains("billing"), "{}", page.body);
        assert!(!page.body.contains("order:charge"), "{}", page.body);
        // The operator of every queue (the single token) sees it.
        let all = site
            .browse(|d| d.token("s3cret"))
            .with_header("authorization", "Bearer s3cret");
        let page = all
            .get("/queues/emails/jobs/order%3Amail")
            .await
            .expect(StatusCode::OK);
        assert!(page.body.contains("billing order:charge"), "{}", page.body);
    })
    .await;
}

#[tokio::test]
async fn a_session_signed_in_with_a_file_token_holds_neither_the_token_nor_its_hash() {
    let site = Site::start(Wire::Script).await;
    two_queues(&site).await;
    let browser = signed_in(&site, READER).await;
    let cookie = browser.cookie().expect("a session cookie");
    let id = cookie.split_once('=').unwrap().1;
    assert_eq!(id.len(), 64, "{cookie}");
    assert!(!cookie.contains(READER), "{cookie}");
    assert!(!cookie.contains(&sha256_hex(READER)), "{cookie}");
    // The session alone carries the grant: no bearer needed.
    let page = browser.get("/queues/emails").await.expect(StatusCode::OK);
    assert!(page.body.contains("web-reader"), "{}", page.body);
    browser
        .get("/queues/billing")
        .await
        .expect(StatusCode::FORBIDDEN);
}
