//! The queue page, against real servers on both wires: tabs and counts,
//! paging, search (each kind, and "more"), bulk verbs on a selection and
//! on everything matching, drain and obliterate behind a typed
//! confirmation, repeats, groups, limits, retention, metrics, read-only.

use crate::common::{self, Page, on_both_wires};
use axum::http::StatusCode;
use echomq::{FailAction, JobId, JobState, NewJob, Queue};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

const LEASE: Duration = Duration::from_secs(30);
const HOUR: Duration = Duration::from_secs(3600);

fn id(text: &str) -> JobId {
    JobId::new(text).unwrap()
}

/// `n` pending jobs `p0`…, payload `{"n": k, "tag": tag}`.
async fn pending(q: &Queue<Value>, n: u64, tag: &str) {
    let jobs: Vec<NewJob<Value>> = (0..n)
        .map(|k| {
            NewJob::new(json!({ "n": k, "tag": tag }))
                .id(format!("p{k}"))
                .unwrap()
        })
        .collect();
    q.enqueue_bulk(jobs).await.unwrap();
}

/// Scheduled jobs, an hour away.
async fn scheduled(q: &Queue<Value>, ids: &[&str]) {
    for id in ids {
        q.enqueue(NewJob::new(json!({"s": id})).id(*id).unwrap().after(HOUR))
            .await
            .unwrap();
    }
}

/// Job `id` dead with `error`.
async fn dead(q: &Queue<Value>, id: &str, error: &str) {
    q.enqueue(NewJob::new(json!({ "d": id })).id(id).unwrap().attempts(1))
        .await
        .unwrap();
    let claimed = q.claim_one("w", LEASE).await.unwrap().unwrap();
    assert_eq!(
        claimed.id.as_str(),
        id,
        "the dead job is the only pending one"
    );
    q.fail(&claimed.id, claimed.token, error, FailAction::Dead)
        .await
        .unwrap();
}

