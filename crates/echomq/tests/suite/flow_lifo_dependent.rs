//! A completion unblocking a LIFO dependent of its own queue
//! (docs/protocol.md, "Deciding a job that has dependents"; "LIFO"): the
//! dependent enters pending as every path into pending does, at the front
//! of its priority band. Wire 4's `COMPLETE` and `COMPLETE.BULK` called
//! that path without the queue's meta key, so a LIFO dependent with a
//! priority (whose place is a fresh `lifo_seq` of the meta hash) stopped
//! the script with an error after its first writes (found by the
//! differential walk once it completed jobs with own-queue dependents).
//! Each case runs on wire 4 and again on wire 6.

use crate::common::Harness;
use crate::flow_own_queue::{complete_root, id_of, state};
use echomq::{Flow, JobState, NewJob, Queue, Submitted};
use redis::Value;
use serde_json::{Value as Json, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);

/// A flow of `root` and `next` (LIFO, priority 2) after it, in `q`;
/// submitted.
async fn root_then_lifo(q: &Queue<Json>) -> Submitted {
    let mut flow = Flow::new("lifo");
    let root = flow.add_as("root", q, NewJob::new(json!(0)));
    let next = NewJob::new(json!(1)).lifo().priority(2);
    flow.add_as("next", q, next.depends_on([&root]));
    q.connector().submit(&flow).await.unwrap()
}

/// A job of `next`'s band waits; the root is completed (the bulk form
/// when `bulk`): `next` is pending, and claimed before the job that
/// waited longer.
async fn unblocks_at_the_front(h: &Harness, q: &Queue<Json>, bulk: bool) {
    let submitted = root_then_lifo(q).await;
    let next = id_of(&submitted, "next");
    let earlier = q
        .enqueue(NewJob::new(json!("earlier")).priority(2))
        .await
        .unwrap()
        .id;
    let reply = complete_root(h, q, bulk, &[]).await;
    let ok = if bulk {
        Value::Array(vec![Value::BulkString(b"OK".to_vec())])
    } else {
        Value::Okay
    };
    assert_eq!(reply, ok);
    assert_eq!(state(q, &next).await, JobState::Pending);
    let claimed: Vec<_> = q.claim("w", LEASE, 2).await.unwrap();
    let ids: Vec<_> = claimed.iter().map(|job| job.id.clone()).collect();
    assert_eq!(ids, [next, earlier], "LIFO: the unblocked job first");
    h.check(q).await;
}

#[echomq_testkit::case]
pub(super) async fn a_completion_unblocks_a_lifo_dependent_with_a_priority(h: &Harness) {
    let q = h.queue::<Json>("own_lifo");
    unblocks_at_the_front(h, &q, false).await;
}

#[echomq_testkit::case]
pub(super) async fn a_bulk_completion_unblocks_a_lifo_dependent_with_a_priority(h: &Harness) {
    let q = h.queue::<Json>("own_lifo_bulk");
    unblocks_at_the_front(h, &q, true).await;
}
