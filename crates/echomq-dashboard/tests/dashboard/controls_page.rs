//! The control map page: a row per control of the registry, grouped by
//! scope, and links from each control to where the dashboard uses it.

use crate::common::{Site, on_both_wires};
use axum::http::StatusCode;
use echomq::Transition;
use echomq::protocol::Scope;
use serde_json::json;

/// The row of control `name`.
fn row<'a>(body: &'a str, name: &str) -> &'a str {
    let at = body
        .find(&format!(r#"data-control="{name}""#))
        .unwrap_or_else(|| panic!("no row {name}:\n{body}"));
    let rest = &body[at..];
    &rest[..rest.find("</tr>").unwrap()]
}

#[tokio::test]
async fn a_row_per_control_grouped_by_scope() {
    on_both_wires(|site| async move {
        let page = site
            .dashboard()
            .get("/controls")
            .await
            .expect(StatusCode::OK);
        assert_eq!(
            page.body.matches("data-control=").count(),
            Transition::ALL.len()
        );
        for t in Transition::ALL {
            let row = row(&page.body, t.name());
            let control = t.control();
            assert!(row.contains(control.functions[0]), "{row}");
            assert!(row.contains(control.command.native), "{row}");
            assert!(row.contains(&format!("{}.lua", control.command.script)));
            if let Some(bulk) = &control.bulk {
                assert!(row.contains(bulk.native), "{row}");
            }
        }
        for scope in Scope::ALL {
            assert!(page.body.contains(scope.title()), "{}", scope.title());
        }
        // Keys under the base, a job's keys by pattern.
        assert!(row(&page.body, "get").contains("job:&lt;id&gt;"));
        assert!(row(&page.body, "claim").contains("<code>pending</code>"));
    })
    .await;
}

#[tokio::test]
async fn a_control_used_on_the_dashboard_links_to_its_page() {
    on_both_wires(|site| async move {
        site.queue("q").enqueue(json!(1)).await.unwrap();
        let page = site
            .dashboard()
            .get("/controls")
            .await
            .expect(StatusCode::OK);
        let reprocess = row(&page.body, "reprocess");
        assert!(
            reprocess.contains(r##"href="/queues/q#jobs""##),
            "{reprocess}"
        );
        assert!(reprocess.contains("Job page: Reprocess"), "{reprocess}");
        assert!(
            reprocess.contains(r##"href="/queues/q#bulk""##),
            "{reprocess}"
        );
        let pause = row(&page.body, "pause");
        assert!(pause.contains(r#"href="/""#), "{pause}");
        assert!(pause.contains(r#"href="/queues/q""#), "{pause}");
        let drain = row(&page.body, "drain");
        assert!(drain.contains(r##"href="/queues/q#danger""##), "{drain}");
        for unused in ["claim", "complete", "extend"] {
            assert!(row(&page.body, unused).contains("library only"), "{unused}");
        }
    })
    .await;
}

#[tokio::test]
async fn the_links_go_to_the_queue_named() {
    let site = Site::start(echomq::Wire::Script).await;
    let page = site
        .dashboard()
        .get("/controls?queue=billing")
        .await
        .expect(StatusCode::OK);
    assert!(row(&page.body, "limit").contains(r##"href="/queues/billing#limits""##));
    // No queue yet and none named: the queues page.
    let page = site.dashboard().get("/controls").await;
    assert!(row(&page.body, "cancel").contains(r#"href="/""#));
}