/// The count on the tab of `state`.
fn tab_count(page: &Page, state: &str) -> u64 {
    let body = &page.body;
    let at = body
        .find(&format!(r#"data-state="{state}""#))
        .unwrap_or_else(|| panic!("no tab {state}: {body}"));
    let rest = &body[at..];
    let open = r#"<span class="count">"#;
    let from = rest.find(open).unwrap() + open.len();
    rest[from..from + rest[from..].find('<').unwrap()]
        .parse()
        .unwrap()
}

/// The ids of the table's rows, in order.
fn rows(page: &Page) -> Vec<String> {
    page.body
        .split(r#"<tr data-job=""#)
        .skip(1)
        .map(|rest| rest[..rest.find('"').unwrap()].to_string())
        .collect()
}

/// The `href` of the first link with `rel`, unescaped (`&amp;`).
fn link(page: &Page, rel: &str) -> Option<String> {
    let at = page.body.find(&format!(r#"rel="{rel}" href=""#))?;
    let rest = &page.body[at + rel.len() + 13..];
    Some(rest[..rest.find('"').unwrap()].replace("&amp;", "&"))
}

async fn state_of(q: &Queue<Value>, job: &str) -> Option<JobState> {
    q.jobs().get(&id(job)).await.unwrap().map(|j| j.state)
}

#[tokio::test]
async fn tabs_show_a_count_per_state() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        dead(&q, "d1", "boom").await;
        pending(&q, 3, "x").await;
        scheduled(&q, &["s1", "s2"]).await;
        let page = site
            .dashboard()
            .get("/queues/q")
            .await
            .expect(StatusCode::OK);
        assert_eq!(tab_count(&page, "pending"), 3);
        assert_eq!(tab_count(&page, "scheduled"), 2);
        assert_eq!(tab_count(&page, "dead"), 1);
        assert_eq!(tab_count(&page, "completed"), 0);
        assert!(page.body.contains(r#"sse-swap="counts""#), "{}", page.body);
        assert_eq!(rows(&page), ["p0", "p1", "p2"]);
        let page = site
            .dashboard()
            .get("/queues/q?state=dead")
            .await
            .expect(StatusCode::OK);
        assert_eq!(rows(&page), ["d1"]);
        assert!(page.body.contains("boom"), "{}", page.body);
        assert!(
            page.body.contains(r#"href="/queues/q/jobs/d1""#),
            "{}",
            page.body
        );
    })
    .await;
}

#[tokio::test]
async fn the_table_is_paged_on_the_server() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        pending(&q, 120, "x").await;
        let browser = site.dashboard();
        let first = browser
            .get("/queues/q?state=pending")
            .await
            .expect(StatusCode::OK);
        assert_eq!(rows(&first).len(), 50);
        assert!(link(&first, "prev").is_none());
        let next = link(&first, "next").expect("a next page");
        assert!(next.contains("page=1"), "{next}");
        let second = browser.get(&next).await.expect(StatusCode::OK);
        assert_eq!(rows(&second).len(), 50);
        assert!(link(&second, "prev").unwrap().contains("page=0"));
        let last = browser
            .get(&link(&second, "next").unwrap())
            .await
            .expect(StatusCode::OK);
        assert_eq!(rows(&last).len(), 20);
        assert!(link(&last, "next").is_none());
        assert!(last.body.contains("page 3 of 3"), "{}", last.body);
        let all: BTreeSet<String> = [&first, &second, &last]
            .iter()
            .flat_map(|p| rows(p))
            .collect();
        assert_eq!(all.len(), 120);
    })
    .await;
}

#[tokio::test]
async fn a_bad_state_name_is_refused_400() {
    on_both_wires(|site| async move {
        let page = site
            .dashboard()
            .get("/queues/q?state=sleeping")
            .await
            .expect(StatusCode::BAD_REQUEST);
        assert!(page.body.contains("no state named"), "{}", page.body);
    })
    .await;
}

#[tokio::test]
async fn a_queue_that_does_not_exist_renders_with_empty_counts() {
    on_both_wires(|site| async move {
        let page = site
            .dashboard()
            .get("/queues/nothing-here")
            .await
            .expect(StatusCode::OK);
        assert_eq!(tab_count(&page, "pending"), 0);
        assert!(rows(&page).is_empty());
        assert_eq!(
            site.connector.queues().await.unwrap(),
            Vec::<String>::new(),
            "reading a page creates no queue"
        );
    })
    .await;
}

#[tokio::test]
async fn search_by_id_prefix_payload_and_error() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        dead(&q, "d1", "timeout talking to smtp").await;
        dead(&q, "d2", "bad address").await;
        for (job, to) in [("a1", "ada"), ("a2", "bob"), ("b1", "ada lovelace")] {
            q.enqueue(NewJob::new(json!({ "to": to })).id(job).unwrap())
                .await
                .unwrap();
        }
        let browser = site.dashboard();
        let page = browser
            .get("/queues/q?state=pending&by=id&q=a")
            .await
            .expect(StatusCode::OK);
        assert_eq!(
            rows(&page).into_iter().collect::<BTreeSet<_>>(),
            ["a1", "a2"].map(String::from).into()
        );
        assert!(page.body.contains(r#"id="search""#), "{}", page.body);
        assert!(page.body.contains("end of the search"), "{}", page.body);
        let page = browser
            .get("/queues/q?state=pending&by=payload&q=ada")
            .await
            .expect(StatusCode::OK);
        assert_eq!(
            rows(&page).into_iter().collect::<BTreeSet<_>>(),
            ["a1", "b1"].map(String::from).into()
        );
        let page = browser
            .get("/queues/q?state=dead&by=error&q=timeout")
            .await
            .expect(StatusCode::OK);
        assert_eq!(rows(&page), ["d1"]);
        // The form keeps what was searched.
        assert!(page.body.contains(r#"value="timeout""#), "{}", page.body);
        assert!(
            page.body.contains(r#"<option value="error" selected>"#),
            "{}",
            page.body
        );
    })
    .await;
}

#[tokio::test]
async fn more_continues_a_search_to_its_end_each_match_once() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        pending(&q, 300, "needle").await;
        let browser = site.dashboard();
        let mut seen = BTreeSet::new();
        let mut next = Some("/queues/q?state=pending&by=payload&q=needle".to_string());
        let mut pages = 0;
        while let Some(path) = next {
            let page = browser.get(&path).await.expect(StatusCode::OK);
            for job in rows(&page) {
                assert!(seen.insert(job.clone()), "{job} shown twice");
            }
            next = link(&page, "next");
            if let Some(next) = &next {
                assert!(next.contains("cursor="), "{next}");
            }
            pages += 1;
            assert!(pages < 100);
        }
        assert!(pages > 1, "300 matches take more than one page");
        assert_eq!(seen.len(), 300);
    })
    .await;
}

#[tokio::test]
async fn a_search_text_and_what_it_finds_are_escaped() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        let evil = "<b>bold</b>";
        dead(&q, "d1", evil).await;
        let page = site
            .dashboard()
            .get(&format!(
                "/queues/q?state=dead&by=error&q={}",
                common::enc(evil)
            ))
            .await
            .expect(StatusCode::OK);
        assert_eq!(rows(&page), ["d1"]);
        assert!(!page.body.contains(evil), "{}", page.body);
        assert!(
            page.body.contains("&lt;b&gt;bold&lt;/b&gt;"),
            "{}",
            page.body
        );
    })
    .await;
}

