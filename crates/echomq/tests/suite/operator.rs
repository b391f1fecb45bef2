//! The operator plane: Admin (pause, resume, drain, obliterate, registry),
//! Jobs (update, progress, log, remove, reprocess, list) and the events
//! reader. Every case runs on a server (wire 4) and again on wire 6 (the
//! module's `EMQ.*`); one more test drives both wires through the same
//! verbs on one server and compares the keyspaces they leave.

#[path = "operator/cases.rs"]
mod cases;
use crate::common;

use common::{Harness, retry_now};
use echomq::{Connector, FailAction, NewJob, Queue};
use echomq_testkit::invariant::queue_keys;
use serde_json::{Value, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);

#[tokio::test]
async fn a_merged_reader_on_a_cluster_refuses_a_second_queue() {
    let h = Harness::cluster().await;
    let (a, b) = (h.queue::<Value>("cl_a"), h.queue::<Value>("cl_b"));
    let mut reader = h.connector.merged_events().await.unwrap();
    reader.add(&a, echomq::EventsFrom::Now).await.unwrap();
    let err = reader
        .add(&b, echomq::EventsFrom::Now)
        .await
        .expect_err("a second queue's stream is in another slot");
    assert!(
        matches!(err, echomq::Error::BadArgument { name: "queue", .. }),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains("already reads queue cl_a"), "{text}");
    assert!(
        text.contains("read queue cl_b with a reader of its own"),
        "{text}"
    );
    // The reader still reads the first, alone.
    assert_eq!(
        reader.queues().map(|q| q.as_str()).collect::<Vec<_>>(),
        ["cl_a"]
    );
    a.enqueue(NewJob::new(json!(1)).id("j").unwrap())
        .await
        .unwrap();
    let batch = reader.next_within(Duration::from_secs(10)).await.unwrap();
    assert_eq!(batch.len(), 1, "{batch:?}");
    assert_eq!(batch[0].0.as_str(), "cl_a");
}

/// The same operator traffic, verb for verb, on one queue.
async fn operator_traffic(q: &Queue<Value>) {
    for n in 0..4 {
        q.enqueue(NewJob::new(json!(n)).priority((n % 2) as u8))
            .await
            .unwrap();
    }
    q.enqueue(NewJob::new(json!("once")).attempts(1))
        .await
        .unwrap();
    let later = q
        .enqueue(NewJob::new(json!("later")).after(Duration::from_secs(3600)))
        .await
        .unwrap()
        .id;
    q.admin().pause().await.unwrap();
    assert!(q.claim("w", LEASE, 10).await.unwrap().is_empty());
    q.admin().resume().await.unwrap();
    let held = q.claim("w", LEASE, 3).await.unwrap();
    let (a, b, c) = (&held[0], &held[1], &held[2]);
    q.jobs().progress(&a.id, a.token, &50).await.unwrap();
    q.jobs().log(&a.id, "one").await.unwrap();
    q.jobs().log(&a.id, "two").await.unwrap();
    q.jobs().update(&b.id, &json!({"v": 2})).await.unwrap();
    q.complete(&a.id, a.token, &"r").await.unwrap();
    retry_now(q, b, "oops").await;
    q.fail(&c.id, c.token, "bad", FailAction::Dead)
        .await
        .unwrap();
    q.jobs().reprocess(&a.id).await.unwrap();
    q.jobs().reprocess(&c.id).await.unwrap();
    q.jobs().cancel(&later).await.unwrap();
    q.jobs().log(&later, "cancelled").await.unwrap();
    q.jobs()
        .remove(&b.id, echomq::IfActive::Refuse)
        .await
        .unwrap();
    let next = q.claim_one("w", LEASE).await.unwrap().unwrap();
    q.admin()
        .drain(echomq::DrainScope::PENDING_AND_SCHEDULED)
        .await
        .unwrap();
    q.jobs()
        .remove(&next.id, echomq::IfActive::Force)
        .await
        .unwrap();
}

