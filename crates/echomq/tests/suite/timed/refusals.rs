//! Each refusal of `TIME_LIMIT`, `START_BY` and `START_WITHIN`, sent raw
//! (past the client's own checks): the same text from the script and the
//! module, and nothing written.

use super::common::{Harness, error_text, raw_call};
use echomq::Queue;
use echomq::protocol::QueueKey;
use serde_json::Value;

/// Sends `verb args` raw and returns its refusal; asserts the queue has no
/// key at all afterwards (each case uses a fresh queue).
async fn refused(h: &Harness, queue: &str, verb: &str, args: &[&str]) -> String {
    let q: Queue<Value> = h.queue(queue);
    let err = match raw_call(h, &q, verb, args).await {
        Ok(reply) => panic!("{verb} {args:?} was accepted: {reply:?}"),
        Err(err) => error_text(&err),
    };
    let mut exists = redis::cmd("EXISTS");
    for key in &QueueKey::ALL[1..] {
        exists.arg(q.keys().key(*key));
    }
    let found: u64 = exists.query_async(&mut h.raw(&q).await).await.unwrap();
    assert_eq!(found, 0, "{verb} {args:?} refused with {err:?} but wrote");
    err
}

/// A unix ms later than any test's clock (2100-01-01).
const FAR: &str = "4102444800000";

#[echomq_testkit::case(cluster)]
pub(super) async fn time_limit_zero_is_refused_badarg_time_limit(h: &Harness) {
    let args = ["j", "{}", "TIME_LIMIT", "0"];
    assert_eq!(
        refused(h, "tl_zero", "enqueue", &args).await,
        "BADARG time_limit"
    );
    let args = ["j", "{}", "+0", "TIME_LIMIT", "-5"];
    assert_eq!(
        refused(h, "tl_zero_s", "schedule", &args).await,
        "BADARG time_limit"
    );
}

#[echomq_testkit::case]
pub(super) async fn time_limit_without_a_value_is_refused_badarg_time_limit(h: &Harness) {
    let args = ["j", "{}", "TIME_LIMIT"];
    assert_eq!(
        refused(h, "tl_none", "enqueue", &args).await,
        "BADARG time_limit"
    );
}

#[echomq_testkit::case(cluster)]
pub(super) async fn start_by_in_the_past_is_refused_badarg_start_by(h: &Harness) {
    let args = ["j", "{}", "START_BY", "1000"];
    assert_eq!(
        refused(h, "sb_past", "enqueue", &args).await,
        "BADARG start_by"
    );
    let args = ["j", "{}", "+0", "START_BY", "1000"];
    assert_eq!(
        refused(h, "sb_past_s", "schedule", &args).await,
        "BADARG start_by"
    );
}

#[echomq_testkit::case]
pub(super) async fn start_by_zero_is_refused_badarg_start_by(h: &Harness) {
    let args = ["j", "{}", "START_BY", "0"];
    assert_eq!(
        refused(h, "sb_zero", "enqueue", &args).await,
        "BADARG start_by"
    );
}

#[echomq_testkit::case(cluster)]
pub(super) async fn start_by_not_later_than_the_run_at_is_refused_badarg_start_by(h: &Harness) {
    let args = ["j", "{}", FAR, "START_BY", FAR];
    assert_eq!(
        refused(h, "sb_run_at", "schedule", &args).await,
        "BADARG start_by"
    );
    // A deadline in the future but before a relative run-at.
    let soon = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 60_000)
        .to_string();
    let args = ["j", "{}", "+3600000", "START_BY", soon.as_str()];
    assert_eq!(
        refused(h, "sb_run_at2", "schedule", &args).await,
        "BADARG start_by"
    );
}

#[echomq_testkit::case(cluster)]
pub(super) async fn start_within_zero_is_refused_badarg_start_within(h: &Harness) {
    let args = ["j", "{}", "START_WITHIN", "0"];
    assert_eq!(
        refused(h, "sw_zero", "enqueue", &args).await,
        "BADARG start_within"
    );
}

#[echomq_testkit::case(cluster)]
pub(super) async fn start_within_not_past_the_run_at_is_refused_badarg_start_within(h: &Harness) {
    let args = ["j", "{}", "+600000", "START_WITHIN", "600000"];
    assert_eq!(
        refused(h, "sw_run_at", "schedule", &args).await,
        "BADARG start_within"
    );
    let args = ["j", "{}", FAR, "START_WITHIN", "60000"];
    assert_eq!(
        refused(h, "sw_run_at2", "schedule", &args).await,
        "BADARG start_within"
    );
}

#[echomq_testkit::case(cluster)]
pub(super) async fn start_by_with_start_within_is_refused_syntax(h: &Harness) {
    let args = ["j", "{}", "START_BY", FAR, "START_WITHIN", "60000"];
    assert_eq!(
        refused(h, "sb_sw", "enqueue", &args).await,
        "SYNTAX START_BY and START_WITHIN exclude each other"
    );
}

#[echomq_testkit::case(cluster)]
pub(super) async fn debounce_with_a_start_by_deadline_is_refused_syntax(h: &Harness) {
    let text = "SYNTAX DEBOUNCE and a start-by deadline exclude each other";
    let args = [
        "j",
        "{}",
        "DEDUP",
        "k",
        "DEBOUNCE",
        "1000",
        "START_WITHIN",
        "60000",
    ];
    assert_eq!(refused(h, "db_sw", "enqueue", &args).await, text);
    let args = ["j", "{}", "START_BY", FAR, "DEDUP", "k", "DEBOUNCE", "1000"];
    assert_eq!(refused(h, "db_sb", "enqueue", &args).await, text);
}

#[echomq_testkit::case]
pub(super) async fn a_bad_value_is_refused_before_the_deadline_rules(h: &Harness) {
    // Both SYNTAX rules would apply; the bad ATTEMPTS value comes first.
    let args = [
        "j",
        "{}",
        "START_BY",
        FAR,
        "START_WITHIN",
        "1",
        "ATTEMPTS",
        "0",
    ];
    assert_eq!(
        refused(h, "order1", "enqueue", &args).await,
        "BADARG attempts"
    );
    // DEDUP's own refusal before the deadline's.
    let args = ["j", "{}", "START_BY", "1", "DEBOUNCE", "5"];
    assert_eq!(
        refused(h, "order2", "enqueue", &args).await,
        "SYNTAX DEBOUNCE needs DEDUP"
    );
    // The SYNTAX rules before the clock's: START_BY 1 is in the past too.
    let args = ["j", "{}", "START_BY", "1", "START_WITHIN", "5"];
    assert_eq!(
        refused(h, "order3", "enqueue", &args).await,
        "SYNTAX START_BY and START_WITHIN exclude each other"
    );
}
