//! `Queue::complete_many`: many completions in one round trip, each job
//! answered on its own as `Queue::complete` would have been.

use crate::common::Harness;
use echomq::{Error, JobState, NewJob, Refusal};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

const LEASE: Duration = Duration::from_secs(30);

#[echomq_testkit::case]
async fn complete_many_completes_each_job_and_answers_each_in_order(h: &Harness) {
    let q = h.queue::<Value>("complete-many");
    for i in 0..3 {
        q.enqueue(NewJob::new(json!(i)).id(format!("j{i}")).unwrap())
            .await
            .unwrap();
    }
    let claimed = q.claim("w", LEASE, 3).await.unwrap();
    let mut jobs: Vec<_> = claimed
        .iter()
        .map(|job| {
            (
                job.id.clone(),
                job.token,
                json!({ "done": job.id.as_str() }),
            )
        })
        .collect();
    // The second job's token is stale: its lease counts as lost.
    jobs[1].1 += 1;
    let answers = q.complete_many(&jobs).await.unwrap();
    assert_eq!(answers.len(), 3);
    assert!(answers[0].is_ok() && answers[2].is_ok(), "{answers:?}");
    match &answers[1] {
        Err(Error::Refused(refused)) => {
            assert_eq!(refused.reason, Refusal::NotActive);
            assert_eq!(refused.job.as_ref(), Some(&jobs[1].0));
        }
        other => panic!("the stale token's answer: {other:?}"),
    }
    for (at, state) in [
        (0, JobState::Completed),
        (1, JobState::Active),
        (2, JobState::Completed),
    ] {
        let record = q.jobs().get(&jobs[at].0).await.unwrap().unwrap();
        assert_eq!(record.state, state, "{}", jobs[at].0);
    }
    let record = q.jobs().get(&jobs[0].0).await.unwrap().unwrap();
    let result: Value = serde_json::from_str(record.result.as_deref().unwrap()).unwrap();
    assert_eq!(result, json!({ "done": jobs[0].0.as_str() }));
    h.check(&q).await;
}

#[echomq_testkit::case]
async fn complete_many_spans_more_jobs_than_one_bulk_call_takes(h: &Harness) {
    let q = h.queue::<Value>("complete-many-big");
    let n = 600;
    q.enqueue_bulk((0..n).map(|i| NewJob::new(json!(i))).collect::<Vec<_>>())
        .await
        .unwrap();
    let claimed = q.claim("w", LEASE, n).await.unwrap();
    assert_eq!(claimed.len(), n);
    let jobs: Vec<_> = claimed
        .iter()
        .map(|job| (job.id.clone(), job.token, ()))
        .collect();
    let answers = q.complete_many(&jobs).await.unwrap();
    assert_eq!(answers.len(), n);
    assert!(answers.iter().all(Result::is_ok));
    let counts = q.admin().counts().await.unwrap();
    assert_eq!(counts.get(JobState::Active), 0);
    h.check(&q).await;
}

#[echomq_testkit::case]
async fn complete_many_refuses_a_result_that_does_not_encode_and_sends_nothing(h: &Harness) {
    let q = h.queue::<Value>("complete-many-bad");
    q.enqueue(NewJob::new(json!(1)).id("a").unwrap())
        .await
        .unwrap();
    let job = q.claim("w", LEASE, 1).await.unwrap().remove(0);
    // JSON objects take string keys only.
    let result = BTreeMap::from([(vec![1u8], 1u8)]);
    let err = q
        .complete_many(&[(job.id.clone(), job.token, result)])
        .await
        .unwrap_err();
    assert!(matches!(err, Error::JobResult(_)), "{err:?}");
    let record = q.jobs().get(&job.id).await.unwrap().unwrap();
    assert_eq!(record.state, JobState::Active, "nothing was sent");
    h.check(&q).await;
}
