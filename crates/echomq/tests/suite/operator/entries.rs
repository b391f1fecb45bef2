//! How events are laid out in the stream (`docs/protocol.md` "Events"):
//! the same event for jobs one after another shares an entry, at most
//! `EVENT_JOBS` jobs, and an entry of n jobs trims the stream to about
//! `events_max / n` entries.

use super::super::common::{
    Harness, entries_by_name, events, raw_call, raw_event_entries, server_now,
};
use echomq::{EventKind, EventsFrom, NewJob, QueueSettings};
use echomq_protocol::arg::EVENT_JOBS;
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::time::{Duration, UNIX_EPOCH};

const LEASE: Duration = Duration::from_secs(30);
const BOUND: Duration = Duration::from_secs(10);

fn ids(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|n| format!("j{n}")).collect()
}

fn named(name: &str, ids: Vec<String>) -> (String, Vec<String>) {
    (name.to_string(), ids)
}

#[echomq_testkit::case]
pub(super) async fn one_call_writes_one_entry_per_hundred_jobs_of_one_event(h: &Harness) {
    let q = h.queue::<Value>("entries_batch");
    let jobs = 2 * EVENT_JOBS as usize + 50;
    q.enqueue_bulk((0..jobs).map(|n| NewJob::new(json!(n)).id(format!("j{n}")).unwrap()))
        .await
        .unwrap();
    let held = q.claim("wk", LEASE, jobs).await.unwrap();
    assert_eq!(held.len(), jobs);
    let full = EVENT_JOBS as usize;
    assert_eq!(
        entries_by_name(h, &q).await,
        [
            named("enqueued", ids(0..full)),
            named("enqueued", ids(full..2 * full)),
            named("enqueued", ids(2 * full..jobs)),
            named("claimed", ids(0..full)),
            named("claimed", ids(full..2 * full)),
            named("claimed", ids(2 * full..jobs)),
        ]
    );
    // Each job keeps its own fields within the entry.
    let first_claim = &raw_event_entries(h, &q).await[3].1;
    let token = held[0].token.to_string();
    assert_eq!(
        first_claim[..10],
        [
            "event", "claimed", "id", "j0", "token", &token, "worker", "wk", "id", "j1"
        ]
    );
    // The reader sees one event per job, in order.
    let mut reader = q.events(EventsFrom::Beginning).await.unwrap();
    for n in 0..jobs {
        let event = reader.next().await.unwrap();
        assert_eq!(
            (event.job.unwrap().as_str(), event.kind),
            (format!("j{n}").as_str(), EventKind::Enqueued)
        );
    }
    let claimed = reader.next().await.unwrap();
    assert_eq!(
        claimed.kind,
        EventKind::Claimed {
            token: held[0].token,
            worker: "wk".into()
        }
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn an_event_of_another_name_starts_the_next_entry(h: &Harness) {
    let q = h.queue::<Value>("entries_order");
    q.enqueue_bulk((0..3).map(|n| NewJob::new(json!(n)).id(format!("j{n}")).unwrap()))
        .await
        .unwrap();
    let held = q.claim("wk", LEASE, 2).await.unwrap();
    // Completions, then the claim of the same call: two entries, in the
    // order the call wrote them.
    let (a, b) = (&held[0], &held[1]);
    let (ta, tb) = (a.token.to_string(), b.token.to_string());
    let args = [
        a.id.as_str(),
        ta.as_str(),
        "",
        b.id.as_str(),
        tb.as_str(),
        "",
        "CLAIM",
        "wk",
        "30000",
        "5",
    ];
    raw_call(h, &q, "complete_bulk", &args).await.unwrap();
    assert_eq!(
        entries_by_name(h, &q).await,
        [
            named("enqueued", ids(0..3)),
            named("claimed", ids(0..2)),
            named("completed", ids(0..2)),
            named("claimed", ids(2..3)),
        ]
    );
    // A claim that promotes due jobs: `promoted` for each, then `claimed`
    // for each, two entries of one call.
    let q = h.queue::<Value>("entries_promote");
    let now = server_now(h, &q).await;
    // Far enough ahead that the enqueue schedules them (not due yet).
    let due_at = now + 200;
    let at = UNIX_EPOCH + Duration::from_millis(due_at);
    q.enqueue_bulk((0..2).map(|n| NewJob::new(json!(n)).id(format!("j{n}")).unwrap().at(at)))
        .await
        .unwrap();
    wait_for("both jobs to fall due", BOUND, || async {
        let due = server_now(h, &q).await > due_at;
        due.then_some(()).ok_or("not yet")
    })
    .await;
    assert_eq!(q.claim("wk", LEASE, 2).await.unwrap().len(), 2);
    assert_eq!(
        entries_by_name(h, &q).await,
        [
            named("scheduled", ids(0..2)),
            named("promoted", ids(0..2)),
            named("claimed", ids(0..2)),
        ]
    );
    h.check(&q).await;
}

#[echomq_testkit::case]
pub(super) async fn an_entry_of_n_jobs_trims_the_stream_to_events_max_over_n_entries(h: &Harness) {
    let q = h.queue::<Value>("entries_trim");
    let events_max = 2 * EVENT_JOBS;
    q.configure(&QueueSettings {
        events_max,
        ..QueueSettings::default()
    })
    .await
    .unwrap();
    // 150 full entries: trimmed at 2 entries each time, as far as whole
    // stream nodes (100 entries by default) allow; at events_max entries,
    // all 150 would stay.
    let batches = 150;
    for batch in 0..batches {
        let first = batch * EVENT_JOBS;
        q.enqueue_bulk((first..first + EVENT_JOBS).map(|n| NewJob::new(json!(n))))
            .await
            .unwrap();
    }
    let kept = raw_event_entries(h, &q).await;
    let node = 100;
    assert!(
        kept.len() as u64 <= events_max / EVENT_JOBS + node,
        "{} entries kept",
        kept.len()
    );
    // Still at least events_max jobs' events.
    assert!(events(h, &q).await.len() as u64 >= events_max);
}

#[echomq_testkit::case]
pub(super) async fn a_reader_resumes_after_an_event_in_the_middle_of_its_entry(h: &Harness) {
    let q = h.queue::<Value>("entries_resume");
    q.enqueue_bulk((0..4).map(|n| NewJob::new(json!(n)).id(format!("j{n}")).unwrap()))
        .await
        .unwrap();
    assert_eq!(entries_by_name(h, &q).await, [named("enqueued", ids(0..4))]);
    let mut reader = q.events(EventsFrom::Beginning).await.unwrap();
    reader.next().await.unwrap();
    let second = reader.next().await.unwrap();
    assert_eq!(
        (second.job.as_ref().unwrap().as_str(), second.index),
        ("j1", 1)
    );
    // After the second event: the rest of its entry, then what comes next.
    q.enqueue(NewJob::new(json!(4)).id("j4").unwrap())
        .await
        .unwrap();
    let mut resumed = q.events(second.resume_after()).await.unwrap();
    let mut rest = Vec::new();
    for _ in 0..3 {
        rest.push(
            resumed
                .next()
                .await
                .unwrap()
                .job
                .unwrap()
                .as_str()
                .to_string(),
        );
    }
    assert_eq!(rest, ["j2", "j3", "j4"]);
    // After the entry: all of it skipped.
    let mut after_entry = q.events(EventsFrom::After(second.stream_id)).await.unwrap();
    let next = after_entry.next().await.unwrap();
    assert_eq!(next.job.unwrap().as_str(), "j4");
}
