//! FLOW.SETTLE (docs/protocol.md, "Deciding a job that has dependents"):
//! a completed job's dependents in its own queue past its completion's
//! budget, taken in one call of that queue; each refusal writes nothing.
//! Each case runs on wire 4 and again on wire 6.

use crate::common::{
    Harness, entries_by_name, error_text, monitored, monitored_words, raw_call, writes,
};
use crate::flow_own_queue::{
    complete_root, flow_hash, id_of, outbox_len, relay_unblocks, root_and, state,
};
use echomq::{JobId, JobState, Queue, Submitted};
use echomq_protocol::arg::{FLOW_INLINE_EDGES, FLOW_SETTLE_PAGE_MIN};
use redis::Value;
use serde_json::Value as Json;

/// A root in `q` with `more` dependents in `q` past the completion's
/// budget, and `others`; submitted.
async fn root_past_the_budget(
    q: &Queue<Json>,
    more: u64,
    others: &[(&str, &Queue<Json>)],
) -> Submitted {
    let names: Vec<String> = (0..FLOW_INLINE_EDGES + more)
        .map(|i| format!("d{i}"))
        .collect();
    let mut dependents: Vec<(&str, &Queue<Json>)> = names.iter().map(|n| (n.as_str(), q)).collect();
    dependents.extend_from_slice(others);
    root_and(q, &dependents).await
}

/// [`root_past_the_budget`], the root completed raw: its resolution left
/// for the dependents past the budget and `others`.
async fn past_the_budget(
    h: &Harness,
    q: &Queue<Json>,
    more: u64,
    others: &[(&str, &Queue<Json>)],
) -> (Submitted, JobId) {
    let submitted = root_past_the_budget(q, more, others).await;
    let root = id_of(&submitted, "root");
    let reply = complete_root(h, q, false, &[]).await;
    assert_eq!(reply, Value::BulkString(b"relay_completed".to_vec()));
    (submitted, root)
}

/// The one job `q` has pending, claimed.
async fn claimed(q: &Queue<Json>) -> echomq::Claimed<Json> {
    let lease = std::time::Duration::from_secs(30);
    q.claim("w", lease, 1).await.unwrap().pop().unwrap()
}

/// The ids in `q`'s blocked set, sorted.
async fn blocked_ids(h: &Harness, q: &Queue<Json>) -> Vec<String> {
    let mut ids: Vec<String> = redis::cmd("ZRANGE")
        .arg(format!("{}:blocked", q.keys().base()))
        .arg(0)
        .arg(-1)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
    ids.sort();
    ids
}

