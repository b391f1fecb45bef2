//! One bad record breaks no page, against real servers on both wires: a job
//! field that is not UTF-8 shows escaped; a queue with a key of the wrong
//! type, or a registry member that is not a queue name, is named with the
//! key and what it holds while the other queues show, on the overview and
//! in `/metrics`; a queue made without the client (raw `EMQ.ENQUEUE`, or
//! its keyspace without a registry entry on wire 4) is listed like any
//! other.

use crate::common::{Page, Site, on_both_wires};
use axum::http::StatusCode;
use echomq::{NewJob, Wire};
use openmetrics_parser::{MetricsExposition, PrometheusType, PrometheusValue};
use serde_json::json;

type Exposition = MetricsExposition<PrometheusType, PrometheusValue>;

/// Runs `cmd` on the site's server, raw.
async fn raw(site: &Site, cmd: &mut redis::Cmd) {
    let _: redis::Value = cmd
        .query_async(&mut site.server.connection().await)
        .await
        .unwrap_or_else(|err| panic!("{cmd:?}: {err}"));
}

/// Enqueues one job `id` to each of `queues`, through the client.
async fn enqueue(site: &Site, queues: &[&str], id: &str) {
    for name in queues {
        site.queue(name)
            .enqueue(NewJob::new(json!({"n": 1})).id(id).unwrap())
            .await
            .unwrap();
    }
}

/// `/metrics`, answered 200 and parsed by a strict text-format parser.
async fn scrape(site: &Site) -> Exposition {
    let page = site
        .dashboard()
        .get("/metrics")
        .await
        .expect(StatusCode::OK);
    openmetrics_parser::prometheus::parse_prometheus(&page.body)
        .unwrap_or_else(|err| panic!("{err:?} in\n{}", page.body))
}

/// The value of the sample of `family` whose labels include `labels`, if
/// there is one.
fn sample(exposition: &Exposition, family: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let family = exposition.families.get(family)?;
    family
        .iter_samples()
        .find(|sample| {
            let set = sample.get_labelset().unwrap();
            labels
                .iter()
                .all(|(name, want)| set.get_label_value(name) == Some(*want))
        })
        .map(|sample| match &sample.value {
            PrometheusValue::Gauge(n) => n.as_f64(),
            PrometheusValue::Counter(c) => c.value.as_f64(),
            other => panic!("not a number: {other:?}"),
        })
}

/// The overview's row of `queue`, as HTML.
fn row<'a>(page: &'a Page, queue: &str) -> &'a str {
    let needle = format!(r#"data-queue="{queue}""#);
    let at = page
        .body
        .find(&needle)
        .unwrap_or_else(|| panic!("no row of {queue} in:\n{}", page.body));
    let start = page.body[..at].rfind("<tr").unwrap();
    let rest = &page.body[start..];
    &rest[..rest.find("</tr>").unwrap()]
}

#[tokio::test]
async fn a_job_field_that_is_not_utf8_shows_escaped_on_every_page() {
    on_both_wires(|site| async move {
        enqueue(&site, &["q"], "a").await;
        let job = site
            .queue("q")
            .keys()
            .job(&echomq::JobId::new("a").unwrap());
        raw(
            &site,
            redis::cmd("HSET")
                .arg(&job)
                .arg("payload")
                .arg(b"{\"n\":\xff}".as_slice())
                .arg("error")
                .arg(b"boom \xfe".as_slice()),
        )
        .await;
        let dashboard = site.dashboard();
        let overview = dashboard.get("/").await.expect(StatusCode::OK);
        assert!(row(&overview, "q").contains(">1<"), "{}", overview.body);
        let queue = dashboard.get("/queues/q").await.expect(StatusCode::OK);
        assert!(queue.body.contains(r"boom \xfe"), "{}", queue.body);
        let page = dashboard
            .get("/queues/q/jobs/a")
            .await
            .expect(StatusCode::OK);
        assert!(page.body.contains(r"\xff"), "{}", page.body);
        assert!(page.body.contains(r"boom \xfe"), "{}", page.body);
        let metrics = scrape(&site).await;
        let pending = [("queue", "q"), ("state", "pending")];
        assert_eq!(sample(&metrics, "emq_queue_jobs", &pending), Some(1.0));
    })
    .await;
}

