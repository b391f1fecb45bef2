//! RETENTION (docs/protocol.md, "Retention by age"): reads and writes the
//! six retention settings of a queue, with its event; each refusal named,
//! the same text on both wires, and nothing written.

use super::common::{Harness, error_text, events, meta_field, raw_call};
use echomq::{Error, Queue, Retention, RetentionChange};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Duration;

const HOUR: Duration = Duration::from_secs(3600);

/// The retention of a queue no one configured.
const DEFAULTS: Retention = Retention {
    completed: 1000,
    completed_for: None,
    dead: 10000,
    dead_for: None,
    cancelled: 10000,
    cancelled_for: None,
};

/// What a refused call must leave as it was: the meta hash and the events.
async fn written(h: &Harness, q: &Queue<Value>) -> (HashMap<String, String>, u64) {
    let mut conn = h.raw(q).await;
    let meta: HashMap<String, String> = redis::cmd("HGETALL")
        .arg(q.keys().meta())
        .query_async(&mut conn)
        .await
        .unwrap();
    let events: u64 = redis::cmd("XLEN")
        .arg(q.keys().events())
        .query_async(&mut conn)
        .await
        .unwrap();
    (meta, events)
}

/// Sends RETENTION with `args` raw on the harness's wire; asserts it is
/// refused with `refusal` and wrote nothing.
async fn refused(h: &Harness, name: &str, args: &[&str], refusal: &str) {
    let q = h.queue::<Value>(name);
    q.enqueue(json!(1)).await.unwrap();
    let before = written(h, &q).await;
    let err = raw_call(h, &q, "retention", args).await.unwrap_err();
    assert_eq!(error_text(&err), refusal, "{args:?}");
    assert_eq!(written(h, &q).await, before, "the refused call wrote");
}

#[echomq_testkit::case(cluster)]
pub(super) async fn retention_without_an_option_reads_the_defaults_and_writes_nothing(h: &Harness) {
    let q = h.queue::<Value>("retention_read");
    assert_eq!(q.admin().retention().await.unwrap(), DEFAULTS);
    assert_eq!(
        q.admin()
            .set_retention(RetentionChange::new())
            .await
            .unwrap(),
        DEFAULTS
    );
    assert_eq!(written(h, &q).await, (HashMap::new(), 0));
}

