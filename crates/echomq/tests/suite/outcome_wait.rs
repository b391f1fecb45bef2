//! Waiting for a job's outcome (`Queue::outcome`, docs/protocol.md
//! "Outcome waits"): each outcome, a job decided before the wait began, a
//! job gone, a wait that runs out, and an outcome published while the
//! waiter's subscription was down, read back once it is up again. Every
//! case runs on both wires.

use crate::common::{Harness, complete_unheard};
use echomq::{Error, FailAction, IfActive, JobId, NewJob, Outcome, Queue};
use echomq_testkit::wait_for;
use serde_json::{Value, json};
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);
const WAIT: Duration = Duration::from_secs(20);

/// Enqueues one job with id `id`.
async fn enqueued(q: &Queue<Value>, id: &str) -> JobId {
    q.enqueue(NewJob::new(json!({"n": id})).id(id).unwrap())
        .await
        .unwrap()
        .id
}

/// Claims the one pending job: its token.
async fn claimed(q: &Queue<Value>, id: &JobId) -> u64 {
    let job = q.claim_one("w", LEASE).await.unwrap().unwrap();
    assert_eq!(&job.id, id);
    job.token
}

/// Starts a wait for `id`, and returns once the server has marked the job
/// waited for (the wait's subscription is open and its OUTCOME sent).
async fn waiting(
    h: &Harness,
    q: &Queue<Value>,
    id: &JobId,
) -> tokio::task::JoinHandle<echomq::Result<Outcome<Value>>> {
    let wait = tokio::spawn({
        let (q, id) = (q.clone(), id.clone());
        async move { q.outcome::<Value>(&id, WAIT).await }
    });
    let key = format!("{}:job:{id}", q.keys().base());
    wait_for("the job to be marked waited for", WAIT, || async {
        let waited: Option<String> = redis::cmd("HGET")
            .arg(&key)
            .arg("waited")
            .query_async(&mut h.raw(q).await)
            .await
            .unwrap();
        waited.as_deref() == Some("1")
    })
    .await;
    wait
}

#[echomq_testkit::case]
pub(super) async fn a_job_completed_before_the_wait_began_answers_at_once(h: &Harness) {
    let q = h.queue::<Value>("before");
    let id = enqueued(&q, "a").await;
    let token = claimed(&q, &id).await;
    q.complete(&id, token, &json!({"sum": 3})).await.unwrap();
    let outcome = q.outcome::<Value>(&id, WAIT).await.unwrap();
    assert_eq!(
        outcome,
        Outcome::Completed {
            result: Some(json!({"sum": 3}))
        }
    );
}

#[echomq_testkit::case]
pub(super) async fn a_wait_begun_before_the_completion_gets_its_result(h: &Harness) {
    let q = h.queue::<Value>("during");
    let id = enqueued(&q, "a").await;
    let wait = waiting(h, &q, &id).await;
    let token = claimed(&q, &id).await;
    q.complete(&id, token, &json!("done")).await.unwrap();
    let outcome = wait.await.unwrap().unwrap();
    assert_eq!(
        outcome,
        Outcome::Completed {
            result: Some(json!("done"))
        }
    );
}

