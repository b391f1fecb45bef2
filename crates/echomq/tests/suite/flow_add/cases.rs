//! What FLOW.ADD and its bulk form write, and what FLOW.DEPS and
//! FLOW.DEPENDENTS read back.

use super::common::{Harness, event_entries, meta_field, raw_call};
use echomq::protocol::arg::FLOW_CHECKUP_MS;
use echomq::{JobId, JobState, Queue};
use redis::Value;
use serde_json::{Value as Json, json};
use std::collections::BTreeMap;
use std::time::Duration;

/// The `[id, code, …]` reply of a FLOW.ADD, as (id, code) pairs.
pub(crate) fn created(reply: Value) -> Vec<(String, i64)> {
    let Value::Array(items) = reply else {
        panic!("{reply:?}")
    };
    items
        .chunks(2)
        .map(|pair| match pair {
            [Value::BulkString(id), Value::Int(code)] => {
                (String::from_utf8(id.clone()).unwrap(), *code)
            }
            other => panic!("{other:?}"),
        })
        .collect()
}

/// `FLOW.ADD flow id ref payload after before options…`, answered.
pub(crate) async fn flow_add(h: &Harness, q: &Queue<Json>, args: &[&str]) -> Vec<(String, i64)> {
    created(raw_call(h, q, "flow_add", args).await.unwrap())
}

