//! The Prometheus text format of every queue under a prefix
//! (`echomq::prometheus`), parsed by a strict text-format parser
//! (openmetrics-parser) after a known run: names, types, labels and values.
//! On wire 4 and again on wire 6, against real servers.

use crate::common;

mod cases {
    use super::common::Harness;
    use echomq::protocol::metrics::BOUNDS_MS;
    use echomq::{FailAction, NewJob, Queue};
    use openmetrics_parser::{MetricsExposition, PrometheusType, PrometheusValue};
    use serde_json::{Value, json};
    use std::time::Duration;

    type Exposition = MetricsExposition<PrometheusType, PrometheusValue>;

    const LEASE: Duration = Duration::from_secs(30);

    async fn scrape(h: &Harness) -> Exposition {
        let text = echomq::prometheus::render(&h.connector).await.unwrap();
        openmetrics_parser::prometheus::parse_prometheus(&text)
            .unwrap_or_else(|err| panic!("{err:?} in\n{text}"))
    }

    /// The value of the sample of `family` whose labels include `labels`.
    fn value<'a>(
        exposition: &'a Exposition,
        family: &str,
        labels: &[(&str, &str)],
    ) -> &'a PrometheusValue {
        let family = exposition
            .families
            .get(family)
            .unwrap_or_else(|| panic!("no family {family}"));
        family
            .iter_samples()
            .find(|sample| {
                let set = sample.get_labelset().unwrap();
                labels
                    .iter()
                    .all(|(name, want)| set.get_label_value(name) == Some(*want))
            })
            .map(|sample| &sample.value)
            .unwrap_or_else(|| panic!("no sample of {labels:?}"))
    }

    fn number(value: &PrometheusValue) -> f64 {
        match value {
            PrometheusValue::Gauge(n) => n.as_f64(),
            PrometheusValue::Counter(c) => c.value.as_f64(),
            other => panic!("not a number: {other:?}"),
        }
    }

    fn family_type(exposition: &Exposition, name: &str) -> PrometheusType {
        exposition.families[name].family_type.clone()
    }

    async fn put(q: &Queue<Value>, name: &str) {
        let job = NewJob::new(json!(name)).id(name).unwrap().attempts(1);
        q.enqueue(job).await.unwrap();
    }

    /// Queue `a`: 3 jobs completed, 1 dead, 2 pending; queue `b`: 1 pending.
    #[echomq_testkit::case]
    pub(super) async fn a_scrape_after_a_known_run_parses_with_the_expected_values(h: &Harness) {
        let a = h.queue::<Value>("prom_a");
        let b = h.queue::<Value>("prom_b");
        for name in ["j1", "j2", "j3", "j4", "j5", "j6"] {
            put(&a, name).await;
        }
        put(&b, "k1").await;
        for claimed in a.claim("w", LEASE, 4).await.unwrap() {
            if claimed.id.as_str() == "j4" {
                a.fail(&claimed.id, claimed.token, "boom", FailAction::Dead)
                    .await
                    .unwrap();
            } else {
                a.complete(&claimed.id, claimed.token, &()).await.unwrap();
            }
        }
        b.admin().pause().await.unwrap();

        let scraped = scrape(h).await;
        assert_eq!(
            family_type(&scraped, "emq_queue_jobs"),
            PrometheusType::Gauge
        );
        assert_eq!(
            family_type(&scraped, "emq_jobs_finished_total"),
            PrometheusType::Counter
        );
        assert_eq!(
            family_type(&scraped, "emq_job_wait_seconds"),
            PrometheusType::Histogram
        );
        let jobs = |queue: &str, state: &str| {
            number(value(
                &scraped,
                "emq_queue_jobs",
                &[("queue", queue), ("state", state)],
            ))
        };
        assert_eq!(jobs("prom_a", "pending"), 2.0);
        assert_eq!(jobs("prom_a", "completed"), 3.0);
        assert_eq!(jobs("prom_a", "dead"), 1.0);
        assert_eq!(jobs("prom_a", "active"), 0.0);
        assert_eq!(jobs("prom_b", "pending"), 1.0);
        let paused = |queue: &str| number(value(&scraped, "emq_queue_paused", &[("queue", queue)]));
        assert_eq!((paused("prom_a"), paused("prom_b")), (0.0, 1.0));
        let age = number(value(
            &scraped,
            "emq_queue_oldest_pending_age_seconds",
            &[("queue", "prom_a")],
        ));
        assert!((0.0..60.0).contains(&age), "{age}");
        let finished = |outcome: &str| {
            number(value(
                &scraped,
                "emq_jobs_finished_total",
                &[("queue", "prom_a"), ("outcome", outcome)],
            ))
        };
        assert_eq!(
            ["completed", "failed", "dead", "cancelled", "stalled"].map(finished),
            [3.0, 0.0, 1.0, 0.0, 0.0]
        );
        for family in ["emq_job_wait_seconds", "emq_job_run_seconds"] {
            let PrometheusValue::Histogram(histogram) =
                value(&scraped, family, &[("queue", "prom_a")])
            else {
                panic!("{family} is not a histogram");
            };
            assert_eq!(histogram.count, Some(4), "{family}");
            assert_eq!(histogram.buckets.len(), BOUNDS_MS.len() + 1);
            let last = histogram.buckets.last().unwrap();
            assert!(last.upper_bound.is_infinite());
            assert_eq!(last.count.as_f64(), 4.0);
            // Cumulative: never decreasing.
            assert!(
                histogram
                    .buckets
                    .windows(2)
                    .all(|w| w[0].count.as_f64() <= w[1].count.as_f64())
            );
            // Jobs run by this test wait and run far less than a minute.
            let under_a_minute = histogram
                .buckets
                .iter()
                .find(|bucket| bucket.upper_bound == 60.0)
                .unwrap();
            assert_eq!(under_a_minute.count.as_f64(), 4.0, "{family}");
        }
        let none = value(&scraped, "emq_job_wait_seconds", &[("queue", "prom_b")]);
        assert!(matches!(none, PrometheusValue::Histogram(h) if h.count == Some(0)));
    }

    #[echomq_testkit::case]
    pub(super) async fn flow_control_families_show_only_where_set(h: &Harness) {
        let limited = h.queue::<Value>("prom_limited");
        let plain = h.queue::<Value>("prom_plain");
        put(&limited, "x").await;
        put(&plain, "y").await;
        limited
            .admin()
            .set_rate_limit(100, Duration::from_secs(2))
            .await
            .unwrap();
        limited.admin().set_concurrency_cap(7).await.unwrap();
        let scraped = scrape(h).await;
        let of = |family: &str, queue: &str| number(value(&scraped, family, &[("queue", queue)]));
        assert_eq!(of("emq_queue_rate_limit_max", "prom_limited"), 100.0);
        assert_eq!(
            of("emq_queue_rate_limit_window_seconds", "prom_limited"),
            2.0
        );
        assert_eq!(of("emq_queue_rate_limit_used", "prom_limited"), 0.0);
        assert_eq!(of("emq_queue_concurrency_max", "prom_limited"), 7.0);
        let limits = &scraped.families["emq_queue_rate_limit_max"];
        assert_eq!(limits.iter_samples().count(), 1, "only the limited queue");
    }

    #[echomq_testkit::case]
    pub(super) async fn a_queue_with_a_key_of_the_wrong_type_is_named_and_the_others_scraped(
        h: &Harness,
    ) {
        let healthy = h.queue::<Value>("prom_healthy");
        let broken = h.queue::<Value>("prom_broken");
        put(&healthy, "x").await;
        put(&broken, "y").await;
        let _: () = redis::cmd("SET")
            .arg(broken.keys().pending())
            .arg("not a zset")
            .query_async(&mut h.raw(&broken).await)
            .await
            .unwrap();
        let scraped = scrape(h).await;
        let pending = [("queue", "prom_healthy"), ("state", "pending")];
        assert_eq!(number(value(&scraped, "emq_queue_jobs", &pending)), 1.0);
        let jobs = &scraped.families["emq_queue_jobs"];
        assert!(
            jobs.iter_samples().all(|sample| {
                sample.get_labelset().unwrap().get_label_value("queue") == Some("prom_healthy")
            }),
            "no series of the broken queue"
        );
        let named = [
            ("queue", "prom_broken"),
            (
                "problem",
                "emq:{prom_broken}:pending holds a string, expected a zset",
            ),
        ];
        assert_eq!(number(value(&scraped, "emq_queue_unreadable", &named)), 1.0);
        assert_eq!(
            family_type(&scraped, "emq_queue_unreadable"),
            PrometheusType::Gauge
        );
    }
}
