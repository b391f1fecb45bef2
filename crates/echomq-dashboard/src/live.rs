//! Live parts over server-sent events: a queue's events stream (its
//! `events` key) wakes a re-render of the part that shows it, at most
//! every [`THROTTLE`], and every [`REFRESH`] regardless (ages move, queues
//! appear).

use crate::state::App;
use crate::{auth, pages};
use axum::extract::{Path, Query, State};
use axum::response::sse::{Event, KeepAlive, KeepAliveStream, Sse};
use echomq::EventsFrom;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::{FutureExt, StreamExt};
use serde_json::Value;
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The least time between two renders of one live part.
const THROTTLE: Duration = Duration::from_millis(300);
/// The most time between two renders of one live part.
const REFRESH: Duration = Duration::from_secs(10);
/// How long one blocking read of an events stream waits.
const READ_WAIT: Duration = Duration::from_secs(5);

/// Watchers of queues' events streams; each sends `()` when its queue's
/// stream has news. Aborted when dropped (the page went away).
struct Watchers {
    tasks: Vec<JoinHandle<()>>,
    news: mpsc::Receiver<()>,
}

impl Drop for Watchers {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Watchers {
    fn start(app: &App, names: &[String]) -> Self {
        let (tx, news) = mpsc::channel(1);
        let tasks = names
            .iter()
            .filter_map(|name| app.connector.queue::<Value>(name).ok())
            .map(|queue| {
                let tx = tx.clone();
                tokio::spawn(async move {
                    let Ok(mut events) = queue.events(EventsFrom::Now).await else {
                        return;
                    };
                    loop {
                        match events.next_within(READ_WAIT).await {
                            Ok(Some(_)) => {
                                // Full: a render is already due.
                                let _ = tx.try_send(());
                            }
                            Ok(None) => {}
                            Err(err) => {
                                tracing::debug!("live events of {}: {err}", queue.name());
                                return;
                            }
                        }
                    }
                })
            })
            .collect();
        Self { tasks, news }
    }

    /// Waits for news or [`REFRESH`], whichever comes first, then at least
    /// until [`THROTTLE`] after the last render.
    async fn next(&mut self) {
        let _ = tokio::time::timeout(REFRESH, self.news.recv()).await;
        tokio::time::sleep(THROTTLE).await;
        while self.news.try_recv().is_ok() {}
    }
}

/// Renders one live part: `None` when it could not be read this time.
type Render = Box<dyn Fn(App) -> BoxFuture<'static, Option<String>> + Send + Sync>;

/// Server-sent events.
type Events = Sse<KeepAliveStream<BoxStream<'static, Result<Event, Infallible>>>>;

/// A stream of `name` events whose data `render` makes, one per wake.
fn live(app: App, names: Vec<String>, name: &'static str, render: Render) -> Events {
    let watchers = Watchers::start(&app, &names);
    // Renders run after the handler returned: as its caller, so their
    // forms carry the viewer's CSRF token.
    let caller = auth::caller();
    let stream = futures_util::stream::unfold(
        (app, watchers, render),
        move |(app, mut watchers, render)| {
            let caller = caller.clone();
            async move {
                loop {
                    watchers.next().await;
                    let rendered = match caller.clone() {
                        Some(caller) => auth::as_caller(caller, render(app.clone())).await,
                        None => render(app.clone()).await,
                    };
                    if let Some(html) = rendered {
                        let event = Event::default().event(name).data(html);
                        return Some((Ok(event), (app, watchers, render)));
                    }
                }
            }
        },
    );
    Sse::new(stream.boxed()).keep_alive(KeepAlive::default())
}

/// `GET /live/queues`: the queues table's rows, as `queues` events.
pub(crate) async fn queues(State(app): State<App>) -> Events {
    let names = app.connector.queues().await.unwrap_or_default();
    let render: Render = Box::new(|app| {
        async move {
            let queues = pages::queues::read_all(&app).await.ok()?;
            Some(pages::queues::rows(&app, &queues).into_string())
        }
        .boxed()
    });
    live(app, names, "queues", render)
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
) -> Events {
    let state = view
        .state
        .and_then(|s| s.parse().ok())
        .unwrap_or(echomq::JobState::Pending);
    let watched = vec![name.clone()];
    let render: Render = Box::new(move |app| {
        let name = name.clone();
        async move {
            let queue = app.connector.queue::<Value>(&name).ok()?;
            let counts = queue.counts().await.ok()?;
            Some(pages::queue::tabs(&app, &name, &counts, state).into_string())
        }
        .boxed()
    });
    live(app, watched, "counts", render)
}
