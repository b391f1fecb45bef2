//! Repeating jobs: any number of schedulers enqueue each occurrence once;
//! limit and end stop a definition; removing one removes its occurrence;
//! REPEAT.ADD replaces one in one step, and refuses what it must, on wire
//! 4 and again on wire 6 (`…::on_wire_6`).

#[path = "repeat/add.rs"]
mod cases;
use crate::common;

use common::Harness;
use echomq::protocol::cadence::Cadence;
use echomq::{Error, JobContext, JobError, JobId, Repeat, RepeatScheduler, Worker};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const BOUND: Duration = Duration::from_secs(20);

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Every job id of the queue, in every state: the state sets, and the
/// fifo list, where a pending job of priority 0 waits (an occurrence a
/// late scheduler catches up is due at once, so it goes there).
async fn all_ids(h: &Harness, q: &echomq::Queue<Value>) -> Vec<String> {
    let mut conn = h.raw(q).await;
    let mut ids: Vec<String> = redis::cmd("LRANGE")
        .arg(q.keys().fifo())
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    for state in echomq::JobState::ALL {
        let members: Vec<String> = redis::cmd("ZRANGE")
            .arg(q.keys().state_set(state))
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await
            .unwrap();
        ids.extend(members);
    }
    ids.sort();
    ids
}

#[tokio::test]
async fn two_schedulers_enqueue_each_of_50_occurrences_exactly_once() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("repeat_twice");
    let definition = q
        .repeat(
            "tick",
            Repeat::every(Duration::from_millis(100)).times(50),
            &json!({"tick": true}),
        )
        .await
        .unwrap()
        .definition;
    let first = definition.first().unwrap();
    let a = RepeatScheduler::new(&q).start();
    let b = RepeatScheduler::new(&q).start();
    let last = first + 49 * 100;
    wait_for("the 50th occurrence to be scheduled", BOUND, || async {
        q.admin().counts().await.unwrap().total() >= 50
    })
    .await;
    // Let two more periods pass after the last occurrence: the limit must hold.
    wait_for("time to pass the last occurrence", BOUND, || async {
        now_ms() > last + 250
    })
    .await;
    a.cancel();
    b.cancel();
    let ids = all_ids(&h, &q).await;
    let mut expected: Vec<String> = (0..50)
        .map(|k| format!("repeat:tick:{}", first + k * 100))
        .collect();
    expected.sort();
    assert_eq!(
        ids, expected,
        "each occurrence once, on the grid, and no more than the limit"
    );
    let record = q
        .jobs()
        .get(&JobId::new(expected[0].clone()).unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.repeat.as_deref(), Some("tick"));
    assert_eq!(record.payload_as::<Value>().unwrap(), json!({"tick": true}));
    h.check(&q).await;
}

#[tokio::test]
async fn end_stops_a_repeat() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("repeat_end");
    let end = SystemTime::now() + Duration::from_millis(400);
    let end_ms = end.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    q.repeat(
        "short",
        Repeat::every(Duration::from_millis(50)).end(end),
        &json!(1),
    )
    .await
    .unwrap();
    let scheduler = RepeatScheduler::new(&q).start();
    wait_for("the end to pass", BOUND, || async {
        now_ms() > end_ms + 200
    })
    .await;
    scheduler.cancel();
    let ids = all_ids(&h, &q).await;
    assert!(
        !ids.is_empty() && ids.len() <= 9,
        "{} occurrences in 400 ms at 50 ms",
        ids.len()
    );
    for id in &ids {
        let at: u64 = id.rsplit(':').next().unwrap().parse().unwrap();
        assert!(at <= end_ms, "occurrence {id} is after the end {end_ms}");
    }
}

#[tokio::test]
async fn removing_a_definition_removes_its_scheduled_occurrence() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("repeat_remove");
    q.repeat(
        "hourly",
        Repeat::every(Duration::from_secs(3600)),
        &json!(1),
    )
    .await
    .unwrap();
    q.repeat(
        "daily",
        Repeat::cron("0 0 3 * * *")
            .unwrap()
            .tz("Europe/Berlin")
            .unwrap(),
        &json!(2),
    )
    .await
    .unwrap();
    assert_eq!(q.admin().counts().await.unwrap().scheduled, 2);
    let keys: Vec<String> = q
        .repeats()
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.key)
        .collect();
    assert_eq!(keys, ["daily", "hourly"]);
    assert!(q.unrepeat("hourly").await.unwrap());
    assert!(!q.unrepeat("hourly").await.unwrap(), "already gone");
    let left = all_ids(&h, &q).await;
    assert_eq!(left.len(), 1);
    assert!(left[0].starts_with("repeat:daily:"), "{left:?}");
    h.check(&q).await;
}

