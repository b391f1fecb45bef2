//! FLOW.LINK on a dependency's queue: links new dependents (event
//! `linked`), tells told ones again, and answers whether the caller has a
//! resolution to deliver, writing the resolution of a decided job the
//! outbox does not hold.

use super::common::{Harness, event_entries, meta_field, raw_call};
use super::{flow_key, hash, scored, words};
use echomq::{FailAction, JobId, NewJob, Queue};
use serde_json::{Value as Json, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);

/// FLOW.LINK of `id` with `args`, answered as words.
async fn link(h: &Harness, q: &Queue<Json>, id: &str, args: &[&str]) -> Vec<String> {
    let mut all = vec![id];
    all.extend_from_slice(args);
    words(raw_call(h, q, "flow_link", &all).await.unwrap())
}

/// Enqueues job `id` and claims it: its token.
async fn claimed(q: &Queue<Json>, id: &str) -> u64 {
    q.enqueue(NewJob::new(json!(id)).id(id).unwrap())
        .await
        .unwrap();
    let job = q.claim_one("w", LEASE).await.unwrap().expect("the job");
    job.token
}

/// The `linked` events of the queue, as (id, dependent).
async fn linked(h: &Harness, q: &Queue<Json>) -> Vec<(String, String)> {
    event_entries(h, q)
        .await
        .into_iter()
        .filter(|(_, fields)| fields[1] == "linked")
        .map(|(_, fields)| (fields[3].clone(), fields[5].clone()))
        .collect()
}

#[echomq_testkit::case]
pub(super) async fn flow_link_of_an_undecided_job_answers_waiting_and_links_each_new_dependent(
    h: &Harness,
) {
    let q = h.queue::<Json>("link_waiting");
    q.enqueue(NewJob::new(json!(1)).id("a").unwrap())
        .await
        .unwrap();
    assert_eq!(
        link(h, &q, "a", &["b", "d1", "other", "d2"]).await,
        ["waiting"]
    );
    let told = hash(h, &q, &flow_key(&q, "dependents", "a")).await;
    assert_eq!(told.get("b d1").map(String::as_str), Some("0"));
    assert_eq!(told.get("other d2").map(String::as_str), Some("0"));
    let job = hash(h, &q, &flow_key(&q, "job", "a")).await;
    assert_eq!(job.get("dependents").map(String::as_str), Some("2"));
    assert_eq!(meta_field(h, &q, "flows").await.as_deref(), Some("1"));
    // Linked again, and once more with a new one: one event per new field.
    assert_eq!(link(h, &q, "a", &["b", "d1", "b", "d3"]).await, ["waiting"]);
    let job = hash(h, &q, &flow_key(&q, "job", "a")).await;
    assert_eq!(job.get("dependents").map(String::as_str), Some("3"));
    let events = linked(h, &q).await;
    let wanted = [("a", "b d1"), ("a", "other d2"), ("a", "b d3")];
    let wanted: Vec<(String, String)> = wanted
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(events, wanted);
    assert!(
        scored(h, &q, "resolutions").await.is_empty(),
        "nothing decided"
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_link_of_a_completed_job_writes_its_resolution_and_answers_decided(
    h: &Harness,
) {
    let q = h.queue::<Json>("link_completed");
    let token = claimed(&q, "a").await;
    raw_call(
        h,
        &q,
        "complete",
        &["a", &token.to_string(), "RESULT", "ok"],
    )
    .await
    .unwrap();
    let finished = hash(h, &q, &flow_key(&q, "job", "a")).await["finished_at"].clone();
    let reply = link(h, &q, "a", &["b", "d1"]).await;
    assert_eq!(reply, ["decided", "completed - 2 ok"]);
    let resolution = hash(h, &q, &flow_key(&q, "resolution", "a")).await;
    assert_eq!(resolution["text"], "completed - 2 ok");
    assert_eq!(resolution["left"], "1");
    assert_eq!(resolution["flow"], "");
    assert_eq!(
        scored(h, &q, "resolutions").await,
        [("a".to_string(), finished.parse::<u64>().unwrap())],
        "scored its finished_at"
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_link_of_a_dead_or_cancelled_job_answers_its_outcome(h: &Harness) {
    let q = h.queue::<Json>("link_dead");
    let token = claimed(&q, "a").await;
    q.fail(&JobId::new("a").unwrap(), token, "boom", FailAction::Dead)
        .await
        .unwrap();
    let reply = link(h, &q, "a", &["b", "d1"]).await;
    assert_eq!(reply, ["decided", "dead - 1 boom"]);
    q.enqueue(NewJob::new(json!(2)).id("c").unwrap())
        .await
        .unwrap();
    q.jobs().cancel(&JobId::new("c").unwrap()).await.unwrap();
    assert_eq!(
        link(h, &q, "c", &["b", "d1"]).await,
        ["decided", "cancelled -"]
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_link_of_a_job_in_the_outbox_raises_left_and_answers_its_text(h: &Harness) {
    let q = h.queue::<Json>("link_outbox");
    let token = claimed(&q, "a").await;
    // A dependent not told, and one told: the decision writes left 1.
    assert_eq!(link(h, &q, "a", &["b", "d1", "b", "d2"]).await, ["waiting"]);
    let _: () = redis::cmd("HSET")
        .arg(flow_key(&q, "dependents", "a"))
        .arg("b d2")
        .arg("1")
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    raw_call(h, &q, "complete", &["a", &token.to_string()])
        .await
        .unwrap();
    assert_eq!(
        hash(h, &q, &flow_key(&q, "resolution", "a")).await["left"],
        "1"
    );
    // The told one told again, a new one, and one not told yet: left + 2.
    let reply = link(h, &q, "a", &["b", "d2", "b", "d3", "b", "d1"]).await;
    assert_eq!(reply, ["decided", "completed - 0 "]);
    let resolution = hash(h, &q, &flow_key(&q, "resolution", "a")).await;
    assert_eq!(resolution["left"], "3");
    let told = hash(h, &q, &flow_key(&q, "dependents", "a")).await;
    assert!(told.values().all(|value| value == "0"), "{told:?}");
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn flow_link_of_a_job_gone_while_its_resolution_waits_answers_decided(
    h: &Harness,
) {
    let q = h.queue::<Json>("link_gone");
    assert_eq!(
        {
            q.enqueue(NewJob::new(json!(1)).id("a").unwrap())
                .await
                .unwrap();
            link(h, &q, "a", &["b", "d1"]).await
        },
        ["waiting"]
    );
    // Removed undecided: its resolution `removed` outlives its hash.
    raw_call(h, &q, "remove", &["a"]).await.unwrap();
    let reply = link(h, &q, "a", &["b", "d2"]).await;
    assert_eq!(reply, ["decided", "removed -"]);
    assert_eq!(
        hash(h, &q, &flow_key(&q, "resolution", "a")).await["left"],
        "2"
    );
    assert!(
        hash(h, &q, &flow_key(&q, "job", "a")).await.is_empty(),
        "no job hash is made again"
    );
    h.check(&q).await;
}
