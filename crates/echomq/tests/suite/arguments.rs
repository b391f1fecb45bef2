//! Wire 4 checks its arguments before reading a key: each malformed call
//! answers BADARG <name> or SYNTAX, and writes nothing. The base key is
//! checked first: one that breaks the rule `<prefix>:{<queue>}` answers
//! BADARG queue whatever the other arguments are.
//!
//! These tests speak to the scripts through the public client where it can
//! express the mistake, and otherwise through raw `EVAL` of the same script
//! text the client loads (`echomq::script_source`), with the keys the
//! registry of controls lists.

use crate::common;

use common::{Harness, command_of_script, error_text, script_text};
use echomq::protocol::Keyspace;
use echomq_testkit::invariant::queue_keys;

/// Runs script `name` with the keys the registry lists and `args`; returns
/// the error text.
async fn refusal(h: &Harness, keys: &Keyspace, name: &str, args: &[&str]) -> String {
    let mut conn = h.raw(&h.queue::<()>(keys.queue().as_str())).await;
    let (transition, _, _) = command_of_script(name);
    let key_list = transition.control().keys;
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(script_text(name)).arg(key_list.len());
    for key in key_list {
        cmd.arg(keys.key(*key));
    }
    for arg in args {
        cmd.arg(*arg);
    }
    match cmd.query_async::<redis::Value>(&mut conn).await {
        Ok(value) => panic!("{name} {args:?} was accepted: {value:?}"),
        Err(err) => error_text(&err),
    }
}

