//! The dashboard's safety, against real servers on both wires: read-only
//! (403, no buttons), the token (401, login cookie, Bearer), CSRF on every
//! POST, refusals shown with the protocol's reason, HTML escaping.

use crate::common::{self, Site, on_both_wires};
use axum::http::{StatusCode, header};
use echomq::{JobId, NewJob};
use serde_json::json;
use std::time::Duration;

/// Queue `q` with one pending job `a`.
async fn one_pending(site: &Site) {
    let q = site.queue("q");
    q.enqueue(NewJob::new(json!({"n": 1})).id("a").unwrap())
        .await
        .unwrap();
}

#[tokio::test]
async fn read_only_draws_no_buttons_and_refuses_every_action() {
    on_both_wires(|site| async move {
        one_pending(&site).await;
        let browser = site.browse(|d| d.read_only(true));
        let page = browser.get("/").await.expect(StatusCode::OK);
        assert!(page.body.contains("read-only"), "{}", page.body);
        assert!(!page.body.contains("<button"), "{}", page.body);
        // The token of a writable dashboard's page would not help either.
        let refused = browser
            .post_raw("/queues/q/act/pause", &[("_csrf", "anything")])
            .await
            .expect(StatusCode::FORBIDDEN);
        assert!(refused.body.contains("read-only"), "{}", refused.body);
        assert!(!site.queue("q").admin().counts().await.unwrap().paused);
    })
    .await;
}