/// A hash of the queue's, read raw (`key` after the base: `job:a`).
pub(crate) async fn hash(h: &Harness, q: &Queue<Json>, key: &str) -> BTreeMap<String, String> {
    redis::cmd("HGETALL")
        .arg(format!("{}:{key}", q.keys().base()))
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// The score of `id` in the queue's set `set`.
async fn score(h: &Harness, q: &Queue<Json>, set: &str, id: &str) -> Option<u64> {
    redis::cmd("ZSCORE")
        .arg(format!("{}:{set}", q.keys().base()))
        .arg(id)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[echomq_testkit::case(cluster)]
pub(super) async fn flow_add_blocks_a_job_with_dependencies_and_counts_it(h: &Harness) {
    let q = h.queue::<Json>("flow_blocks");
    let reply = flow_add(
        h,
        &q,
        &[
            "order-42",
            "order-42:mail",
            "mail",
            "{}",
            "images order-42:small flow_blocks order-42:large",
            "",
        ],
    )
    .await;
    assert_eq!(reply, [("order-42:mail".to_string(), 1)]);

    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.blocked, counts.pending, counts.total()), (1, 0, 1));
    let job = hash(h, &q, "job:order-42:mail").await;
    assert_eq!(job["state"], "blocked");
    assert_eq!(job["flow"], "order-42");
    assert_eq!(job["ref"], "mail");
    assert_eq!(
        (job["deps"].as_str(), job["deps_left"].as_str()),
        ("2", "2")
    );
    assert!(
        !job.contains_key("on_failure"),
        "fail is the default, unwritten"
    );
    assert!(!job.contains_key("dependents"));
    assert_eq!(
        hash(h, &q, "deps:order-42:mail").await,
        map(&[
            ("images order-42:small", "wait"),
            ("flow_blocks order-42:large", "wait")
        ])
    );
    let created_at: u64 = job["created_at"].parse().unwrap();
    let checkup = score(h, &q, "blocked", "order-42:mail").await.unwrap();
    assert_eq!(
        checkup,
        created_at + FLOW_CHECKUP_MS,
        "due for its check-up"
    );
    assert_eq!(meta_field(h, &q, "flows").await.as_deref(), Some("1"));

    let events: Vec<Vec<String>> = event_entries(h, &q)
        .await
        .into_iter()
        .map(|(_, f)| f)
        .collect();
    assert_eq!(
        events,
        [["event", "blocked", "id", "order-42:mail", "deps", "2"]]
    );
    let record = q
        .jobs()
        .get(&JobId::new("order-42:mail").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.state, JobState::Blocked);
    assert_eq!(record.flow.as_deref(), Some("order-42"));
    assert_eq!(record.flow_ref.as_deref(), Some("mail"));
    assert_eq!(
        (record.deps, record.deps_left, record.dependents),
        (Some(2), Some(2), None)
    );
    assert_eq!(
        q.claim_one("w", Duration::from_secs(60))
            .await
            .unwrap()
            .map(|c| c.id),
        None,
        "never claimed"
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn flow_add_blocks_a_job_with_its_options_its_run_at_and_its_deadline(
    h: &Harness,
) {
    let q = h.queue::<Json>("flow_blocked_options");
    let args = [
        "f",
        "d",
        "d",
        "{}",
        "other p",
        "",
        "RUN_AT",
        "+60000",
        "START_WITHIN",
        "3600000",
        "TIME_LIMIT",
        "5000",
        "GROUP",
        "g1",
        "LIFO",
        "PRIORITY",
        "4",
        "ATTEMPTS",
        "7",
        "ON_FAILURE",
        "cancel",
    ];
    assert_eq!(flow_add(h, &q, &args).await, [("d".to_string(), 1)]);
    let job = hash(h, &q, "job:d").await;
    let created_at: u64 = job["created_at"].parse().unwrap();
    assert_eq!(job["state"], "blocked");
    assert_eq!(
        job["run_at"],
        (created_at + 60_000).to_string(),
        "kept for its unblocking"
    );
    let start_by: u64 = job["start_by"].parse().unwrap();
    assert_eq!(start_by, created_at + 3_600_000);
    assert_eq!(
        score(h, &q, "deadlines", "d").await,
        Some(start_by),
        "a blocked job's deadline"
    );
    for (field, value) in [
        ("time_limit", "5000"),
        ("group", "g1"),
        ("lifo", "1"),
        ("priority", "4"),
        ("max_attempts", "7"),
        ("on_failure", "cancel"),
    ] {
        assert_eq!(job[field], value, "{field}");
    }
    for mark in ["timed", "groups", "lifo", "flows"] {
        assert_eq!(
            meta_field(h, &q, mark).await.as_deref(),
            Some("1"),
            "{mark}"
        );
    }
    assert_eq!(
        score(h, &q, "schedule", "d").await,
        None,
        "blocked, not scheduled"
    );
    assert_eq!(score(h, &q, "glane:g1", "d").await, None, "not in its lane");
    assert_eq!(score(h, &q, "pending", "d").await, None, "not pending");
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn flow_add_without_dependencies_enqueues_or_schedules_and_lists_dependents(
    h: &Harness,
) {
    let q = h.queue::<Json>("flow_free");
    let now = flow_add(
        h,
        &q,
        &[
            "f",
            "f:fetch",
            "fetch",
            "1",
            "",
            "flow_free f:mail other f:zip",
            "PRIORITY",
            "3",
            "ON_FAILURE",
            "ignore",
        ],
    )
    .await;
    let later = flow_add(
        h,
        &q,
        &[
            "f",
            "f:late",
            "late",
            "2",
            "",
            "",
            "RUN_AT",
            "+3600000",
            "ON_FAILURE",
            "fail",
        ],
    )
    .await;
    assert_eq!((now[0].1, later[0].1), (1, 1));

    let fetch = hash(h, &q, "job:f:fetch").await;
    assert_eq!(fetch["state"], "pending");
    assert_eq!(fetch["priority"], "3");
    assert_eq!(fetch["on_failure"], "ignore");
    assert_eq!(fetch["dependents"], "2");
    assert!(!fetch.contains_key("deps"));
    assert_eq!(
        hash(h, &q, "dependents:f:fetch").await,
        map(&[("flow_free f:mail", "0"), ("other f:zip", "0")])
    );
    let late = hash(h, &q, "job:f:late").await;
    assert_eq!(late["state"], "scheduled");
    assert!(!late.contains_key("on_failure"));
    assert!(score(h, &q, "schedule", "f:late").await.is_some());

    let words: Vec<String> = event_entries(h, &q)
        .await
        .into_iter()
        .map(|(_, fields)| fields[1].clone())
        .collect();
    assert_eq!(words, ["enqueued", "scheduled"]);
    let claimed = q
        .claim_one("w", Duration::from_secs(60))
        .await
        .unwrap()
        .expect("claimed");
    assert_eq!(
        claimed.id.as_str(),
        "f:fetch",
        "a job without dependencies runs"
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn flow_add_of_an_existing_id_of_the_same_flow_changes_nothing(h: &Harness) {
    let q = h.queue::<Json>("flow_again");
    flow_add(h, &q, &["f", "a", "a", "1", "other x", "other y"]).await;
    let before = (hash(h, &q, "job:a").await, hash(h, &q, "deps:a").await);
    let writes = super::common::writes(h, &q).await;
    // Other arguments, same flow: nothing changes, whatever they say.
    let again = flow_add(h, &q, &["f", "a", "b", "2", "", "third z", "PRIORITY", "9"]).await;
    assert_eq!(again, [("a".to_string(), 0)]);
    assert_eq!(super::common::writes(h, &q).await, writes, "it wrote");
    assert_eq!(
        (hash(h, &q, "job:a").await, hash(h, &q, "deps:a").await),
        before
    );
    assert_eq!(hash(h, &q, "dependents:a").await, map(&[("other y", "0")]));

    // Only its resolution is left (a decided job, trimmed): still the flow's.
    let _: () = redis::pipe()
        .cmd("HSET")
        .arg(format!("{}:resolution:gone", q.keys().base()))
        .arg(&["text", "completed - 0 ", "flow", "f", "left", "1"])
        .ignore()
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let gone = flow_add(h, &q, &["f", "gone", "gone", "1", "", ""]).await;
    assert_eq!(gone, [("gone".to_string(), 0)]);
    assert!(hash(h, &q, "job:gone").await.is_empty());

    // The bulk form answers an id given twice as existing the second time.
    let reply = raw_call(
        h,
        &q,
        "flow_add_bulk",
        &[
            "f", "n", "n", "1", "", "", "0", "3", "fail", "n", "n", "2", "", "", "0", "3", "fail",
        ],
    )
    .await
    .unwrap();
    assert_eq!(created(reply), [("n".to_string(), 1), ("n".to_string(), 0)]);
    assert_eq!(hash(h, &q, "job:n").await["payload"], "1");
}

#[echomq_testkit::case(cluster)]
pub(super) async fn flow_add_bulk_adds_each_job_as_flow_add_would(h: &Harness) {
    let q = h.queue::<Json>("flow_bulk");
    let reply = raw_call(
        h,
        &q,
        "flow_add_bulk",
        &[
            "f", //
            "f:mail",
            "mail",
            "m",
            "flow_bulk f:fetch",
            "",
            "0",
            "3",
            "cancel", //
            "f:fetch",
            "fetch",
            "x",
            "",
            "flow_bulk f:mail",
            "2",
            "5",
            "fail",
        ],
    )
    .await
    .unwrap();
    assert_eq!(
        created(reply),
        [("f:mail".to_string(), 1), ("f:fetch".to_string(), 1)]
    );
    let mail = hash(h, &q, "job:f:mail").await;
    assert_eq!(
        (mail["state"].as_str(), mail["on_failure"].as_str()),
        ("blocked", "cancel")
    );
    assert_eq!(
        hash(h, &q, "deps:f:mail").await,
        map(&[("flow_bulk f:fetch", "wait")])
    );
    let fetch = hash(h, &q, "job:f:fetch").await;
    assert_eq!(
        (
            fetch["state"].as_str(),
            fetch["priority"].as_str(),
            fetch["max_attempts"].as_str()
        ),
        ("pending", "2", "5")
    );
    assert_eq!(
        hash(h, &q, "dependents:f:fetch").await,
        map(&[("flow_bulk f:mail", "0")])
    );
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.blocked, counts.pending), (1, 1));
    h.check(&q).await;
}

/// Every page of `verb` (flow_deps, flow_dependents) of `id`, `count` a
/// page: (queue, id, value) triples, and how many pages.
async fn all_pages(
    h: &Harness,
    q: &Queue<Json>,
    verb: &str,
    id: &str,
    count: &str,
) -> (Vec<(String, String, String)>, usize) {
    let (mut cursor, mut out, mut pages) = ("0".to_string(), Vec::new(), 0);
    loop {
        let reply = raw_call(h, q, verb, &[id, "CURSOR", &cursor, "COUNT", count])
            .await
            .unwrap();
        let Value::Array(parts) = reply else {
            panic!("{reply:?}")
        };
        let [Value::BulkString(next), Value::Array(items)] = &parts[..] else {
            panic!("{parts:?}")
        };
        for triple in items.chunks(3) {
            let text = |v: &Value| match v {
                Value::BulkString(b) => String::from_utf8(b.clone()).unwrap(),
                Value::Int(n) => format!("int {n}"),
                other => panic!("{other:?}"),
            };
            out.push((text(&triple[0]), text(&triple[1]), text(&triple[2])));
        }
        pages += 1;
        cursor = String::from_utf8(next.clone()).unwrap();
        if cursor == "0" {
            out.sort();
            return (out, pages);
        }
    }
}

#[echomq_testkit::case(cluster)]
pub(super) async fn flow_deps_and_dependents_read_every_edge_a_page_at_a_time(h: &Harness) {
    let q = h.queue::<Json>("flow_pages");
    let edges: Vec<String> = (0..2000).map(|n| format!("far.q d{n}")).collect();
    let list = edges.join(" ");
    flow_add(h, &q, &["f", "hub", "hub", "{}", &list, &list]).await;

    let (deps, pages) = all_pages(h, &q, "flow_deps", "hub", "10").await;
    assert!(
        pages > 1,
        "a hash of 2000 fields is read in pages: {pages}, {}",
        deps.len()
    );
    let mut wanted: Vec<(String, String, String)> = (0..2000)
        .map(|n| ("far.q".to_string(), format!("d{n}"), "wait".to_string()))
        .collect();
    wanted.sort();
    assert_eq!(deps, wanted);
    let (dependents, _) = all_pages(h, &q, "flow_dependents", "hub", "50").await;
    let told: Vec<&str> = dependents
        .iter()
        .map(|(_, _, told)| told.as_str())
        .collect();
    assert_eq!(told, vec!["int 0"; 2000], "told is an integer");

    // A small hash comes whole, cursor 0, with the default count.
    flow_add(h, &q, &["f", "leaf", "leaf", "{}", "a.q x", ""]).await;
    let reply = raw_call(h, &q, "flow_deps", &["leaf"]).await.unwrap();
    assert_eq!(
        reply,
        Value::Array(vec![
            Value::BulkString(b"0".to_vec()),
            Value::Array(vec![
                Value::BulkString(b"a.q".to_vec()),
                Value::BulkString(b"x".to_vec()),
                Value::BulkString(b"wait".to_vec()),
            ]),
        ])
    );
    let none = raw_call(h, &q, "flow_dependents", &["leaf"]).await.unwrap();
    assert_eq!(
        none,
        Value::Array(vec![Value::BulkString(b"0".to_vec()), Value::Array(vec![])]),
        "a job without dependents has an empty page"
    );
}

#[echomq_testkit::case]
pub(super) async fn flow_dependents_reads_a_resolution_s_dependents_after_its_job(h: &Harness) {
    let q = h.queue::<Json>("flow_outlive");
    flow_add(h, &q, &["f", "p", "p", "{}", "", "b.q d"]).await;
    let _: () = redis::cmd("DEL")
        .arg(q.keys().job(&JobId::new("p").unwrap()))
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let (dependents, _) = all_pages(h, &q, "flow_dependents", "p", "10").await;
    assert_eq!(dependents, [("b.q".into(), "d".into(), "int 0".into())]);
    let err = raw_call(h, &q, "flow_deps", &["p"]).await.unwrap_err();
    assert_eq!(err.code(), Some("NOJOB"), "deps live and die with the job");
}

#[echomq_testkit::case]
pub(super) async fn a_queue_without_flows_has_no_flow_mark_key_or_field(h: &Harness) {
    let q = h.queue::<Json>("flow_none");
    q.enqueue(json!(1)).await.unwrap();
    let job = q
        .claim_one("w", Duration::from_secs(60))
        .await
        .unwrap()
        .unwrap();
    q.complete(&job.id, job.token, &json!(2)).await.unwrap();
    assert_eq!(meta_field(h, &q, "flows").await, None);
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(
            format!("{}:dep*", q.keys().base())
                .replace('{', "\\{")
                .replace('}', "\\}"),
        )
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    assert!(keys.is_empty(), "{keys:?}");
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(
        (record.flow, record.flow_ref, record.deps, record.dependents),
        (None, None, None, None)
    );
    let err = raw_call(h, &q, "flow_dependents", &[job.id.as_str()]).await;
    assert_eq!(
        err.unwrap(),
        Value::Array(vec![Value::BulkString(b"0".to_vec()), Value::Array(vec![])])
    );
    h.check(&q).await;
}
