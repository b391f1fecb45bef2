//! Every refusal of FLOW.RESOLVE, each its own case: the arguments are
//! checked group by group, in order, before any key is read, and a
//! refused call writes nothing.

use super::common::{Harness, error_text, raw_call};
use crate::common::{set_a_string, writes};
use crate::flow_add::cases::flow_add;
use serde_json::Value as Json;

/// FLOW.RESOLVE of each of `cases` on a queue with a blocked dependent,
/// refused `wanted`, writing nothing.
async fn refuses_each(h: &Harness, name: &str, wanted: &str, cases: &[&[&str]]) {
    let q = h.queue::<Json>(name);
    flow_add(h, &q, &["f", "f:a", "a", "{}", "up p", ""]).await;
    for args in cases {
        let before = writes(h, &q).await;
        let err = raw_call(h, &q, "flow_resolve", args)
            .await
            .expect_err("the call is refused");
        assert_eq!(error_text(&err), wanted, "{args:?}");
        assert_eq!(writes(h, &q).await, before, "a refused FLOW.RESOLVE wrote");
    }
    h.check(&q).await;
}

/// A whole good group, resolving f:a's edge.
const GOOD: [&str; 4] = ["up", "p", "completed p 0 ", "f:a"];

#[echomq_testkit::case(cluster)]
pub(super) async fn flow_resolve_refuses_groups_not_whole_with_badarg_edges(h: &Harness) {
    let [queue, dependency, text, dependent] = GOOD;
    let cases: [&[&str]; 4] = [
        &[],
        &[queue, dependency, text],
        &[queue, dependency, text, dependent, queue],
        &[queue, dependency, text, dependent, queue, dependency, text],
    ];
    refuses_each(h, "resolve_edges", "BADARG edges", &cases).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_resolve_refuses_a_bad_queue_name(h: &Harness) {
    let [_, dependency, text, dependent] = GOOD;
    let long = "q".repeat(129);
    let cases: [&[&str]; 4] = [
        &["", dependency, text, dependent],
        &["a b", dependency, text, dependent],
        &["q{x}", dependency, text, dependent],
        &[
            GOOD[0], dependency, text, dependent, &long, dependency, text, dependent,
        ],
    ];
    refuses_each(h, "resolve_queue", "BADARG queue", &cases).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_resolve_refuses_a_bad_dependency_id(h: &Harness) {
    let [queue, _, text, dependent] = GOOD;
    let long = "d".repeat(257);
    let cases: [&[&str]; 4] = [
        &[queue, "", text, dependent],
        &[queue, "*", text, dependent],
        &[queue, "a{b}", text, dependent],
        &[queue, &long, text, "*"],
    ];
    refuses_each(h, "resolve_dependency", "BADARG dependency", &cases).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_resolve_refuses_a_bad_resolution_text(h: &Harness) {
    let [queue, dependency, _, dependent] = GOOD;
    let long_error = format!("dead p 1 {}", "e".repeat(4097));
    let long_ref = format!("removed {}", "r".repeat(129));
    let texts = [
        "",
        "wait",
        "completed p 3 ok",
        "completed p 0",
        "completed p x y",
        "completed p 70000 x",
        "completed p 9007199254740992 ",
        "dead p 1",
        "cancelled p extra",
        "removed",
        "Removed p",
        "gone p",
        "removed a{b}",
        &long_error,
        &long_ref,
    ];
    let cases: Vec<[&str; 4]> = texts
        .iter()
        .map(|text| [queue, dependency, text, dependent])
        .collect();
    let cases: Vec<&[&str]> = cases.iter().map(|c| &c[..]).collect();
    refuses_each(h, "resolve_text", "BADARG resolution", &cases).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_resolve_refuses_a_bad_dependent_id(h: &Harness) {
    let [queue, dependency, text, _] = GOOD;
    let cases: [&[&str]; 3] = [
        &[queue, dependency, text, ""],
        &[queue, dependency, text, "*"],
        &[queue, dependency, text, "a b"],
    ];
    refuses_each(h, "resolve_dependent", "BADARG dependent", &cases).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_resolve_refuses_a_dependent_key_of_the_wrong_type(h: &Harness) {
    // Each key a group may write, in turn the one of the wrong type: the
    // dependent's hash and deps always; its dependents and resolution when
    // its policy may decide it (a dead dependency).
    let [queue, dependency, completed, dependent] = GOOD;
    let dead = "dead p 1 boom";
    let cases = [
        ("job", completed),
        ("deps", completed),
        ("dependents", dead),
        ("resolution", dead),
    ];
    for (n, (key, text)) in cases.into_iter().enumerate() {
        let q = h.queue::<Json>(&format!("resolve_wrongtype{n}"));
        flow_add(h, &q, &["f", "f:a", "a", "{}", "up p", ""]).await;
        let key = format!("{}:{key}:f:a", q.keys().base());
        set_a_string(h, &q, &key).await;
        let before = writes(h, &q).await;
        let err = raw_call(h, &q, "flow_resolve", &[queue, dependency, text, dependent])
            .await
            .expect_err("the call is refused");
        assert!(error_text(&err).starts_with("WRONGTYPE"), "{key}: {err}");
        assert_eq!(
            writes(h, &q).await,
            before,
            "{key}: a refused FLOW.RESOLVE wrote"
        );
    }
}

#[echomq_testkit::case]
pub(super) async fn flow_resolve_of_a_completed_edge_ignores_the_dependents_key_types(h: &Harness) {
    // A completed resolution never decides the dependent: its dependents
    // and resolution keys are not written, so their type refuses nothing.
    for what in ["dependents", "resolution"] {
        let q = h.queue::<Json>(&format!("resolve_untouched_{what}"));
        flow_add(h, &q, &["f", "f:a", "a", "{}", "up p", ""]).await;
        set_a_string(h, &q, &format!("{}:{what}:f:a", q.keys().base())).await;
        let words = raw_call(h, &q, "flow_resolve", &GOOD).await.unwrap();
        let redis::Value::Array(words) = words else {
            panic!("{words:?}")
        };
        assert_eq!(
            words,
            [redis::Value::BulkString(b"unblocked".to_vec())],
            "{what}"
        );
    }
}
