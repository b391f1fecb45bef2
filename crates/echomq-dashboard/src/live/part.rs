//! Live parts: one read per part and wake, shared by every viewer of the
//! part.
//!
//! A part (the queues table, or one queue's state tabs) is read by one
//! task while anyone views it: it waits for news of its queues from the
//! [`Hub`](super::hub::Hub) (or [`REFRESH`]), at most every [`THROTTLE`],
//! reads the part once and hands the [`Reading`] to every viewer. Each
//! viewer draws its HTML from it as its own caller (its forms carry its
//! session's CSRF token), which costs no server call. The first viewer
//! starts the task; it stops when the last one leaves.

use super::hub::Watch;
use crate::pages::{self, queues::Overview};
use crate::state::App;
use echomq::{Counts, JobState};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::{Mutex, watch};
use tokio::task::JoinHandle;

/// The least time between two readings of one live part.
const THROTTLE: Duration = Duration::from_millis(300);
/// The most time between two readings of one live part (ages move,
/// queues appear).
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

    /// The part's HTML drawn from `reading`, for the running request's
    /// caller.
    pub(crate) fn draw(&self, app: &App, reading: &Reading) -> String {
        match (self, reading) {
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
}

/// What a part shows, read once per wake for all its viewers.
pub(crate) enum Reading {
    /// Every queue's overview, in name order.
    Queues(Vec<Overview>),
    /// One queue's counts.
    Tabs(Counts),
}

/// The parts viewed now.
#[derive(Default)]
pub(crate) struct Parts {
    viewed: Mutex<HashMap<PartKey, Weak<Part>>>,
}

impl std::fmt::Debug for Parts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parts").finish_non_exhaustive()
    }
}

/// One part's reading task and its latest reading.
struct Part {
    reading: watch::Sender<Option<Arc<Reading>>>,
    task: JoinHandle<()>,
}

impl Drop for Part {
    fn drop(&mut self) {
        // Its watch of the hub goes with the task.
        self.task.abort();
    }
}

/// One viewer of a part: each reading of it, as it comes.
pub(crate) struct Viewer {
    _part: Arc<Part>,
    reading: watch::Receiver<Option<Arc<Reading>>>,
}

impl Viewer {
    /// The part's next reading.
    pub(crate) async fn next(&mut self) -> Arc<Reading> {
        loop {
            if self.reading.changed().await.is_err() {
                // The part's sender lives as long as this viewer.
                std::future::pending::<()>().await;
            }
            if let Some(reading) = self.reading.borrow_and_update().clone() {
                return reading;
            }
        }
    }
}

impl Parts {
    /// A viewer of part `key`, which starts reading if nobody viewed it.
    /// Once this returns, any event written to the part's queues makes a
    /// reading that reaches the viewer.
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
            reading: part.reading.subscribe(),
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
        let reading = watch::Sender::new(None);
        let task = tokio::spawn(read_on_news(app.clone(), key, watch, reading.clone()));
        Arc::new(Part { reading, task })
    }
}

/// Reads the part after each wake (news of its queues or [`REFRESH`]),
/// at most every [`THROTTLE`]; the queues table watches the queues it
/// read.
async fn read_on_news(
    app: App,
    key: PartKey,
    mut watch: Watch,
    reading: watch::Sender<Option<Arc<Reading>>>,
) {
    loop {
        let _ = tokio::time::timeout(REFRESH, watch.news()).await;
        tokio::time::sleep(THROTTLE).await;
        watch.forget();
        let Some((read, names)) = read(&app, &key).await else {
            continue;
        };
        reading.send_replace(Some(Arc::new(read)));
        let watched: Vec<&str> = watch.queues().iter().map(|q| q.as_str()).collect();
        if names != watched {
            // Queues came or went: watch the new set before the old goes,
            // so that no reader stops and starts again in between.
            watch = app.live.hub.watch(&names).await;
        }
    }
}

/// What the part shows, and the queues it shows; `None` when it could
/// not be read this time.
async fn read(app: &App, key: &PartKey) -> Option<(Reading, Vec<String>)> {
    match key {
        PartKey::Queues => {
            let queues = pages::queues::read_all(app).await.ok()?;
            let names = queues.iter().map(|q| q.name().to_string()).collect();
            Some((Reading::Queues(queues), names))
        }
        PartKey::Tabs { queue, .. } => {
            let queue = app.connector.queue::<Value>(queue).ok()?;
            let counts = queue.admin().counts().await.ok()?;
            Some((Reading::Tabs(counts), vec![queue.name().to_string()]))
        }
    }
}
