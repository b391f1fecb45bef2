//! The cases of `control_characters.rs`: each sends its bad name raw (past
//! the client's checks, as `EVAL` of the script on wire 4 and `EMQ.*` on
//! wire 6), then through the library, whose own check refuses it before
//! anything is sent; the server stays empty.

use crate::common::{Harness, error_text, raw_call, script_text};
use echomq::protocol::NameError;
use echomq::{Error, NewJob, Wire};
use serde_json::{Value, json};

/// ESC, then the sequences a terminal reads as "erase the screen" and
/// "write the clipboard" (OSC 52).
const ESC_ID: &str = "a\u{1b}[2J\u{1b}]52;c;aGk=\u{7}";

/// Sends `args` to script `verb`'s command on queue `queue`, past the
/// client's checks; the refusal's text (panics if it was accepted).
async fn raw_refusal(h: &Harness, queue: &str, verb: &str, args: &[&str]) -> String {
    let q = h.queue::<Value>(queue);
    match raw_call(h, &q, verb, args).await {
        Ok(reply) => panic!("{verb} {args:?} was accepted: {reply:?}"),
        Err(err) => error_text(&err),
    }
}

/// Asserts that the server holds no key at all: a refused command wrote
/// nothing, not even a queue's registry entry.
async fn assert_nothing_written(h: &Harness) {
    let q = h.queue::<Value>("probe");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("*")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    assert_eq!(keys, Vec::<String>::new(), "a refused command wrote");
}

/// A job id holding `bad` is refused `BADARG id` by ENQUEUE, SCHEDULE,
/// ENQUEUE.BULK and GET sent raw, and by the library's `NewJob::id`.
async fn job_id_refused(h: &Harness, bad: &str) {
    let id = format!("job{bad}1");
    for (verb, args) in [
        ("enqueue", vec![id.as_str(), "{}"]),
        ("schedule", vec![id.as_str(), "{}", "+0"]),
        (
            "enqueue_bulk",
            vec!["*", "{}", "0", "1", id.as_str(), "{}", "0", "1"],
        ),
        ("get", vec![id.as_str()]),
    ] {
        let got = raw_refusal(h, "ctl_ids", verb, &args).await;
        assert_eq!(got, "BADARG id", "{verb} {id:?}");
    }
    let err = NewJob::new(json!(1)).id(id.as_str()).map(drop).unwrap_err();
    let found = bad.chars().find(char::is_ascii_control).unwrap();
    assert!(
        matches!(&err, Error::Name(NameError::JobCharacter { found: f, .. }) if *f == found),
        "{err:?}"
    );
    assert!(!err.to_string().contains(bad), "quoted escaped: {err}");
    assert_nothing_written(h).await;
}

#[echomq_testkit::case]
pub(super) async fn a_job_id_with_esc_is_refused_badarg_id(h: &Harness) {
    job_id_refused(h, ESC_ID).await;
}

#[echomq_testkit::case]
pub(super) async fn a_job_id_with_nul_is_refused_badarg_id(h: &Harness) {
    job_id_refused(h, "\0").await;
}

#[echomq_testkit::case]
pub(super) async fn a_job_id_with_del_is_refused_badarg_id(h: &Harness) {
    job_id_refused(h, "\u{7f}").await;
}

#[echomq_testkit::case]
pub(super) async fn a_group_with_a_control_character_is_refused_badarg_group(h: &Harness) {
    for group in ["g\u{1b}[2J", "g\0", "g\u{7f}", "\u{1}"] {
        for (verb, args, want) in [
            ("enqueue", vec!["*", "{}", "GROUP", group], "BADARG group"),
            (
                "schedule",
                vec!["*", "{}", "+0", "GROUP", group],
                "BADARG group",
            ),
            ("group_pause", vec![group], "BADARG group"),
            ("group_concurrency", vec![group, "MAX", "2"], "BADARG group"),
            ("group_counts", vec![group], "BADARG group"),
            ("groups", vec!["AFTER", group], "BADARG after"),
        ] {
            let got = raw_refusal(h, "ctl_groups", verb, &args).await;
            assert_eq!(got, want, "{verb} {group:?}");
        }
        let q = h.queue::<Value>("ctl_groups");
        let err = q
            .enqueue(NewJob::new(json!(1)).group(group))
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::BadArgument { name: "group", .. }),
            "{err:?}"
        );
        let err = q.admin().group(group).map(drop).unwrap_err();
        assert!(
            matches!(err, Error::BadArgument { name: "group", .. }),
            "{err:?}"
        );
        let err = q.admin().groups(Some(group), 10).await.unwrap_err();
        assert!(
            matches!(err, Error::BadArgument { name: "after", .. }),
            "{err:?}"
        );
    }
    assert_nothing_written(h).await;
}

#[echomq_testkit::case]
pub(super) async fn a_dedup_key_with_a_control_character_is_refused_badarg_dedup(h: &Harness) {
    for key in ["k\u{1b}]52;c;aGk=\u{7}", "k\0", "k\u{7f}"] {
        for (verb, args) in [
            ("enqueue", vec!["*", "{}", "DEDUP", key]),
            ("enqueue", vec!["*", "{}", "DEDUP", key, "DEBOUNCE", "10"]),
            ("schedule", vec!["*", "{}", "+0", "DEDUP", key]),
            ("dedup_owner", vec![key]),
            ("dedup_release", vec![key]),
        ] {
            let got = raw_refusal(h, "ctl_dedup", verb, &args).await;
            assert_eq!(got, "BADARG dedup", "{verb} {key:?}");
        }
        let q = h.queue::<Value>("ctl_dedup");
        let err = q
            .enqueue(NewJob::new(json!(1)).dedup(key))
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::BadArgument { name: "dedup", .. }),
            "{err:?}"
        );
        let err = q.jobs().dedup_owner(key).await.unwrap_err();
        assert!(
            matches!(err, Error::BadArgument { name: "dedup", .. }),
            "{err:?}"
        );
        let err = q.jobs().release_dedup(key).await.unwrap_err();
        assert!(
            matches!(err, Error::BadArgument { name: "dedup", .. }),
            "{err:?}"
        );
    }
    assert_nothing_written(h).await;
}

#[echomq_testkit::case]
pub(super) async fn a_queue_name_with_a_control_character_is_refused_badarg_queue(h: &Harness) {
    let probe = h.queue::<Value>("probe");
    let mut conn = h.raw(&probe).await;
    for queue in ["q\u{1b}[2J", "q\0", "q\u{7f}"] {
        let base = format!("emq:{{{queue}}}");
        let mut cmd = match h.connector.wire() {
            Wire::Native => redis::cmd("EMQ.ENQUEUE"),
            Wire::Script => {
                let mut cmd = redis::cmd("EVAL");
                cmd.arg(script_text("enqueue")).arg(1);
                cmd
            }
        };
        cmd.arg(&base).arg("*").arg("{}");
        let got = match cmd.query_async::<redis::Value>(&mut conn).await {
            Ok(reply) => panic!("{base:?} was accepted: {reply:?}"),
            Err(err) => error_text(&err),
        };
        assert_eq!(got, "BADARG queue", "{base:?}");
        let err = h.connector.queue::<Value>(queue).map(drop).unwrap_err();
        assert!(
            matches!(err, Error::Name(NameError::QueueCharacter { .. })),
            "{err:?}"
        );
    }
    assert_nothing_written(h).await;
}
