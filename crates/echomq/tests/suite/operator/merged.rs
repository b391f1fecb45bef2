//! The merged reader: several queues' events over one connection, one
//! `XREAD BLOCK` over all their streams.

use super::super::common::{Harness, blocked_clients};
use echomq::{EventKind, EventsFrom, JobId, NewJob, Queue, QueueName};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(10);

/// Enqueues job `id` to `q`.
async fn enqueue(q: &Queue<Value>, id: &str) {
    q.enqueue(NewJob::new(json!(id)).id(id).unwrap())
        .await
        .unwrap();
}

/// Each event as `queue/job kind`.
fn named(batch: &[(QueueName, echomq::Event)]) -> Vec<String> {
    batch
        .iter()
        .map(|(queue, event)| {
            let job = event.job.as_ref().map_or("", JobId::as_str);
            format!("{queue}/{job} {:?}", event.kind)
        })
        .collect()
}

#[echomq_testkit::case]
pub(super) async fn a_merged_reader_reads_several_queues_over_one_blocked_connection(h: &Harness) {
    let (a, b) = (h.queue::<Value>("merged_a"), h.queue::<Value>("merged_b"));
    enqueue(&a, "before").await;
    let mut reader = h.connector.merged_events().await.unwrap();
    reader.add(&a, EventsFrom::Now).await.unwrap();
    reader.add(&b, EventsFrom::Now).await.unwrap();
    // Added twice, read once.
    reader.add(&b, EventsFrom::Beginning).await.unwrap();
    assert_eq!(
        reader.queues().map(|q| q.as_str()).collect::<Vec<_>>(),
        ["merged_a", "merged_b"]
    );
    // One read blocks on one connection for both queues; an enqueue to
    // either ends it.
    let (batch, ()) = tokio::join!(reader.next_within(BOUND), async {
        wait_for("the merged read to block", BOUND, || async {
            blocked_clients(h, &a).await == 1
        })
        .await;
        enqueue(&b, "b1").await;
    });
    assert_eq!(named(&batch.unwrap()), ["merged_b/b1 Enqueued"]);
    enqueue(&a, "a1").await;
    enqueue(&b, "b2").await;
    enqueue(&a, "a2").await;
    let mut seen = Vec::new();
    while seen.len() < 3 {
        seen.extend(named(&reader.next_within(BOUND).await.unwrap()));
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "merged_a/a1 Enqueued",
            "merged_a/a2 Enqueued",
            "merged_b/b2 Enqueued"
        ]
    );
    // A queue removed is read no more; the others are.
    assert!(reader.remove(a.name()));
    assert!(!reader.remove(a.name()));
    enqueue(&a, "a3").await;
    assert!(
        reader
            .next_within(Duration::from_millis(50))
            .await
            .unwrap()
            .is_empty()
    );
    enqueue(&b, "b3").await;
    assert_eq!(
        named(&reader.next_within(BOUND).await.unwrap()),
        ["merged_b/b3 Enqueued"]
    );
}

#[echomq_testkit::case]
pub(super) async fn a_merged_reader_added_after_an_event_hands_out_the_rest_of_its_entry(
    h: &Harness,
) {
    let q = h.queue::<Value>("merged_rest");
    let ids: Vec<NewJob<Value>> = ["r1", "r2", "r3"]
        .iter()
        .map(|id| NewJob::new(json!(id)).id(*id).unwrap())
        .collect();
    q.enqueue_bulk(ids).await.unwrap();
    let first = q.recent_events(1).await.unwrap().remove(0);
    assert_eq!(first.kind, EventKind::Enqueued);
    let mut reader = h.connector.merged_events().await.unwrap();
    reader.add(&q, first.resume_after()).await.unwrap();
    assert_eq!(
        named(&reader.next_within(BOUND).await.unwrap()),
        ["merged_rest/r2 Enqueued", "merged_rest/r3 Enqueued"]
    );
}
