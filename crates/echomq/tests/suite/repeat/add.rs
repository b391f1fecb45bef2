//! The cases of `REPEAT.ADD` (docs/protocol.md, "Repeat"): its reply, its
//! one step (a concurrent replace race), and each refusal sent raw past
//! the client's checks (`EVAL` of the script on wire 4, `EMQ.REPEAT.ADD`
//! on wire 6), or refused by the library before anything is sent.

use crate::common::{Harness, error_text, events, raw_call};
use echomq::{Error, JobId, Repeat};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// 2100-01-01: a first occurrence that never comes during a test.
const FAR: u64 = 4_102_444_800_000;

/// The ids on `q`'s schedule set, sorted.
async fn scheduled_ids(h: &Harness, q: &echomq::Queue<Value>) -> Vec<String> {
    redis::cmd("ZRANGE")
        .arg(q.keys().schedule())
        .arg(0)
        .arg(-1)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap()
}

/// Every key of `q`.
async fn queue_keys(h: &Harness, q: &echomq::Queue<Value>) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}*", q.keys().base()))
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
    keys.sort();
    keys
}

/// Sends REPEAT.ADD raw on queue `queue` and returns its refusal's text;
/// asserts that the refusal wrote nothing: the queue holds the keys it
/// held before (an old definition and its occurrence stay as they were).
async fn refused(h: &Harness, queue: &str, args: &[&str]) -> String {
    let q = h.queue::<Value>(queue);
    let far = FAR.to_string();
    let add = raw_call(
        h,
        &q,
        "repeat_add",
        &["old", "{\"v\":1}", "1", "FIRST", &far],
    )
    .await;
    add.expect("the old definition");
    let old_definition = {
        let text: String = redis::cmd("HGET")
            .arg(q.keys().repeat())
            .arg("old")
            .query_async(&mut h.raw(&q).await)
            .await
            .unwrap();
        text
    };
    let before = queue_keys(h, &q).await;
    let got = match raw_call(h, &q, "repeat_add", args).await {
        Ok(reply) => panic!("REPEAT.ADD {args:?} was accepted: {reply:?}"),
        Err(err) => error_text(&err),
    };
    assert_eq!(
        queue_keys(h, &q).await,
        before,
        "a refused REPEAT.ADD wrote"
    );
    let still: String = redis::cmd("HGET")
        .arg(q.keys().repeat())
        .arg("old")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    assert_eq!(still, old_definition);
    got
}

