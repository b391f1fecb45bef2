//! `GET /metrics`: the Prometheus text format of every queue under the
//! prefix that the request's grant sees (`echomq::prometheus`), read from
//! the server on each scrape.

use crate::caller;
use crate::state::App;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use echomq::Connector;
use echomq::prometheus::{self, QueueSnapshot};

/// One scrape of the queues the request's grant sees: 200 with the text,
/// or 503 naming what failed (a scrape that cannot reach the server must
/// not read as empty queues). A queue it does not see is not read.
pub(crate) async fn scrape(State(app): State<App>) -> Response {
    let Some(grant) = caller::with_grant(|grant| grant.cloned()) else {
        return (StatusCode::FORBIDDEN, "no grant\n").into_response();
    };
    let connector = &app.connector;
    let listed = connector
        .read_queues(|name| {
            let seen = grant.may_see(name.as_str());
            async move {
                match seen {
                    true => QueueSnapshot::read(connector, name.as_str())
                        .await
                        .map(Some),
                    false => Ok(None),
                }
            }
        })
        .await;
    let listed = match listed {
        Ok(listed) => listed,
        Err(err) => return unavailable(&err),
    };
    let (mut snapshots, mut unreadable) = (Vec::new(), Vec::new());
    for queue in listed {
        match queue {
            Ok(Some(snapshot)) => snapshots.push(snapshot),
            Ok(None) => {}
            Err(bad) if grant.may_see(&bad.queue) => unreadable.push(bad),
            Err(_) => {}
        }
    }
    let mut text = prometheus::render_snapshots(&snapshots);
    text.push_str(&prometheus::render_unreadable(&unreadable));
    ([(header::CONTENT_TYPE, prometheus::CONTENT_TYPE)], text).into_response()
}

/// One scrape of [`crate::metrics_router`].
pub(crate) async fn scrape_alone(State(connector): State<Connector>) -> Response {
    render(&connector).await
}

/// The scrape's answer for `connector`'s queues.
async fn render(connector: &Connector) -> Response {
    match prometheus::render(connector).await {
        Ok(body) => ([(header::CONTENT_TYPE, prometheus::CONTENT_TYPE)], body).into_response(),
        Err(err) => unavailable(&err),
    }
}

fn unavailable(err: &echomq::Error) -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, format!("{err}\n")).into_response()
}