/// `FLOW.SETTLE root args…` on `q`: `[told, resolved, unblocked]`.
async fn settle(h: &Harness, q: &Queue<Json>, root: &JobId, options: &[&str]) -> [i64; 3] {
    let mut args = vec![root.as_str()];
    args.extend(options);
    match raw_call(h, q, "flow_settle", &args).await.unwrap() {
        Value::Array(counts) => match &counts[..] {
            [
                Value::Int(told),
                Value::Int(resolved),
                Value::Int(unblocked),
            ] => [*told, *resolved, *unblocked],
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

/// `FLOW.SETTLE args…` on `q`, refused: its error text; asserts it wrote
/// nothing.
async fn refused(h: &Harness, q: &Queue<Json>, args: &[&str]) -> String {
    let before = writes(h, q).await;
    let err = raw_call(h, q, "flow_settle", args)
        .await
        .expect_err("FLOW.SETTLE is refused");
    assert_eq!(writes(h, q).await, before, "a refused FLOW.SETTLE wrote");
    error_text(&err)
}

#[echomq_testkit::case]
pub(super) async fn flow_settle_takes_the_own_queue_dependents_past_the_budget(h: &Harness) {
    let q = h.queue::<Json>("settle");
    let (_, root) = past_the_budget(h, &q, 2, &[]).await;
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.blocked), (FLOW_INLINE_EDGES, 2));
    // The two the completion left (past its budget, in HGETALL order).
    let taken = blocked_ids(h, &q).await;
    let before = entries_by_name(h, &q).await.len();
    assert_eq!(settle(h, &q, &root, &[]).await, [2, 2, 2]);
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.blocked), (FLOW_INLINE_EDGES + 2, 0));
    // Acknowledged whole: the outbox and the resolution are gone; the
    // root keeps its dependents hash, every field told.
    assert_eq!(outbox_len(h, &q).await, 0);
    assert!(flow_hash(h, &q, "resolution", &root).await.is_empty());
    let told = flow_hash(h, &q, "dependents", &root).await;
    assert_eq!(told.len() as u64, FLOW_INLINE_EDGES + 2);
    assert!(told.values().all(|value| value == "1"), "{told:?}");
    // One entry of each event, as the completion writes them.
    let entries = entries_by_name(h, &q).await;
    assert_eq!(entries.len(), before + 2);
    for (entry, name) in entries[before..]
        .iter()
        .zip(["dependency_resolved", "unblocked"])
    {
        let mut ids = entry.1.clone();
        ids.sort();
        assert_eq!((entry.0.as_str(), ids), (name, taken.clone()));
    }
    // Again: nothing left, nothing written.
    let writes_before = writes(h, &q).await;
    assert_eq!(settle(h, &q, &root, &[]).await, [0, 0, 0]);
    assert_eq!(writes(h, &q).await, writes_before);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_settle_takes_at_most_count(h: &Harness) {
    let q = h.queue::<Json>("settle_count");
    let (_, root) = past_the_budget(h, &q, 3, &[]).await;
    assert_eq!(settle(h, &q, &root, &["COUNT", "2"]).await, [2, 2, 2]);
    let resolution = flow_hash(h, &q, "resolution", &root).await;
    assert_eq!(resolution.get("left").map(String::as_str), Some("1"));
    assert_eq!(q.admin().counts().await.unwrap().blocked, 1);
    assert_eq!(settle(h, &q, &root, &["COUNT", "2"]).await, [1, 1, 1]);
    assert_eq!(outbox_len(h, &q).await, 0);
    assert_eq!(q.admin().counts().await.unwrap().blocked, 0);
    h.check(&q).await;
}

/// The resolution's `cursor` of `root` in `q`, when it has one.
async fn cursor(h: &Harness, q: &Queue<Json>, root: &JobId) -> Option<String> {
    flow_hash(h, q, "resolution", root).await.remove("cursor")
}

/// Writes `value` as the resolution's `cursor` of `root` in `q`.
async fn set_cursor(h: &Harness, q: &Queue<Json>, root: &JobId, value: &str) {
    let _: () = redis::cmd("HSET")
        .arg(format!("{}:resolution:{root}", q.keys().base()))
        .arg("cursor")
        .arg(value)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
}

#[echomq_testkit::case]
pub(super) async fn flow_settle_goes_on_from_the_cursor_it_left(h: &Harness) {
    let q = h.queue::<Json>("settle_cursor");
    // 1,300 dependents: a hashtable, 300 of them left, spread through it.
    let (_, root) = past_the_budget(h, &q, 300, &[]).await;
    assert_eq!(cursor(h, &q, &root).await, None);
    let mut cursors = Vec::new();
    for left in [200, 100] {
        assert_eq!(
            settle(h, &q, &root, &["COUNT", "100"]).await,
            [100, 100, 100]
        );
        let resolution = flow_hash(h, &q, "resolution", &root).await;
        assert_eq!(resolution["left"], left.to_string());
        assert_eq!(q.admin().counts().await.unwrap().blocked, left);
        // Part way through the table: the next call starts there.
        let at = resolution["cursor"].clone();
        assert_ne!(at, "0", "the first 100 of 300 end before the table does");
        cursors.push(at);
        h.check(&q).await;
    }
    assert_ne!(cursors[0], cursors[1], "each call moves the cursor on");
    assert_eq!(
        settle(h, &q, &root, &["COUNT", "100"]).await,
        [100, 100, 100]
    );
    assert_eq!(outbox_len(h, &q).await, 0);
    assert_eq!(q.admin().counts().await.unwrap().blocked, 0);
    let told = flow_hash(h, &q, "dependents", &root).await;
    assert!(told.values().all(|value| value == "1"), "{told:?}");
    h.check(&q).await;
}

