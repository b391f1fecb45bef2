//! The worker's metrics through the `metrics` facade, read back from a
//! recording recorder (`metrics-util`'s `DebuggingRecorder`) after known
//! runs against a real server, on wire 4 and again on wire 6.
//!
//! Each case installs its own recorder as the test thread's local one. A
//! worker registers its handles in `Worker::start`, on that thread, and
//! every update after goes to those handles whatever thread it runs on;
//! the tests run on a current-thread runtime all the same.

use crate::common;

mod workers {
    use super::common::Harness;
    use echomq::worker_metrics::{
        CLAIM_BATCH_SIZE, HANDLER_DURATION, JOBS_FINISHED, JOBS_STARTED, JobOutcome, OUTCOME,
        OUTCOME_WRITE_DURATION, QUEUE,
    };
    use echomq::{JobContext, JobError, NewJob, Queue, Worker};
    use echomq_testkit::wait_for;
    use metrics::Unit;
    use metrics_util::MetricKind;
    use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
    use serde_json::{Value, json};
    use std::collections::BTreeMap;
    use std::time::Duration;
    use tokio::sync::mpsc;

    const BOUND: Duration = Duration::from_secs(10);

    /// What the recorder holds for one queue.
    struct Recorded {
        /// Counter values by (name, `outcome` label).
        counters: BTreeMap<(String, Option<String>), u64>,
        /// Histogram samples by name.
        histograms: BTreeMap<String, Vec<f64>>,
        /// Unit and help text by name.
        described: BTreeMap<String, (Option<Unit>, Option<String>)>,
    }

    impl Recorded {
        /// Takes the recorder's snapshot (it drains it: take one per run),
        /// keeping the metrics labelled with `queue`.
        fn of(snapshotter: &Snapshotter, queue: &str) -> Self {
            let mut recorded = Recorded {
                counters: BTreeMap::new(),
                histograms: BTreeMap::new(),
                described: BTreeMap::new(),
            };
            for (key, unit, help, value) in snapshotter.snapshot().into_vec() {
                let labels: BTreeMap<&str, &str> = key
                    .key()
                    .labels()
                    .map(|label| (label.key(), label.value()))
                    .collect();
                if labels.get(QUEUE) != Some(&queue) {
                    continue;
                }
                let name = key.key().name().to_string();
                recorded
                    .described
                    .insert(name.clone(), (unit, help.map(|help| help.to_string())));
                match (key.kind(), value) {
                    (MetricKind::Counter, DebugValue::Counter(n)) => {
                        let outcome = labels.get(OUTCOME).map(|o| o.to_string());
                        recorded.counters.insert((name, outcome), n);
                    }
                    (MetricKind::Histogram, DebugValue::Histogram(samples)) => {
                        let samples = samples.into_iter().map(|s| s.into_inner()).collect();
                        recorded.histograms.insert(name, samples);
                    }
                    (kind, value) => panic!("{name}: unexpected {kind:?} {value:?}"),
                }
            }
            recorded
        }

        fn started(&self) -> u64 {
            self.counters[&(JOBS_STARTED.to_string(), None)]
        }

        /// Every outcome's count, zeros included (each must be registered).
        fn finished(&self) -> BTreeMap<&'static str, u64> {
            JobOutcome::ALL
                .into_iter()
                .map(|outcome| {
                    let key = (JOBS_FINISHED.to_string(), Some(outcome.label().to_string()));
                    let n = self.counters.get(&key).copied();
                    (outcome.label(), n.unwrap_or_else(|| panic!("no {key:?}")))
                })
                .collect()
        }

        fn samples(&self, name: &str) -> &[f64] {
            self.histograms
                .get(name)
                .unwrap_or_else(|| panic!("no histogram {name}"))
        }

