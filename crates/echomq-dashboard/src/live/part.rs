//! Live parts: the parts viewed now, each with its latest reading, shared
//! by every viewer of the part.
//!
//! A part (the queues table, or one queue's state tabs) is read by one
//! task while anyone views it (`feed/read.rs`): it hands each
//! [`Reading`] to every viewer. Each viewer draws its HTML from it as its
//! own caller (its forms carry its session's CSRF token), which costs no
//! server call. The first viewer starts the task; it stops when the last
//! one leaves. This file keeps the list and the readings; it reads and
//! draws nothing, so the state that holds it imports no page.

use crate::overview::Overview;
use echomq::{Counts, JobState};
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Weak};
use tokio::sync::{Mutex, watch};
use tokio::task::JoinHandle;

/// Where a part's reading task sends each reading.
pub(crate) type Readings = watch::Sender<Option<Arc<Reading>>>;

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
    reading: Readings,
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
    /// A viewer of part `key`. If nobody viewed it, `start` starts its
    /// reading task, which sends each reading to the [`Readings`] it is
    /// given. Once this returns, any event written to the part's queues
    /// makes a reading that reaches the viewer.
    pub(crate) async fn view<S, F>(&self, key: PartKey, start: S) -> Viewer
    where
        S: FnOnce(Readings) -> F,
        F: Future<Output = JoinHandle<()>>,
    {
        // Held across the start, so that two first viewers start one part.
        let mut viewed = self.viewed.lock().await;
        viewed.retain(|_, part| part.strong_count() > 0);
        let part = match viewed.get(&key).and_then(Weak::upgrade) {
            Some(part) => part,
            None => {
                let reading = watch::Sender::new(None);
                let task = start(reading.clone()).await;
                let part = Arc::new(Part { reading, task });
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
