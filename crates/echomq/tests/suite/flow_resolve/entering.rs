//! A job FLOW.RESOLVE unblocks enters pending as every path into pending
//! does (its group's lane, LIFO, its start-by deadline), and a waiter on a
//! dependent its policy decides hears the outcome.

use super::cases::{members, resolve};
use super::common::{Harness, marked_waited, server_now};
use crate::flow_add::cases::{flow_add, hash};
use echomq::{JobId, NewJob, Outcome, Queue};
use serde_json::Value as Json;
use std::time::Duration;

const DONE: &str = "completed p 0 ";

#[echomq_testkit::case(cluster)]
pub(super) async fn an_unblocked_job_enters_its_group_s_lane(h: &Harness) {
    let q = h.queue::<Json>("resolve_lane");
    flow_add(h, &q, &["f", "f:g", "g", "{}", "up p", "", "GROUP", "g1"]).await;
    let group = q.admin().group("g1").unwrap();
    assert_eq!(group.counts().await.unwrap().pending, 0);
    assert_eq!(
        resolve(h, &q, &[["up", "p", DONE, "f:g"]]).await,
        ["unblocked"]
    );
    assert_eq!(group.counts().await.unwrap().pending, 1, "in its lane");
    let claimed = q.claim_one("w", Duration::from_secs(30)).await.unwrap();
    assert_eq!(claimed.map(|c| c.id.to_string()).as_deref(), Some("f:g"));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn an_unblocked_lifo_job_is_claimed_before_older_jobs(h: &Harness) {
    let q = h.queue::<Json>("resolve_lifo");
    flow_add(h, &q, &["f", "f:l", "l", "{}", "up p", "", "LIFO"]).await;
    q.enqueue(NewJob::new(Json::Null).id("older").unwrap())
        .await
        .unwrap();
    assert_eq!(
        resolve(h, &q, &[["up", "p", DONE, "f:l"]]).await,
        ["unblocked"]
    );
    let first = q.claim_one("w", Duration::from_secs(30)).await.unwrap();
    assert_eq!(first.map(|c| c.id.to_string()).as_deref(), Some("f:l"));
    h.check(&q).await;
}

#[echomq_testkit::case(cluster)]
pub(super) async fn an_unblocked_job_keeps_its_start_by_deadline(h: &Harness) {
    let q = h.queue::<Json>("resolve_deadline");
    let add = ["f", "f:s", "s", "{}", "up p", "", "START_WITHIN", "600000"];
    flow_add(h, &q, &add).await;
    let start_by = hash(h, &q, "job:f:s").await["start_by"].clone();
    assert_eq!(
        resolve(h, &q, &[["up", "p", DONE, "f:s"]]).await,
        ["unblocked"]
    );
    assert_eq!(members(h, &q, "deadlines").await, ["f:s"]);
    let score: String = redis::cmd("ZSCORE")
        .arg(format!("{}:deadlines", q.keys().base()))
        .arg("f:s")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    assert_eq!(score, start_by);
    assert!(start_by.parse::<u64>().unwrap() > server_now(h, &q).await);
    h.check(&q).await;
}

/// Waits for `id`'s outcome while `resolution` reaches it under `policy`.
async fn heard(h: &Harness, q: &Queue<Json>, id: &str, policy: &str, resolution: &str) -> Outcome {
    let add = ["f", id, "r", "{}", "up p", "", "ON_FAILURE", policy];
    flow_add(h, q, &add).await;
    let job = JobId::new(id).unwrap();
    let waiting = {
        let (q, job) = (q.clone(), job.clone());
        tokio::spawn(async move { q.outcome::<Json>(&job, Duration::from_secs(30)).await })
    };
    marked_waited(h.raw(q).await, q, std::slice::from_ref(&job)).await;
    resolve(h, q, &[["up", "p", resolution, id]]).await;
    waiting.await.unwrap().unwrap()
}

#[echomq_testkit::case]
pub(super) async fn a_waiter_on_the_dependent_hears_dead_and_cancelled(h: &Harness) {
    let q = h.queue::<Json>("resolve_waiter");
    assert_eq!(
        heard(h, &q, "f:d", "fail", "dead p 1 boom").await,
        Outcome::Dead {
            error: "dependency up p is dead".into(),
            attempts: 0
        }
    );
    assert_eq!(
        heard(h, &q, "f:c", "cancel", "removed -").await,
        Outcome::Cancelled
    );
    h.check(&q).await;
}

/// Parks waiting job `id` in `blocked` on the edge `up p`, raw: what
/// FLOW.WAIT will write for a job in hand.
async fn block_raw(h: &Harness, q: &Queue<Json>, id: &str) {
    let base = q.keys().base().to_string();
    let _: () = redis::pipe()
        .cmd("LREM")
        .arg(format!("{base}:fifo"))
        .arg(0)
        .arg(id)
        .ignore()
        .cmd("ZADD")
        .arg(format!("{base}:blocked"))
        .arg(0)
        .arg(id)
        .ignore()
        .cmd("HSET")
        .arg(q.keys().job(&JobId::new(id).unwrap()))
        .arg(&["state", "blocked", "deps", "1", "deps_left", "1"])
        .ignore()
        .cmd("HSET")
        .arg(format!("{base}:deps:{id}"))
        .arg(&["up p", "wait"])
        .ignore()
        .cmd("HSET")
        .arg(q.keys().meta())
        .arg(&["flows", "1"])
        .ignore()
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
}

#[echomq_testkit::case]
pub(super) async fn a_dependent_its_policy_kills_frees_its_dedup_key(h: &Harness) {
    let q = h.queue::<Json>("resolve_dedup");
    let job = NewJob::new(Json::Null).id("held").unwrap().dedup("k");
    q.enqueue(job).await.unwrap();
    block_raw(h, &q, "held").await;
    assert_eq!(
        q.jobs()
            .dedup_owner("k")
            .await
            .unwrap()
            .map(|id| id.to_string())
            .as_deref(),
        Some("held")
    );
    let dead = ["up", "p", "dead p 1 boom", "held"];
    assert_eq!(resolve(h, &q, &[dead]).await, ["dead"]);
    assert_eq!(q.jobs().dedup_owner("k").await.unwrap(), None, "released");
    h.check(&q).await;
}
