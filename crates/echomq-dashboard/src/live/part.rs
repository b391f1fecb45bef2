//! Live parts: one render per part and wake, shared by every viewer of
//! the part.
//!
//! A part (the queues table, or one queue's state tabs) is rendered by
//! one task while anyone views it: it waits for news of its queues from
//! the [`Hub`](super::hub::Hub) (or [`REFRESH`]), at most every
//! [`THROTTLE`], renders once and hands the HTML to every viewer. The
//! first viewer starts the task; it stops when the last one leaves.

use super::hub::Watch;
use crate::pages;
use crate::state::App;
use echomq::JobState;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::{Mutex, watch};
use tokio::task::JoinHandle;

/// The least time between two renders of one live part.
const THROTTLE: Duration = Duration::from_millis(300);
/// The most time between two renders of one live part (ages move, queues
/// appear).
const REFRESH: Duration = Duration::from_secs(10);

/// Which part a viewer watches.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum PartKey {
    /// The queues table's rows (`queues` events).
    Queues,
    /// A queue's state tabs with their counts, one tab current (`counts`
    /// events).
    Tabs { queue: String, current: JobState },
}

impl PartKey {
    /// The name of the part's events.
    pub(crate) fn event(&self) -> &'static str {
        match self {
            PartKey::Queues => "queues",
            PartKey::Tabs { .. } => "counts",
        }
    }
}

/// The parts viewed now.
#[derive(Debug, Default)]
pub(crate) struct Parts {
    viewed: Mutex<HashMap<PartKey, Weak<Part>>>,
}

/// One part's render task and its latest render.
#[derive(Debug)]
struct Part {
    html: watch::Sender<Option<Arc<str>>>,
    task: JoinHandle<()>,
}

impl Drop for Part {
    fn drop(&mut self) {
        // Its watch of the hub goes with the task.
        self.task.abort();
    }
}

/// One viewer of a part: each render of it, as it comes.
pub(crate) struct Viewer {
    _part: Arc<Part>,
    html: watch::Receiver<Option<Arc<str>>>,
}

impl Viewer {
    /// The part's next render.
    pub(crate) async fn next(&mut self) -> Arc<str> {
        loop {
            if self.html.changed().await.is_err() {
                // The part's sender lives as long as this viewer.
                std::future::pending::<()>().await;
            }
            if let Some(html) = self.html.borrow_and_update().clone() {
                return html;
            }
        }
    }
}

impl Parts {
    /// A viewer of part `key`, which starts rendering if nobody viewed it.
    /// Once this returns, any event written to the part's queues makes a
    /// render that reaches the viewer.
    pub(crate) async fn view(&self, app: &App, key: PartKey) -> Viewer {
        // Held across the start, so that two first viewers start one part.
        let mut viewed = self.viewed.lock().await;
        viewed.retain(|_, part| part.strong_count() > 0);
        let part = match viewed.get(&key).and_then(Weak::upgrade) {
            Some(part) => part,
            None => {
                let part = Part::start(app, key.clone()).await;
                viewed.insert(key, Arc::downgrade(&part));
                part
            }
        };
        Viewer {
            html: part.html.subscribe(),
            _part: part,
        }
    }
}

impl Part {
    async fn start(app: &App, key: PartKey) -> Arc<Part> {
        let names = match &key {
            PartKey::Queues => app.connector.queues().await.unwrap_or_default(),
            PartKey::Tabs { queue, .. } => vec![queue.clone()],
        };
        let watch = app.live.hub.watch(&names).await;
        let html = watch::Sender::new(None);
        let task = tokio::spawn(render_on_news(app.clone(), key, watch, html.clone()));
        Arc::new(Part { html, task })
    }
}

/// Renders the part after each wake (news of its queues or [`REFRESH`]),
/// at most every [`THROTTLE`]; the queues table watches the queues it
/// rendered.
async fn render_on_news(
    app: App,
    key: PartKey,
    mut watch: Watch,
    html: watch::Sender<Option<Arc<str>>>,
) {
    loop {
        let _ = tokio::time::timeout(REFRESH, watch.news()).await;
        tokio::time::sleep(THROTTLE).await;
        watch.forget();
        let Some((rendered, names)) = render(&app, &key).await else {
            continue;
        };
        html.send_replace(Some(rendered.into()));
        let watched: Vec<&str> = watch.queues().iter().map(|q| q.as_str()).collect();
        if names != watched {
            // Queues came or went: watch the new set before the old goes,
            // so that no reader stops and starts again in between.
            watch = app.live.hub.watch(&names).await;
        }
    }
}

/// The part's HTML, and the queues it shows; `None` when it could not be
/// read this time.
async fn render(app: &App, key: &PartKey) -> Option<(String, Vec<String>)> {
    match key {
        PartKey::Queues => {
            let queues = pages::queues::read_all(app).await.ok()?;
            let names = queues.iter().map(|q| q.name().to_string()).collect();
            Some((pages::queues::rows(app, &queues).into_string(), names))
        }
        PartKey::Tabs { queue, current } => {
            let counts = app
                .connector
                .queue::<Value>(queue)
                .ok()?
                .counts()
                .await
                .ok()?;
            let html = pages::queue::tabs(app, queue, &counts, *current).into_string();
            Some((html, vec![queue.clone()]))
        }
    }
}
