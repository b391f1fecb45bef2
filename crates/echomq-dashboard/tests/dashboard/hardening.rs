//! The dashboard's defences, each as the attack it stops (issue 37):
//! DNS rebinding (Host), forms from other origins (Origin, Referer),
//! sessions that hold no token and end on the server, per-session CSRF,
//! the sign-in throttle, security headers, confirmations, redirects,
//! notices and page numbers. Real servers; the router driven one request
//! at a time. The socket-level limits are in `connections.rs`, and the
//! same attacks from a real browser in `emq`'s `dashboard_browser.rs`.

use crate::common::{self, Browser, Site, on_both_wires};
use axum::http::{StatusCode, header};
use echomq::{NewJob, Wire};
use serde_json::json;

/// Queue `q` with one pending job `a`.
async fn one_pending(site: &Site) {
    site.queue("q")
        .enqueue(NewJob::new(json!({"n": 1})).id("a").unwrap())
        .await
        .unwrap();
}

async fn paused(site: &Site) -> bool {
    site.queue("q").admin().counts().await.unwrap().paused
}

/// Signs `browser` in with `token`; the answer.
async fn sign_in(browser: &Browser, token: &str) -> common::Page {
    let form = browser.get("/login").await.expect(StatusCode::OK);
    browser
        .post_raw("/login", &[("token", token), ("_csrf", &form.csrf())])
        .await
}