#[echomq_testkit::case]
pub(super) async fn repeat_add_replies_the_replaced_definition_and_the_occurrences_deleted(
    h: &Harness,
) {
    let q = h.queue::<Value>("repeat_add_reply");
    let far = FAR.to_string();
    let new = raw_call(h, &q, "repeat_add", &["k", "{\"v\":1}", "1", "FIRST", &far]).await;
    assert_eq!(
        new.unwrap(),
        redis::Value::Array(vec![redis::Value::Nil, redis::Value::Int(0)]),
        "a new key replaces nothing and deletes nothing"
    );
    let later = (FAR + 1).to_string();
    let replace = raw_call(
        h,
        &q,
        "repeat_add",
        &["k", "{\"v\":2}", "2", "FIRST", &later],
    )
    .await;
    assert_eq!(
        replace.unwrap(),
        redis::Value::Array(vec![
            redis::Value::BulkString(b"{\"v\":1}".to_vec()),
            redis::Value::Int(1)
        ]),
        "the old definition as stored, and its one scheduled occurrence"
    );
    assert_eq!(scheduled_ids(h, &q).await, [format!("repeat:k:{later}")]);
    let without_first = raw_call(h, &q, "repeat_add", &["k", "{\"v\":3}", "3"]);
    assert_eq!(
        without_first.await.unwrap(),
        redis::Value::Array(vec![
            redis::Value::BulkString(b"{\"v\":2}".to_vec()),
            redis::Value::Int(1)
        ])
    );
    assert!(
        scheduled_ids(h, &q).await.is_empty(),
        "no FIRST: a definition without occurrences"
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn replacing_writes_removed_for_the_old_occurrence_then_scheduled_for_the_new(
    h: &Harness,
) {
    let q = h.queue::<Value>("repeat_add_events");
    let (first, second) = (FAR.to_string(), (FAR + 7).to_string());
    raw_call(h, &q, "repeat_add", &["k", "{}", "1", "FIRST", &first])
        .await
        .unwrap();
    raw_call(h, &q, "repeat_add", &["k", "{}", "2", "FIRST", &second])
        .await
        .unwrap();
    let seen: Vec<(String, String)> = events(h, &q)
        .await
        .into_iter()
        .map(|fields| (fields[1].clone(), fields[3].clone()))
        .collect();
    let (old, new) = (format!("repeat:k:{first}"), format!("repeat:k:{second}"));
    assert_eq!(
        seen,
        [
            ("scheduled".to_string(), old.clone()),
            ("removed".to_string(), old),
            ("scheduled".to_string(), new),
        ]
    );
}

#[echomq_testkit::case]
pub(super) async fn an_old_occurrence_already_pending_is_left_alone(h: &Harness) {
    let q = h.queue::<Value>("repeat_add_pending");
    // A first occurrence long past goes pending at once.
    raw_call(
        h,
        &q,
        "repeat_add",
        &["k", "{}", "\"old\"", "FIRST", "1000"],
    )
    .await
    .unwrap();
    let far = FAR.to_string();
    let reply = raw_call(h, &q, "repeat_add", &["k", "{}", "\"new\"", "FIRST", &far])
        .await
        .unwrap();
    assert_eq!(
        reply,
        redis::Value::Array(vec![
            redis::Value::BulkString(b"{}".to_vec()),
            redis::Value::Int(0)
        ]),
        "nothing scheduled to delete"
    );
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.scheduled), (1, 1));
    let pending = q
        .jobs()
        .get(&JobId::new("repeat:k:1000").unwrap())
        .await
        .unwrap()
        .expect("the old occurrence");
    assert_eq!(pending.payload_as::<Value>().unwrap(), json!("old"));
    h.check(&q).await;
}

