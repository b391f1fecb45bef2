//! The dashboard in a real browser: Debian's `chromium`, driven over
//! WebDriver by `chromedriver` (fantoccini, plain HTTP), against
//! `emq dashboard` serving a real server. Queues page and its live counts,
//! a queue, a job, search and retry, read-only; screenshots of the pages
//! land in `target/dashboard-screenshots/` (CI keeps them as artifacts).
//!
//! It lives in the `emq` crate, not `echomq-dashboard`, because it runs the
//! `emq` binary itself (`CARGO_BIN_EXE_emq`, built once by this crate's
//! test build). Chromedriver and chromium are found on `PATH` (or through
//! `EMQ_CHROMEDRIVER` and `EMQ_CHROMIUM`); when either is missing every
//! test fails saying so (`scripts/setup` installs both): never a silent
//! skip. One browser runs at a time (a lock), each in a fresh profile.
//!
//! `EMQ_README_IMAGES=1` also copies the three main screenshots to
//! `docs/img/` (the README's images).

use crate::browser::{Browser, LOOK_EVERY, ONE_BROWSER, Site};
use crate::common::{PATIENCE, spawn_on};
use echomq::{FailAction, JobId, NewJob, Queue, Wire};
use echomq_testkit::Wait;
use fantoccini::Locator;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

/// Enqueues `payload` as job `id` of `queue`.
async fn enqueue(queue: &Queue<Value>, id: &str, payload: Value) {
    queue
        .enqueue(NewJob::new(payload).id(id).unwrap())
        .await
        .expect("enqueue");
}

/// Claims the next pending job of `queue`, which must be `id`; its token.
async fn claim(queue: &Queue<Value>, id: &str) -> u64 {
    let claimed = queue
        .claim("browser-test", Duration::from_secs(3600), 1)
        .await
        .expect("claim");
    let job = claimed.first().expect("a pending job");
    assert_eq!(job.id.as_str(), id, "claimed the wrong job");
    job.token
}

/// Job `id` of `queue`, pending at once, then dead with `error`.
async fn dead(queue: &Queue<Value>, id: &str, payload: Value, error: &str) {
    enqueue(queue, id, payload).await;
    let token = claim(queue, id).await;
    queue
        .fail(
            &JobId::new(id.to_string()).unwrap(),
            token,
            error,
            FailAction::Dead,
        )
        .await
        .expect("fail");
}

/// Job `id` of `queue`, enqueued and completed with `result`.
async fn completed(queue: &Queue<Value>, id: &str, payload: Value, result: Value) {
    enqueue(queue, id, payload).await;
    let token = claim(queue, id).await;
    queue
        .complete(&JobId::new(id.to_string()).unwrap(), token, &result)
        .await
        .expect("complete");
}

/// The CSS of the count cell of `state` in `queue`'s row of the queues
/// table.
fn count_cell(queue: &str, state: &str) -> String {
    format!("#queues tr[data-queue=\"{queue}\"] td[data-state=\"{state}\"]")
}

#[tokio::test]
async fn the_queues_page_lists_each_queue_with_its_counts_and_opens_it() {
    let _one = ONE_BROWSER.lock().await;
    let browser = Browser::start(false).await;
    for wire in [Wire::Script, Wire::Native] {
        let site = Site::start(wire, &[]).await;
        let emails = site.queue("emails");
        dead(&emails, "e0", json!({"to": "x@example.com"}), "bounced").await;
        enqueue(&emails, "e1", json!({"to": "ada@example.com"})).await;
        enqueue(&emails, "e2", json!({"to": "grace@example.com"})).await;
        enqueue(&site.queue("images"), "i1", json!({"file": "a.png"})).await;

        browser.open(&site.url("/")).await;
        browser.element("table#queues").await;
        assert_eq!(browser.count("#queues tr[data-queue]").await, 2, "{wire:?}");
        browser
            .wait_text(&count_cell("emails", "pending"), "2")
            .await;
        browser.wait_text(&count_cell("emails", "dead"), "1").await;
        browser
            .wait_text(&count_cell("images", "pending"), "1")
            .await;
        // Writable: the queue's pause button is drawn.
        browser
            .element("#queues tr[data-queue=\"emails\"] form[data-action=\"pause\"] button")
            .await;

        browser
            .element("#queues tr[data-queue=\"emails\"] td a")
            .await
            .click()
            .await
            .expect("click the queue's link");
        browser.element("table#jobs").await;
        let url = browser.client.current_url().await.expect("url");
        assert_eq!(url.path(), "/queues/emails", "{wire:?}");
        let heading = browser.text("h1").await.unwrap();
        assert!(heading.contains("emails"), "{heading:?}");
        for id in ["e1", "e2"] {
            browser
                .element(&format!("#jobs tr[data-job=\"{id}\"]"))
                .await;
        }
        if wire == Wire::Script {
            browser.screenshot("test-queue-page").await;
        }
    }
}