/// The queue's keyspace with its name, timestamps and stream ids masked:
/// what `docs/protocol.md` says both wires must leave identical.
/// A metrics hash's outcome counts and its histograms' sample counts.
async fn metrics_counts(conn: &mut redis::aio::MultiplexedConnection, key: &str) -> String {
    let fields: Vec<(String, u64)> = redis::cmd("HGETALL")
        .arg(key)
        .query_async(conn)
        .await
        .unwrap();
    let mut counts = std::collections::BTreeMap::new();
    for (field, n) in fields {
        let name = match field.as_str() {
            "ws" | "rs" => continue,
            f if f.starts_with('w') => "wait_samples".to_string(),
            f if f.starts_with('r') => "run_samples".to_string(),
            _ => field,
        };
        *counts.entry(name).or_insert(0) += n;
    }
    format!("{counts:?}")
}

async fn normalized(h: &Harness, q: &Queue<Value>) -> Vec<String> {
    const TIMES: [&str; 5] = ["created_at", "run_at", "claimed_at", "finished_at", "token"];
    let mut conn = h.raw(q).await;
    let base = q.keys().base().to_string();
    let mut out = Vec::new();
    for key in queue_keys(h.urls(), q.keys()).await.unwrap() {
        // Which metrics window a call wrote is the clock's, and so are the
        // ms its samples measured: the total's counts are compared.
        if key.contains(":metrics:") {
            if key == q.keys().metrics_total() {
                out.push(format!(
                    "<base>:metrics:total {}",
                    metrics_counts(&mut conn, &key).await
                ));
            }
            continue;
        }
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        let content = match kind.as_str() {
            "hash" => {
                let mut fields: Vec<(String, String)> = redis::cmd("HGETALL")
                    .arg(&key)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                for (field, value) in &mut fields {
                    if TIMES.contains(&field.as_str()) {
                        *value = "<time>".into();
                    }
                }
                fields.sort();
                format!("{fields:?}")
            }
            "zset" => {
                let mut members: Vec<(String, String)> = redis::cmd("ZRANGE")
                    .arg(&key)
                    .arg(0)
                    .arg(-1)
                    .arg("WITHSCORES")
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                if key != q.keys().pending() {
                    for (_, score) in &mut members {
                        if score != "0" {
                            *score = "<time>".into();
                        }
                    }
                }
                members.sort();
                format!("{members:?}")
            }
            "stream" => {
                let entries: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
                    .arg(&key)
                    .arg("-")
                    .arg("+")
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                let mut fields: Vec<Vec<String>> =
                    entries.into_iter().map(|(_, fields)| fields).collect();
                for entry in &mut fields {
                    for i in 1..entry.len() {
                        match entry[i - 1].as_str() {
                            "run_at" => entry[i] = "<time>".into(),
                            // A token is drawn from the clock.
                            "token" => entry[i] = "<token>".into(),
                            _ => {}
                        }
                    }
                }
                format!("{fields:?}")
            }
            "list" => {
                let lines: Vec<String> = redis::cmd("LRANGE")
                    .arg(&key)
                    .arg(0)
                    .arg(-1)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                format!("{lines:?}")
            }
            _ => {
                let value: String = redis::cmd("GET")
                    .arg(&key)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                value
            }
        };
        out.push(format!(
            "{} {kind} {content}",
            key.replacen(&base, "<base>", 1)
        ));
    }
    out
}

#[tokio::test]
async fn both_wires_leave_the_same_keyspace_after_the_same_operator_verbs() {
    let h = Harness::native().await;
    let scripts = Connector::connect(h.urls()[0].as_str()).await.unwrap();
    let on_4: Queue<Value> = scripts.queue("parity_4").unwrap();
    let on_6: Queue<Value> = h.queue("parity_6");
    operator_traffic(&on_4).await;
    operator_traffic(&on_6).await;
    h.check(&on_4).await;
    h.check(&on_6).await;
    let want = normalized(&h, &on_4).await;
    assert!(
        want.iter().any(|line| line.contains(":cancelled zset")),
        "{want:#?}"
    );
    assert_eq!(normalized(&h, &on_6).await, want);
    for q in [&on_4, &on_6] {
        q.admin().pause().await.unwrap();
        q.admin().obliterate(echomq::IfActive::Force).await.unwrap();
        assert!(queue_keys(h.urls(), q.keys()).await.unwrap().is_empty());
    }
}