#[tokio::test]
async fn a_search_by_an_unknown_field_is_refused_400() {
    on_both_wires(|site| async move {
        let page = site
            .dashboard()
            .get("/queues/q?by=colour&q=red")
            .await
            .expect(StatusCode::BAD_REQUEST);
        assert!(page.body.contains("no search by"), "{}", page.body);
    })
    .await;
}

#[tokio::test]
async fn bulk_verbs_act_on_the_selection() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        dead(&q, "d1", "x").await;
        dead(&q, "d2", "x").await;
        dead(&q, "d3", "x").await;
        pending(&q, 4, "x").await;
        scheduled(&q, &["s1", "s2"]).await;
        let browser = site.dashboard();
        let bulk = "/queues/q/act/bulk";
        let page = browser
            .post(bulk, &[("verb", "reprocess"), ("id", "d1"), ("id", "d2")])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert_eq!(page.notice().await, "reprocess: 2 done, 0 refused");
        assert_eq!(state_of(&q, "d1").await, Some(JobState::Pending));
        assert_eq!(state_of(&q, "d3").await, Some(JobState::Dead));
        browser
            .post(bulk, &[("verb", "cancel"), ("id", "p0"), ("id", "p1")])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert_eq!(state_of(&q, "p0").await, Some(JobState::Cancelled));
        assert_eq!(state_of(&q, "p2").await, Some(JobState::Pending));
        browser
            .post(bulk, &[("verb", "remove"), ("id", "p2")])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert_eq!(state_of(&q, "p2").await, None);
        let page = browser
            .post(bulk, &[("verb", "promote"), ("id", "s1")])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert_eq!(page.notice().await, "promote: 1 done, 0 refused");
        assert_eq!(state_of(&q, "s1").await, Some(JobState::Pending));
        assert_eq!(state_of(&q, "s2").await, Some(JobState::Scheduled));
    })
    .await;
}

#[tokio::test]
async fn a_bulk_verb_counts_each_refusal_with_the_protocol_reason() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        dead(&q, "d1", "x").await;
        pending(&q, 1, "x").await;
        let browser = site.dashboard();
        let page = browser
            .post(
                "/queues/q/act/bulk",
                &[("verb", "reprocess"), ("id", "d1"), ("id", "p0")],
            )
            .await
            .expect(StatusCode::SEE_OTHER);
        assert_eq!(
            page.notice().await,
            "reprocess: 1 done, 1 refused (BADSTATE pending)"
        );
        // Promote takes only scheduled jobs.
        let page = browser
            .post("/queues/q/act/bulk", &[("verb", "promote"), ("id", "p0")])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert_eq!(
            page.notice().await,
            "promote: 0 done, 1 refused (BADSTATE pending)"
        );
    })
    .await;
}