#[tokio::test]
async fn a_count_changes_live_as_jobs_arrive_and_a_worker_runs() {
    let _one = ONE_BROWSER.lock().await;
    let browser = Browser::start(false).await;
    for wire in [Wire::Script, Wire::Native] {
        let site = Site::start(wire, &[]).await;
        let q = site.queue("q");
        enqueue(&q, "a", json!({"n": 1})).await;

        browser.open(&site.url("/")).await;
        browser.wait_text(&count_cell("q", "pending"), "1").await;
        browser.wait_live("#queues tbody").await;
        // A reload would lose this: the changes below must come live.
        browser.eval("window.stayed = true; return null;").await;

        enqueue(&q, "b", json!({"n": 2})).await;
        enqueue(&q, "c", json!({"n": 3})).await;
        browser.wait_text(&count_cell("q", "pending"), "3").await;

        let worker = spawn_on(
            &site.server,
            &[
                "--wire",
                if wire == Wire::Script {
                    "script"
                } else {
                    "native"
                },
                "worker",
                "q",
                "--exec",
                "cat",
            ],
        );
        browser.wait_text(&count_cell("q", "completed"), "3").await;
        browser.wait_text(&count_cell("q", "pending"), "0").await;
        drop(worker);
        assert_eq!(
            browser.eval("return window.stayed === true;").await,
            json!(true),
            "the page was reloaded, not updated live ({wire:?})"
        );
        if wire == Wire::Script {
            browser.screenshot("test-live-counts").await;
        }
    }
}

#[tokio::test]
async fn a_read_only_dashboard_draws_no_action_on_any_page() {
    let _one = ONE_BROWSER.lock().await;
    let browser = Browser::start(false).await;
    let site = Site::start(Wire::Script, &["--read-only"]).await;
    let q = site.queue("q");
    dead(&q, "gone", json!({"n": 0}), "boom").await;
    enqueue(&q, "a", json!({"n": 1})).await;

    for (path, ready) in [
        ("/", "table#queues tr[data-queue=\"q\"]"),
        ("/queues/q?state=dead", "#jobs tr[data-job=\"gone\"]"),
        ("/queues/q/jobs/gone", "h1"),
    ] {
        browser.open(&site.url(path)).await;
        browser.element(ready).await;
        let badge = browser.text(".badge.read-only").await;
        assert_eq!(badge.as_deref(), Ok("read-only"), "{path}");
        // Nothing that acts: no POST form, so no button of one. (The
        // search is a GET that only reads: it stays.)
        assert_eq!(
            browser.count("form[method=\"post\"]").await,
            0,
            "a POST form on {path}"
        );
        assert_eq!(browser.count("form[data-action]").await, 0, "{path}");
        assert_eq!(
            browser.count("button").await,
            browser.count("form#search button").await,
            "a button outside the search on {path}"
        );
    }
    browser.screenshot("test-read-only-job").await;
}