#[tokio::test]
async fn a_key_of_the_wrong_type_names_its_queue_and_the_others_show() {
    on_both_wires(|site| async move {
        enqueue(&site, &["a", "b", "c"], "j").await;
        raw(&site, redis::cmd("SET").arg("emq:{b}:pending").arg("x")).await;
        let problem = "emq:{b}:pending holds a string, expected a zset";

        let page = site.dashboard().get("/").await.expect(StatusCode::OK);
        for healthy in ["a", "c"] {
            let row = row(&page, healthy);
            assert!(row.contains(r#"data-state="pending">1<"#), "{row}");
        }
        let broken = row(&page, "b");
        assert!(broken.contains("unreadable"), "{broken}");
        assert!(broken.contains(problem), "{broken}");

        let metrics = scrape(&site).await;
        for healthy in ["a", "c"] {
            let pending = [("queue", healthy), ("state", "pending")];
            assert_eq!(sample(&metrics, "emq_queue_jobs", &pending), Some(1.0));
        }
        assert_eq!(
            sample(&metrics, "emq_queue_jobs", &[("queue", "b")]),
            None,
            "no series of the broken queue"
        );
        let named = [("queue", "b"), ("problem", problem)];
        assert_eq!(sample(&metrics, "emq_queue_unreadable", &named), Some(1.0));
    })
    .await;
}

#[tokio::test]
async fn a_registry_member_that_is_not_a_queue_name_is_named_and_the_rest_listed() {
    on_both_wires(|site| async move {
        enqueue(&site, &["q"], "j").await;
        raw(&site, redis::cmd("SADD").arg("emq:queues").arg("bad name")).await;
        raw(
            &site,
            redis::cmd("SADD")
                .arg("emq:queues")
                .arg(b"x\xff".as_slice()),
        )
        .await;

        let page = site.dashboard().get("/").await.expect(StatusCode::OK);
        assert!(row(&page, "q").contains(r#"data-state="pending">1<"#));
        for member in ["bad name", r"x\xff"] {
            let row = row(&page, member);
            assert!(
                row.contains("emq:queues holds a member that is not a queue name"),
                "{row}"
            );
        }

        let metrics = scrape(&site).await;
        let pending = [("queue", "q"), ("state", "pending")];
        assert_eq!(sample(&metrics, "emq_queue_jobs", &pending), Some(1.0));
        let named = sample(&metrics, "emq_queue_unreadable", &[("queue", "bad name")]);
        assert_eq!(named, Some(1.0));
    })
    .await;
}

#[tokio::test]
async fn a_queue_made_without_the_client_shows_on_the_overview_and_in_metrics() {
    on_both_wires(|site| async move {
        match site.wire {
            Wire::Native => {
                raw(
                    &site,
                    redis::cmd("EMQ.ENQUEUE")
                        .arg("emq:{raw}")
                        .arg("j")
                        .arg("{}"),
                )
                .await
            }
            // What a raw FCALL of the library leaves: the keyspace, and no
            // registry entry.
            Wire::Script => {
                enqueue(&site, &["raw"], "j").await;
                raw(&site, redis::cmd("SREM").arg("emq:queues").arg("raw")).await;
            }
        }
        let page = site.dashboard().get("/").await.expect(StatusCode::OK);
        let row = row(&page, "raw");
        assert!(row.contains(r#"data-state="pending">1<"#), "{row}");
        let metrics = scrape(&site).await;
        let pending = [("queue", "raw"), ("state", "pending")];
        assert_eq!(sample(&metrics, "emq_queue_jobs", &pending), Some(1.0));
    })
    .await;
}