#[tokio::test]
async fn a_bulk_verb_without_a_selection_is_refused_400() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        pending(&q, 2, "x").await;
        let page = site
            .dashboard()
            .post("/queues/q/act/bulk", &[("verb", "remove")])
            .await
            .expect(StatusCode::BAD_REQUEST);
        assert!(
            page.body.contains("select at least one job"),
            "{}",
            page.body
        );
        assert_eq!(q.admin().counts().await.unwrap().get(JobState::Pending), 2);
    })
    .await;
}

#[tokio::test]
async fn a_bulk_verb_that_is_unknown_is_refused_400() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        pending(&q, 1, "x").await;
        let page = site
            .dashboard()
            .post("/queues/q/act/bulk", &[("verb", "explode"), ("id", "p0")])
            .await
            .expect(StatusCode::BAD_REQUEST);
        assert!(page.body.contains("verb"), "{}", page.body);
        assert_eq!(state_of(&q, "p0").await, Some(JobState::Pending));
    })
    .await;
}

#[tokio::test]
async fn bulk_verbs_act_on_everything_matching() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        for k in 0..5 {
            dead(&q, &format!("boom{k}"), "boom: disk full").await;
        }
        dead(&q, "other", "no route").await;
        let browser = site.dashboard();
        let bulk = "/queues/q/act/bulk";
        // Reprocess every dead job whose error matches.
        let page = browser
            .post(
                bulk,
                &[
                    ("verb", "reprocess"),
                    ("all", "1"),
                    ("confirm", "q"),
                    ("state", "dead"),
                    ("by", "error"),
                    ("q", "disk full"),
                ],
            )
            .await
            .expect(StatusCode::SEE_OTHER);
        assert_eq!(page.notice().await, "reprocess: 5 done, 0 refused");
        let counts = q.admin().counts().await.unwrap();
        assert_eq!(counts.get(JobState::Dead), 1);
        assert_eq!(counts.get(JobState::Pending), 5);
        // Promote every scheduled job (no search: the whole state).
        scheduled(&q, &["s1", "s2", "s3"]).await;
        browser
            .post(
                bulk,
                &[
                    ("verb", "promote"),
                    ("all", "1"),
                    ("confirm", "q"),
                    ("state", "scheduled"),
                ],
            )
            .await
            .expect(StatusCode::SEE_OTHER);
        let counts = q.admin().counts().await.unwrap();
        assert_eq!(counts.get(JobState::Scheduled), 0);
        assert_eq!(counts.get(JobState::Pending), 8);
        // Cancel the pending jobs whose id starts with "boom".
        browser
            .post(
                bulk,
                &[
                    ("verb", "cancel"),
                    ("all", "1"),
                    ("confirm", "q"),
                    ("state", "pending"),
                    ("by", "id"),
                    ("q", "boom"),
                ],
            )
            .await
            .expect(StatusCode::SEE_OTHER);
        let counts = q.admin().counts().await.unwrap();
        assert_eq!(counts.get(JobState::Cancelled), 5);
        assert_eq!(counts.get(JobState::Pending), 3);
        // Remove every cancelled job.
        let page = browser
            .post(
                bulk,
                &[
                    ("verb", "remove"),
                    ("all", "1"),
                    ("confirm", "q"),
                    ("state", "cancelled"),
                ],
            )
            .await
            .expect(StatusCode::SEE_OTHER);
        assert_eq!(page.notice().await, "remove: 5 done, 0 refused");
        assert_eq!(
            q.admin().counts().await.unwrap().get(JobState::Cancelled),
            0
        );
        assert_eq!(state_of(&q, "boom0").await, None);
    })
    .await;
}