#[tokio::test]
async fn without_the_token_every_page_answers_401_with_the_login_form() {
    on_both_wires(|site| async move {
        one_pending(&site).await;
        let browser = site.browse(|d| d.token("s3cret"));
        for path in [
            "/",
            "/queues/q",
            "/queues/q/jobs/a",
            "/controls",
            "/metrics",
        ] {
            let page = browser.get(path).await.expect(StatusCode::UNAUTHORIZED);
            assert!(
                page.body.contains(r#"name="token""#),
                "{path}: {}",
                page.body
            );
            assert!(page.headers.contains_key(header::WWW_AUTHENTICATE));
        }
        let wrong = browser.with_header("authorization", "Bearer nope");
        wrong.get("/").await.expect(StatusCode::UNAUTHORIZED);
    })
    .await;
}

#[tokio::test]
async fn a_wrong_token_at_login_sets_no_cookie() {
    let site = Site::start(echomq::Wire::Script).await;
    let browser = site.browse(|d| d.token("s3cret"));
    let form = browser.get("/login").await.expect(StatusCode::OK);
    let page = browser
        .post_raw("/login", &[("token", "guess"), ("_csrf", &form.csrf())])
        .await
        .expect(StatusCode::UNAUTHORIZED);
    assert!(page.body.contains("wrong token"), "{}", page.body);
    assert!(!page.headers.contains_key(header::SET_COOKIE));
}

#[tokio::test]
async fn the_login_form_sets_a_cookie_that_opens_every_page() {
    on_both_wires(|site| async move {
        one_pending(&site).await;
        let browser = site.browse(|d| d.token("s3cret"));
        let form = browser.get("/login").await.expect(StatusCode::OK);
        let login = browser
            .post_raw("/login", &[("token", "s3cret"), ("_csrf", &form.csrf())])
            .await
            .expect(StatusCode::SEE_OTHER);
        let cookie = login.headers[header::SET_COOKIE].to_str().unwrap();
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
        let pair = cookie.split(';').next().unwrap().to_string();
        let signed_in = browser.with_header("cookie", &pair);
        let page = signed_in.get("/").await.expect(StatusCode::OK);
        assert!(page.body.contains(r#"data-queue="q""#), "{}", page.body);
        // A browser signed in still needs the CSRF token to act.
        signed_in
            .post_raw("/queues/q/act/pause", &[])
            .await
            .expect(StatusCode::FORBIDDEN);
        signed_in
            .post("/queues/q/act/pause", &[])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert!(site.queue("q").admin().counts().await.unwrap().paused);
    })
    .await;
}

#[tokio::test]
async fn a_bearer_token_opens_pages_and_actions_without_csrf() {
    on_both_wires(|site| async move {
        one_pending(&site).await;
        let script = site
            .browse(|d| d.token("s3cret"))
            .with_header("authorization", "Bearer s3cret");
        script.get("/metrics").await.expect(StatusCode::OK);
        script
            .post_raw("/queues/q/act/pause", &[])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert!(site.queue("q").admin().counts().await.unwrap().paused);
    })
    .await;
}

#[tokio::test]
async fn a_post_without_the_csrf_token_is_refused_and_writes_nothing() {
    on_both_wires(|site| async move {
        one_pending(&site).await;
        let browser = site.dashboard();
        let missing = browser
            .post_raw("/queues/q/act/pause", &[])
            .await
            .expect(StatusCode::FORBIDDEN);
        assert!(missing.body.contains("no CSRF token"), "{}", missing.body);
        let wrong = browser
            .post_raw("/queues/q/act/pause", &[("_csrf", "0000")])
            .await
            .expect(StatusCode::FORBIDDEN);
        assert!(wrong.body.contains("CSRF token is wrong"), "{}", wrong.body);
        assert!(!site.queue("q").admin().counts().await.unwrap().paused);
    })
    .await;
}

#[tokio::test]
async fn a_refused_transition_shows_the_protocol_reason() {
    on_both_wires(|site| async move {
        one_pending(&site).await;
        // Reprocess applies to a finished job; `a` is pending.
        let page = site
            .dashboard()
            .post("/queues/q/jobs/a/act/reprocess", &[])
            .await
            .expect(StatusCode::CONFLICT);
        assert!(page.body.contains("BADSTATE pending"), "{}", page.body);
        assert!(!page.body.contains("panicked"), "{}", page.body);
    })
    .await;
}

#[tokio::test]
async fn payloads_and_errors_are_escaped() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        let evil = "<script>alert(1)</script>";
        let id = JobId::new("x").unwrap();
        q.enqueue(
            NewJob::new(json!({ "html": evil }))
                .id("x")
                .unwrap()
                .attempts(1),
        )
        .await
        .unwrap();
        let claimed = q
            .claim_one("w", Duration::from_secs(30))
            .await
            .unwrap()
            .unwrap();
        q.fail(&id, claimed.token, evil, echomq::FailAction::Dead)
            .await
            .unwrap();
        let browser = site.dashboard();
        for path in ["/queues/q/jobs/x", "/queues/q?state=dead"] {
            let page = browser.get(path).await.expect(StatusCode::OK);
            assert!(!page.body.contains(evil), "{path}: {}", page.body);
            assert!(
                page.body.contains("&lt;script&gt;"),
                "{path}: {}",
                page.body
            );
        }
    })
    .await;
}

#[test]
fn the_attribute_check_catches_a_repeated_attribute() {
    assert!(common::repeated_attribute(r#"<td class="num" class="x">1</td>"#).is_some());
    assert!(common::repeated_attribute(r#"<td class="num x" data-state="a">1</td>"#).is_none());
    assert!(common::repeated_attribute(r#"<script src="a" defer></script><p>"#).is_none());
}

#[tokio::test]
async fn the_queues_page_lists_every_queue_with_its_counts() {
    on_both_wires(|site| async move {
        one_pending(&site).await;
        site.queue("other").admin().pause().await.unwrap();
        let page = site.dashboard().get("/").await.expect(StatusCode::OK);
        assert!(page.body.contains(r#"data-queue="q""#), "{}", page.body);
        assert!(
            page.body
                .contains(r#"class="num state-pending" data-state="pending">1<"#),
            "{}",
            page.body
        );
        assert!(
            page.body.contains(r#"data-action="pause""#),
            "{}",
            page.body
        );
    })
    .await;
}