/// One malformed call: the script, its ARGV, the refusal.
type Case = (&'static str, &'static [&'static str], &'static str);

/// Every malformed call both wires must refuse the same way.
fn cases() -> Vec<Case> {
    vec![
        ("enqueue", &["a b", "{}"], "BADARG id"),
        ("enqueue", &["{x}", "{}"], "BADARG id"),
        ("enqueue", &["a\u{1b}[2J", "{}"], "BADARG id"),
        ("enqueue", &["a\0b", "{}"], "BADARG id"),
        ("enqueue", &["a\u{7f}", "{}"], "BADARG id"),
        ("enqueue", &["j", "{}", "GROUP", "g\u{1b}"], "BADARG group"),
        ("enqueue", &["j", "{}", "DEDUP", "k\u{7}"], "BADARG dedup"),
        ("enqueue", &["j"], "BADARG payload"),
        (
            "enqueue",
            &["j", "{}", "PRIORITY", "256"],
            "BADARG priority",
        ),
        ("enqueue", &["j", "{}", "PRIORITY", "-1"], "BADARG priority"),
        ("enqueue", &["j", "{}", "PRIORITY"], "BADARG priority"),
        ("enqueue", &["j", "{}", "ATTEMPTS", "0"], "BADARG attempts"),
        (
            "enqueue",
            &["j", "{}", "ATTEMPTS", "9007199254740992"],
            "BADARG attempts",
        ),
        (
            "enqueue",
            &["j", "{}", "ATTEMPTS", "1.5"],
            "BADARG attempts",
        ),
        (
            "enqueue",
            &["j", "{}", "COLOUR", "red"],
            "SYNTAX unknown option COLOUR",
        ),
        ("enqueue", &["j", "{}", "TRACE", "x"], "BADARG traceparent"),
        ("enqueue", &["j", "{}", "TRACE"], "BADARG traceparent"),
        (
            "schedule",
            &[
                "j",
                "{}",
                "5",
                "TRACE",
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",
            ],
            "BADARG traceparent",
        ),
        // A trace is checked before a key is read, as every argument.
        (
            "enqueue",
            &["j", "{}", "GROUP", "g", "TRACE", "00-1-2-01"],
            "BADARG traceparent",
        ),
        ("enqueue_bulk", &["j", "{}", "0"], "BADARG jobs"),
        (
            "enqueue_bulk",
            &["j", "{}", "0", "1", "k l", "{}", "0", "1"],
            "BADARG id",
        ),
        ("claim", &["w", "0"], "BADARG lease_ms"),
        ("claim", &["w", "abc"], "BADARG lease_ms"),
        ("claim", &["w", "1000", "COUNT", "0"], "BADARG count"),
        (
            "claim",
            &["w", "1000", "LIMIT", "3"],
            "SYNTAX unknown option LIMIT",
        ),
        ("claim", &[], "BADARG worker"),
        ("complete", &["j", "x"], "BADARG token"),
        ("complete", &["j", "1", "RESULT"], "BADARG result"),
        (
            "complete",
            &["j", "1", "EXTRA"],
            "SYNTAX unknown option EXTRA",
        ),
        ("fail", &["j", "1"], "BADARG error"),
        (
            "fail",
            &["j", "1", "e", "RETRY_IN", "-5"],
            "BADARG retry_in",
        ),
        (
            "fail",
            &["j", "1", "e", "DEAD", "CANCELLED"],
            "SYNTAX RETRY_IN, DEAD, CANCELLED and RATE_LIMITED exclude each other",
        ),
        ("complete_bulk", &[], "BADARG jobs"),
        ("complete_bulk", &["j", "1"], "BADARG jobs"),
        (
            "complete_bulk",
            &["j", "1", "", "k", "t", ""],
            "BADARG token",
        ),
        // The CLAIM tail: four more words, checked before any key.
        ("complete_bulk", &["j", "1", "", "CLAIM"], "BADARG jobs"),
        (
            "complete_bulk",
            &["j", "1", "", "COUNT", "w", "1000", "5"],
            "BADARG jobs",
        ),
        (
            "complete_bulk",
            &["j", "1", "", "CLAIM", "w", "0", "5"],
            "BADARG lease_ms",
        ),
        (
            "complete_bulk",
            &["j", "1", "", "CLAIM", "w", "1000", "0"],
            "BADARG count",
        ),
        (
            "complete_bulk",
            &["j", "1", "", "CLAIM", "w", "1000", "x"],
            "BADARG count",
        ),
        (
            "complete_bulk",
            &["j", "x", "", "claim", "w", "1000", "5"],
            "BADARG token",
        ),
        ("get", &["bad id"], "BADARG id"),
        ("get", &["bad\u{1b}id"], "BADARG id"),
        ("get", &["j", "extra"], "SYNTAX unknown option extra"),
        ("counts", &["extra"], "SYNTAX unknown option extra"),
        // An argument quoted in a refusal comes back byte for byte.
        ("promote", &["ñ"], "SYNTAX unknown option ñ"),
        ("schedule", &["j", "{}"], "BADARG run_at"),
        ("schedule", &["j", "{}", "soon"], "BADARG run_at"),
        ("schedule", &["j", "{}", "+x"], "BADARG run_at"),
        ("schedule", &["j", "{}", "-5"], "BADARG run_at"),
        ("schedule", &["j", "{}", "5", "REPEAT"], "BADARG repeat"),
        (
            "schedule",
            &["j", "{}", "5", "EVERY", "1"],
            "SYNTAX unknown option EVERY",
        ),
        ("schedule_bulk", &["j", "{}", "5", "0"], "BADARG jobs"),
        ("promote", &["LIMIT", "0"], "BADARG limit"),
        ("promote", &["COUNT", "5"], "SYNTAX unknown option COUNT"),
        ("delay", &["j", "1"], "BADARG ms"),
        ("delay", &["j", "1", "-1"], "BADARG ms"),
        (
            "delay",
            &["j", "1", "5", "EXTRA"],
            "SYNTAX unknown option EXTRA",
        ),
        ("reschedule", &["j"], "BADARG run_at"),
        ("reschedule", &["j", "tomorrow"], "BADARG run_at"),
        (
            "fail",
            &["j", "1", "e", "RATE_LIMITED", "-1"],
            "BADARG rate_limited",
        ),
        (
            "fail",
            &["j", "1", "e", "RATE_LIMITED", "5", "DEAD"],
            "SYNTAX RETRY_IN, DEAD, CANCELLED and RATE_LIMITED exclude each other",
        ),
        ("limit", &["MAX", "0", "PER", "1000"], "BADARG max"),
        ("limit", &["MAX", "5", "PER", "0"], "BADARG per"),
        ("limit", &["MAX", "5"], "BADARG per"),
        ("limit", &["PER", "1000"], "BADARG max"),
        (
            "limit",
            &["MAX", "5", "PER", "1000", "OFF"],
            "SYNTAX MAX and OFF exclude each other",
        ),
        (
            "limit",
            &["OFF", "PER", "5"],
            "SYNTAX MAX and OFF exclude each other",
        ),
        ("limit", &["EVERY", "5"], "SYNTAX unknown option EVERY"),
        ("concurrency", &["MAX", "0"], "BADARG max"),
        ("concurrency", &["MAX"], "BADARG max"),
        (
            "concurrency",
            &["MAX", "3", "OFF"],
            "SYNTAX MAX and OFF exclude each other",
        ),
    ]
}

#[tokio::test]
async fn malformed_arguments_answer_badarg_or_syntax_and_write_nothing() {
    let h = Harness::server().await;
    let q = h.queue::<()>("arguments");
    let keys = q.keys().clone();
    for (name, args, expected) in cases() {
        let got = refusal(&h, &keys, name, args).await;
        assert_eq!(got, expected, "{name} {args:?}");
    }
    assert!(
        queue_keys(h.urls(), &keys).await.unwrap().is_empty(),
        "a refused call wrote a key"
    );
}

#[tokio::test]
async fn arguments_are_checked_before_keys_so_bad_input_wins_over_a_missing_job() {
    let h = Harness::server().await;
    let q = h.queue::<()>("argument_order");
    // The job does not exist (which would be NOTACTIVE): the bad token is reported first.
    let got = refusal(&h, q.keys(), "complete", &["ghost", "not-a-number"]).await;
    assert_eq!(got, "BADARG token");
}

#[tokio::test]
async fn the_module_refuses_each_malformed_call_as_its_script_does() {
    let h = Harness::native().await;
    let q = h.queue::<()>("arguments");
    let mut conn = h.raw(&q).await;
    for (name, args, expected) in cases() {
        let command = command_of_script(name).2.native;
        let reply = redis::cmd(command)
            .arg(q.keys().base())
            .arg(args)
            .query_async::<redis::Value>(&mut conn)
            .await;
        let got = match reply {
            Ok(value) => panic!("{command} {args:?} was accepted: {value:?}"),
            Err(err) => error_text(&err),
        };
        assert_eq!(got, expected, "{command} {args:?}");
    }
    assert!(
        queue_keys(h.urls(), q.keys()).await.unwrap().is_empty(),
        "a refused call wrote a key"
    );
}

/// Base keys that break the rule `<prefix>:{<queue>}`, prefix and queue
/// each 1–128 bytes of `[A-Za-z0-9_.:-]`.
fn bad_base_keys() -> Vec<String> {
    let too_long = "q".repeat(129);
    vec![
        "emq:{bad queue}".into(),
        "emq:q".into(),
        "emq{q}".into(),
        "emq:{q".into(),
        "emq:{}".into(),
        format!("emq:{{{too_long}}}"),
        "bad prefix:{q}".into(),
        ":{q}".into(),
        format!("{too_long}:{{q}}"),
        "emq:{".into(),
        "emq:{q}:pending".into(),
        "emq:{q}{r}".into(),
        "".into(),
    ]
}

/// Every script of wire 4: one per command of the registry of controls.
fn script_names() -> Vec<&'static str> {
    echomq::Transition::ALL
        .iter()
        .flat_map(|t| t.control().commands().map(|(_, command)| command.script))
        .collect()
}