#[echomq_testkit::case(cluster)]
pub(super) async fn retention_writes_the_settings_given_and_keeps_the_others(h: &Harness) {
    let q = h.queue::<Value>("retention_write");
    let set = q
        .admin()
        .set_retention(RetentionChange::new().completed(5).completed_for(HOUR))
        .await
        .unwrap();
    let want = Retention {
        completed: 5,
        completed_for: Some(HOUR),
        ..DEFAULTS
    };
    assert_eq!(set, want);
    let set = q
        .admin()
        .set_retention(RetentionChange::new().dead(0).cancelled_for(2 * HOUR))
        .await
        .unwrap();
    let want = Retention {
        dead: 0,
        cancelled_for: Some(2 * HOUR),
        ..want
    };
    assert_eq!(set, want);
    assert_eq!(q.admin().retention().await.unwrap(), want);
    assert_eq!(
        meta_field(h, &q, "keep_cancelled_for").await.as_deref(),
        Some("7200000")
    );
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn an_age_of_0_removes_the_age_rule(h: &Harness) {
    let q = h.queue::<Value>("retention_off");
    q.admin()
        .set_retention(RetentionChange::new().completed_for(HOUR).dead_for(HOUR))
        .await
        .unwrap();
    let set = q
        .admin()
        .set_retention(RetentionChange::new().completed_for_off())
        .await
        .unwrap();
    assert_eq!((set.completed_for, set.dead_for), (None, Some(HOUR)));
    assert_eq!(meta_field(h, &q, "keep_completed_for").await, None);
    // Raw, `COMPLETED_FOR 0` on a queue without the rule writes nothing.
    raw_call(h, &q, "retention", &["COMPLETED_FOR", "0"])
        .await
        .unwrap();
    assert_eq!(meta_field(h, &q, "keep_completed_for").await, None);
}

#[echomq_testkit::case(cluster)]
pub(super) async fn retention_writes_a_retention_set_event_with_the_six_settings(h: &Harness) {
    let q = h.queue::<Value>("retention_event");
    q.admin()
        .set_retention(RetentionChange::new().completed(7).dead_for(HOUR))
        .await
        .unwrap();
    q.admin().retention().await.unwrap();
    let all = events(h, &q).await;
    assert_eq!(
        all,
        [[
            "event",
            "retention_set",
            "completed",
            "7",
            "completed_for",
            "0",
            "dead",
            "10000",
            "dead_for",
            "3600000",
            "cancelled",
            "10000",
            "cancelled_for",
            "0"
        ]],
        "one entry, for the write only"
    );
}

#[echomq_testkit::case(cluster)]
pub(super) async fn retention_trims_nothing_itself(h: &Harness) {
    let q = h.queue::<Value>("retention_no_trim");
    q.enqueue_bulk((0..4).map(|n| json!(n))).await.unwrap();
    for job in q.claim("w", HOUR, 4).await.unwrap() {
        q.complete(&job.id, job.token, &()).await.unwrap();
    }
    q.admin()
        .set_retention(RetentionChange::new().completed(1))
        .await
        .unwrap();
    assert_eq!(q.admin().counts().await.unwrap().completed, 4);
    q.sweep_stalled(3, 1000).await.unwrap();
    assert_eq!(q.admin().counts().await.unwrap().completed, 1);
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn a_stored_age_that_is_not_a_whole_number_reads_as_no_age_rule(h: &Harness) {
    let q = h.queue::<Value>("retention_odd");
    let _: () = redis::cmd("HSET")
        .arg(q.keys().meta())
        .arg("keep_dead_for")
        .arg("soon")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    assert_eq!(q.admin().retention().await.unwrap().dead_for, None);
}

#[echomq_testkit::case(cluster)]
pub(super) async fn retention_refuses_a_negative_count_badarg(h: &Harness) {
    refused(
        h,
        "retention_negative",
        &["COMPLETED", "-1"],
        "BADARG completed",
    )
    .await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn retention_refuses_an_age_that_is_not_an_integer_badarg(h: &Harness) {
    refused(
        h,
        "retention_fraction",
        &["DEAD_FOR", "1.5"],
        "BADARG dead_for",
    )
    .await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn retention_refuses_an_age_above_2_pow_53_badarg(h: &Harness) {
    let args = ["CANCELLED_FOR", "9007199254740992"];
    refused(h, "retention_huge", &args, "BADARG cancelled_for").await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn retention_refuses_an_option_without_its_value_badarg(h: &Harness) {
    refused(h, "retention_no_value", &["DEAD"], "BADARG dead").await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn retention_refuses_a_bad_option_after_a_good_one_writing_neither(h: &Harness) {
    let args = ["COMPLETED", "5", "CANCELLED", "x"];
    refused(h, "retention_second_bad", &args, "BADARG cancelled").await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn retention_refuses_an_unknown_option_syntax(h: &Harness) {
    let args = ["KEEP", "5"];
    refused(h, "retention_unknown", &args, "SYNTAX unknown option KEEP").await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn set_retention_refuses_an_age_under_1_ms_and_sends_nothing(h: &Harness) {
    let q = h.queue::<Value>("retention_zero_age");
    let change = RetentionChange::new()
        .completed(3)
        .completed_for(Duration::ZERO);
    let err = q.admin().set_retention(change).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::BadArgument {
                name: "completed_for",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(written(h, &q).await, (HashMap::new(), 0));
}

#[echomq_testkit::case(cluster)]
pub(super) async fn the_invariant_check_flags_an_age_rule_retention_never_writes(h: &Harness) {
    let q = h.queue::<Value>("retention_invariant");
    q.admin()
        .set_retention(RetentionChange::new().dead_for(HOUR))
        .await
        .unwrap();
    h.check(&q).await;
    for bad in ["0", "1.5", "soon"] {
        let _: () = redis::cmd("HSET")
            .arg(q.keys().meta())
            .arg("keep_dead_for")
            .arg(bad)
            .query_async(&mut h.raw(&q).await)
            .await
            .unwrap();
        let found = echomq_testkit::invariant::check_invariant(h.urls(), q.keys())
            .await
            .unwrap_err();
        assert!(found.contains("meta keep_dead_for"), "{bad}: {found}");
    }
}
