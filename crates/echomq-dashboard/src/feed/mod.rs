//! The live feeds (`GET /live/…`): a part's renders to each viewer over
//! server-sent events; a queue's events stream (its `events` key) wakes
//! a re-render of the parts that show it.
//!
//! What a viewer costs is bounded: the hub (`live/hub.rs`) reads each
//! watched queue's events once for every viewer (one connection on one
//! server, one per queue on a cluster), each part is read once per wake
//! for all its viewers ([`read`]; each viewer draws its own HTML from the
//! reading, with the pages' own drawing), and at most
//! [`Live::cap`](crate::live::Live::cap) viewers are served at once
//! (`Dashboard::live_viewers`); the next one is answered 503. The list of
//! what is watched is `live/`, which the shared state holds; this module
//! reads and draws, and imports pages.

mod read;

use crate::caller::{self, Proof};
use crate::error::PageError;
use crate::live::part::{PartKey, Reading, Viewer};
use crate::state::App;
use crate::{layout, pages, permit};
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use maud::html;
use serde_json::Value;
use std::convert::Infallible;
use tokio::sync::OwnedSemaphorePermit;

/// Seconds a refused viewer is asked to wait (`Retry-After`).
const RETRY_AFTER_SECS: u32 = 30;

/// `GET /live/queues`: the queues table's rows, as `queues` events.
pub(crate) async fn queues(State(app): State<App>) -> Response {
    serve(app, PartKey::Queues).await
}

/// The live part's query: the state tab the page shows.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct QueueView {
    state: Option<String>,
}

/// `GET /live/queues/{queue}`: the queue's state tabs with their counts,
/// as `counts` events.
pub(crate) async fn queue(
    State(app): State<App>,
    Path(name): Path<String>,
    Query(view): Query<QueueView>,
) -> Response {
    if let Err(err) = permit::see(&name) {
        return err.respond(&app, &app.href("/"));
    }
    if let Err(err) = app.connector.queue::<Value>(&name) {
        return PageError::from(err).respond(&app, &app.href("/"));
    }
    let current = view
        .state
        .and_then(|s| s.parse().ok())
        .unwrap_or(echomq::JobState::Pending);
    serve(
        app,
        PartKey::Tabs {
            queue: name,
            current,
        },
    )
    .await
}

/// The part's renders as events, to a viewer given a slot; 503 when every
/// slot is taken.
async fn serve(app: App, key: PartKey) -> Response {
    let Ok(slot) = app.live.slots.clone().try_acquire_owned() else {
        return full(&app);
    };
    let viewer = app
        .live
        .parts
        .view(key.clone(), |reading| {
            read::start(&app, key.clone(), reading)
        })
        .await;
    // Each reading is drawn after the handler returned: as its caller, so
    // that its forms carry the viewer's own CSRF token.
    let caller = caller::current();
    let stream = futures_util::stream::unfold(
        (viewer, slot),
        move |(mut viewer, slot): (Viewer, OwnedSemaphorePermit)| {
            let (app, key, caller) = (app.clone(), key.clone(), caller.clone());
            async move {
                let reading = viewer.next().await;
                // A signed-in page's stream ends with its session (sign-out,
                // idle, lifetime): its reconnect then meets the login.
                if let Some(caller) = caller.as_ref().filter(|c| c.proof == Proof::Session) {
                    let id = caller.session.as_ref().map_or("", |s| s.id.as_str());
                    if !app.sessions.is_live(id) {
                        return None;
                    }
                }
                let draw = async { draw(&app, &key, &reading) };
                let html = match caller {
                    Some(caller) => caller::as_caller(caller, draw).await,
                    None => draw.await,
                };
                let event = Event::default().event(key.event()).data(html);
                Some((Ok::<_, Infallible>(event), (viewer, slot)))
            }
        },
    );
    Sse::new(stream.boxed())
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// Part `key`'s HTML drawn from `reading`, for the running request's
/// caller.
fn draw(app: &App, key: &PartKey, reading: &Reading) -> String {
    match (key, reading) {
        (PartKey::Queues, Reading::Queues(queues)) => {
            pages::queues::rows(app, queues).into_string()
        }
        (PartKey::Tabs { queue, current }, Reading::Tabs(counts)) => {
            pages::queue::tabs(app, queue, counts, *current).into_string()
        }
        // A part's task reads its own kind only.
        _ => String::new(),
    }
}

/// 503: every live viewer's slot is taken (or there are none). The page
/// that asked keeps working without live updates; htmx's SSE extension
/// tries again after 0.5 s, 1 s, 2 s and so on up to 64 s, and takes the
/// updates up again once a slot is free.
fn full(app: &App) -> Response {
    let cap = app.live.cap;
    let (title, why, later) = if cap == 0 {
        (
            "Live updates are off",
            "This dashboard serves no live viewers (--live-viewers 0).".to_string(),
            "",
        )
    } else {
        (
            "Live updates are full",
            format!(
                "This dashboard serves at most {cap} live {} at once \
                 (--live-viewers, Dashboard::live_viewers), and all are watching.",
                if cap == 1 { "viewer" } else { "viewers" }
            ),
            " Its live updates start by themselves once a viewer leaves.",
        )
    };
    let body = html! {
        h1 { (title) }
        p.refused role="alert" { (why) }
        p { "This page still works: reload it for fresh figures." (later) }
        p { a href=(app.href("/")) { "Queues" } }
    };
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, RETRY_AFTER_SECS.to_string())],
        layout::page(app, title, None, body),
    )
        .into_response()
}
