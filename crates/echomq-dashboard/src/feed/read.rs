//! Reading a live part: one task per part viewed (`live/part.rs` keeps
//! the list), one read per wake, shared by every viewer of the part.
//!
//! The task waits for news of its queues from the
//! [`Hub`](crate::live::hub::Hub) (or [`REFRESH`]), at most every
//! [`THROTTLE`], reads the part once and hands the reading to every
//! viewer.

use crate::live::hub::Watch;
use crate::live::part::{PartKey, Reading, Readings};
use crate::overview;
use crate::state::App;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// The least time between two readings of one live part.
const THROTTLE: Duration = Duration::from_millis(300);
/// The most time between two readings of one live part (ages move,
/// queues appear).
const REFRESH: Duration = Duration::from_secs(10);

/// Starts reading part `key` into `reading`: it watches the part's queues
/// before it returns, so that no event written after is missed.
pub(super) async fn start(app: &App, key: PartKey, reading: Readings) -> JoinHandle<()> {
    let names = match &key {
        PartKey::Queues => app.connector.queues().await.unwrap_or_default(),
        PartKey::Tabs { queue, .. } => vec![queue.clone()],
    };
    let watch = app.live.hub.watch(&names).await;
    tokio::spawn(read_on_news(app.clone(), key, watch, reading))
}

/// Reads the part after each wake (news of its queues or [`REFRESH`]),
/// at most every [`THROTTLE`]; the queues table watches the queues it
/// read.
async fn read_on_news(app: App, key: PartKey, mut watch: Watch, reading: Readings) {
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
            let queues = overview::read_all(&app.connector).await.ok()?;
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
