//! FLOW.CHECKUP on a dependent's queue: the blocked jobs whose check-up is
//! due, lowest score first, each with its `wait` edges, within COUNT
//! edges; each one listed scored again AGAIN ms on.

use super::common::{Harness, raw_call};
use super::{make_due, scored, server_ms, text};
use crate::flow_add::cases::flow_add;
use echomq::Queue;
use echomq::protocol::arg::FLOW_CHECKUP_MS;
use redis::Value;
use serde_json::Value as Json;

/// FLOW.CHECKUP's reply as (id, [queue, dependency, …]).
fn listed(reply: Value) -> Vec<(String, Vec<String>)> {
    let Value::Array(entries) = reply else {
        panic!("{reply:?}")
    };
    entries
        .into_iter()
        .map(|entry| match entry {
            Value::Array(parts) => match &parts[..] {
                [id, Value::Array(edges)] => (text(id), edges.iter().map(text).collect()),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        })
        .collect()
}

/// FLOW.CHECKUP with `args`, listed.
async fn checkup(h: &Harness, q: &Queue<Json>, args: &[&str]) -> Vec<(String, Vec<String>)> {
    listed(raw_call(h, q, "flow_checkup", args).await.unwrap())
}

/// Blocked jobs x (edges up p1, up p2), y (up p3) and z (up p4, up p5),
/// their check-ups due in the order y, x, z.
async fn three_blocked(h: &Harness, q: &Queue<Json>) {
    flow_add(h, q, &["f", "x", "x", "{}", "up p1 up p2", ""]).await;
    flow_add(h, q, &["f", "y", "y", "{}", "up p3", ""]).await;
    flow_add(h, q, &["f", "z", "z", "{}", "up p4 up p5", ""]).await;
    for (id, score) in [("x", 200), ("y", 100), ("z", 300)] {
        make_due(h, q, id, score).await;
    }
}

/// An edge list's pairs, sorted (a hash's order is the server's).
fn pairs(edges: &[String]) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = edges
        .chunks(2)
        .map(|pair| (pair[0].clone(), pair[1].clone()))
        .collect();
    pairs.sort();
    pairs
}

#[echomq_testkit::case]
pub(super) async fn flow_checkup_lists_due_jobs_lowest_score_first_with_their_wait_edges(
    h: &Harness,
) {
    let q = h.queue::<Json>("checkup_list");
    three_blocked(h, &q).await;
    // A job blocked just now is not due; a resolved edge is not listed.
    flow_add(h, &q, &["f", "later", "later", "{}", "up p6", ""]).await;
    raw_call(h, &q, "flow_resolve", &["up", "p2", "completed p2 0 ", "x"])
        .await
        .unwrap();
    let before = server_ms(h, &q).await;
    let entries = checkup(h, &q, &[]).await;
    let ids: Vec<&str> = entries.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["y", "x", "z"]);
    assert_eq!(pairs(&entries[1].1), [("up".to_string(), "p1".to_string())]);
    assert_eq!(pairs(&entries[2].1).len(), 2);
    let after = server_ms(h, &q).await;
    for (id, score) in scored(h, &q, "blocked").await {
        if id == "later" {
            assert!(
                score < before + FLOW_CHECKUP_MS,
                "not listed, not scored again"
            );
            continue;
        }
        assert!(
            (before + FLOW_CHECKUP_MS..=after + FLOW_CHECKUP_MS).contains(&score),
            "{id} scored {score}, not now + FLOW_CHECKUP_MS"
        );
    }
    assert!(
        checkup(h, &q, &[]).await.is_empty(),
        "scored again: not due"
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_checkup_lists_the_first_job_whatever_count_then_jobs_that_fit(
    h: &Harness,
) {
    let q = h.queue::<Json>("checkup_count");
    three_blocked(h, &q).await;
    // y (1 edge) fits in 2; x (2 more) does not, and ends the list.
    let ids = |entries: Vec<(String, Vec<String>)>| -> Vec<String> {
        entries.into_iter().map(|(id, _)| id).collect()
    };
    assert_eq!(ids(checkup(h, &q, &["COUNT", "2"]).await), ["y"]);
    // x first now, 2 edges over COUNT 1: listed whatever its count.
    assert_eq!(ids(checkup(h, &q, &["COUNT", "1"]).await), ["x"]);
    assert_eq!(ids(checkup(h, &q, &["COUNT", "1000"]).await), ["z"]);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_checkup_scores_each_job_it_lists_again_after_again_ms(h: &Harness) {
    let q = h.queue::<Json>("checkup_again");
    three_blocked(h, &q).await;
    let before = server_ms(h, &q).await;
    let listed = checkup(h, &q, &["COUNT", "1", "AGAIN", "60000"]).await;
    let after = server_ms(h, &q).await;
    assert_eq!(listed.len(), 1);
    let scores = scored(h, &q, "blocked").await;
    let (id, score) = scores.last().unwrap();
    assert_eq!(id, "y");
    assert!(
        (before + 60_000..=after + 60_000).contains(score),
        "{score}"
    );
    assert_eq!(
        &scores[..2],
        [("x".to_string(), 200), ("z".to_string(), 300)]
    );
    h.check(&q).await;
}