#[tokio::test]
async fn bulk_on_everything_walks_a_set_larger_than_one_batch() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        pending(&q, 600, "x").await;
        let page = site
            .dashboard()
            .post(
                "/queues/q/act/bulk",
                &[
                    ("verb", "cancel"),
                    ("all", "1"),
                    ("confirm", "q"),
                    ("state", "pending"),
                ],
            )
            .await
            .expect(StatusCode::SEE_OTHER);
        assert_eq!(page.notice().await, "cancel: 600 done, 0 refused");
        let counts = q.admin().counts().await.unwrap();
        assert_eq!(counts.get(JobState::Pending), 0);
        assert_eq!(counts.get(JobState::Cancelled), 600);
    })
    .await;
}

#[tokio::test]
async fn promote_due_moves_due_scheduled_jobs() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        let at = SystemTime::now() + Duration::from_millis(100);
        q.enqueue(NewJob::new(json!(1)).id("soon").unwrap().at(at))
            .await
            .unwrap();
        scheduled(&q, &["later"]).await;
        wait_for("the job to be due", Duration::from_secs(5), || async {
            SystemTime::now() > at + Duration::from_millis(20)
        })
        .await;
        let page = site
            .dashboard()
            .post("/queues/q/act/promote-due", &[])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert_eq!(page.notice().await, "promoted 1 due jobs");
        assert_eq!(state_of(&q, "soon").await, Some(JobState::Pending));
        assert_eq!(state_of(&q, "later").await, Some(JobState::Scheduled));
    })
    .await;
}

#[tokio::test]
async fn drain_with_a_wrong_confirmation_is_refused_and_writes_nothing() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        pending(&q, 3, "x").await;
        let browser = site.dashboard();
        for confirm in [&[("confirm", "Q")][..], &[("confirm", "")][..], &[][..]] {
            let page = browser
                .post("/queues/q/act/drain", confirm)
                .await
                .expect(StatusCode::BAD_REQUEST);
            assert!(
                page.body.contains("type the queue name to confirm"),
                "{}",
                page.body
            );
        }
        assert_eq!(q.admin().counts().await.unwrap().get(JobState::Pending), 3);
    })
    .await;
}

#[tokio::test]
async fn obliterate_with_a_wrong_confirmation_is_refused_and_writes_nothing() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        pending(&q, 3, "x").await;
        q.admin().pause().await.unwrap();
        let page = site
            .dashboard()
            .post("/queues/q/act/obliterate", &[("confirm", "other")])
            .await
            .expect(StatusCode::BAD_REQUEST);
        assert!(
            page.body.contains("type the queue name to confirm"),
            "{}",
            page.body
        );
        assert_eq!(q.admin().counts().await.unwrap().get(JobState::Pending), 3);
    })
    .await;
}

#[tokio::test]
async fn drain_with_the_queue_name_deletes_pending_scheduled_and_blocked_if_asked() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        pending(&q, 3, "x").await;
        scheduled(&q, &["s1"]).await;
        // A blocked job, written raw as FLOW.ADD writes one.
        let _: () = redis::pipe()
            .cmd("HSET")
            .arg("emq:{q}:job:b1")
            .arg(&["state", "blocked", "payload", "{}", "created_at", "1"])
            .ignore()
            .cmd("ZADD")
            .arg("emq:{q}:blocked")
            .arg(1)
            .arg("b1")
            .ignore()
            .query_async(&mut site.server.connection().await)
            .await
            .unwrap();
        let browser = site.dashboard();
        let page = browser
            .post("/queues/q/act/drain", &[("confirm", "q")])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert_eq!(page.notice().await, "drained q: 3 jobs deleted");
        let counts = q.admin().counts().await.unwrap();
        assert_eq!(counts.get(JobState::Pending), 0);
        assert_eq!(counts.get(JobState::Scheduled), 1);
        browser
            .post(
                "/queues/q/act/drain",
                &[("confirm", "q"), ("scheduled", "1")],
            )
            .await
            .expect(StatusCode::SEE_OTHER);
        let counts = q.admin().counts().await.unwrap();
        assert_eq!(counts.get(JobState::Scheduled), 0);
        assert_eq!(counts.get(JobState::Blocked), 1, "not asked for");
        browser
            .post("/queues/q/act/drain", &[("confirm", "q"), ("blocked", "1")])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert_eq!(q.admin().counts().await.unwrap().total(), 0);
    })
    .await;
}