/// The `HSCAN`s of key `key` the server ran while `settled` ran (read
/// with `MONITOR`, which lists the calls a script or the module makes),
/// each as its cursor and its count.
async fn hscans_during(
    h: &Harness,
    q: &Queue<Json>,
    key: &str,
    settled: impl std::future::Future<Output = [i64; 3]>,
) -> (Vec<(String, u64)>, [i64; 3]) {
    let (lines, counts) = monitored(h, q, settled).await;
    let hscans = lines
        .iter()
        .filter_map(|line| match monitored_words(line)[..] {
            ["HSCAN" | "hscan", scanned, cursor, _, count] if scanned == key => {
                Some((cursor.to_string(), count.parse().unwrap()))
            }
            _ => None,
        })
        .collect();
    (hscans, counts)
}

#[echomq_testkit::case]
pub(super) async fn flow_settle_s_last_call_reads_no_page_past_its_last_dependent(h: &Harness) {
    let q = h.queue::<Json>("settle_last");
    let (_, root) = past_the_budget(h, &q, 300, &[]).await;
    let key = format!("{}:dependents:{root}", q.keys().base());
    assert_eq!(
        settle(h, &q, &root, &["COUNT", "200"]).await,
        [200, 200, 200]
    );
    assert_ne!(cursor(h, &q, &root).await.as_deref(), Some("0"));
    // The last 100, with 50 of the budget to spare: the call stops at the
    // last, and does not go around the table again from 0.
    let (hscans, counts) =
        hscans_during(h, &q, &key, settle(h, &q, &root, &["COUNT", "150"])).await;
    assert_eq!(counts, [100, 100, 100]);
    assert!(!hscans.is_empty());
    assert!(hscans.iter().all(|(at, _)| at != "0"), "{hscans:?}");
    // Each page asks for at least FLOW_SETTLE_PAGE_MIN fields.
    assert!(
        hscans
            .iter()
            .all(|(_, count)| *count >= FLOW_SETTLE_PAGE_MIN),
        "{hscans:?}"
    );
    assert_eq!(outbox_len(h, &q).await, 0);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_settle_from_a_cursor_this_server_never_gave_tells_every_dependent(
    h: &Harness,
) {
    let q = h.queue::<Json>("settle_foreign");
    let (_, root) = past_the_budget(h, &q, 300, &[]).await;
    // As a replica promoted after a failover holds its old primary's.
    set_cursor(h, &q, &root, "1234567890123").await;
    assert_eq!(settle(h, &q, &root, &[]).await, [300, 300, 300]);
    assert_eq!(outbox_len(h, &q).await, 0);
    assert_eq!(q.admin().counts().await.unwrap().blocked, 0);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_settle_reads_a_cursor_that_is_not_a_number_as_0(h: &Harness) {
    let q = h.queue::<Json>("settle_junk");
    let (_, root) = past_the_budget(h, &q, 300, &[]).await;
    for junk in ["junk", "-1", "12345678901234567890"] {
        set_cursor(h, &q, &root, junk).await;
        assert_eq!(
            settle(h, &q, &root, &["COUNT", "100"]).await,
            [100, 100, 100],
            "{junk}"
        );
    }
    assert_eq!(outbox_len(h, &q).await, 0);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_settle_tells_an_edge_a_relay_resolved_first_and_resolves_it_once(
    h: &Harness,
) {
    let q = h.queue::<Json>("settle_raced");
    let (_, root) = past_the_budget(h, &q, 1, &[]).await;
    let left = blocked_ids(h, &q).await;
    let text = flow_hash(h, &q, "resolution", &root).await["text"].clone();
    // A relay's FLOW.RESOLVE lands first, its FLOW.ACK not yet sent.
    let name = q.name().to_string();
    let args = [
        name.as_str(),
        root.as_str(),
        text.as_str(),
        left[0].as_str(),
    ];
    let words = raw_call(h, &q, "flow_resolve", &args).await.unwrap();
    assert_eq!(
        words,
        Value::Array(vec![Value::BulkString(b"unblocked".to_vec())])
    );
    // FLOW.SETTLE tells it, takes nothing, and acknowledges the whole.
    assert_eq!(settle(h, &q, &root, &[]).await, [1, 0, 0]);
    assert_eq!(outbox_len(h, &q).await, 0);
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.blocked), (FLOW_INLINE_EDGES + 1, 0));
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_settle_leaves_other_queues_dependents_to_the_relay(h: &Harness) {
    let q = h.queue::<Json>("settle_mixed");
    let other = h.queue::<Json>("settle_mixed_other");
    let (submitted, root) = past_the_budget(h, &q, 1, &[("there", &other)]).await;
    let there = id_of(&submitted, "there");
    assert_eq!(settle(h, &q, &root, &[]).await, [1, 1, 1]);
    let resolution = flow_hash(h, &q, "resolution", &root).await;
    assert_eq!(resolution.get("left").map(String::as_str), Some("1"));
    let told = flow_hash(h, &q, "dependents", &root).await;
    assert_eq!(told[&format!("{} {there}", other.name())], "0");
    assert_eq!(state(&other, &there).await, JobState::Blocked);
    relay_unblocks(h, &q, &other, &there).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_settle_of_a_job_not_in_the_outbox_writes_nothing(h: &Harness) {
    let q = h.queue::<Json>("settle_none");
    let submitted = root_and(&q, &[("next", &q)]).await;
    let root = id_of(&submitted, "root");
    let before = writes(h, &q).await;
    assert_eq!(settle(h, &q, &root, &[]).await, [0, 0, 0]);
    assert_eq!(writes(h, &q).await, before);
    assert_eq!(q.admin().counts().await.unwrap().blocked, 1);
}

#[echomq_testkit::case]
pub(super) async fn flow_settle_leaves_a_resolution_other_than_completed_to_the_relay(h: &Harness) {
    let q = h.queue::<Json>("settle_dead");
    let submitted = root_and(&q, &[("next", &q)]).await;
    let (root, next) = (id_of(&submitted, "root"), id_of(&submitted, "next"));
    let token = claimed(&q).await.token.to_string();
    let failed = raw_call(h, &q, "fail", &[root.as_str(), &token, "boom", "DEAD"]).await;
    assert_eq!(failed.unwrap(), Value::BulkString(b"relay_dead".to_vec()));
    let before = writes(h, &q).await;
    assert_eq!(settle(h, &q, &root, &[]).await, [0, 0, 0]);
    assert_eq!(writes(h, &q).await, before);
    assert_eq!(state(&q, &next).await, JobState::Blocked);
    assert_eq!(outbox_len(h, &q).await, 1);
}

/// The flow transitions the server ran since [`log_every_command`], by
/// name (`flow_settle`, `flow_resolve`, …), read from the slow log: wire
/// 6's `EMQ.FLOW.SETTLE`, wire 4's `FCALL emq_flow_settle_<tag>`.
async fn flow_calls(h: &Harness, q: &Queue<Json>) -> Vec<String> {
    let log: Vec<redis::Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
    let mut names = Vec::new();
    for entry in log {
        let Value::Array(fields) = entry else {
            continue;
        };
        let Some(Value::Array(args)) = fields.get(3) else {
            continue;
        };
        let words: Vec<String> = args
            .iter()
            .take(2)
            .filter_map(|arg| match arg {
                Value::BulkString(bytes) => Some(String::from_utf8_lossy(bytes).to_lowercase()),
                _ => None,
            })
            .collect();
        // The word that names the transition: `emq.flow.settle`, or
        // `emq_flow_settle_<16 hex digits of the library's tag>`.
        let Some(word) = words.iter().find(|word| word.starts_with("emq")) else {
            continue;
        };
        let mut name = word.replace('.', "_");
        if let Some((head, tag)) = name.rsplit_once('_')
            && tag.len() == 16
            && tag.chars().all(|c| c.is_ascii_hexdigit())
        {
            name = head.to_string();
        }
        if let Some(verb) = name.strip_prefix("emq_").filter(|v| v.starts_with("flow_")) {
            names.push(verb.to_string());
        }
    }
    names
}

/// Logs every command from now on, the log emptied (the slow log at 0 µs).
async fn log_every_command(h: &Harness, q: &Queue<Json>) {
    let _: () = redis::pipe()
        .cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(0)
        .arg("slowlog-max-len")
        .arg(1024)
        .ignore()
        .cmd("SLOWLOG")
        .arg("RESET")
        .ignore()
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
}

#[echomq_testkit::case]
pub(super) async fn a_completion_through_the_library_settles_its_own_queue(h: &Harness) {
    let q = h.queue::<Json>("settle_library");
    root_past_the_budget(&q, 1, &[]).await;
    let job = claimed(&q).await;
    log_every_command(h, &q).await;
    q.complete(&job.id, job.token, &"done").await.unwrap();
    let counts = q.admin().counts().await.unwrap();
    assert_eq!((counts.pending, counts.blocked), (FLOW_INLINE_EDGES + 1, 0));
    assert_eq!(outbox_len(h, &q).await, 0);
    // The relay read the outbox, settled the edge the completion left, and
    // read again: no FLOW.RESOLVE and no FLOW.ACK.
    let mut calls = flow_calls(h, &q).await;
    calls.reverse();
    assert_eq!(calls, ["flow_outbox", "flow_settle", "flow_outbox"]);
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_settle_refuses_a_bad_id_with_badarg_id(h: &Harness) {
    let q = h.queue::<Json>("settle_bad_id");
    for bad in ["", "*", "a b", "{x}"] {
        assert_eq!(refused(h, &q, &[bad]).await, "BADARG id", "{bad:?}");
    }
}

#[echomq_testkit::case]
pub(super) async fn flow_settle_refuses_a_bad_count_with_badarg_count(h: &Harness) {
    let q = h.queue::<Json>("settle_bad_count");
    for bad in ["0", "-1", "x", ""] {
        let error = refused(h, &q, &["a", "COUNT", bad]).await;
        assert_eq!(error, "BADARG count", "{bad:?}");
    }
}

#[echomq_testkit::case]
pub(super) async fn flow_settle_refuses_an_unknown_option_with_syntax(h: &Harness) {
    let q = h.queue::<Json>("settle_syntax");
    let error = refused(h, &q, &["a", "LIMIT", "2"]).await;
    assert!(error.starts_with("SYNTAX"), "{error}");
}

#[echomq_testkit::case]
pub(super) async fn flow_settle_refuses_a_key_of_the_wrong_type_with_wrongtype(h: &Harness) {
    let q = h.queue::<Json>("settle_wrongtype");
    let (_, root) = past_the_budget(h, &q, 1, &[]).await;
    let base = q.keys().base().to_string();
    for key in [
        format!("{base}:resolution:{root}"),
        format!("{base}:dependents:{root}"),
        format!("{base}:blocked"),
    ] {
        let kept: Vec<u8> = redis::cmd("DUMP")
            .arg(&key)
            .query_async(&mut h.raw(&q).await)
            .await
            .unwrap();
        crate::common::set_a_string(h, &q, &key).await;
        let error = refused(h, &q, &[root.as_str()]).await;
        assert!(error.starts_with("WRONGTYPE"), "{key}: {error}");
        let _: () = redis::cmd("RESTORE")
            .arg(&key)
            .arg(0)
            .arg(kept)
            .arg("REPLACE")
            .query_async(&mut h.raw(&q).await)
            .await
            .unwrap();
    }
    // Each key back, the same call settles.
    assert_eq!(settle(h, &q, &root, &[]).await, [1, 1, 1]);
    h.check(&q).await;
}