#[tokio::test]
async fn bad_definitions_are_refused_with_the_reason() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("repeat_bad");
    let err = Repeat::cron("61 * * * *").unwrap_err().to_string();
    assert!(err.contains("61 * * * *"), "{err}");
    let err = Repeat::cron("0 * * * *")
        .unwrap()
        .tz("Mars/Olympus")
        .unwrap_err()
        .to_string();
    assert!(err.contains("Mars/Olympus"), "{err}");
    assert!(matches!(
        Repeat::every(Duration::from_secs(1)).tz("UTC"),
        Err(Error::BadArgument { name: "tz", .. })
    ));
    let err = q
        .repeat(
            "has space",
            Repeat::every(Duration::from_secs(1)),
            &json!(1),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Name(_) | Error::BadArgument { .. }),
        "{err:?}"
    );
    assert!(q.repeats().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_worker_runs_each_occurrence_of_a_repeat() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("repeat_worker");
    // Starting a second from now: an occurrence that passes before the
    // worker's scheduler first sees the definition is not caught up (by
    // design, docs/time.md), and a loaded machine can take longer than
    // one 100-ms interval to start it.
    let start = std::time::SystemTime::now() + Duration::from_secs(1);
    q.repeat(
        "five",
        Repeat::every(Duration::from_millis(100))
            .start(start)
            .times(5),
        &json!("beat"),
    )
    .await
    .unwrap();
    let worker = Worker::new(q.clone(), |_job: JobContext<Value>| async move {
        Ok::<_, JobError>(())
    })
    .start();
    wait_for("five occurrences to complete", BOUND, || async {
        q.admin().counts().await.unwrap().completed == 5
    })
    .await;
    let stats = worker.shutdown(BOUND).await;
    assert_eq!(stats.completed, 5);
    assert_eq!(
        q.admin().counts().await.unwrap().total(),
        5,
        "the limit stops it"
    );
}

/// Replaces the definition "poll" (payload 1, hourly) with a
/// two-hourly one (payload 2): exactly one occurrence stays scheduled, the
/// new one, and the call returns the old definition.
async fn replacing_a_definition_replaces_its_scheduled_occurrence(h: Harness) {
    let q = h.queue::<Value>("repeat_replace");
    let first = q
        .repeat("poll", Repeat::every(Duration::from_secs(3600)), &json!(1))
        .await
        .unwrap();
    assert_eq!(first.replaced, None, "a new key replaces nothing");
    let added = q
        .repeat("poll", Repeat::every(Duration::from_secs(7200)), &json!(2))
        .await
        .unwrap();
    let old = added.replaced.expect("the old definition");
    assert_eq!(old.payload, json!(1));
    assert!(
        matches!(
            old.schedule.cadence,
            Cadence::Every {
                interval_ms: 3_600_000,
                ..
            }
        ),
        "{:?}",
        old.schedule.cadence
    );
    let run_at = added.definition.first().unwrap();
    let ids = all_ids(&h, &q).await;
    assert_eq!(
        ids,
        [format!("repeat:poll:{run_at}")],
        "only the new occurrence"
    );
    assert_eq!(q.admin().counts().await.unwrap().scheduled, 1);
    let record = q
        .jobs()
        .get(&JobId::new(ids[0].clone()).unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.payload_as::<Value>().unwrap(), json!(2));
    assert_eq!(record.run_at, Some(run_at));
    assert_eq!(q.repeats().await.unwrap().len(), 1);
    h.check(&q).await;
}

#[tokio::test]
async fn replacing_a_definition_replaces_its_scheduled_occurrence_on_wire_4() {
    replacing_a_definition_replaces_its_scheduled_occurrence(Harness::server().await).await;
}

#[tokio::test]
async fn replacing_a_definition_replaces_its_scheduled_occurrence_on_wire_6() {
    replacing_a_definition_replaces_its_scheduled_occurrence(Harness::native().await).await;
}

#[tokio::test]
async fn replacing_a_key_with_a_glob_character_leaves_other_keys_occurrences() {
    let h = Harness::server().await;
    let q = h.queue::<Value>("repeat_glob");
    let every = || Repeat::every(Duration::from_secs(3600));
    q.repeat("ab", every(), &json!("ab")).await.unwrap();
    q.repeat("a*", every(), &json!(1)).await.unwrap();
    let added = q.repeat("a*", every(), &json!(2)).await.unwrap();
    assert!(added.replaced.is_some());
    let ids = all_ids(&h, &q).await;
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.iter().any(|id| id.starts_with("repeat:ab:")), "{ids:?}");
    assert!(q.unrepeat("a*").await.unwrap());
    let ids = all_ids(&h, &q).await;
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert!(ids[0].starts_with("repeat:ab:"), "{ids:?}");
    h.check(&q).await;
}