#[tokio::test]
async fn obliterate_of_a_running_queue_shows_notpaused() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        pending(&q, 2, "x").await;
        let page = site
            .dashboard()
            .post("/queues/q/act/obliterate", &[("confirm", "q")])
            .await
            .expect(StatusCode::CONFLICT);
        assert!(page.body.contains("NOTPAUSED"), "{}", page.body);
        assert_eq!(q.admin().counts().await.unwrap().get(JobState::Pending), 2);
    })
    .await;
}

#[tokio::test]
async fn obliterate_of_a_paused_queue_with_its_name_deletes_it() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        dead(&q, "d1", "x").await;
        pending(&q, 2, "x").await;
        q.admin().pause().await.unwrap();
        let page = site
            .dashboard()
            .post("/queues/q/act/obliterate", &[("confirm", "q")])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert_eq!(page.notice().await, "obliterated q");
        assert_eq!(q.admin().counts().await.unwrap().total(), 0);
        assert_eq!(state_of(&q, "d1").await, None);
        // Its page still renders, empty.
        let page = site
            .dashboard()
            .get(page.location())
            .await
            .expect(StatusCode::OK);
        assert_eq!(tab_count(&page, "dead"), 0);
    })
    .await;
}

#[tokio::test]
async fn repeats_are_listed_added_and_removed() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        let browser = site.dashboard();
        browser
            .post(
                "/queues/q/act/repeat-add",
                &[
                    ("key", "tick"),
                    ("every_ms", "60000"),
                    ("payload", r#"{"a":1}"#),
                ],
            )
            .await
            .expect(StatusCode::SEE_OTHER);
        browser
            .post(
                "/queues/q/act/repeat-add",
                &[("key", "nightly"), ("cron", "0 3 * * *"), ("payload", "[]")],
            )
            .await
            .expect(StatusCode::SEE_OTHER);
        // The same key again replaces it, and the notice says so.
        let replaced = browser
            .post(
                "/queues/q/act/repeat-add",
                &[("key", "nightly"), ("cron", "0 4 * * *"), ("payload", "[]")],
            )
            .await
            .expect(StatusCode::SEE_OTHER);
        let notice = replaced.notice().await;
        assert!(
            notice.starts_with("replaced repeat nightly (was "),
            "{notice}"
        );
        let repeats = q.repeats().await.unwrap();
        assert_eq!(
            repeats.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(),
            ["nightly", "tick"]
        );
        assert_eq!(repeats[1].payload, json!({"a": 1}));
        let page = browser.get("/queues/q").await.expect(StatusCode::OK);
        assert!(page.body.contains(r#"data-repeat="tick""#), "{}", page.body);
        assert!(page.body.contains("every 1 m"), "{}", page.body);
        assert!(page.body.contains("cron 0 4 * * *"), "{}", page.body);
        browser
            .post("/queues/q/act/repeat-remove", &[("key", "tick")])
            .await
            .expect(StatusCode::SEE_OTHER);
        let keys: Vec<String> = q
            .repeats()
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.key)
            .collect();
        assert_eq!(keys, ["nightly"]);
    })
    .await;
}

