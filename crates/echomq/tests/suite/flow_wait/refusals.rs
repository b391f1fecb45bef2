//! Every refusal of FLOW.WAIT, each its own case: the groups whole first,
//! then the id, the token and each group in order, before any key is
//! read; the bound on a job's dependencies after the fence. A refused
//! call writes nothing and leaves the job in hand active.

use super::cases::{claim_one, flow_wait, held};
use super::common::{Harness, error_text};
use crate::common::writes;
use crate::flow_add::cases::hash;
use echomq::NewJob;
use serde_json::{Value as Json, json};

/// FLOW.WAIT of the job in hand of a queue `name` with each of `cases`
/// (the edges after id and token), refused `wanted`, writing nothing.
async fn refuses_each(h: &Harness, name: &str, wanted: &str, cases: &[&[&str]]) {
    let q = h.queue::<Json>(name);
    q.enqueue(NewJob::new(json!(1)).id("p").unwrap())
        .await
        .unwrap();
    let job = claim_one(&q).await;
    for edges in cases {
        let before = writes(h, &q).await;
        let err = flow_wait(h, &q, held(&job), edges)
            .await
            .expect_err("the call is refused");
        assert_eq!(error_text(&err), wanted, "{edges:?}");
        assert_eq!(writes(h, &q).await, before, "a refused FLOW.WAIT wrote");
    }
    assert_eq!(hash(h, &q, "job:p").await["state"], "active");
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn flow_wait_refuses_groups_not_whole_with_badarg_edges(h: &Harness) {
    let cases: [&[&str]; 3] = [&[], &["up"], &["up", "c", "up"]];
    refuses_each(h, "wait_edges", "BADARG edges", &cases).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_wait_refuses_a_bad_queue_name(h: &Harness) {
    let long = "q".repeat(129);
    let cases: [&[&str]; 4] = [
        &["", "c"],
        &["a b", "c"],
        &["q{x}", "c"],
        &["up", "c", &long, "c"],
    ];
    refuses_each(h, "wait_queue", "BADARG queue", &cases).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_wait_refuses_a_bad_dependency_id(h: &Harness) {
    let long = "d".repeat(257);
    let cases: [&[&str]; 6] = [
        &["up", ""],
        &["up", "*"],
        &["up", "a{b}"],
        &["up", "a b"],
        &["up", "c", "up", &long],
        // The job itself: a job waiting for itself would never end.
        &["up", "c", "wait_dependency", "p"],
    ];
    refuses_each(h, "wait_dependency", "BADARG dependency", &cases).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_wait_refuses_edges_past_flow_edges_max(h: &Harness) {
    let ids: Vec<String> = (0..=10_000).map(|n| format!("c{n}")).collect();
    let mut edges: Vec<&str> = Vec::with_capacity(ids.len() * 2);
    for id in &ids {
        edges.extend(["up", id.as_str()]);
    }
    refuses_each(h, "wait_max", "BADARG edges", &[&edges]).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_wait_refuses_new_edges_past_flow_edges_max_with_those_it_has(h: &Harness) {
    // 10,000 edges in all is the most: the job waits for 9,999, then one
    // more is allowed, then a second is refused.
    let q = h.queue::<Json>("wait_max_more");
    q.enqueue(NewJob::new(json!(1)).id("p").unwrap())
        .await
        .unwrap();
    let job = claim_one(&q).await;
    let ids: Vec<String> = (0..9_999).map(|n| format!("c{n}")).collect();
    let mut edges: Vec<&str> = Vec::with_capacity(ids.len() * 2);
    for id in &ids {
        edges.extend(["up", id.as_str()]);
    }
    assert_eq!(
        flow_wait(h, &q, held(&job), &edges).await.unwrap(),
        "blocked"
    );
    // Its edges resolve as the relay would resolve them, 1,000 a call
    // (one call of 9,999 outlasted the connection's response timeout on a
    // busy machine), and it runs again.
    let resolution = "completed - 0 ";
    for chunk in ids.chunks(1_000) {
        let mut groups: Vec<&str> = Vec::new();
        for id in chunk {
            groups.extend(["up", id.as_str(), resolution, "p"]);
        }
        super::common::raw_call(h, &q, "flow_resolve", &groups)
            .await
            .unwrap();
    }
    let job = claim_one(&q).await;
    assert_eq!(
        flow_wait(h, &q, held(&job), &["up", "c0", "up", "last"])
            .await
            .unwrap(),
        "blocked",
        "9,999 + 1 edges"
    );
    assert_eq!(hash(h, &q, "job:p").await["deps"], "10000");
    resolve_last(h, &q).await;
    let job = claim_one(&q).await;
    let before = writes(h, &q).await;
    let err = flow_wait(h, &q, held(&job), &["up", "more"])
        .await
        .unwrap_err();
    assert_eq!(error_text(&err), "BADARG edges");
    assert_eq!(writes(h, &q).await, before, "a refused FLOW.WAIT wrote");
    h.check(&q).await;
}

/// Resolves p's edge `up last`.
async fn resolve_last(h: &Harness, q: &echomq::Queue<Json>) {
    crate::flow_resolve::cases::resolve(h, q, &[["up", "last", "completed l 0 ", "p"]]).await;
}
