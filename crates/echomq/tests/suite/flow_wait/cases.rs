//! What FLOW.WAIT writes and answers: the job in hand blocked on its new
//! edges and run again once they resolve, `ready` when they were, and the
//! fence.

use super::common::{Harness, error_text, events, raw_call};
use crate::common::writes;
use crate::flow_add::cases::{flow_add, hash};
use crate::flow_resolve::cases::{members, resolve};
use echomq::{Claimed, NewJob, Queue};
use redis::Value;
use serde_json::{Value as Json, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);

/// Claims the one pending job of `q`.
pub(crate) async fn claim_one(q: &Queue<Json>) -> Claimed<Json> {
    let mut jobs = q.claim("w", LEASE, 1).await.unwrap();
    assert_eq!(jobs.len(), 1, "one job to claim");
    jobs.pop().unwrap()
}

/// `FLOW.WAIT` of job `id` held by `token` on `edges` (queue, dependency
/// each): its word.
pub(crate) async fn flow_wait(
    h: &Harness,
    q: &Queue<Json>,
    (id, token): (&str, u64),
    edges: &[&str],
) -> redis::RedisResult<String> {
    let token = token.to_string();
    let mut args = vec![id, token.as_str()];
    args.extend_from_slice(edges);
    raw_call(h, q, "flow_wait", &args)
        .await
        .map(|reply| match reply {
            Value::BulkString(bytes) => String::from_utf8(bytes).unwrap(),
            other => panic!("{other:?}"),
        })
}

/// The id and token of `job`.
pub(crate) fn held(job: &Claimed<Json>) -> (&str, u64) {
    (job.id.as_str(), job.token)
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|w| w.to_string()).collect()
}