#[tokio::test]
async fn a_repeat_with_a_payload_that_is_not_json_is_refused_400() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        let page = site
            .dashboard()
            .post(
                "/queues/q/act/repeat-add",
                &[("key", "tick"), ("every_ms", "1000"), ("payload", "{nope")],
            )
            .await
            .expect(StatusCode::BAD_REQUEST);
        assert!(page.body.contains("payload is not JSON"), "{}", page.body);
        assert!(q.repeats().await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn a_repeat_with_neither_or_both_cadences_is_refused_400() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        let browser = site.dashboard();
        for fields in [
            &[("key", "t"), ("payload", "{}")][..],
            &[
                ("key", "t"),
                ("every_ms", "1000"),
                ("cron", "* * * * *"),
                ("payload", "{}"),
            ][..],
        ] {
            let page = browser
                .post("/queues/q/act/repeat-add", fields)
                .await
                .expect(StatusCode::BAD_REQUEST);
            assert!(page.body.contains("every_ms or cron"), "{}", page.body);
        }
        let page = browser
            .post(
                "/queues/q/act/repeat-add",
                &[("key", "t"), ("cron", "not cron"), ("payload", "{}")],
            )
            .await
            .expect(StatusCode::BAD_REQUEST);
        assert!(page.body.contains("repeat"), "{}", page.body);
        assert!(q.repeats().await.unwrap().is_empty());
    })
    .await;
}

#[tokio::test]
async fn groups_are_listed_paused_and_resumed() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        q.enqueue(NewJob::new(json!(1)).group("tenant-a"))
            .await
            .unwrap();
        let browser = site.dashboard();
        let page = browser.get("/queues/q").await.expect(StatusCode::OK);
        assert!(
            page.body.contains(r#"data-group="tenant-a""#),
            "{}",
            page.body
        );
        browser
            .post("/queues/q/act/group-pause", &[("group", "tenant-a")])
            .await
            .expect(StatusCode::SEE_OTHER);
        let group = q.admin().group("tenant-a").unwrap();
        assert!(group.counts().await.unwrap().paused);
        let page = browser.get("/queues/q").await.expect(StatusCode::OK);
        assert!(
            page.body.contains(r#"data-action="group-resume""#),
            "{}",
            page.body
        );
        browser
            .post("/queues/q/act/group-resume", &[("group", "tenant-a")])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert!(!group.counts().await.unwrap().paused);
    })
    .await;
}

#[tokio::test]
async fn limits_are_shown_set_and_cleared() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        let admin = q.admin();
        let browser = site.dashboard();
        browser
            .post("/queues/q/act/limit", &[("max", "10"), ("per_ms", "1000")])
            .await
            .expect(StatusCode::SEE_OTHER);
        let limit = admin.rate_limit().await.unwrap();
        assert_eq!((limit.max, limit.per), (10, Duration::from_secs(1)));
        browser
            .post("/queues/q/act/concurrency", &[("max", "3")])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert_eq!(admin.concurrency_cap().await.unwrap().max, 3);
        let page = browser.get("/queues/q").await.expect(StatusCode::OK);
        assert!(
            page.body.contains("at most 10 jobs start per 1 s"),
            "{}",
            page.body
        );
        assert!(page.body.contains("at most 3 active"), "{}", page.body);
        browser
            .post("/queues/q/act/limit-clear", &[])
            .await
            .expect(StatusCode::SEE_OTHER);
        browser
            .post("/queues/q/act/concurrency-clear", &[])
            .await
            .expect(StatusCode::SEE_OTHER);
        assert!(!admin.rate_limit().await.unwrap().is_set());
        assert!(!admin.concurrency_cap().await.unwrap().is_set());
    })
    .await;
}