/// Eight adds of one key at once, for ten keys: each add is one step, so
/// the adds of a key line up, each replacing the one before it. Exactly
/// one of them found the key new, every other definition was replaced
/// exactly once, and one occurrence is left scheduled: the stored
/// definition's first, with its payload. (The old sequence of calls —
/// HGET, HSET, ZSCAN and REMOVE, SCHEDULE — let two adds read the same
/// old definition and each schedule its own occurrence.)
#[echomq_testkit::case]
pub(super) async fn concurrent_replaces_line_up_and_leave_one_occurrence(h: &Harness) {
    const ADDS: u64 = 8;
    let q = h.queue::<Value>("repeat_add_race");
    for round in 0..10 {
        let key = format!("race{round}");
        let start = Arc::new(tokio::sync::Barrier::new(ADDS as usize));
        let adds = (0..ADDS).map(|i| {
            let (q, key, start) = (q.clone(), key.clone(), start.clone());
            tokio::spawn(async move {
                let every = Repeat::every(Duration::from_secs(3600 + i));
                start.wait().await;
                q.repeat(&key, every, &json!(i)).await.unwrap()
            })
        });
        let mut added = Vec::new();
        for add in adds.collect::<Vec<_>>() {
            added.push(add.await.unwrap());
        }
        let stored = q
            .repeats()
            .await
            .unwrap()
            .into_iter()
            .find(|d| d.key == key)
            .expect("the stored definition");
        let prefix = format!("repeat:{key}:");
        let ids: Vec<String> = scheduled_ids(h, &q)
            .await
            .into_iter()
            .filter(|id| id.starts_with(&prefix))
            .collect();
        let run_at = stored.first().unwrap();
        assert_eq!(ids, [format!("{prefix}{run_at}")], "{key}: one occurrence");
        let job = q
            .jobs()
            .get(&JobId::new(ids[0].clone()).unwrap())
            .await
            .unwrap();
        assert_eq!(job.unwrap().payload_as::<Value>().unwrap(), stored.payload);
        let new_keys = added.iter().filter(|a| a.replaced.is_none()).count();
        assert_eq!(new_keys, 1, "{key}: exactly one add found the key new");
        let mut replaced: Vec<Value> = added
            .iter()
            .filter_map(|a| a.replaced.as_ref().map(|d| d.payload.clone()))
            .chain([stored.payload.clone()])
            .collect();
        replaced.sort_by_key(|v| v.as_u64());
        let all: Vec<Value> = (0..ADDS).map(|i| json!(i)).collect();
        assert_eq!(
            replaced, all,
            "{key}: every definition replaced once, but the stored one"
        );
    }
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_key_with_a_colon_is_refused_badarg_key(h: &Harness) {
    let got = refused(h, "repeat_add_colon", &["a:b", "{}", "1"]).await;
    assert_eq!(got, "BADARG key");
}

#[echomq_testkit::case]
pub(super) async fn a_key_with_a_control_character_is_refused_badarg_key(h: &Harness) {
    let got = refused(h, "repeat_add_esc", &["a\u{1b}[2J", "{}", "1"]).await;
    assert_eq!(got, "BADARG key");
}

#[echomq_testkit::case]
pub(super) async fn a_key_with_whitespace_or_a_brace_is_refused_badarg_key(h: &Harness) {
    for key in ["a b", "a{b", "a}b", "a\tb"] {
        let got = refused(h, "repeat_add_space", &[key, "{}", "1"]).await;
        assert_eq!(got, "BADARG key", "{key:?}");
    }
}

#[echomq_testkit::case]
pub(super) async fn an_empty_key_is_refused_badarg_key(h: &Harness) {
    let got = refused(h, "repeat_add_empty", &["", "{}", "1"]).await;
    assert_eq!(got, "BADARG key");
}

/// 232 bytes pass (the occurrence id of any run-at is a job id); 233 do
/// not.
#[echomq_testkit::case]
pub(super) async fn a_key_over_232_bytes_is_refused_badarg_key(h: &Harness) {
    let q = h.queue::<Value>("repeat_add_long");
    let longest = "k".repeat(232);
    let most = format!("{}", echomq::protocol::arg::MAX_INT);
    raw_call(h, &q, "repeat_add", &[&longest, "{}", "1", "FIRST", &most])
        .await
        .expect("232 bytes");
    let id = format!("repeat:{longest}:{most}");
    assert_eq!(id.len(), 256);
    assert!(
        q.jobs()
            .get(&JobId::new(id).unwrap())
            .await
            .unwrap()
            .is_some()
    );
    let got = refused(h, "repeat_add_long", &[&"k".repeat(233), "{}", "1"]).await;
    assert_eq!(got, "BADARG key");
}

#[echomq_testkit::case]
pub(super) async fn a_missing_definition_is_refused_badarg_definition(h: &Harness) {
    let got = refused(h, "repeat_add_nodef", &["k"]).await;
    assert_eq!(got, "BADARG definition");
}

#[echomq_testkit::case]
pub(super) async fn a_missing_payload_is_refused_badarg_payload(h: &Harness) {
    let got = refused(h, "repeat_add_nopayload", &["k", "{}"]).await;
    assert_eq!(got, "BADARG payload");
}

#[echomq_testkit::case]
pub(super) async fn a_first_that_is_no_run_at_is_refused_badarg_first(h: &Harness) {
    for first in ["-1", "+5", "soon", "9007199254740992"] {
        let got = refused(h, "repeat_add_first", &["k", "{}", "1", "FIRST", first]).await;
        assert_eq!(got, "BADARG first", "{first:?}");
    }
    let got = refused(h, "repeat_add_first", &["k", "{}", "1", "FIRST"]).await;
    assert_eq!(got, "BADARG first", "FIRST without its value");
}

#[echomq_testkit::case]
pub(super) async fn a_priority_over_255_is_refused_badarg_priority(h: &Harness) {
    let got = refused(h, "repeat_add_prio", &["k", "{}", "1", "PRIORITY", "256"]).await;
    assert_eq!(got, "BADARG priority");
}

#[echomq_testkit::case]
pub(super) async fn zero_attempts_are_refused_badarg_attempts(h: &Harness) {
    let got = refused(h, "repeat_add_att", &["k", "{}", "1", "ATTEMPTS", "0"]).await;
    assert_eq!(got, "BADARG attempts");
}

#[echomq_testkit::case]
pub(super) async fn an_unknown_option_is_refused_syntax(h: &Harness) {
    let got = refused(h, "repeat_add_opt", &["k", "{}", "1", "EVERY", "5"]).await;
    assert_eq!(got, "SYNTAX unknown option EVERY");
}

#[echomq_testkit::case]
pub(super) async fn a_repeat_hash_of_the_wrong_type_is_refused_wrongtype(h: &Harness) {
    let q = h.queue::<Value>("repeat_add_wrongtype");
    let far = FAR.to_string();
    raw_call(h, &q, "repeat_add", &["k", "{}", "1", "FIRST", &far])
        .await
        .unwrap();
    let mut conn = h.raw(&q).await;
    let _: () = redis::cmd("RENAME")
        .arg(q.keys().repeat())
        .arg(format!("{}:kept", q.keys().base()))
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg(q.keys().repeat())
        .arg("not a hash")
        .query_async(&mut conn)
        .await
        .unwrap();
    let later = (FAR + 1).to_string();
    let err = raw_call(h, &q, "repeat_add", &["k", "{}", "2", "FIRST", &later])
        .await
        .unwrap_err();
    assert!(error_text(&err).starts_with("WRONGTYPE"), "{err:?}");
    assert_eq!(
        scheduled_ids(h, &q).await,
        [format!("repeat:k:{far}")],
        "the old occurrence stays: nothing was written"
    );
}

/// A bad cadence never reaches the server: the library refuses it, and an
/// add with a bad key, before sending anything (the server parses no
/// cadence: docs/protocol.md, "Repeat").
#[echomq_testkit::case]
pub(super) async fn a_bad_cadence_or_key_is_refused_by_the_library_before_anything_is_sent(
    h: &Harness,
) {
    let q = h.queue::<Value>("repeat_add_library");
    let err = Repeat::cron("61 * * * *").unwrap_err();
    assert!(
        matches!(err, Error::BadArgument { name: "repeat", .. }),
        "{err:?}"
    );
    let err = Repeat::cron("0 * * * *").unwrap().tz("Mars/Olympus");
    assert!(
        matches!(err, Err(Error::BadArgument { name: "repeat", .. })),
        "{err:?}"
    );
    let err = Repeat::every(Duration::from_secs(1)).tz("UTC");
    assert!(
        matches!(err, Err(Error::BadArgument { name: "tz", .. })),
        "{err:?}"
    );
    let every = || Repeat::every(Duration::from_secs(60));
    let err = q.repeat("a:b", every(), &json!(1)).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::BadArgument {
                name: "repeat key",
                ..
            }
        ),
        "{err:?}"
    );
    let err = q
        .repeat(&"k".repeat(233), every(), &json!(1))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::BadArgument {
                name: "repeat key",
                ..
            }
        ),
        "{err:?}"
    );
    let err = q.repeat("a\u{1b}b", every(), &json!(1)).await.unwrap_err();
    assert!(matches!(err, Error::Name(_)), "{err:?}");
    assert!(queue_keys(h, &q).await.is_empty(), "nothing was sent");
}