#[tokio::test]
async fn a_host_the_dashboard_does_not_serve_answers_421_and_acts_on_nothing() {
    let site = Site::start(Wire::Script).await;
    one_pending(&site).await;
    for token in [None, Some("s3cret")] {
        let rebound = site
            .browse(|d| match token {
                Some(token) => d.token(token),
                None => d,
            })
            .with_header("host", "evil.example:7070");
        let page = rebound
            .get("/")
            .await
            .expect(StatusCode::MISDIRECTED_REQUEST);
        assert!(page.body.contains("evil.example"), "{}", page.body);
        assert!(!page.body.contains(r#"data-queue="q""#), "{}", page.body);
        rebound
            .get("/queues/q/jobs/a")
            .await
            .expect(StatusCode::MISDIRECTED_REQUEST);
        rebound
            .get("/metrics")
            .await
            .expect(StatusCode::MISDIRECTED_REQUEST);
        rebound
            .post_raw("/queues/q/act/pause", &[("_csrf", "x")])
            .await
            .expect(StatusCode::MISDIRECTED_REQUEST);
        assert!(!paused(&site).await);
    }
}

#[tokio::test]
async fn a_request_that_names_no_host_answers_421() {
    let site = Site::start(Wire::Script).await;
    let browser = site.dashboard();
    let request = axum::http::Request::get("/")
        .body(axum::body::Body::empty())
        .unwrap();
    let response = tower::ServiceExt::oneshot(browser.router.clone(), request)
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::MISDIRECTED_REQUEST);
}

#[tokio::test]
async fn loopback_names_are_served_on_the_listening_port_alone() {
    let site = Site::start(Wire::Script).await;
    let at = "127.0.0.1:7070".parse().unwrap();
    for host in ["127.0.0.1:7070", "localhost:7070", "[::1]:7070"] {
        site.browse(|d| d.listening_on(at))
            .with_header("host", host)
            .get("/")
            .await
            .expect(StatusCode::OK);
    }
    for host in ["127.0.0.1:7071", "localhost", "10.1.2.3:7070"] {
        site.browse(|d| d.listening_on(at))
            .with_header("host", host)
            .get("/")
            .await
            .expect(StatusCode::MISDIRECTED_REQUEST);
    }
}

#[tokio::test]
async fn allow_host_and_base_url_serve_the_hosts_they_name() {
    let site = Site::start(Wire::Script).await;
    let listening = "0.0.0.0:7070".parse().unwrap();
    let dashboard = |d: echomq_dashboard::Dashboard| {
        d.listening_on(listening)
            .allow_host("ops.example.com")
            .unwrap()
            .base_url("https://queues.example.com:8443/emq")
            .unwrap()
    };
    for host in [
        "ops.example.com",
        "OPS.example.com:7070",
        "queues.example.com:8443",
    ] {
        site.browse(dashboard)
            .with_header("host", host)
            .get("/")
            .await
            .expect(StatusCode::OK);
    }
    for host in ["queues.example.com", "0.0.0.0:7070", "example.com"] {
        site.browse(dashboard)
            .with_header("host", host)
            .get("/")
            .await
            .expect(StatusCode::MISDIRECTED_REQUEST);
    }
}

#[tokio::test]
async fn a_bad_allowed_host_or_base_url_is_refused_by_the_builder() {
    let site = Site::start(Wire::Script).await;
    let dashboard = || echomq_dashboard::Dashboard::new(site.connector.clone());
    for bad in ["", "a b", "evil.example/path", "host:port", "[::1"] {
        let err = dashboard().allow_host(bad).unwrap_err();
        assert_eq!(err, echomq_dashboard::HostError(bad.to_string()));
    }
    for bad in [
        "ftp://ops.example.com",
        "ops.example.com",
        "https://",
        "https://user:pw@ops.example.com",
    ] {
        let err = dashboard().base_url(bad).unwrap_err();
        assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
    }
}

#[tokio::test]
async fn a_post_from_another_origin_is_refused_and_writes_nothing() {
    on_both_wires(|site| async move {
        one_pending(&site).await;
        for origin in [
            "http://127.0.0.1:9999",
            "http://evil.example",
            "null",
            "http://127.0.0.1.evil.example",
        ] {
            let browser = site.dashboard();
            let csrf = browser.get("/login").await.expect(StatusCode::OK).csrf();
            let page = browser
                .with_origin(Some(origin))
                .post_raw("/queues/q/act/pause", &[("_csrf", &csrf)])
                .await
                .expect(StatusCode::FORBIDDEN);
            assert!(page.body.contains("does not serve"), "{}", page.body);
        }
        assert!(!paused(&site).await);
    })
    .await;
}

#[tokio::test]
async fn a_post_with_a_foreign_referer_and_no_origin_is_refused() {
    let site = Site::start(Wire::Script).await;
    one_pending(&site).await;
    let browser = site.dashboard();
    let csrf = browser.get("/login").await.expect(StatusCode::OK).csrf();
    let page = browser
        .with_origin(None)
        .with_header("referer", "http://localhost:9999/attack.html")
        .post_raw("/queues/q/act/pause", &[("_csrf", &csrf)])
        .await
        .expect(StatusCode::FORBIDDEN);
    assert!(page.body.contains("Referer"), "{}", page.body);
    assert!(!paused(&site).await);
}

#[tokio::test]
async fn a_post_with_a_served_referer_and_no_origin_passes() {
    let site = Site::start(Wire::Script).await;
    one_pending(&site).await;
    let browser = site
        .dashboard()
        .with_origin(None)
        .with_header("referer", "http://127.0.0.1/queues/q");
    browser
        .post("/queues/q/act/pause", &[])
        .await
        .expect(StatusCode::SEE_OTHER);
    assert!(paused(&site).await);
}

#[tokio::test]
async fn a_browser_post_that_names_no_origin_or_referer_is_refused() {
    let site = Site::start(Wire::Script).await;
    one_pending(&site).await;
    let page = site
        .dashboard()
        .with_origin(None)
        .post("/queues/q/act/pause", &[])
        .await
        .expect(StatusCode::FORBIDDEN);
    assert!(page.body.contains("no Origin or Referer"), "{}", page.body);
    assert!(!paused(&site).await);
}

#[tokio::test]
async fn a_script_with_the_bearer_token_needs_no_origin() {
    let site = Site::start(Wire::Script).await;
    one_pending(&site).await;
    site.browse(|d| d.token("s3cret"))
        .with_origin(None)
        .with_header("authorization", "Bearer s3cret")
        .post_raw("/queues/q/act/pause", &[])
        .await
        .expect(StatusCode::SEE_OTHER);
    assert!(paused(&site).await);
}

#[tokio::test]
async fn the_session_cookie_holds_a_random_id_not_the_token() {
    let site = Site::start(Wire::Script).await;
    let token = "s3cret-token";
    let browser = site.browse(|d| d.token(token));
    let login = sign_in(&browser, token).await.expect(StatusCode::SEE_OTHER);
    let cookie = login.headers[header::SET_COOKIE].to_str().unwrap();
    let value = cookie.split(';').next().unwrap().split_once('=').unwrap().1;
    let hex_token: String = token.bytes().map(|b| format!("{b:02x}")).collect();
    assert!(
        !value.contains(token) && !value.contains(&hex_token),
        "{cookie}"
    );
    assert_eq!(value.len(), 64, "256 bits, hex: {cookie}");
    assert!(value.bytes().all(|b| b.is_ascii_hexdigit()), "{cookie}");
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert!(!cookie.contains("Secure"), "plain http: {cookie}");
    browser.get("/").await.expect(StatusCode::OK);
}

#[tokio::test]
async fn an_https_base_url_makes_the_session_cookie_secure() {
    let site = Site::start(Wire::Script).await;
    let browser = site.browse(|d| {
        d.token("s3cret")
            .base_url("https://127.0.0.1")
            .unwrap()
            .base_path("/emq")
            .unwrap()
    });
    let form = browser.get("/emq/login").await.expect(StatusCode::OK);
    let login = browser
        .post_raw(
            "/emq/login",
            &[("token", "s3cret"), ("_csrf", &form.csrf())],
        )
        .await
        .expect(StatusCode::SEE_OTHER);
    let cookie = login.headers[header::SET_COOKIE].to_str().unwrap();
    assert!(cookie.contains("; Secure"), "{cookie}");
    assert!(cookie.contains("Path=/emq"), "{cookie}");
}

#[tokio::test]
async fn signing_out_ends_the_session_on_the_server() {
    let site = Site::start(Wire::Script).await;
    let browser = site.browse(|d| d.token("s3cret"));
    sign_in(&browser, "s3cret")
        .await
        .expect(StatusCode::SEE_OTHER);
    let kept = browser.cookie().expect("a session cookie");
    browser.get("/").await.expect(StatusCode::OK);
    browser
        .post("/logout", &[])
        .await
        .expect(StatusCode::SEE_OTHER);
    // The cookie replayed after sign-out opens nothing.
    let replay = browser.stranger().with_header("cookie", &kept);
    replay.get("/").await.expect(StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn signing_out_needs_the_session_s_csrf_token() {
    let site = Site::start(Wire::Script).await;
    let browser = site.browse(|d| d.token("s3cret"));
    sign_in(&browser, "s3cret")
        .await
        .expect(StatusCode::SEE_OTHER);
    browser
        .post_raw("/logout", &[])
        .await
        .expect(StatusCode::FORBIDDEN);
    browser.get("/").await.expect(StatusCode::OK);
}

#[tokio::test]
async fn signing_in_starts_a_new_session_and_the_old_id_opens_nothing() {
    let site = Site::start(Wire::Script).await;
    let browser = site.browse(|d| d.token("s3cret"));
    browser.get("/login").await.expect(StatusCode::OK);
    let planted = browser.cookie().expect("a session for the form");
    sign_in(&browser, "s3cret")
        .await
        .expect(StatusCode::SEE_OTHER);
    let signed_in = browser.cookie().unwrap();
    assert_ne!(planted, signed_in);
    let fixed = browser.stranger().with_header("cookie", &planted);
    fixed.get("/").await.expect(StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn wrong_tokens_from_one_address_are_answered_429() {
    let site = Site::start(Wire::Script).await;
    let guesser = site
        .browse(|d| d.token("s3cret"))
        .with_address("10.9.8.7:5555");
    for _ in 0..5 {
        sign_in(&guesser, "guess")
            .await
            .expect(StatusCode::UNAUTHORIZED);
    }
    let throttled = sign_in(&guesser, "s3cret")
        .await
        .expect(StatusCode::TOO_MANY_REQUESTS);
    assert!(throttled.headers.contains_key(header::RETRY_AFTER));
    assert!(
        throttled.body.contains("too many wrong tokens"),
        "{}",
        throttled.body
    );
    assert!(throttled.via.cookie().is_some());
    throttled
        .via
        .get("/")
        .await
        .expect(StatusCode::UNAUTHORIZED);
    // Another address signs in.
    let other = guesser.stranger().with_address("10.9.8.6:5555");
    sign_in(&other, "s3cret")
        .await
        .expect(StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn a_csrf_token_of_one_session_opens_no_other_session_s_forms() {
    on_both_wires(|site| async move {
        one_pending(&site).await;
        let victim = site.dashboard();
        let attacker = victim.stranger();
        let attackers_token = attacker.get("/login").await.expect(StatusCode::OK).csrf();
        let victims_token = victim.get("/login").await.expect(StatusCode::OK).csrf();
        assert_ne!(attackers_token, victims_token);
        let page = victim
            .post_raw("/queues/q/act/pause", &[("_csrf", &attackers_token)])
            .await
            .expect(StatusCode::FORBIDDEN);
        assert!(page.body.contains("CSRF token is wrong"), "{}", page.body);
        assert!(!paused(&site).await);
    })
    .await;
}

#[tokio::test]
async fn a_csrf_token_without_its_session_cookie_is_refused() {
    let site = Site::start(Wire::Script).await;
    one_pending(&site).await;
    let browser = site.dashboard();
    let csrf = browser.get("/login").await.expect(StatusCode::OK).csrf();
    let page = browser
        .with_header("cookie", "emq_session=0000")
        .post_raw("/queues/q/act/pause", &[("_csrf", &csrf)])
        .await
        .expect(StatusCode::FORBIDDEN);
    assert!(page.body.contains("CSRF token is wrong"), "{}", page.body);
    assert!(!paused(&site).await);
}

#[tokio::test]
async fn a_form_with_two_csrf_tokens_is_refused() {
    let site = Site::start(Wire::Script).await;
    one_pending(&site).await;
    let browser = site.dashboard();
    let csrf = browser.get("/login").await.expect(StatusCode::OK).csrf();
    let page = browser
        .post_raw("/queues/q/act/pause", &[("_csrf", &csrf), ("_csrf", &csrf)])
        .await
        .expect(StatusCode::FORBIDDEN);
    assert!(
        page.body.contains("more than one CSRF token"),
        "{}",
        page.body
    );
    assert!(!paused(&site).await);
}

#[tokio::test]
async fn the_login_form_s_csrf_token_is_its_session_s() {
    let site = Site::start(Wire::Script).await;
    let browser = site.browse(|d| d.token("s3cret"));
    let form = browser.get("/login").await.expect(StatusCode::OK);
    // Another browser's form token does not sign this one in.
    let other = browser
        .stranger()
        .get("/login")
        .await
        .expect(StatusCode::OK);
    assert_ne!(form.csrf(), other.csrf());
    browser
        .post_raw("/login", &[("token", "s3cret"), ("_csrf", &other.csrf())])
        .await
        .expect(StatusCode::FORBIDDEN);
    // The page reloaded within the same session shows the same token.
    let again = browser.get("/login").await.expect(StatusCode::OK);
    assert_eq!(form.csrf(), again.csrf());
}

#[tokio::test]
async fn every_answer_carries_the_security_headers() {
    let site = Site::start(Wire::Script).await;
    one_pending(&site).await;
    let open = site.dashboard();
    let locked = site.browse(|d| d.token("s3cret"));
    let answers = [
        open.get("/").await,
        open.get("/queues/q").await,
        open.get("/queues/q/jobs/a").await,
        open.get("/controls").await,
        open.get("/metrics").await,
        open.get("/nowhere").await,
        open.get("/assets/style.css").await,
        open.with_header("host", "evil.example").get("/").await,
        locked.get("/").await,
        locked.get("/login").await,
    ];
    for page in &answers {
        let header = |name: header::HeaderName| {
            page.headers
                .get(&name)
                .unwrap_or_else(|| panic!("{} without {name}", page.status))
                .to_str()
                .unwrap()
                .to_string()
        };
        let csp = header(header::CONTENT_SECURITY_POLICY);
        for directive in [
            "default-src 'none'",
            "script-src 'self'",
            "frame-ancestors 'none'",
            "form-action 'self'",
        ] {
            assert!(csp.contains(directive), "{csp}");
        }
        assert!(!csp.contains("unsafe-inline"), "{csp}");
        assert_eq!(header(header::X_FRAME_OPTIONS), "DENY");
        assert_eq!(header(header::X_CONTENT_TYPE_OPTIONS), "nosniff");
        assert_eq!(header(header::REFERRER_POLICY), "same-origin");
    }
    let cache = |page: &common::Page| {
        page.headers
            .get(header::CACHE_CONTROL)
            .map(|v| v.to_str().unwrap().to_string())
    };
    // Every answer but the asset (the seventh) stays out of every cache.
    for (at, page) in answers.iter().enumerate() {
        let no_store = cache(page).as_deref() == Some("no-store");
        assert_eq!(no_store, at != 6, "answer {at}: {}", page.status);
    }
}

#[tokio::test]
async fn no_page_holds_an_inline_script_style_or_handler() {
    let site = Site::start(Wire::Script).await;
    one_pending(&site).await;
    let browser = site.dashboard();
    for path in ["/", "/queues/q", "/queues/q/jobs/a", "/controls", "/login"] {
        let page = browser.get(path).await.expect(StatusCode::OK);
        for tag in page.body.split('<').skip(1) {
            let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
            if tag.starts_with("script") {
                assert!(tag.contains(" src="), "{path}: <{tag}>");
            }
            assert!(!tag.starts_with("style"), "{path}: <{tag}>");
            for attribute in [" style=", " onclick=", " onload=", " onsubmit=", " hx-on"] {
                assert!(!tag.contains(attribute), "{path}: <{tag}>");
            }
        }
    }
}

#[tokio::test]
async fn an_action_over_every_matching_job_asks_for_the_queue_name() {
    on_both_wires(|site| async move {
        one_pending(&site).await;
        let browser = site.dashboard();
        let page = browser.get("/queues/q").await.expect(StatusCode::OK);
        let form = &page.body[page.body.find(r#"id="bulk-all""#).unwrap()..];
        let form = &form[..form.find("</form>").unwrap()];
        assert!(form.contains(r#"name="confirm""#), "{form}");
        for confirm in [None, Some("other")] {
            let mut fields = vec![("verb", "remove"), ("all", "1"), ("state", "pending")];
            fields.extend(confirm.map(|c| ("confirm", c)));
            let refused = browser
                .post("/queues/q/act/bulk", &fields)
                .await
                .expect(StatusCode::BAD_REQUEST);
            assert!(
                refused.body.contains("type the queue name"),
                "{}",
                refused.body
            );
        }
        assert_eq!(site.queue("q").admin().counts().await.unwrap().pending, 1);
    })
    .await;
}

#[tokio::test]
async fn back_outside_the_dashboard_goes_to_the_default_page() {
    let site = Site::start(Wire::Script).await;
    one_pending(&site).await;
    let browser = site.dashboard();
    for back in [
        "/\\evil.example",
        "/\t/evil.example",
        "/\n/evil.example",
        "//evil.example",
        "http://evil.example/",
        "/queues/q\r\nSet-Cookie: x=1",
    ] {
        let page = browser
            .post("/queues/q/act/pause", &[("back", back)])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert!(
            page.location().starts_with("/queues/q?done="),
            "{back:?} → {}",
            page.location()
        );
    }
    let page = browser
        .post("/queues/q/act/resume", &[("back", "/queues/q?state=dead")])
        .await
        .expect(StatusCode::SEE_OTHER);
    assert!(page.location().starts_with("/queues/q?state=dead&done="));
}

#[tokio::test]
async fn a_made_up_notice_shows_nothing() {
    let site = Site::start(Wire::Script).await;
    one_pending(&site).await;
    let browser = site.dashboard();
    let page = browser
        .get("/queues/q?done=Your%20session%20expired%3A%20call%20%2B1-555")
        .await
        .expect(StatusCode::OK);
    assert!(!page.body.contains("session expired"), "{}", page.body);
    assert!(!page.body.contains(r#"class="notice""#), "{}", page.body);
    // A notice left to one session is not shown to another.
    let done = browser
        .post("/queues/q/act/pause", &[])
        .await
        .expect(StatusCode::SEE_OTHER);
    assert_eq!(done.notice().await, "paused q");
    let other = browser
        .stranger()
        .get(done.location())
        .await
        .expect(StatusCode::OK);
    assert!(!other.body.contains("paused q</p>"), "{}", other.body);
    let job = browser
        .get("/queues/q/jobs/a?done=made-up")
        .await
        .expect(StatusCode::OK);
    assert!(!job.body.contains(r#"class="notice""#), "{}", job.body);
}

#[tokio::test]
async fn a_huge_page_number_shows_the_last_page() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        for n in 0..60 {
            q.enqueue(NewJob::new(json!({ "n": n }))).await.unwrap();
        }
        let browser = site.dashboard();
        for page in [u64::MAX, u64::MAX / 50, 2] {
            let shown = browser
                .get(&format!("/queues/q?state=pending&page={page}"))
                .await
                .expect(StatusCode::OK);
            assert!(shown.body.contains("page 2 of 2"), "{page}: {}", shown.body);
            assert!(shown.body.contains("data-job="), "{page}");
        }
    })
    .await;
}