#[tokio::test]
async fn search_by_payload_opens_the_dead_job_and_retry_makes_it_pending() {
    let _one = ONE_BROWSER.lock().await;
    let browser = Browser::start(false).await;
    let site = Site::start(Wire::Script, &[]).await;
    let emails = site.queue("emails");
    let bounce = json!({"to": "nobody@bounce.example", "template": "receipt"});
    dead(&emails, "m-17", bounce, "550 mailbox unavailable").await;
    dead(&emails, "m-18", json!({"to": "eve@example.com"}), "timeout").await;
    enqueue(&emails, "m-19", json!({"to": "ada@example.com"})).await;

    // The dead tab shows both dead jobs; the search keeps the one whose
    // payload has the text.
    browser.open(&site.url("/queues/emails?state=dead")).await;
    browser.element("#jobs tr[data-job=\"m-18\"]").await;
    browser
        .element("form#search select[name=\"by\"]")
        .await
        .select_by_value("payload")
        .await
        .expect("search by payload");
    browser
        .element("form#search input[name=\"q\"]")
        .await
        .send_keys("bounce.example")
        .await
        .expect("type the search");
    browser
        .element("form#search button, form#search [type=\"submit\"]")
        .await
        .click()
        .await
        .expect("search");
    Wait::new("the search to show m-17 alone", PATIENCE)
        .every(LOOK_EVERY)
        .until_async(|| async {
            let rows = browser
                .client
                .find_all(Locator::Css("#jobs tr[data-job]"))
                .await
                .map_err(|err| err.to_string())?;
            let mut ids = Vec::new();
            for row in rows {
                ids.push(row.attr("data-job").await.map_err(|e| e.to_string())?);
            }
            if ids == [Some("m-17".to_string())] {
                Ok(())
            } else {
                Err(format!("rows {ids:?}"))
            }
        })
        .await;

    browser
        .element("#jobs tr[data-job=\"m-17\"] td:first-child a")
        .await
        .click()
        .await
        .expect("open the job");
    browser.wait_text("#job-state", "dead").await;
    let heading = browser.text("h1").await.unwrap();
    assert!(heading.contains("m-17"), "{heading:?}");
    browser.screenshot("test-dead-job").await;

    browser
        .element("form[data-action=\"reprocess\"] button")
        .await
        .click()
        .await
        .expect("press retry");
    browser.wait_text("#job-state", "pending").await;
    let job = emails
        .jobs()
        .get(&JobId::new("m-17").unwrap())
        .await
        .unwrap()
        .expect("job m-17");
    assert_eq!(job.state, echomq::JobState::Pending);
    browser.screenshot("test-retried-job").await;
}

#[tokio::test]
async fn a_flow_job_s_graph_shows_states_and_links_both_ways() {
    let _one = ONE_BROWSER.lock().await;
    let browser = Browser::start(false).await;
    for wire in [Wire::Script, Wire::Native] {
        let site = Site::start(wire, &[]).await;
        let (images, mailer) = (site.queue("images"), site.queue("mailer"));
        let mut flow = echomq::Flow::new("order");
        let fetch = flow.add_as("fetch", &images, NewJob::new(json!({"url": "u"})));
        let small = flow.add_as(
            "small",
            &images,
            NewJob::new(json!({"px": 64})).depends_on([&fetch]),
        );
        flow.add_as("mail", &mailer, NewJob::new(json!({})).depends_on([&small]));
        site.connector.submit(&flow).await.expect("submit");
        let token = claim(&images, "order:fetch").await;
        images
            .complete(&JobId::new("order:fetch").unwrap(), token, &json!("ok"))
            .await
            .expect("complete");
        images.relay().await.expect("relay");

        browser
            .open(&site.url("/queues/images/jobs/order:small"))
            .await;
        let fetch = "#upstream li[data-job=\"images order:fetch\"]";
        let mail = "#downstream li[data-job=\"mailer order:mail\"]";
        browser
            .wait_text(&format!("{fetch} > .edge"), "completed · told")
            .await;
        browser
            .wait_text(&format!("{fetch} > .badge"), "completed")
            .await;
        browser
            .wait_text(&format!("{mail} > .edge"), "wait · not told")
            .await;
        browser
            .wait_text(&format!("{mail} > .badge"), "blocked")
            .await;
        if wire == Wire::Script {
            browser.screenshot("test-flow-job").await;
        }

        // Down to the dependent, and back up to this job from its page.
        browser
            .element(&format!("{mail} > a"))
            .await
            .click()
            .await
            .expect("open the dependent");
        browser.wait_text("#job-state", "blocked").await;
        let url = browser.client.current_url().await.expect("url");
        assert_eq!(url.path(), "/queues/mailer/jobs/order%3Amail", "{wire:?}");
        browser
            .element("#upstream li[data-job=\"images order:small\"] > a")
            .await
            .click()
            .await
            .expect("open the dependency");
        browser.wait_text("#job-state", "pending").await;
        let url = browser.client.current_url().await.expect("url");
        assert_eq!(url.path(), "/queues/images/jobs/order%3Asmall", "{wire:?}");
    }
}