/// A stored result that does not decode to the type the wait asks for is
/// an error naming the result (not the payload); the job stays completed
/// and a wait for a type it fits gets it.
#[echomq_testkit::case]
pub(super) async fn a_result_that_does_not_decode_to_the_wait_s_type_names_the_result(h: &Harness) {
    let q = h.queue::<Value>("undecodable");
    let id = enqueued(&q, "a").await;
    let token = claimed(&q, &id).await;
    q.complete(&id, token, &json!("done")).await.unwrap();
    let err = q.outcome::<u64>(&id, WAIT).await.unwrap_err();
    assert!(matches!(err, Error::JobResult(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "result is not valid for its type: invalid type: string \"done\", expected u64 at line 1 column 6"
    );
    assert_eq!(
        q.outcome::<String>(&id, WAIT).await.unwrap(),
        Outcome::Completed {
            result: Some("done".to_string())
        }
    );
}

#[echomq_testkit::case]
pub(super) async fn a_dead_job_answers_its_error_and_attempts(h: &Harness) {
    let q = h.queue::<Value>("dead");
    let id = enqueued(&q, "a").await;
    let wait = waiting(h, &q, &id).await;
    let token = claimed(&q, &id).await;
    q.fail(&id, token, "boom", FailAction::Dead).await.unwrap();
    let outcome = wait.await.unwrap().unwrap();
    assert_eq!(
        outcome,
        Outcome::Dead {
            error: "boom".into(),
            attempts: 1
        }
    );
}

#[echomq_testkit::case]
pub(super) async fn a_cancelled_job_answers_cancelled(h: &Harness) {
    let q = h.queue::<Value>("cancel");
    let id = enqueued(&q, "a").await;
    let wait = waiting(h, &q, &id).await;
    q.jobs().cancel(&id).await.unwrap();
    assert_eq!(wait.await.unwrap().unwrap(), Outcome::Cancelled);
}

#[echomq_testkit::case]
pub(super) async fn a_job_removed_while_waited_for_answers_removed(h: &Harness) {
    let q = h.queue::<Value>("removed");
    let id = enqueued(&q, "a").await;
    let wait = waiting(h, &q, &id).await;
    assert!(q.jobs().remove(&id, IfActive::Refuse).await.unwrap());
    assert_eq!(wait.await.unwrap().unwrap(), Outcome::Removed);
}

#[echomq_testkit::case]
pub(super) async fn a_job_that_does_not_exist_answers_removed_at_once(h: &Harness) {
    let q = h.queue::<Value>("absent");
    let id = JobId::new("never").unwrap();
    assert_eq!(
        q.outcome::<Value>(&id, WAIT).await.unwrap(),
        Outcome::Removed
    );
}

#[echomq_testkit::case]
pub(super) async fn a_wait_that_runs_out_is_a_timeout_and_leaves_the_job(h: &Harness) {
    let q = h.queue::<Value>("timeout");
    let id = enqueued(&q, "a").await;
    let waited = Duration::from_millis(300);
    let err = q.outcome::<Value>(&id, waited).await.unwrap_err();
    assert!(
        matches!(&err, Error::Timeout { job, waited: w } if *job == id && *w == waited),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("job a was not finished after 300 ms"),
        "{err}"
    );
    let job = q.jobs().get(&id).await.unwrap().unwrap();
    assert_eq!(job.state, echomq::JobState::Pending);
    // A later wait picks it up.
    let wait = waiting(h, &q, &id).await;
    let token = claimed(&q, &id).await;
    q.complete(&id, token, &json!(1)).await.unwrap();
    assert_eq!(
        wait.await.unwrap().unwrap(),
        Outcome::Completed {
            result: Some(json!(1))
        }
    );
}

#[echomq_testkit::case]
pub(super) async fn an_outcome_published_while_the_subscription_was_down_is_read_back(h: &Harness) {
    let q = h.queue::<Value>("away");
    let id = enqueued(&q, "a").await;
    let wait = waiting(h, &q, &id).await;
    let token = claimed(&q, &id).await;
    complete_unheard(h, &q, "a", token, "7").await;
    assert_eq!(
        wait.await.unwrap().unwrap(),
        Outcome::Completed {
            result: Some(json!(7))
        }
    );
}

#[echomq_testkit::case]
pub(super) async fn many_waits_yield_each_outcome_as_it_is_decided(h: &Harness) {
    use futures_util::StreamExt;
    let q = h.queue::<Value>("many");
    let done = enqueued(&q, "done").await;
    let token = claimed(&q, &done).await;
    q.complete(&done, token, &json!("first")).await.unwrap();
    let later = enqueued(&q, "later").await;
    let absent = JobId::new("absent").unwrap();
    let ids = vec![done.clone(), later.clone(), absent.clone()];
    let mut stream = Box::pin(q.outcomes::<Value>(ids, WAIT));
    let mut got = Vec::new();
    // The two decided ones come first, in either order.
    for _ in 0..2 {
        got.push(stream.next().await.unwrap());
    }
    let token = claimed(&q, &later).await;
    q.complete(&later, token, &json!("second")).await.unwrap();
    got.push(stream.next().await.unwrap());
    assert!(stream.next().await.is_none());
    let outcome = |id: &JobId| {
        got.iter()
            .find(|(got, _)| got == id)
            .map(|(_, outcome)| outcome.as_ref().unwrap().clone())
            .unwrap()
    };
    assert_eq!(
        outcome(&done),
        Outcome::Completed {
            result: Some(json!("first"))
        }
    );
    assert_eq!(outcome(&absent), Outcome::Removed);
    assert_eq!(
        outcome(&later),
        Outcome::Completed {
            result: Some(json!("second"))
        }
    );
    assert_eq!(got[2].0, later, "the undecided job last");
}

#[echomq_testkit::case]
pub(super) async fn an_enqueued_job_s_handle_waits_for_its_outcome(h: &Harness) {
    let q = h.queue::<Value>("handle");
    let enqueued = q
        .enqueue(NewJob::new(json!(1)).dedup("once"))
        .await
        .unwrap();
    // A deduplicated enqueue's handle waits for the job holding the key.
    let again = q
        .enqueue(NewJob::new(json!(2)).dedup("once"))
        .await
        .unwrap();
    assert_eq!(again.id, enqueued.id);
    let bulk = q.enqueue_bulk([json!(3), json!(4)]).await.unwrap();
    for id in [&enqueued.id, &bulk[0].id, &bulk[1].id] {
        let token = claimed(&q, id).await;
        q.complete(id, token, &json!({"done": id.as_str()}))
            .await
            .unwrap();
    }
    for handle in [&enqueued, &again, &bulk[0], &bulk[1]] {
        assert_eq!(
            handle.outcome::<Value>(WAIT).await.unwrap(),
            Outcome::Completed {
                result: Some(json!({"done": handle.id.as_str()}))
            },
            "{handle:?}"
        );
    }
}

#[echomq_testkit::case]
pub(super) async fn a_wait_on_a_job_key_of_the_wrong_type_gets_the_refusal_not_a_timeout(
    h: &Harness,
) {
    // The listener's OUTCOME.BULK is refused for the whole batch; each wait
    // then reads its own job and gets its own answer: the clobbered one
    // its refusal, the other its outcome.
    let q = h.queue::<Value>("wrongtype");
    let id = enqueued(&q, "fine").await;
    let mut conn = h.raw(&q).await;
    let _: () = redis::cmd("SET")
        .arg(format!("{}:job:clobbered", q.keys().base()))
        .arg("not a hash")
        .query_async(&mut conn)
        .await
        .unwrap();
    let clobbered = JobId::new("clobbered").unwrap();
    let mut waits = q.outcomes::<Value>([clobbered.clone(), id.clone()], WAIT);
    let token = claimed(&q, &id).await;
    q.complete(&id, token, &json!("ok")).await.unwrap();
    let mut answers = std::collections::HashMap::new();
    while let Some((job, answer)) = futures_util::StreamExt::next(&mut waits).await {
        answers.insert(job, answer);
    }
    let err = answers.remove(&clobbered).unwrap().unwrap_err();
    assert!(err.to_string().contains("WRONGTYPE"), "{err}");
    assert_eq!(
        answers.remove(&id).unwrap().unwrap(),
        Outcome::Completed {
            result: Some(json!("ok"))
        }
    );
}
