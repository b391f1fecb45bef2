//! FLOW.OUTBOX and FLOW.ACK (docs/protocol.md, "The relay"), sent raw on
//! each wire, and each of their refusals, which write nothing.

use super::cases::{
    claimed, complete_unrelayed, exists, flow_key, give_dependents, outbox, resolution,
};
use super::common::{Harness, error_text, raw_call, writes};
use echomq::{NewJob, Queue};
use redis::Value;
use serde_json::{Value as Json, json};

/// `verb args`, refused: its error text; asserts it wrote nothing.
async fn refused<T>(h: &Harness, q: &Queue<T>, verb: &str, args: &[&str]) -> String {
    let before = writes(h, q).await;
    let err = raw_call(h, q, verb, args)
        .await
        .expect_err("the command is refused");
    assert_eq!(writes(h, q).await, before, "a refused {verb} wrote");
    error_text(&err)
}

fn text(value: &Value) -> String {
    match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).unwrap(),
        other => panic!("{other:?}"),
    }
}

/// FLOW.OUTBOX's reply as (id, text, [queue, dependent, …]).
fn listed(reply: Value) -> Vec<(String, String, Vec<String>)> {
    let Value::Array(entries) = reply else {
        panic!("{reply:?}")
    };
    entries
        .into_iter()
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

/// Two decided jobs with dependents: `first` (two not told, one told) and
/// `second` (one), resolved in that order.
async fn two_resolutions(h: &Harness, q: &Queue<Json>) {
    let token = claimed(q, "first").await;
    give_dependents(h, q, "first", &["mail m1", "mail m2", "mail m3"], None).await;
    let _: () = redis::cmd("HSET")
        .arg(flow_key(q, "dependents", "first"))
        .arg("mail m3")
        .arg("1")
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
    complete_unrelayed(h, q, "first", token).await;
    let token = claimed(q, "second").await;
    give_dependents(h, q, "second", &["other:q s1"], None).await;
    complete_unrelayed(h, q, "second", token).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_outbox_lists_resolutions_oldest_first_with_their_untold_dependents(
    h: &Harness,
) {
    let q = h.queue::<Json>("outbox_list");
    two_resolutions(h, &q).await;
    let reply = raw_call(h, &q, "flow_outbox", &[]).await.unwrap();
    let mut entries = listed(reply);
    entries[0].2.sort();
    assert_eq!(
        entries,
        [
            (
                "first".to_string(),
                "completed - 0 ".to_string(),
                vec!["m1".into(), "m2".into(), "mail".into(), "mail".into()]
            ),
            (
                "second".to_string(),
                "completed - 0 ".to_string(),
                vec!["other:q".into(), "s1".into()]
            ),
        ]
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_outbox_with_jobs_lists_only_those_named_in_their_order(h: &Harness) {
    let q = h.queue::<Json>("outbox_jobs");
    two_resolutions(h, &q).await;
    let reply = raw_call(h, &q, "flow_outbox", &["JOBS", "second", "absent", "first"]);
    let ids: Vec<String> = listed(reply.await.unwrap())
        .into_iter()
        .map(|(id, _, _)| id)
        .collect();
    assert_eq!(ids, ["second", "first"]);
}

#[echomq_testkit::case]
pub(super) async fn flow_outbox_lists_at_most_count_dependents(h: &Harness) {
    let q = h.queue::<Json>("outbox_count");
    two_resolutions(h, &q).await;
    let reply = raw_call(h, &q, "flow_outbox", &["COUNT", "1"])
        .await
        .unwrap();
    let entries = listed(reply);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].2.len(), 2, "one dependent: its queue and id");
    let reply = raw_call(h, &q, "flow_outbox", &["COUNT", "3"])
        .await
        .unwrap();
    let entries = listed(reply);
    assert_eq!(entries.iter().map(|e| e.2.len()).sum::<usize>(), 6);
}

#[echomq_testkit::case]
pub(super) async fn flow_ack_at_left_0_deletes_the_resolution_and_its_member(h: &Harness) {
    let q = h.queue::<Json>("outbox_ack");
    two_resolutions(h, &q).await;
    let ack = |args: &'static [&'static str]| raw_call(h, &q, "flow_ack", args);
    assert_eq!(ack(&["first", "mail", "m1"]).await.unwrap(), Value::Int(1));
    assert_eq!(resolution(h, &q, "first").await["left"], "1");
    // Twice, and a told or absent edge: nothing more.
    let again = ack(&[
        "first", "mail", "m1", "first", "mail", "m3", "first", "x", "y",
    ]);
    assert_eq!(again.await.unwrap(), Value::Int(0));
    assert_eq!(ack(&["first", "mail", "m2"]).await.unwrap(), Value::Int(1));
    assert!(resolution(h, &q, "first").await.is_empty());
    assert_eq!(outbox(h, &q).await, ["second"]);
    // The job still holds its dependents: their hash stays with it.
    assert!(exists(h, &q, &flow_key(&q, "dependents", "first")).await);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_ack_of_a_gone_job_s_last_edge_deletes_its_dependents(h: &Harness) {
    let q = h.queue::<Json>("outbox_ack_gone");
    q.enqueue(NewJob::new(json!(1)).id("a").unwrap())
        .await
        .unwrap();
    give_dependents(h, &q, "a", &["q b"], None).await;
    let removed = raw_call(h, &q, "remove", &["a"]).await.unwrap();
    assert_eq!(removed, Value::Int(1));
    assert!(exists(h, &q, &flow_key(&q, "dependents", "a")).await);
    let acked = raw_call(h, &q, "flow_ack", &["a", "q", "b"]).await.unwrap();
    assert_eq!(acked, Value::Int(1));
    assert!(!exists(h, &q, &flow_key(&q, "dependents", "a")).await);
    assert!(outbox(h, &q).await.is_empty());
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_outbox_refuses_a_bad_count_with_badarg_count(h: &Harness) {
    let q = h.queue::<Json>("outbox_bad_count");
    for args in [&["COUNT", "0"][..], &["COUNT", "x"], &["COUNT"]] {
        assert_eq!(refused(h, &q, "flow_outbox", args).await, "BADARG count");
    }
}

#[echomq_testkit::case]
pub(super) async fn flow_outbox_refuses_jobs_without_an_id_with_badarg_jobs(h: &Harness) {
    let q = h.queue::<Json>("outbox_no_jobs");
    assert_eq!(
        refused(h, &q, "flow_outbox", &["JOBS"]).await,
        "BADARG jobs"
    );
}

#[echomq_testkit::case]
pub(super) async fn flow_outbox_refuses_a_bad_id_in_jobs_with_badarg_jobs(h: &Harness) {
    let q = h.queue::<Json>("outbox_bad_jobs");
    for bad in ["a b", "*", "{x}", ""] {
        let args = ["JOBS", "ok", bad];
        assert_eq!(refused(h, &q, "flow_outbox", &args).await, "BADARG jobs");
    }
}

#[echomq_testkit::case]
pub(super) async fn flow_outbox_refuses_an_unknown_option_with_syntax(h: &Harness) {
    let q = h.queue::<Json>("outbox_syntax");
    let error = refused(h, &q, "flow_outbox", &["LIMIT", "3"]).await;
    assert!(error.starts_with("SYNTAX"), "{error}");
}

#[echomq_testkit::case]
pub(super) async fn flow_ack_refuses_groups_not_whole_with_badarg_edges(h: &Harness) {
    let q = h.queue::<Json>("ack_edges");
    for args in [&[][..], &["a"], &["a", "q"], &["a", "q", "b", "c"]] {
        assert_eq!(refused(h, &q, "flow_ack", args).await, "BADARG edges");
    }
}

#[echomq_testkit::case]
pub(super) async fn flow_ack_refuses_a_bad_id_with_badarg_id(h: &Harness) {
    let q = h.queue::<Json>("ack_id");
    let args = ["a", "q", "b", "a b", "q", "b"];
    assert_eq!(refused(h, &q, "flow_ack", &args).await, "BADARG id");
}

#[echomq_testkit::case]
pub(super) async fn flow_ack_refuses_a_bad_queue_name_with_badarg_queue(h: &Harness) {
    let q = h.queue::<Json>("ack_queue");
    for bad in ["", "q{x}", "a b", "ñ"] {
        let args = ["a", bad, "b"];
        assert_eq!(refused(h, &q, "flow_ack", &args).await, "BADARG queue");
    }
}

#[echomq_testkit::case]
pub(super) async fn flow_ack_refuses_a_bad_dependent_with_badarg_dependent(h: &Harness) {
    let q = h.queue::<Json>("ack_dependent");
    for bad in ["", "*", "b c", "{b}"] {
        let args = ["a", "q", bad];
        assert_eq!(refused(h, &q, "flow_ack", &args).await, "BADARG dependent");
    }
}

#[echomq_testkit::case]
pub(super) async fn flow_commands_refuse_a_key_of_the_wrong_type_with_wrongtype(h: &Harness) {
    let q = h.queue::<Json>("outbox_wrongtype");
    two_resolutions(h, &q).await;
    // A later edge's key of the wrong type refuses the whole call.
    let _: () = redis::cmd("SET")
        .arg(flow_key(&q, "dependents", "second"))
        .arg("x")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let args = ["first", "mail", "m1", "second", "other:q", "s1"];
    let error = refused(h, &q, "flow_ack", &args).await;
    assert!(error.starts_with("WRONGTYPE"), "{error}");
    assert_eq!(resolution(h, &q, "first").await["left"], "2");
    let error = refused(h, &q, "flow_outbox", &[]).await;
    assert!(error.starts_with("WRONGTYPE"), "{error}");
}