#[tokio::test]
async fn the_retention_of_each_finished_state_is_shown() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        q.admin()
            .set_retention(
                echomq::RetentionChange::new()
                    .completed(500)
                    .completed_for(Duration::from_secs(2 * 86_400))
                    .cancelled(0),
            )
            .await
            .unwrap();
        let page = site
            .dashboard()
            .get("/queues/q")
            .await
            .expect(StatusCode::OK);
        let body = &page.body;
        assert!(body.contains(r#"id="retention""#), "{body}");
        let row = |set: &str| {
            let start = body
                .find(&format!(r#"data-retention="{set}""#))
                .unwrap_or_else(|| panic!("no {set} row: {body}"));
            let end = start + body[start..].find("</tr>").unwrap();
            body[start..end].to_string()
        };
        let completed = row("completed");
        assert!(completed.contains("the newest 500"), "{completed}");
        assert!(completed.contains("2 d"), "{completed}");
        let dead = row("dead");
        assert!(dead.contains("the newest 10000"), "{dead}");
        assert!(dead.contains("no age limit"), "{dead}");
        assert!(row("cancelled").contains("none"), "{body}");
    })
    .await;
}

#[tokio::test]
async fn a_limit_that_is_not_a_number_is_refused_400_naming_it() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        let page = site
            .dashboard()
            .post("/queues/q/act/limit", &[("max", "ten"), ("per_ms", "1000")])
            .await
            .expect(StatusCode::BAD_REQUEST);
        assert!(page.body.contains("max"), "{}", page.body);
        assert!(!q.admin().rate_limit().await.unwrap().is_set());
    })
    .await;
}

#[tokio::test]
async fn the_metrics_charts_show_throughput_and_percentiles() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        pending(&q, 1, "x").await;
        let claimed = q.claim_one("w", LEASE).await.unwrap().unwrap();
        q.complete(&claimed.id, claimed.token, &json!(null))
            .await
            .unwrap();
        let page = site
            .dashboard()
            .get("/queues/q")
            .await
            .expect(StatusCode::OK);
        let body = &page.body;
        assert!(body.contains(r#"id="metrics""#), "{body}");
        assert!(body.contains("1 completed"), "{body}");
        for title in ["Throughput per", "Wait time", "Run time"] {
            assert!(body.contains(title), "{title}: {body}");
        }
        // A completed line with a point, and a p99 line.
        assert!(body.contains(r#"class="line completed" d="M"#), "{body}");
        assert!(body.contains(r#"class="line p99" d="M"#), "{body}");
    })
    .await;
}

#[tokio::test]
async fn read_only_shows_the_search_but_no_action_forms() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        dead(&q, "d1", "x").await;
        q.enqueue(NewJob::new(json!(1)).group("g")).await.unwrap();
        q.admin()
            .set_rate_limit(5, Duration::from_secs(1))
            .await
            .unwrap();
        let page = site
            .browse(|d| d.read_only(true))
            .get("/queues/q?state=dead")
            .await
            .expect(StatusCode::OK);
        let body = &page.body;
        assert!(!body.contains(r#"method="post""#), "{body}");
        assert!(!body.contains("_csrf"), "{body}");
        assert!(!body.contains(r#"type="checkbox""#), "{body}");
        assert!(body.contains(r#"id="search""#), "{body}");
        assert_eq!(rows(&page), ["d1"]);
        assert!(body.contains(r#"data-group="g""#), "{body}");
    })
    .await;
}

#[tokio::test]
async fn the_page_draws_the_forms_the_browser_tests_rely_on() {
    on_both_wires(|site| async move {
        let q = site.queue("q");
        pending(&q, 1, "x").await;
        let page = site
            .dashboard()
            .get("/queues/q")
            .await
            .expect(StatusCode::OK);
        let body = &page.body;
        for part in [
            r#"<form id="search" method="get""#,
            r#"<select name="by">"#,
            r#"<option value="id" selected>"#,
            r#"<option value="payload">"#,
            r#"<option value="error">"#,
            r#"name="q""#,
            r#"<table id="jobs">"#,
            r#"<tr data-job="p0"><td><a href="/queues/q/jobs/p0">"#,
            r#"<form id="bulk" method="post" action="/queues/q/act/bulk">"#,
            r#"<input type="checkbox" name="id" value="p0""#,
            r#"<form id="bulk-all""#,
            r#"<form id="drain""#,
            r#"<form id="obliterate""#,
            r#"name="confirm""#,
            r#"<form id="repeat-add""#,
        ] {
            assert!(body.contains(part), "{part}: {body}");
        }
    })
    .await;
}