/// Sends `command` (an `EVAL` of a script, or an `EMQ.*` command) with each
/// bad base key, with no other argument and with each malformed call's
/// arguments: every call must answer `BADARG queue` and write nothing.
async fn assert_bad_bases_refused(
    conn: &mut redis::aio::MultiplexedConnection,
    command: impl Fn(&str) -> redis::Cmd,
) {
    let args: Vec<&[&str]> = std::iter::once(&[][..])
        .chain(cases().into_iter().map(|(_, args, _)| args))
        .collect();
    for base in bad_base_keys() {
        for args in &args {
            let mut cmd = command(&base);
            cmd.arg(*args);
            let got = match cmd.query_async::<redis::Value>(conn).await {
                Ok(value) => panic!("base {base:?} {args:?} was accepted: {value:?}"),
                Err(err) => error_text(&err),
            };
            assert_eq!(got, "BADARG queue", "base {base:?} {args:?}");
        }
    }
    let size: u64 = redis::cmd("DBSIZE").query_async(conn).await.unwrap();
    assert_eq!(size, 0, "a refused call wrote a key");
}

#[tokio::test]
async fn every_script_refuses_a_base_key_that_breaks_the_name_rule_badarg_queue_first() {
    let h = Harness::server().await;
    let mut conn = h.raw(&h.queue::<()>("q")).await;
    for name in script_names() {
        let text = script_text(name);
        assert_bad_bases_refused(&mut conn, |base| {
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(text).arg(1).arg(base);
            cmd
        })
        .await;
    }
}

#[tokio::test]
async fn every_module_command_refuses_a_base_key_that_breaks_the_name_rule_badarg_queue_first() {
    let h = Harness::native().await;
    let mut conn = h.raw(&h.queue::<()>("q")).await;
    let (_, commands): (String, Vec<String>) = redis::cmd("EMQ.VERSION")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(commands.len() > 20, "{commands:?}");
    for command in commands.iter().filter(|name| *name != "EMQ.VERSION") {
        assert_bad_bases_refused(&mut conn, |base| {
            let mut cmd = redis::cmd(command);
            cmd.arg(base);
            cmd
        })
        .await;
    }
}

/// Enqueues and reads back a job on `wire` under prefixes and queue names
/// with every allowed punctuation, and at the 128-byte limits.
async fn legitimate_base_keys_pass(h: &Harness, wire: echomq::Wire) {
    let long = "x".repeat(128);
    for (prefix, queue) in [
        ("a:b", "q"),
        ("emq", "mail.high-priority:eu_1"),
        ("a-b.c_d:", "q"),
        (long.as_str(), long.as_str()),
    ] {
        let connector = echomq::Connector::builder(h.urls()[0].clone())
            .prefix(prefix)
            .wire(wire)
            .connect()
            .await
            .unwrap();
        let q = connector.queue::<u32>(queue).unwrap();
        let job = q.enqueue(7).await.unwrap();
        let record = q.jobs().get(&job.id).await.unwrap().expect("the job");
        assert_eq!(record.payload_as::<u32>().unwrap(), 7, "{prefix} {queue}");
        assert_eq!(
            q.admin().counts().await.unwrap().pending,
            1,
            "{prefix} {queue}"
        );
    }
}

#[tokio::test]
async fn base_keys_with_colons_dots_dashes_and_128_byte_names_pass_on_wire_4() {
    legitimate_base_keys_pass(&Harness::server().await, echomq::Wire::Script).await;
}

#[tokio::test]
async fn base_keys_with_colons_dots_dashes_and_128_byte_names_pass_on_wire_6() {
    legitimate_base_keys_pass(&Harness::native().await, echomq::Wire::Native).await;
}
