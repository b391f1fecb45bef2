//! The job page and the job actions, against real servers on both wires:
//! the verbs each state draws, each verb's effect on the server, each
//! refusal with its reason, the timeline, progress and log, read-only,
//! and escaping.

use crate::common::{Site, on_both_wires};
use axum::http::StatusCode;
use echomq::{CancelOutcome, FailAction, JobId, JobState, NewJob, Queue};
use serde_json::{Value, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);

fn id(id: &str) -> JobId {
    JobId::new(id).unwrap()
}

/// Enqueues job `name` with payload `payload`.
async fn enqueue(q: &Queue<Value>, name: &str, payload: Value) {
    q.enqueue(NewJob::new(payload).id(name).unwrap().attempts(1))
        .await
        .unwrap();
}

/// Enqueues job `name` and claims it (the queue holds no other pending
/// job); its fencing token.
async fn active(q: &Queue<Value>, name: &str, payload: Value) -> u64 {
    enqueue(q, name, payload).await;
    let claimed = q.claim_one("w1", LEASE).await.unwrap().unwrap();
    assert_eq!(claimed.id.as_str(), name);
    claimed.token
}

/// Queue `q` with one job in each state, named after it.
async fn one_of_each(site: &Site) -> Queue<Value> {
    let q = site.queue("q");
    active(&q, "active", json!(1)).await;
    let token = active(&q, "completed", json!(2)).await;
    q.complete(&id("completed"), token, &json!({"ok": true}))
        .await
        .unwrap();
    let token = active(&q, "dead", json!(3)).await;
    q.fail(&id("dead"), token, "boom", FailAction::Dead)
        .await
        .unwrap();
    enqueue(&q, "cancelled", json!(4)).await;
    assert_eq!(
        q.jobs().cancel(&id("cancelled")).await.unwrap(),
        CancelOutcome::Cancelled
    );
    enqueue(&q, "pending", json!(5)).await;
    q.enqueue(
        NewJob::new(json!(6))
            .id("scheduled")
            .unwrap()
            .after(Duration::from_secs(3600)),
    )
    .await
    .unwrap();
    q
}

