//! The client's reads of a flow job's edges: `JobContext::dependencies`
//! (FLOW.DEPS) in a handler, with each edge's outcome parsed, and
//! `Jobs::dependents` (FLOW.DEPENDENTS); `CONFLICT` as a refusal.

use super::cases::flow_add;
use super::common::{Harness, raw_call, refusal};
use echomq::{
    Dependency, DependencyOutcome, Dependent, JobContext, JobError, JobId, NewJob, Outcome,
    Refusal, Worker,
};
use serde_json::{Value as Json, json};
use std::time::Duration;

#[echomq_testkit::case]
pub(super) async fn a_handler_reads_its_dependencies_and_their_outcomes(h: &Harness) {
    let q = h.queue::<Json>("flow_reads");
    let id = JobId::new("j").unwrap();
    q.enqueue(NewJob::new(json!(1)).id("j").unwrap())
        .await
        .unwrap();
    // The edges as resolutions will have left them (FLOW.RESOLVE comes
    // with the decision side): written raw on a waiting job.
    let _: () = redis::cmd("HSET")
        .arg(format!("{}:deps:j", q.keys().base()))
        .arg(&[
            "images fetch",
            "completed fetch 2 ok",
            "images gone",
            "removed -",
            "mail m",
            "wait",
            "q2 d",
            "dead d 3 boom, again",
            "q2 big",
            "completed big 70000 ",
        ])
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let worker = Worker::new(q.clone(), |job: JobContext<Json>| async move {
        let mut deps = job
            .dependencies()
            .await
            .map_err(|e| JobError::permanent(e.to_string()))?;
        deps.sort_by(|a, b| (&a.queue, &a.id).cmp(&(&b.queue, &b.id)));
        Ok::<_, JobError>(format!("{deps:?}"))
    })
    .start();
    let outcome: Outcome<String> = q.outcome(&id, Duration::from_secs(30)).await.unwrap();
    worker.shutdown(Duration::from_secs(10)).await;
    let Outcome::Completed { result: Some(text) } = outcome else {
        panic!("{outcome:?}")
    };
    let dependency = |queue: &str, id: &str, reference: Option<&str>, outcome| Dependency {
        reference: reference.map(str::to_string),
        queue: queue.into(),
        id: JobId::new(id).unwrap(),
        outcome,
    };
    let wanted = [
        dependency(
            "images",
            "fetch",
            Some("fetch"),
            DependencyOutcome::Completed {
                size: 2,
                result: Some(b"ok".to_vec()),
            },
        ),
        dependency("images", "gone", None, DependencyOutcome::Removed),
        dependency("mail", "m", None, DependencyOutcome::Waiting),
        dependency(
            "q2",
            "big",
            Some("big"),
            DependencyOutcome::Completed {
                size: 70_000,
                result: None,
            },
        ),
        dependency(
            "q2",
            "d",
            Some("d"),
            DependencyOutcome::Dead {
                failures: 3,
                error: "boom, again".into(),
            },
        ),
    ];
    assert_eq!(text, format!("{wanted:?}"));
}

#[echomq_testkit::case]
pub(super) async fn jobs_dependents_lists_a_job_s_dependents_told_or_not(h: &Harness) {
    let q = h.queue::<Json>("flow_dependents_read");
    flow_add(
        h,
        &q,
        &["f", "p", "p", "{}", "", "b.q d1 flow_dependents_read d2"],
    )
    .await;
    let _: () = redis::cmd("HSET")
        .arg(format!("{}:dependents:p", q.keys().base()))
        .arg(&["b.q d1", "1"])
        .query_async(&mut h.raw(&q).await)
        .await
        .unwrap();
    let mut dependents = q
        .jobs()
        .dependents(&JobId::new("p").unwrap())
        .await
        .unwrap();
    dependents.sort_by(|a, b| a.id.cmp(&b.id));
    let dependent = |queue: &str, id: &str, told| Dependent {
        queue: queue.into(),
        id: JobId::new(id).unwrap(),
        told,
    };
    assert_eq!(
        dependents,
        [
            dependent("b.q", "d1", true),
            dependent("flow_dependents_read", "d2", false)
        ]
    );
    let absent = q
        .jobs()
        .dependents(&JobId::new("absent").unwrap())
        .await
        .unwrap_err();
    assert_eq!(refusal(absent), Refusal::NoJob);
}

#[echomq_testkit::case]
pub(super) async fn a_conflict_is_a_refusal_naming_the_flow(h: &Harness) {
    let q = h.queue::<Json>("flow_conflict_refusal");
    flow_add(h, &q, &["f1", "a", "a", "{}", "", ""]).await;
    let err = raw_call(h, &q, "flow_add", &["f2", "a", "a", "{}", "", ""])
        .await
        .unwrap_err();
    let line = format!("{} {}", err.code().unwrap(), err.detail().unwrap());
    let reason = Refusal::parse_line(&line).unwrap();
    assert_eq!(reason, Refusal::Conflict("f1".into()));
    assert_eq!(reason.line(), "CONFLICT f1");
    assert_eq!(reason.to_string(), "the id is held by flow f1 (CONFLICT)");
}
