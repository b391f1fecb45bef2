//! Every refusal of FLOW.LINK and FLOW.CHECKUP, each its own case: the
//! arguments are checked in order before any key is read, and a refused
//! call writes nothing.

use super::common::{Harness, error_text, raw_call, writes};
use super::flow_key;
use echomq::{NewJob, Queue};
use serde_json::{Value as Json, json};

/// `verb` with each of `cases` on a queue holding pending job `a`,
/// refused `wanted` (the error's start), writing nothing; the invariant
/// holds after.
async fn refuses_each(h: &Harness, q: &Queue<Json>, verb: &str, wanted: &str, cases: &[&[&str]]) {
    refused_all(h, q, verb, wanted, cases).await;
    h.check(q).await;
}

/// [`refuses_each`] without the invariant (a key of the wrong type is
/// still there).
async fn refused_all(h: &Harness, q: &Queue<Json>, verb: &str, wanted: &str, cases: &[&[&str]]) {
    q.enqueue(NewJob::new(json!(1)).id("a").unwrap())
        .await
        .unwrap();
    for args in cases {
        let before = writes(h, q).await;
        let err = raw_call(h, q, verb, args)
            .await
            .expect_err("the call is refused");
        let said = error_text(&err);
        assert!(said.starts_with(wanted), "{verb} {args:?}: {said}");
        assert_eq!(writes(h, q).await, before, "a refused {verb} wrote");
    }
}

#[echomq_testkit::case]
pub(super) async fn flow_link_refuses_a_bad_id(h: &Harness) {
    let q = h.queue::<Json>("link_bad_id");
    let long = "i".repeat(257);
    let cases: [&[&str]; 5] = [
        &[],
        &["", "b", "d1"],
        &["*", "b", "d1"],
        &["a b", "b", "d1"],
        &[&long, "b"],
    ];
    refuses_each(h, &q, "flow_link", "BADARG id", &cases).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_link_refuses_groups_not_whole_with_badarg_edges(h: &Harness) {
    let q = h.queue::<Json>("link_edges");
    let cases: [&[&str]; 3] = [&["a"], &["a", "b"], &["a", "b", "d1", "b"]];
    refuses_each(h, &q, "flow_link", "BADARG edges", &cases).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_link_refuses_a_bad_queue_name(h: &Harness) {
    let q = h.queue::<Json>("link_queue");
    let long = "q".repeat(129);
    let cases: [&[&str]; 4] = [
        &["a", "", "d1"],
        &["a", "q{x}", "d1"],
        &["a", "a b", "d1"],
        &["a", "b", "d1", &long, "d2"],
    ];
    refuses_each(h, &q, "flow_link", "BADARG queue", &cases).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_link_refuses_a_bad_dependent(h: &Harness) {
    let q = h.queue::<Json>("link_dependent");
    let long = "d".repeat(257);
    let cases: [&[&str]; 4] = [
        &["a", "b", ""],
        &["a", "b", "*"],
        &["a", "b", "d{1}"],
        &["a", "b", "d1", "b", &long],
    ];
    refuses_each(h, &q, "flow_link", "BADARG dependent", &cases).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_link_of_an_absent_job_is_refused_nojob_and_writes_nothing(h: &Harness) {
    let q = h.queue::<Json>("link_nojob");
    let cases: [&[&str]; 1] = [&["absent", "b", "d1"]];
    refuses_each(h, &q, "flow_link", "NOJOB", &cases).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_link_refuses_keys_of_the_wrong_type(h: &Harness) {
    let q = h.queue::<Json>("link_wrongtype");
    let _: () = redis::cmd("SET")
        .arg(flow_key(&q, "dependents", "a"))
        .arg("x")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let cases: [&[&str]; 1] = [&["a", "b", "d1"]];
    let wanted = "WRONGTYPE Operation against a key holding the wrong kind of value";
    refused_all(h, &q, "flow_link", wanted, &cases).await;
    let _: () = redis::cmd("DEL")
        .arg(flow_key(&q, "dependents", "a"))
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_checkup_refuses_a_bad_count(h: &Harness) {
    let q = h.queue::<Json>("checkup_bad_count");
    let cases: [&[&str]; 4] = [
        &["COUNT", "0"],
        &["COUNT", "-1"],
        &["COUNT", "x"],
        &["COUNT"],
    ];
    refuses_each(h, &q, "flow_checkup", "BADARG count", &cases).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_checkup_refuses_a_bad_again(h: &Harness) {
    let q = h.queue::<Json>("checkup_bad_again");
    let cases: [&[&str]; 4] = [
        &["AGAIN", "0"],
        &["AGAIN", "1.5"],
        &["COUNT", "1", "AGAIN"],
        &["AGAIN", "9007199254740992"],
    ];
    refuses_each(h, &q, "flow_checkup", "BADARG again", &cases).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_checkup_refuses_an_unknown_option_with_syntax(h: &Harness) {
    let q = h.queue::<Json>("checkup_syntax");
    let cases: [&[&str]; 2] = [&["JOBS", "a"], &["COUNT", "1", "LIMIT", "2"]];
    refuses_each(h, &q, "flow_checkup", "SYNTAX", &cases).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_checkup_refuses_a_blocked_set_of_the_wrong_type(h: &Harness) {
    let q = h.queue::<Json>("checkup_wrongtype");
    let blocked = format!("{}:blocked", q.keys().base());
    let _: () = redis::cmd("SET")
        .arg(&blocked)
        .arg("x")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let cases: [&[&str]; 1] = [&[]];
    let wanted = "WRONGTYPE Operation against a key holding the wrong kind of value";
    refused_all(h, &q, "flow_checkup", wanted, &cases).await;
    let _: () = redis::cmd("DEL")
        .arg(&blocked)
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    h.check(&q).await;
}