/// The `data-action` of every form on the page, in order.
fn verbs(body: &str) -> Vec<&str> {
    body.split(r#"data-action=""#)
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .collect()
}

/// The text of the element with `id`, up to its closing tag.
fn element<'a>(body: &'a str, id: &str) -> &'a str {
    let at = body
        .find(&format!(r#"id="{id}""#))
        .unwrap_or_else(|| panic!("no #{id} in:\n{body}"));
    let rest = &body[at..];
    let start = rest.find('>').unwrap() + 1;
    let end = rest.find("</").unwrap();
    &rest[start..end]
}

/// The state a job is in on the server.
async fn state(q: &Queue<Value>, name: &str) -> Option<JobState> {
    q.jobs().get(&id(name)).await.unwrap().map(|j| j.state)
}

#[tokio::test]
async fn each_state_draws_exactly_the_verbs_that_apply() {
    on_both_wires(|site| async move {
        one_of_each(&site).await;
        let browser = site.dashboard();
        for (name, expected) in [
            (
                "scheduled",
                &["promote", "reschedule", "cancel", "remove", "update"][..],
            ),
            ("pending", &["cancel", "remove", "update"]),
            ("active", &["cancel", "requeue", "remove", "update"]),
            ("completed", &["reprocess", "remove", "update"]),
            ("dead", &["reprocess", "remove", "update"]),
            ("cancelled", &["reprocess", "remove", "update"]),
        ] {
            let page = browser
                .get(&format!("/queues/q/jobs/{name}"))
                .await
                .expect(StatusCode::OK);
            assert_eq!(verbs(&page.body), expected, "{name}");
            assert_eq!(element(&page.body, "job-state"), name);
            assert!(page.body.contains(&format!("<code>{name}</code>")));
        }
        let dead = browser.get("/queues/q/jobs/dead").await;
        assert!(dead.body.contains(">Retry</button>"), "{}", dead.body);
        let active = browser.get("/queues/q/jobs/active").await;
        assert!(active.body.contains(r#"name="force" value="1""#));
        assert!(active.body.contains("Remove (force)"));
    })
    .await;
}

#[tokio::test]
async fn the_page_shows_every_field_payload_and_result_pretty() {
    on_both_wires(|site| async move {
        one_of_each(&site).await;
        let page = site
            .dashboard()
            .get("/queues/q/jobs/completed")
            .await
            .expect(StatusCode::OK);
        for field in [
            "id",
            "state",
            "priority",
            "attempts",
            "failures",
            "stalls",
            "created_at",
            "run_at",
            "claimed_at",
            "finished_at",
            "waited",
            "ran",
            "worker",
            "cancel",
            "group",
            "repeat",
            "dedup",
            "dedup_mode",
            "traceparent",
            "time_limit",
            "start_by",
            "reason",
            "lifo",
            "flow",
            "ref",
            "on_failure",
            "deps",
            "dependents",
            "logs",
        ] {
            assert!(
                page.body.contains(&format!(r#"data-field="{field}""#)),
                "{field}: {}",
                page.body
            );
        }
        assert_eq!(element(&page.body, "payload"), "2");
        assert_eq!(
            element(&page.body, "result"),
            "{\n  &quot;ok&quot;: true\n}"
        );
        let dead = site.dashboard().get("/queues/q/jobs/dead").await;
        assert_eq!(element(&dead.body, "error"), "boom");
    })
    .await;
}

#[tokio::test]
async fn the_page_shows_a_jobs_time_limit_start_by_deadline_and_lifo() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        let deadline = std::time::UNIX_EPOCH + Duration::from_millis(4_102_444_800_000);
        q.enqueue(
            NewJob::new(json!(1))
                .id("timed")
                .unwrap()
                .time_limit(Duration::from_secs(90))
                .start_by(deadline),
        )
        .await
        .unwrap();
        enqueue(&q, "plain", json!(2)).await;
        q.enqueue(NewJob::new(json!(3)).id("newest").unwrap().lifo())
            .await
            .unwrap();
        let browser = site.dashboard();
        let page = browser
            .get("/queues/q/jobs/timed")
            .await
            .expect(StatusCode::OK);
        assert!(
            page.body
                .contains(r#"data-field="time_limit"><code>90s</code>"#),
            "{}",
            page.body
        );
        assert!(
            page.body
                .contains(r#"data-field="start_by"><time>2100-01-01"#),
            "{}",
            page.body
        );
        let plain = browser
            .get("/queues/q/jobs/plain")
            .await
            .expect(StatusCode::OK);
        assert!(
            plain
                .body
                .contains(r#"data-field="time_limit"><span class="muted">"#)
        );
        assert!(
            plain.body.contains(r#"data-field="lifo">no<"#),
            "{}",
            plain.body
        );
        let lifo = browser
            .get("/queues/q/jobs/newest")
            .await
            .expect(StatusCode::OK);
        assert!(
            lifo.body.contains(r#"data-field="lifo">yes<"#),
            "{}",
            lifo.body
        );
    })
    .await;
}

#[tokio::test]
async fn a_flow_job_shows_its_flow_ref_policy_and_edges() {
    on_both_wires(|site| async move {
        let images = site.queue("images");
        let mailer = site.queue("mailer");
        let mut flow = echomq::Flow::new("order");
        let fetch = flow.add_as("fetch", &images, echomq::NewJob::new(serde_json::json!(1)));
        flow.add_as(
            "mail",
            &mailer,
            echomq::NewJob::new(serde_json::json!(2))
                .depends_on([&fetch])
                .on_dependency_failure(echomq::Policy::Cancel),
        );
        site.connector.submit(&flow).await.unwrap();
        let browser = site.dashboard();
        let mail = browser
            .get("/queues/mailer/jobs/order:mail")
            .await
            .expect(StatusCode::OK);
        for shown in [
            r#"data-field="flow"><code>order<"#,
            r#"data-field="ref"><code>mail<"#,
            r#"data-field="on_failure"><code>cancel<"#,
            r#"data-field="deps"><code>1 (1 not ended)<"#,
        ] {
            assert!(mail.body.contains(shown), "{shown}: {}", mail.body);
        }
        let fetch = browser
            .get("/queues/images/jobs/order:fetch")
            .await
            .expect(StatusCode::OK);
        assert!(
            fetch.body.contains(r#"data-field="dependents"><code>1<"#),
            "{}",
            fetch.body
        );
    })
    .await;
}

/// The `li` of the graph for job `data_job` (`queue id`) under the list
/// `#list`, up to its end tag or its own nested list.
fn graph_item<'a>(body: &'a str, list: &str, data_job: &str) -> &'a str {
    let at = body
        .find(&format!(r#"id="{list}""#))
        .unwrap_or_else(|| panic!("no #{list} in:\n{body}"));
    let rest = &body[at..];
    let start = rest
        .find(&format!(r#"data-job="{data_job}""#))
        .unwrap_or_else(|| panic!("no {data_job} in #{list}:\n{rest}"));
    let item = &rest[start..];
    let end = [item.find("</li>"), item.find("<ul>")]
        .into_iter()
        .flatten()
        .min()
        .unwrap();
    &item[..end]
}

#[tokio::test]
async fn a_flow_job_s_page_draws_its_graph_linked_both_ways_with_states() {
    on_both_wires(|site| async move {
        let images = site.queue("images");
        let mailer = site.queue("mailer");
        let mut flow = echomq::Flow::new("order");
        let fetch = flow.add_as("fetch", &images, NewJob::new(json!(1)));
        let small = flow.add_as("small", &images, NewJob::new(json!(2)).depends_on([&fetch]));
        flow.add_as("mail", &mailer, NewJob::new(json!(3)).depends_on([&small]));
        site.connector.submit(&flow).await.unwrap();
        let claimed = images.claim_one("w", LEASE).await.unwrap().unwrap();
        images
            .complete(&claimed.id, claimed.token, &json!("ok"))
            .await
            .unwrap();
        images.relay().await.unwrap();

        let browser = site.dashboard();
        let page = browser
            .get("/queues/images/jobs/order:small")
            .await
            .expect(StatusCode::OK);
        let up = graph_item(&page.body, "upstream", "images order:fetch");
        for shown in [
            r#"data-edge="completed""#,
            "completed · told",
            r#"href="/queues/images/jobs/order%3Afetch""#,
            "ref fetch",
            r#"<span class="badge state-completed">completed</span>"#,
        ] {
            assert!(up.contains(shown), "{shown}: {up}");
        }
        let down = graph_item(&page.body, "downstream", "mailer order:mail");
        for shown in [
            r#"data-edge="wait""#,
            "wait · not told",
            r#"href="/queues/mailer/jobs/order%3Amail""#,
            r#"<span class="badge state-blocked">blocked</span>"#,
        ] {
            assert!(down.contains(shown), "{shown}: {down}");
        }
        // The dependent's page links back; a plain job's page has no graph.
        let mail = browser
            .get("/queues/mailer/jobs/order%3Amail")
            .await
            .expect(StatusCode::OK);
        let back = graph_item(&mail.body, "upstream", "images order:small");
        assert!(
            back.contains(r#"href="/queues/images/jobs/order%3Asmall""#),
            "{back}"
        );
        assert!(
            mail.body
                .contains(r#"<p class="muted" id="downstream">No dependents.</p>"#)
        );
        enqueue(&images, "plain", json!(4)).await;
        let plain = browser.get("/queues/images/jobs/plain").await;
        assert!(!plain.body.contains("flow-graph"), "{}", plain.body);
    })
    .await;
}

#[tokio::test]
async fn the_queue_page_has_a_blocked_tab_listing_blocked_jobs() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        let mut flow = echomq::Flow::new("f");
        let first = flow.add_as("first", &q, NewJob::new(json!(1)));
        flow.add_as("then", &q, NewJob::new(json!(2)).depends_on([&first]));
        site.connector.submit(&flow).await.unwrap();
        let page = site
            .dashboard()
            .get("/queues/q?state=blocked")
            .await
            .expect(StatusCode::OK);
        assert!(
            page.body
                .contains(r#"data-state="blocked">blocked<span class="count">1</span>"#),
            "{}",
            page.body
        );
        assert!(page.body.contains(r#"data-job="f:then""#), "{}", page.body);
        assert!(
            !page.body.contains(r#"data-job="f:first""#),
            "{}",
            page.body
        );
        // Its bulk verbs are cancel and remove (reprocess is refused for a
        // blocked job), and cancel cancels it.
        assert!(page.body.contains(r#"value="cancel""#), "{}", page.body);
        assert!(!page.body.contains(r#"value="reprocess""#), "{}", page.body);
        let done = site
            .dashboard()
            .post(
                "/queues/q/act/bulk",
                &[("verb", "cancel"), ("id", "f:then")],
            )
            .await
            .expect(StatusCode::SEE_OTHER);
        assert_eq!(done.notice().await, "cancel: 1 done, 0 refused");
        assert_eq!(state(&q, "f:then").await, Some(JobState::Cancelled));
    })
    .await;
}

#[tokio::test]
async fn cancel_of_a_waiting_job_cancels_it() {
    on_both_wires(|site| async move {
        let q = one_of_each(&site).await;
        let browser = site.dashboard();
        for name in ["pending", "scheduled"] {
            let done = browser
                .post(&format!("/queues/q/jobs/{name}/act/cancel"), &[])
                .await
                .expect(StatusCode::SEE_OTHER);
            assert!(
                done.location()
                    .starts_with(&format!("/queues/q/jobs/{name}?done=")),
                "{}",
                done.location()
            );
            assert!(done.notice().await.starts_with("cancelled"));
            assert_eq!(state(&q, name).await, Some(JobState::Cancelled));
        }
    })
    .await;
}

#[tokio::test]
async fn cancel_of_an_active_job_asks_its_holder() {
    on_both_wires(|site| async move {
        let q = one_of_each(&site).await;
        let done = site
            .dashboard()
            .post("/queues/q/jobs/active/act/cancel", &[])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert!(done.notice().await.contains("asked the holder"));
        let job = q.jobs().get(&id("active")).await.unwrap().unwrap();
        assert_eq!(job.state, JobState::Active);
        assert!(job.cancel_requested);
    })
    .await;
}

#[tokio::test]
async fn reschedule_moves_a_scheduled_jobs_run_at() {
    on_both_wires(|site| async move {
        let q = one_of_each(&site).await;
        let browser = site.dashboard();
        let page = browser.get("/queues/q/jobs/scheduled").await;
        assert!(page.body.contains(r#"type="datetime-local" name="run_at""#));
        browser
            .post(
                "/queues/q/jobs/scheduled/act/reschedule",
                &[("run_at", "2099-01-02T03:04:05")],
            )
            .await
            .expect(StatusCode::SEE_OTHER);
        let job = q.jobs().get(&id("scheduled")).await.unwrap().unwrap();
        assert_eq!(job.state, JobState::Scheduled);
        assert_eq!(job.run_at, Some(4_071_006_245_000));
        let bad = browser
            .post(
                "/queues/q/jobs/scheduled/act/reschedule",
                &[("run_at", "soon")],
            )
            .await
            .expect(StatusCode::BAD_REQUEST);
        assert!(bad.body.contains("run_at &quot;soon&quot;"), "{}", bad.body);
    })
    .await;
}

#[tokio::test]
async fn requeue_sends_an_active_job_back_to_pending() {
    on_both_wires(|site| async move {
        let q = one_of_each(&site).await;
        site.dashboard()
            .post("/queues/q/jobs/active/act/requeue", &[])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert_eq!(state(&q, "active").await, Some(JobState::Pending));
    })
    .await;
}

#[tokio::test]
async fn promote_makes_a_scheduled_job_pending_now() {
    on_both_wires(|site| async move {
        let q = one_of_each(&site).await;
        site.dashboard()
            .post("/queues/q/jobs/scheduled/act/promote", &[])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert_eq!(state(&q, "scheduled").await, Some(JobState::Pending));
    })
    .await;
}

#[tokio::test]
async fn retry_sends_a_dead_job_back_to_pending() {
    on_both_wires(|site| async move {
        let q = one_of_each(&site).await;
        for name in ["dead", "completed", "cancelled"] {
            site.dashboard()
                .post(&format!("/queues/q/jobs/{name}/act/reprocess"), &[])
                .await
                .expect(StatusCode::SEE_OTHER);
            assert_eq!(state(&q, name).await, Some(JobState::Pending), "{name}");
        }
        let job = q.jobs().get(&id("dead")).await.unwrap().unwrap();
        assert_eq!(job.error, None);
    })
    .await;
}

#[tokio::test]
async fn remove_deletes_the_job_and_goes_back_to_its_queue() {
    on_both_wires(|site| async move {
        let q = one_of_each(&site).await;
        let done = site
            .dashboard()
            .post("/queues/q/jobs/completed/act/remove", &[])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert!(done.location().starts_with("/queues/q?done="));
        assert_eq!(done.notice().await, "removed job completed");
        assert_eq!(state(&q, "completed").await, None);
    })
    .await;
}

#[tokio::test]
async fn remove_of_an_active_job_takes_force() {
    on_both_wires(|site| async move {
        let q = one_of_each(&site).await;
        let browser = site.dashboard();
        let refused = browser
            .post("/queues/q/jobs/active/act/remove", &[])
            .await
            .expect(StatusCode::CONFLICT);
        assert!(refused.body.contains("BADSTATE active"), "{}", refused.body);
        assert_eq!(state(&q, "active").await, Some(JobState::Active));
        browser
            .post("/queues/q/jobs/active/act/remove", &[("force", "1")])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert_eq!(state(&q, "active").await, None);
    })
    .await;
}

#[tokio::test]
async fn update_replaces_the_payload_with_the_json_given() {
    on_both_wires(|site| async move {
        let q = one_of_each(&site).await;
        let browser = site.dashboard();
        let done = browser
            .post(
                "/queues/q/jobs/pending/act/update",
                &[("payload", "{\n  \"n\": 7\n}\n")],
            )
            .await
            .expect(StatusCode::SEE_OTHER);
        let job = q.jobs().get(&id("pending")).await.unwrap().unwrap();
        assert_eq!(job.payload_as::<Value>().unwrap(), json!({"n": 7}));
        let page = browser.get(done.location()).await.expect(StatusCode::OK);
        assert!(page.body.contains("updated the payload"), "{}", page.body);
    })
    .await;
}

#[tokio::test]
async fn update_with_bad_json_answers_400_naming_the_error_and_writes_nothing() {
    on_both_wires(|site| async move {
        let q = one_of_each(&site).await;
        let page = site
            .dashboard()
            .post(
                "/queues/q/jobs/pending/act/update",
                &[("payload", "{\"n\": ")],
            )
            .await
            .expect(StatusCode::BAD_REQUEST);
        assert!(
            page.body
                .contains("the payload is not JSON: EOF while parsing"),
            "{}",
            page.body
        );
        let job = q.jobs().get(&id("pending")).await.unwrap().unwrap();
        assert_eq!(job.payload, "5");
    })
    .await;
}

#[tokio::test]
async fn cancel_of_a_completed_job_is_refused_badstate_completed() {
    on_both_wires(|site| async move {
        let q = one_of_each(&site).await;
        let page = site
            .dashboard()
            .post("/queues/q/jobs/completed/act/cancel", &[])
            .await
            .expect(StatusCode::CONFLICT);
        assert!(page.body.contains("BADSTATE completed"), "{}", page.body);
        assert!(page.body.contains(r#"href="/queues/q/jobs/completed""#));
        assert!(!page.body.contains("panicked"));
        assert_eq!(state(&q, "completed").await, Some(JobState::Completed));
    })
    .await;
}

#[tokio::test]
async fn a_job_that_does_not_exist_answers_404_naming_it() {
    on_both_wires(|site| async move {
        one_of_each(&site).await;
        let page = site
            .dashboard()
            .get("/queues/q/jobs/ghost")
            .await
            .expect(StatusCode::NOT_FOUND);
        assert!(
            page.body.contains("no job ghost in queue q"),
            "{}",
            page.body
        );
    })
    .await;
}

#[tokio::test]
async fn the_timeline_lists_the_jobs_own_events_oldest_first() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        let token = active(&q, "t", json!(1)).await;
        enqueue(&q, "other", json!(2)).await;
        q.jobs().progress(&id("t"), token, &50).await.unwrap();
        q.complete(&id("t"), token, &()).await.unwrap();
        let page = site
            .dashboard()
            .get("/queues/q/jobs/t")
            .await
            .expect(StatusCode::OK);
        let timeline = &page.body[page.body.find(r#"id="timeline""#).unwrap()..];
        let timeline = &timeline[..timeline.find("</ol>").unwrap()];
        let events: Vec<&str> = timeline
            .split(r#"data-event=""#)
            .skip(1)
            .map(|rest| &rest[..rest.find('"').unwrap()])
            .collect();
        assert_eq!(events, ["enqueued", "claimed", "progress", "completed"]);
        assert!(timeline.contains("claimed by w1<"), "{timeline}");
    })
    .await;
}

#[tokio::test]
async fn logs_and_progress_are_shown() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        let token = active(&q, "l", json!(1)).await;
        q.jobs().progress(&id("l"), token, &42).await.unwrap();
        q.jobs().log(&id("l"), "step one").await.unwrap();
        q.jobs().log(&id("l"), "step two").await.unwrap();
        let page = site
            .dashboard()
            .get("/queues/q/jobs/l")
            .await
            .expect(StatusCode::OK);
        assert_eq!(element(&page.body, "progress"), "42");
        assert!(page.body.contains(r#"<progress max="100" value="42">"#));
        let log = &page.body[page.body.find(r#"id="log""#).unwrap()..];
        let (one, two) = (log.find("step one").unwrap(), log.find("step two").unwrap());
        assert!(one < two, "{log}");
    })
    .await;
}

#[tokio::test]
async fn read_only_draws_no_verb_on_the_job_page() {
    on_both_wires(|site| async move {
        one_of_each(&site).await;
        let browser = site.browse(|d| d.read_only(true));
        for name in [
            "scheduled",
            "pending",
            "active",
            "completed",
            "dead",
            "cancelled",
        ] {
            let page = browser
                .get(&format!("/queues/q/jobs/{name}"))
                .await
                .expect(StatusCode::OK);
            assert!(verbs(&page.body).is_empty(), "{name}: {}", page.body);
            assert!(!page.body.contains("<button"), "{name}");
            assert!(!page.body.contains("<textarea"), "{name}");
        }
        browser
            .post_raw("/queues/q/jobs/dead/act/reprocess", &[("_csrf", "x")])
            .await
            .expect(StatusCode::FORBIDDEN);
        assert_eq!(
            site.queue("q")
                .jobs()
                .get(&id("dead"))
                .await
                .unwrap()
                .unwrap()
                .state,
            JobState::Dead
        );
    })
    .await;
}

#[tokio::test]
async fn script_in_payload_result_error_and_log_is_escaped() {
    on_both_wires(|site| async move {
        let evil = "<script>alert(1)</script>";
        let q = site.queue("q");
        let token = active(&q, "c", json!({ "html": evil })).await;
        q.jobs().log(&id("c"), evil).await.unwrap();
        q.complete(&id("c"), token, &json!({ "html": evil }))
            .await
            .unwrap();
        let token = active(&q, "d", json!(evil)).await;
        q.jobs().log(&id("d"), evil).await.unwrap();
        q.fail(&id("d"), token, evil, FailAction::Dead)
            .await
            .unwrap();
        let browser = site.dashboard();
        for (name, ids) in [
            ("c", &["payload", "result", "log"][..]),
            ("d", &["payload", "error", "log"]),
        ] {
            let page = browser
                .get(&format!("/queues/q/jobs/{name}"))
                .await
                .expect(StatusCode::OK);
            assert!(!page.body.contains(evil), "{name}: {}", page.body);
            for id in ids {
                let at = page.body.find(&format!(r#"id="{id}""#)).unwrap();
                assert!(
                    page.body[at..].contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
                    "{name} #{id}"
                );
            }
        }
    })
    .await;
}

#[tokio::test]
async fn script_in_a_flow_s_refs_and_ids_is_escaped_in_the_graph() {
    on_both_wires(|site| async move {
        let evil = "<script>alert(\"x\")</script>";
        let q = site.queue("q");
        let mut flow = echomq::Flow::new("f");
        let first = flow.add_as(evil, &q, NewJob::new(json!(1)));
        flow.add_as("then", &q, NewJob::new(json!(2)).depends_on([&first]));
        site.connector.submit(&flow).await.unwrap();
        let page = site
            .dashboard()
            .get("/queues/q/jobs/f:then")
            .await
            .expect(StatusCode::OK);
        assert!(!page.body.contains(evil), "{}", page.body);
        let up = graph_item(
            &page.body,
            "upstream",
            "q f:&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;",
        );
        assert!(
            up.contains("f:&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</code>"),
            "{up}"
        );
    })
    .await;
}
