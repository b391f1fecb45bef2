//! What FLOW.RESOLVE writes and answers: edges resolved once, the last
//! one unblocking, and the failure policies.

use super::common::{Harness, events, raw_call};
use crate::common::{entries_by_name, writes};
use crate::flow_add::cases::{flow_add, hash};
use echomq::{JobId, JobState, Queue};
use redis::Value;
use serde_json::Value as Json;
use std::time::Duration;

/// `FLOW.RESOLVE` of `groups` (queue, dependency, resolution, dependent
/// each) on `q`: its words.
pub(crate) async fn resolve(h: &Harness, q: &Queue<Json>, groups: &[[&str; 4]]) -> Vec<String> {
    let args: Vec<&str> = groups.iter().flatten().copied().collect();
    match raw_call(h, q, "flow_resolve", &args).await.unwrap() {
        Value::Array(words) => words
            .into_iter()
            .map(|word| match word {
                Value::BulkString(bytes) => String::from_utf8(bytes).unwrap(),
                other => panic!("{other:?}"),
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

/// The state of job `id`.
pub(crate) async fn state(q: &Queue<Json>, id: &str) -> Option<JobState> {
    super::common::state_of(q, &JobId::new(id).unwrap()).await
}

/// The ids of the queue's set `set`.
pub(crate) async fn members(h: &Harness, q: &Queue<Json>, set: &str) -> Vec<String> {
    redis::cmd("ZRANGE")
        .arg(format!("{}:{set}", q.keys().base()))
        .arg(0)
        .arg(-1)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// The last `n` events of the queue.
async fn last_events(h: &Harness, q: &Queue<Json>, n: usize) -> Vec<Vec<String>> {
    let all = events(h, q).await;
    all[all.len().saturating_sub(n)..].to_vec()
}

fn words(list: &[&str]) -> Vec<String> {
    list.iter().map(|w| w.to_string()).collect()
}

#[echomq_testkit::case(cluster)]
pub(super) async fn resolve_unblocks_at_the_last_edge_to_pending_or_schedule(h: &Harness) {
    let q = h.queue::<Json>("resolve_unblock");
    flow_add(h, &q, &["f", "f:a", "a", "{}", "up p1 up p2", ""]).await;
    let later = ["f", "f:b", "b", "{}", "up p1", "", "RUN_AT", "+600000"];
    flow_add(h, &q, &later).await;
    let done = "completed p1 2 ok";

    let answered = resolve(
        h,
        &q,
        &[["up", "p1", done, "f:a"], ["up", "p1", done, "f:b"]],
    )
    .await;
    assert_eq!(answered, words(&["resolved", "unblocked"]));
    let a = hash(h, &q, "job:f:a").await;
    assert_eq!(
        (a["state"].as_str(), a["deps_left"].as_str()),
        ("blocked", "1")
    );
    assert_eq!(hash(h, &q, "deps:f:a").await["up p1"], done);
    let b = hash(h, &q, "job:f:b").await;
    assert_eq!(
        (b["state"].as_str(), b["deps_left"].as_str()),
        ("scheduled", "0")
    );
    assert_eq!(
        members(h, &q, "schedule").await,
        ["f:b"],
        "its run-at is later"
    );
    assert_eq!(
        last_events(h, &q, 3).await,
        [
            words(&[
                "event",
                "dependency_resolved",
                "id",
                "f:a",
                "dependency",
                "up p1",
                "outcome",
                "completed"
            ]),
            words(&[
                "event",
                "dependency_resolved",
                "id",
                "f:b",
                "dependency",
                "up p1",
                "outcome",
                "completed"
            ]),
            words(&["event", "unblocked", "id", "f:b", "to", "scheduled"]),
        ]
    );

    let answered = resolve(h, &q, &[["up", "p2", "completed p2 0 ", "f:a"]]).await;
    assert_eq!(answered, words(&["unblocked"]));
    let a = hash(h, &q, "job:f:a").await;
    assert_eq!(
        (a["state"].as_str(), a["deps_left"].as_str()),
        ("pending", "0")
    );
    let created: u64 = a["created_at"].parse().unwrap();
    assert!(
        a["run_at"].parse::<u64>().unwrap() >= created,
        "run_at = its unblocking"
    );
    assert!(members(h, &q, "blocked").await.is_empty());
    assert_eq!(
        last_events(h, &q, 2).await,
        [
            words(&[
                "event",
                "dependency_resolved",
                "id",
                "f:a",
                "dependency",
                "up p2",
                "outcome",
                "completed"
            ]),
            words(&["event", "unblocked", "id", "f:a", "to", "pending"]),
        ]
    );
    let claimed = q.claim_one("w", Duration::from_secs(30)).await.unwrap();
    assert_eq!(claimed.map(|c| c.id.to_string()).as_deref(), Some("f:a"));
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn resolve_unblocking_many_writes_one_entry_of_each_event(h: &Harness) {
    let q = h.queue::<Json>("resolve_entries");
    for id in ["f:a", "f:b", "f:c"] {
        flow_add(h, &q, &["f", id, &id[2..], "{}", "up p", ""]).await;
    }
    let groups = ["f:a", "f:b", "f:c"].map(|id| ["up", "p", "completed p 0 ", id]);
    assert_eq!(resolve(h, &q, &groups).await, words(&["unblocked"; 3]));
    // The groups' resolved edges share one entry, their unblockings the
    // next: not one entry each, alternating.
    let entries = entries_by_name(h, &q).await;
    let ids = words(&["f:a", "f:b", "f:c"]);
    assert_eq!(
        entries[entries.len() - 2..],
        [
            ("dependency_resolved".to_string(), ids.clone()),
            ("unblocked".to_string(), ids)
        ]
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn resolve_twice_answers_already_and_writes_nothing(h: &Harness) {
    let q = h.queue::<Json>("resolve_twice");
    flow_add(h, &q, &["f", "f:a", "a", "{}", "up p1 up p2", ""]).await;
    let first = ["up", "p1", "completed p1 1 1", "f:a"];
    assert_eq!(resolve(h, &q, &[first]).await, words(&["resolved"]));
    let before = writes(h, &q).await;
    let again = ["up", "p1", "dead p1 2 other", "f:a"];
    assert_eq!(
        resolve(h, &q, &[first, again]).await,
        words(&["already", "already"])
    );
    assert_eq!(writes(h, &q).await, before, "a duplicate delivery wrote");
    assert_eq!(hash(h, &q, "deps:f:a").await["up p1"], "completed p1 1 1");
    assert_eq!(hash(h, &q, "job:f:a").await["deps_left"], "1");
    // The same edge twice in one call: the second finds it resolved.
    flow_add(h, &q, &["f", "f:b", "b", "{}", "up p1 up p2", ""]).await;
    let edge = ["up", "p1", "completed p1 0 ", "f:b"];
    assert_eq!(
        resolve(h, &q, &[edge, edge]).await,
        words(&["resolved", "already"])
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn resolve_of_an_unknown_dependent_answers_gone(h: &Harness) {
    let q = h.queue::<Json>("resolve_gone");
    flow_add(h, &q, &["f", "f:a", "a", "{}", "up p1", ""]).await;
    q.enqueue(echomq::NewJob::new(Json::Null).id("plain").unwrap())
        .await
        .unwrap();
    let before = writes(h, &q).await;
    let groups = [
        ["up", "p1", "removed -", "nobody"],
        ["up", "other", "removed -", "f:a"],
        ["elsewhere", "p1", "removed -", "f:a"],
        ["up", "p1", "removed -", "plain"],
    ];
    assert_eq!(resolve(h, &q, &groups).await, words(&["gone"; 4]));
    assert_eq!(writes(h, &q).await, before, "gone wrote");
    assert_eq!(state(&q, "f:a").await, Some(JobState::Blocked));
    h.check(&q).await;
}

/// FLOW.OUTBOX of `q`, whole: (id, text, [queue, dependent, …]) each.
async fn outbox(h: &Harness, q: &Queue<Json>) -> Vec<(String, String, Vec<String>)> {
    let text = |value: &Value| match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).unwrap(),
        other => panic!("{other:?}"),
    };
    let Value::Array(entries) = raw_call(h, q, "flow_outbox", &[]).await.unwrap() else {
        panic!("FLOW.OUTBOX answers an array")
    };
    entries
        .iter()
        .map(|entry| match entry {
            Value::Array(parts) => match &parts[..] {
                [id, words, Value::Array(untold)] => {
                    (text(id), text(words), untold.iter().map(text).collect())
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        })
        .collect()
}

#[echomq_testkit::case(cluster)]
pub(super) async fn policy_fail_kills_the_dependent_and_propagates(h: &Harness) {
    let q = h.queue::<Json>("resolve_fail");
    let down = h.queue::<Json>("resolve_fail_down");
    flow_add(h, &down, &["f", "f:x", "x", "{}", "resolve_fail f:d", ""]).await;
    flow_add(
        h,
        &q,
        &[
            "f",
            "f:d",
            "d",
            "{}",
            "up p1 up p2",
            "resolve_fail_down f:x",
        ],
    )
    .await;
    flow_add(h, &q, &["f", "f:e", "e", "{}", "up p1", ""]).await;

    let groups = [
        ["up", "p1", "dead p1 3 boom", "f:d"],
        ["up", "p1", "removed p1", "f:e"],
    ];
    assert_eq!(
        resolve(h, &q, &groups).await,
        words(&["relay_dead", "dead"])
    );
    let d = hash(h, &q, "job:f:d").await;
    assert_eq!(d["state"], "dead");
    assert_eq!(d["error"], "dependency up p1 is dead");
    assert_eq!(d["reason"], "dependency");
    assert!(!d.contains_key("failures"), "failures unchanged");
    assert_eq!(d["deps_left"], "1");
    assert_eq!(
        hash(h, &q, "job:f:e").await["error"],
        "dependency up p1 is removed"
    );
    assert_eq!(members(h, &q, "dead").await.len(), 2);
    assert!(members(h, &q, "blocked").await.is_empty());
    let dead = "dead d 0 dependency up p1 is dead";
    assert_eq!(
        outbox(h, &q).await,
        [(
            "f:d".into(),
            dead.into(),
            words(&["resolve_fail_down", "f:x"])
        )]
    );
    let counted = q.admin().counts().await.unwrap();
    assert_eq!((counted.dead, counted.blocked), (2, 0));
    let total = q.metrics_total().await.unwrap();
    assert_eq!(total.dead, 2, "counted dead");
    assert_eq!(total.run.count(), 0, "without a sample: they never ran");
    // A later edge of a decided dependent is recorded, nothing more.
    let late = ["up", "p2", "completed p2 0 ", "f:d"];
    assert_eq!(resolve(h, &q, &[late]).await, words(&["resolved"]));
    assert_eq!(state(&q, "f:d").await, Some(JobState::Dead));

    // The relay carries d's death on: x dies under its own policy.
    let relayed = ["resolve_fail", "f:d", dead, "f:x"];
    assert_eq!(resolve(h, &down, &[relayed]).await, words(&["dead"]));
    let x = hash(h, &down, "job:f:x").await;
    assert_eq!(x["error"], "dependency resolve_fail f:d is dead");
    h.check(&q).await;
    h.check(&down).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn policy_ignore_unblocks_with_the_failure_visible(h: &Harness) {
    let q = h.queue::<Json>("resolve_ignore");
    let add = [
        "f",
        "f:i",
        "i",
        "{}",
        "up p1 up p2",
        "",
        "ON_FAILURE",
        "ignore",
    ];
    flow_add(h, &q, &add).await;
    let dead = ["up", "p1", "dead p1 3 boom", "f:i"];
    assert_eq!(resolve(h, &q, &[dead]).await, words(&["resolved"]));
    assert_eq!(state(&q, "f:i").await, Some(JobState::Blocked));
    let removed = ["up", "p2", "removed -", "f:i"];
    assert_eq!(resolve(h, &q, &[removed]).await, words(&["unblocked"]));
    assert_eq!(state(&q, "f:i").await, Some(JobState::Pending));
    let deps = q
        .jobs()
        .dependencies(&JobId::new("f:i").unwrap())
        .await
        .unwrap();
    let mut outcomes: Vec<(String, echomq::DependencyOutcome)> = deps
        .into_iter()
        .map(|d| (d.id.to_string(), d.outcome))
        .collect();
    outcomes.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        outcomes,
        [
            (
                "p1".to_string(),
                echomq::DependencyOutcome::Dead {
                    failures: 3,
                    error: "boom".into()
                }
            ),
            ("p2".to_string(), echomq::DependencyOutcome::Removed),
        ]
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn policy_cancel_cancels_and_propagates(h: &Harness) {
    let q = h.queue::<Json>("resolve_cancel");
    let add = [
        "f",
        "f:c",
        "c",
        "{}",
        "up p1 up p2",
        "down f:x",
        "ON_FAILURE",
        "cancel",
    ];
    flow_add(h, &q, &add).await;
    let without = ["f", "f:n", "n", "{}", "up p1", "", "ON_FAILURE", "cancel"];
    flow_add(h, &q, &without).await;
    let groups = [
        ["up", "p1", "cancelled p1", "f:c"],
        ["up", "p1", "cancelled p1", "f:n"],
    ];
    assert_eq!(
        resolve(h, &q, &groups).await,
        words(&["relay_cancelled", "cancelled"])
    );
    let c = hash(h, &q, "job:f:c").await;
    assert_eq!(
        (c["state"].as_str(), c["reason"].as_str()),
        ("cancelled", "dependency")
    );
    assert!(!c.contains_key("error"));
    assert_eq!(members(h, &q, "cancelled").await, ["f:c", "f:n"]);
    assert_eq!(q.metrics_total().await.unwrap().cancelled, 2);
    assert_eq!(
        outbox(h, &q).await,
        [("f:c".into(), "cancelled c".into(), words(&["down", "f:x"]))]
    );
    let last = events(h, &q).await;
    assert!(
        last.contains(&words(&["event", "cancelled", "id", "f:c"])),
        "{last:?}"
    );
    // A completed dependency never triggers a policy.
    let add = ["f", "f:k", "k", "{}", "up p1", "", "ON_FAILURE", "cancel"];
    flow_add(h, &q, &add).await;
    let done = ["up", "p1", "completed p1 0 ", "f:k"];
    assert_eq!(resolve(h, &q, &[done]).await, words(&["unblocked"]));
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn drain_blocked_tells_the_dependents_and_forgets_the_edges(h: &Harness) {
    let q = h.queue::<Json>("resolve_drained");
    flow_add(h, &q, &["f", "f:b", "b", "{}", "up p", "down x"]).await;
    raw_call(h, &q, "drain", &["BLOCKED"]).await.unwrap();
    assert!(
        hash(h, &q, "deps:f:b").await.is_empty(),
        "its deps went with it"
    );
    assert_eq!(
        outbox(h, &q).await,
        [("f:b".into(), "removed b".into(), words(&["down", "x"]))]
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn drain_scores_every_resolution_it_writes_at_one_ms(h: &Harness) {
    // A pending job and a blocked one, each with a dependent, and enough
    // plain jobs between them that deleting them takes a few ms: one
    // call, one clock, so both resolutions carry the same score.
    let q = h.queue::<Json>("resolve_drain_clock");
    flow_add(h, &q, &["f", "f:a", "a", "{}", "", "down x"]).await;
    flow_add(h, &q, &["f", "f:b", "b", "{}", "up p", "down y"]).await;
    let plain: Vec<echomq::NewJob<Json>> = (0..3000)
        .map(|n| echomq::NewJob::new(Json::from(n)))
        .collect();
    q.enqueue_bulk(plain).await.unwrap();
    let drained = raw_call(h, &q, "drain", &["BLOCKED", "COUNT", "5000"])
        .await
        .unwrap();
    assert_eq!(drained, Value::Int(3002));
    let scores: Vec<(String, u64)> = redis::cmd("ZRANGE")
        .arg(format!("{}:resolutions", q.keys().base()))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    assert_eq!(scores.len(), 2, "{scores:?}");
    assert_eq!(scores[0].1, scores[1].1, "{scores:?}");
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_dependent_its_policy_kills_is_trimmed_and_its_resolution_kept(h: &Harness) {
    let q = h.queue::<Json>("resolve_trimmed");
    raw_call(h, &q, "retention", &["DEAD", "0"]).await.unwrap();
    flow_add(h, &q, &["f", "f:d", "d", "{}", "up p", "down x"]).await;
    let dead = ["up", "p", "dead p 1 boom", "f:d"];
    assert_eq!(resolve(h, &q, &[dead]).await, words(&["relay_dead"]));
    assert!(
        hash(h, &q, "job:f:d").await.is_empty(),
        "retention trimmed it"
    );
    assert!(
        hash(h, &q, "deps:f:d").await.is_empty(),
        "its deps went with it"
    );
    assert_eq!(hash(h, &q, "dependents:f:d").await["down x"], "0");
    let text = "dead d 0 dependency up p is dead";
    assert_eq!(
        outbox(h, &q).await,
        [("f:d".into(), text.into(), words(&["down", "x"]))]
    );
    h.check(&q).await;
}