/// Queues as a running system has them: mail with completed, pending,
/// active and dead jobs; images with scheduled ones; a paused queue with a
/// cancelled job.
async fn realistic(site: &Site) {
    let emails = site.queue("emails");
    for (i, to) in ["ada", "grace", "alan", "edsger", "barbara", "ken"]
        .iter()
        .enumerate()
    {
        completed(
            &emails,
            &format!("mail-{}", 100 + i),
            json!({"to": format!("{to}@example.com"), "template": "welcome"}),
            json!({"smtp": "250 2.0.0 OK"}),
        )
        .await;
    }
    dead(
        &emails,
        "mail-107",
        json!({"to": "nobody@bounce.example", "template": "receipt", "order": 4411}),
        "SMTP 550 5.1.1 <nobody@bounce.example>: mailbox unavailable",
    )
    .await;
    dead(
        &emails,
        "mail-108",
        json!({"to": "ops@example.com", "template": "digest"}),
        "connect to smtp.example.com:587: timed out after 30 s",
    )
    .await;
    enqueue(
        &emails,
        "mail-109",
        json!({"to": "linus@example.com", "template": "reset-password"}),
    )
    .await;
    claim(&emails, "mail-109").await; // active, its lease held
    for (i, to) in ["margaret", "donald", "frances"].iter().enumerate() {
        enqueue(
            &emails,
            &format!("mail-{}", 110 + i),
            json!({"to": format!("{to}@example.com"), "template": "welcome"}),
        )
        .await;
    }

    let images = site.queue("images");
    for i in 0..4 {
        completed(
            &images,
            &format!("img-{i}"),
            json!({"file": format!("uploads/{i}.jpg"), "sizes": [64, 256, 1024]}),
            json!({"thumbnails": 3}),
        )
        .await;
    }
    for i in 4..9 {
        let tenant = ["acme", "globex"][i % 2];
        images
            .enqueue(
                NewJob::new(json!({"file": format!("{tenant}/{i}.jpg"), "sizes": [64, 256]}))
                    .id(format!("img-{i}"))
                    .unwrap()
                    .group(tenant),
            )
            .await
            .expect("enqueue grouped");
    }
    images.admin().set_concurrency_cap(4).await.expect("cap");
    for i in 9..11 {
        images
            .enqueue(
                NewJob::new(json!({"file": format!("uploads/{i}.jpg"), "sizes": [64]}))
                    .id(format!("img-{i}"))
                    .unwrap()
                    .after(Duration::from_secs(3600)),
            )
            .await
            .expect("enqueue scheduled");
    }

    emails
        .admin()
        .set_rate_limit(100, Duration::from_secs(1))
        .await
        .expect("rate limit");

    let reports = site.queue("reports");
    completed(
        &reports,
        "daily-2026-05-01",
        json!({"report": "daily", "day": "2026-05-01"}),
        json!({"rows": 1842}),
    )
    .await;
    enqueue(
        &reports,
        "daily-2026-05-02",
        json!({"report": "daily", "day": "2026-05-02"}),
    )
    .await;
    reports
        .jobs()
        .cancel(&JobId::new("daily-2026-05-02").unwrap())
        .await
        .expect("cancel");
    enqueue(
        &reports,
        "weekly-19",
        json!({"report": "weekly", "week": 19}),
    )
    .await;
    reports.admin().pause().await.expect("pause");
}

#[tokio::test]
async fn screenshots_of_the_queues_queue_and_job_pages() {
    let _one = ONE_BROWSER.lock().await;
    let site = Site::start(Wire::Script, &[]).await;
    realistic(&site).await;
    let mut shots = Vec::new();
    {
        let browser = Browser::start(false).await;
        browser.wide().await;
        browser.open(&site.url("/")).await;
        browser.wait_text(&count_cell("emails", "dead"), "2").await;
        shots.push(("dashboard-queues", browser.screenshot("queues").await));

        browser.open(&site.url("/queues/emails?state=dead")).await;
        browser.element("#jobs tr[data-job=\"mail-108\"]").await;
        shots.push(("dashboard-queue", browser.screenshot("queue").await));

        browser
            .open(&site.url("/queues/emails/jobs/mail-107"))
            .await;
        browser.element("pre#error").await;
        shots.push(("dashboard-job", browser.screenshot("job").await));
    }
    {
        let dark = Browser::start(true).await;
        dark.wide().await;
        dark.open(&site.url("/")).await;
        dark.wait_text(&count_cell("emails", "dead"), "2").await;
        let is_dark = dark
            .eval("return matchMedia('(prefers-color-scheme: dark)').matches;")
            .await;
        assert_eq!(is_dark, json!(true), "--force-dark-mode did not apply");
        dark.screenshot("queues-dark").await;
    }
    if std::env::var_os("EMQ_README_IMAGES").is_some() {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/img");
        std::fs::create_dir_all(&docs).expect("docs/img");
        for (name, shot) in shots {
            std::fs::copy(&shot, docs.join(format!("{name}.png"))).expect("copy to docs/img");
        }
    }
}