        /// Asserts every metric is described with its unit and a help text.
        fn assert_described(&self) {
            for (name, unit) in [
                (JOBS_STARTED, Unit::Count),
                (JOBS_FINISHED, Unit::Count),
                (HANDLER_DURATION, Unit::Seconds),
                (CLAIM_BATCH_SIZE, Unit::Count),
                (OUTCOME_WRITE_DURATION, Unit::Seconds),
            ] {
                let (got, help) = &self.described[name];
                assert_eq!(got.as_ref(), Some(&unit), "{name}'s unit");
                assert!(
                    help.as_deref().is_some_and(|h| !h.is_empty()),
                    "{name}'s help"
                );
            }
        }
    }

    /// `expected` outcomes with a count, every other outcome zero.
    fn only(expected: &[(JobOutcome, u64)]) -> BTreeMap<&'static str, u64> {
        JobOutcome::ALL
            .into_iter()
            .map(|outcome| {
                let n = expected
                    .iter()
                    .find(|(o, _)| *o == outcome)
                    .map(|(_, n)| *n);
                (outcome.label(), n.unwrap_or(0))
            })
            .collect()
    }

    /// Waits until the queue's cancel channel has a subscriber: a
    /// cancellation published from then on reaches the worker at once.
    async fn subscribed(h: &Harness, q: &Queue<Value>) {
        wait_for("the worker's cancel subscription", BOUND, || async {
            h.cancel_subscribers(q).await >= 1
        })
        .await;
    }

    /// 5 jobs complete, 2 fail once then complete, 1 fails until dead
    /// (2 attempts), 1 is cancelled while it runs: 12 attempts.
    #[echomq_testkit::case]
    pub(super) async fn a_known_run_counts_every_start_outcome_and_duration(h: &Harness) {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let _local = metrics::set_default_local_recorder(&recorder);
        let q = h.queue::<Value>("metrics_known_run");
        for _ in 0..5 {
            q.enqueue(json!("ok")).await.unwrap();
        }
        for _ in 0..2 {
            q.enqueue(json!("flaky")).await.unwrap();
        }
        q.enqueue(NewJob::new(json!("doomed")).attempts(2))
            .await
            .unwrap();
        let doomed_to_be_cancelled = q.enqueue(json!("cancel")).await.unwrap();
        let (running, mut cancel_runs) = mpsc::unbounded_channel();
        let worker = Worker::new(q.clone(), move |job: JobContext<Value>| {
            let running = running.clone();
            async move {
                match job.payload.as_str().unwrap() {
                    "flaky" if job.attempt == 1 => Err(JobError::retry("first attempt fails")),
                    "doomed" => Err(JobError::retry("always fails")),
                    "cancel" => {
                        running.send(()).unwrap();
                        job.cancelled().await;
                        Err(JobError::Cancelled)
                    }
                    _ => Ok(job.attempt),
                }
            }
        })
        .retry_delay(Duration::ZERO)
        .start();
        subscribed(h, &q).await;
        tokio::time::timeout(BOUND, cancel_runs.recv())
            .await
            .expect("the job to cancel runs");
        q.jobs().cancel(&doomed_to_be_cancelled.id).await.unwrap();
        wait_for("7 completed, 1 dead, 1 cancelled", BOUND, || async {
            let counts = q.admin().counts().await.unwrap();
            (counts.completed, counts.dead, counts.cancelled) == (7, 1, 1)
        })
        .await;
        let stats = worker.shutdown(BOUND).await;
        let recorded = Recorded::of(&snapshotter, "metrics_known_run");

        recorded.assert_described();
        assert_eq!(recorded.started(), 12, "5 + 2×2 + 2 + 1 attempts");
        assert_eq!(stats.claimed, 12);
        let finished = recorded.finished();
        assert_eq!(
            finished,
            only(&[
                (JobOutcome::Completed, 7),
                (JobOutcome::Retried, 3),
                (JobOutcome::Dead, 1),
                (JobOutcome::Cancelled, 1),
            ])
        );
        assert_eq!(finished.values().sum::<u64>(), recorded.started());
        let handler = recorded.samples(HANDLER_DURATION);
        assert_eq!(handler.len(), 12, "one sample per handler run");
        assert!(
            handler
                .iter()
                .all(|s| (0.0..BOUND.as_secs_f64()).contains(s))
        );
        let batches = recorded.samples(CLAIM_BATCH_SIZE);
        assert_eq!(batches.iter().sum::<f64>(), 12.0, "claimed = started");
        assert!(
            batches.len() >= 2,
            "the retries were claimed after the first batch"
        );
        assert!(batches.iter().all(|&n| n >= 1.0), "no empty claim recorded");
        let writes = recorded.samples(OUTCOME_WRITE_DURATION);
        assert!(
            (1..=12).contains(&writes.len()),
            "one sample per pipeline, each carrying one outcome or more: {}",
            writes.len()
        );
        assert!(
            writes
                .iter()
                .all(|s| (0.0..BOUND.as_secs_f64()).contains(s))
        );
        h.check(&q).await;
    }

    /// One job whose lease is voided while it runs (a forced remove: the
    /// worker writes nothing for it) and one whose completion is refused
    /// (`NOTACTIVE`: someone completed it first).
    #[echomq_testkit::case]
    pub(super) async fn a_voided_lease_and_a_refused_write_both_count_as_lease_lost(h: &Harness) {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        let _local = metrics::set_default_local_recorder(&recorder);
        let q = h.queue::<Value>("metrics_lease_lost");
        let voided = q
            .enqueue(NewJob::new(json!(1)).id("voided").unwrap())
            .await
            .unwrap();
        let (running, mut voided_runs) = mpsc::unbounded_channel();
        let (returned, mut voided_returned) = mpsc::unbounded_channel();
        let outside = q.clone();
        let worker = Worker::new(q.clone(), move |job: JobContext<Value>| {
            let (running, returned, outside) = (running.clone(), returned.clone(), outside.clone());
            async move {
                if job.id.as_str() == "voided" {
                    running.send(()).unwrap();
                    job.cancelled().await;
                    let refused = job.extend(Duration::from_secs(300)).await.is_err();
                    returned.send(refused).unwrap();
                } else {
                    outside
                        .complete(&job.id, job.token, &"from outside")
                        .await
                        .unwrap();
                }
                Ok::<_, JobError>("from the worker")
            }
        })
        // No heartbeat during the test: each lease is lost the one way.
        .lease(Duration::from_secs(300))
        .start();
        subscribed(h, &q).await;
        tokio::time::timeout(BOUND, voided_runs.recv())
            .await
            .expect("the voided job runs");
        assert!(
            q.jobs()
                .remove(&voided.id, echomq::IfActive::Force)
                .await
                .unwrap()
        );
        let refused = tokio::time::timeout(BOUND, voided_returned.recv())
            .await
            .expect("the voided job's handler returns");
        assert_eq!(refused, Some(true), "its checkpoint answered NOTACTIVE");
        // Enqueued only now: the checkpoint every running job gets when the
        // cancel subscription connects is long done, so none can find this
        // one completed from outside before its handler returns (that lease
        // would be voided, not refused).
        q.enqueue(NewJob::new(json!(2)).id("taken").unwrap())
            .await
            .unwrap();
        wait_for("the refused completion", BOUND, || async {
            worker.stats().lost == 1
        })
        .await;
        let stats = worker.shutdown(BOUND).await;
        let recorded = Recorded::of(&snapshotter, "metrics_lease_lost");

        assert_eq!(recorded.started(), 2);
        assert_eq!(
            recorded.finished(),
            only(&[(JobOutcome::LeaseLost, 2)]),
            "the voided lease and the refused write"
        );
        assert_eq!(
            (stats.lost, stats.completed, stats.write_errors),
            (1, 0, 0),
            "the stats count the refused write only"
        );
        assert_eq!(recorded.samples(HANDLER_DURATION).len(), 2);
        assert!(
            !recorded.samples(OUTCOME_WRITE_DURATION).is_empty(),
            "the refused completion was sent"
        );
        h.check(&q).await;
    }
}