#[echomq_testkit::case(cluster)]
pub(super) async fn flow_wait_parks_the_job_in_hand_and_runs_it_again(h: &Harness) {
    let q = h.queue::<Json>("wait_parks");
    q.enqueue(NewJob::new(json!(1)).id("p").unwrap())
        .await
        .unwrap();
    let job = claim_one(&q).await;
    let before = redis_now_ms(h, &q).await;

    let answered = flow_wait(h, &q, held(&job), &["kids", "p:a", "wait_parks", "p:b"]).await;
    assert_eq!(answered.unwrap(), "blocked");
    let p = hash(h, &q, "job:p").await;
    assert_eq!(
        (
            p["state"].as_str(),
            p["deps"].as_str(),
            p["deps_left"].as_str()
        ),
        ("blocked", "2", "2")
    );
    assert_eq!(
        hash(h, &q, "deps:p").await.into_iter().collect::<Vec<_>>(),
        [
            ("kids p:a".to_string(), "wait".to_string()),
            ("wait_parks p:b".to_string(), "wait".to_string())
        ]
    );
    assert!(members(h, &q, "active").await.is_empty(), "out of active");
    assert_eq!(members(h, &q, "blocked").await, ["p"]);
    let checkup: u64 = redis::cmd("ZSCORE")
        .arg(format!("{}:blocked", q.keys().base()))
        .arg("p")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    assert!(checkup >= before + 300_000, "scored for its check-up");
    assert_eq!(hash(h, &q, "meta").await["flows"], "1");
    let all = events(h, &q).await;
    assert_eq!(
        all.last().unwrap(),
        &strings(&["event", "blocked", "id", "p", "deps", "2"])
    );
    h.check(&q).await;

    // The token is void: its holder can write nothing more.
    let stale = flow_wait(h, &q, held(&job), &["kids", "p:a"]).await;
    assert_eq!(error_text(&stale.unwrap_err()), "NOTACTIVE");

    // Its children end: it runs again, and waiting for them answers ready.
    let words = resolve(
        h,
        &q,
        &[
            ["kids", "p:a", "completed a 1 1", "p"],
            ["wait_parks", "p:b", "completed b 1 2", "p"],
        ],
    )
    .await;
    assert_eq!(words, ["resolved", "unblocked"]);
    let again = claim_one(&q).await;
    assert_eq!(again.id, job.id);
    assert_ne!(again.token, job.token);
    let quiet = writes(h, &q).await;
    let answered = flow_wait(h, &q, held(&again), &["kids", "p:a", "wait_parks", "p:b"]).await;
    assert_eq!(answered.unwrap(), "ready");
    assert_eq!(writes(h, &q).await, quiet, "ready writes nothing");
    assert_eq!(hash(h, &q, "job:p").await["state"], "active");
    q.complete(&again.id, again.token, &json!("done"))
        .await
        .unwrap();
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_wait_with_every_edge_resolved_answers_ready(h: &Harness) {
    let q = h.queue::<Json>("wait_ready");
    flow_add(h, &q, &["f", "f:a", "a", "{}", "up p", ""]).await;
    resolve(h, &q, &[["up", "p", "completed p 0 ", "f:a"]]).await;
    let job = claim_one(&q).await;
    let quiet = writes(h, &q).await;
    // Named twice, and already resolved: nothing to wait for.
    let answered = flow_wait(h, &q, held(&job), &["up", "p", "up", "p"]).await;
    assert_eq!(answered.unwrap(), "ready");
    assert_eq!(writes(h, &q).await, quiet, "ready writes nothing");
    let a = hash(h, &q, "job:f:a").await;
    assert_eq!(
        (
            a["state"].as_str(),
            a["deps"].as_str(),
            a["deps_left"].as_str()
        ),
        ("active", "1", "0")
    );
    // A new edge besides the resolved one blocks it, counting only the new.
    let answered = flow_wait(h, &q, held(&job), &["up", "p", "up", "q"]).await;
    assert_eq!(answered.unwrap(), "blocked");
    let a = hash(h, &q, "job:f:a").await;
    assert_eq!(
        (
            a["state"].as_str(),
            a["deps"].as_str(),
            a["deps_left"].as_str()
        ),
        ("blocked", "2", "1")
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_wait_refuses_a_stale_token(h: &Harness) {
    let q = h.queue::<Json>("wait_stale");
    q.enqueue(NewJob::new(json!(1)).id("p").unwrap())
        .await
        .unwrap();
    let job = claim_one(&q).await;
    let before = writes(h, &q).await;
    let err = flow_wait(h, &q, (job.id.as_str(), job.token + 1), &["up", "c"]).await;
    assert_eq!(error_text(&err.unwrap_err()), "NOTACTIVE");
    assert_eq!(writes(h, &q).await, before, "a refused FLOW.WAIT wrote");
    // A job not active at all is refused the same way.
    q.enqueue(NewJob::new(json!(2)).id("idle").unwrap())
        .await
        .unwrap();
    let before = writes(h, &q).await;
    let err = flow_wait(h, &q, ("idle", job.token), &["up", "c"]).await;
    assert_eq!(error_text(&err.unwrap_err()), "NOTACTIVE");
    assert_eq!(writes(h, &q).await, before, "a refused FLOW.WAIT wrote");
    assert_eq!(hash(h, &q, "job:p").await["state"], "active");
    h.check(&q).await;
}

/// The server's clock, in ms.
async fn redis_now_ms(h: &Harness, q: &Queue<Json>) -> u64 {
    let (secs, micros): (u64, u64) = redis::cmd("TIME")
        .query_async(&mut h.raw(q).await)
        .await
        .unwrap();
    secs * 1000 + micros / 1000
}

#[echomq_testkit::case]
pub(super) async fn flow_wait_leaves_active_as_delay_does(h: &Harness) {
    // Its group's place under a cap of 1 is freed, and a start-by is kept.
    let q = h.queue::<Json>("wait_as_delay");
    q.admin()
        .group("g")
        .unwrap()
        .set_concurrency_cap(1)
        .await
        .unwrap();
    let start_by = std::time::SystemTime::now() + Duration::from_secs(600);
    let first = NewJob::new(json!(1)).id("p").unwrap().group("g");
    q.enqueue(first.start_by(start_by)).await.unwrap();
    q.enqueue(NewJob::new(json!(2)).id("next").unwrap().group("g"))
        .await
        .unwrap();
    let job = claim_one(&q).await;
    assert_eq!(job.id.as_str(), "p");
    assert!(
        q.claim("w", LEASE, 1).await.unwrap().is_empty(),
        "at its cap"
    );

    let answered = flow_wait(h, &q, held(&job), &["up", "c"]).await;
    assert_eq!(answered.unwrap(), "blocked");
    let next = claim_one(&q).await;
    assert_eq!(next.id.as_str(), "next", "the group's place was freed");
    assert_eq!(
        members(h, &q, "deadlines").await,
        ["p"],
        "its start-by kept"
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_wait_keeps_the_dedup_key_of_the_job_it_parks(h: &Harness) {
    // A simple key is held until its job finishes; a job parked for its
    // children has not: a second enqueue of the key is still deduplicated.
    let q = h.queue::<Json>("wait_dedup");
    q.enqueue(NewJob::new(json!(1)).id("p").unwrap().dedup("k"))
        .await
        .unwrap();
    let job = claim_one(&q).await;
    assert_eq!(
        flow_wait(h, &q, held(&job), &["kids", "p:a"])
            .await
            .unwrap(),
        "blocked"
    );
    let owner = q.jobs().dedup_owner("k").await.unwrap();
    assert_eq!(owner.as_ref().map(|id| id.as_str()), Some("p"));
    h.check(&q).await;

    assert_eq!(
        resolve(h, &q, &[["kids", "p:a", "completed - 0 ", "p"]]).await,
        ["unblocked"]
    );
    let job = claim_one(&q).await;
    q.complete(&job.id, job.token, &json!(null)).await.unwrap();
    assert_eq!(q.jobs().dedup_owner("k").await.unwrap(), None);
    h.check(&q).await;
}
