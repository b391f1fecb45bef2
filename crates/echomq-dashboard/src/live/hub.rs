//! The hub: who reads the queues' events streams for every live part.
//!
//! A [`Watch`] asks for news of some queues; the hub reads each watched
//! queue's events stream once, however many watch it, and tells every
//! watch which queues had news. On one server (or behind Sentinel) one
//! reader reads every watched queue: one [`MergedEvents`] connection, one
//! `XREAD BLOCK` over all the streams. On a cluster each queue's stream is
//! in a slot of its own and one read cannot span slots, so each watched
//! queue has a reader of its own (its cluster connection reaches every
//! node). A reader starts with the first watch of its first queue and
//! stops, closing its connection, when the last watch of its last queue
//! goes.

use echomq::{Connector, EventsFrom, MergedEvents, Queue, QueueName};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc};
use tokio::task::JoinHandle;

/// How long one read blocks. A queue watched anew joins the read after
/// it, at the latest; its events since it was watched are read then.
const READ_WAIT: Duration = Duration::from_secs(1);
/// How long a reader waits after a failed read or connect.
const RETRY: Duration = Duration::from_secs(1);
/// News messages a watch may fall behind by before it counts as news of
/// every queue it watches.
const NEWS_KEPT: usize = 64;

/// The names of the queues one read found events of.
type News = Arc<[QueueName]>;

/// The readers of the watched queues' events.
#[derive(Clone)]
pub(crate) struct Hub(Arc<Inner>);

struct Inner {
    connector: Connector,
    readers: Mutex<HashMap<Group, Reader>>,
    news: broadcast::Sender<News>,
}

/// Which reader reads a queue: on one server the one reader of all
/// (`None`); on a cluster the queue's own.
type Group = Option<QueueName>;

/// One reader task, and the watches of each queue it reads.
struct Reader {
    watches: HashMap<QueueName, usize>,
    changes: mpsc::UnboundedSender<Change>,
    task: JoinHandle<()>,
}

impl Drop for Reader {
    fn drop(&mut self) {
        // Its MergedEvents, and the connection, go with the task.
        self.task.abort();
    }
}

/// What a reader is told between reads.
enum Change {
    /// Read this queue too, from here.
    Add(Queue<Value>, EventsFrom),
    /// Read it no more.
    Remove(QueueName),
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let readers = self
            .0
            .readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("Hub")
            .field("readers", &readers.len())
            .finish()
    }
}

impl Hub {
    /// A hub reading `connector`'s queues, none yet.
    pub(crate) fn new(connector: Connector) -> Self {
        Self(Arc::new(Inner {
            connector,
            readers: Mutex::new(HashMap::new()),
            news: broadcast::channel(NEWS_KEPT).0,
        }))
    }

    /// Watches `names` (names that are no queue's are left out): once
    /// this returns, every event written to them reaches the watch.
    pub(crate) async fn watch(&self, names: &[String]) -> Watch {
        let queues: Vec<Queue<Value>> = names
            .iter()
            .filter_map(|name| self.0.connector.queue(name).ok())
            .collect();
        let news = self.0.news.subscribe();
        // Where a queue nobody reads yet starts: after its newest event,
        // read now, so that nothing written from here on is missed while
        // its reader takes it up.
        let unread: Vec<&Queue<Value>> = {
            let readers = self.lock();
            queues
                .iter()
                .filter(|q| !self.is_read(&readers, q.name()))
                .collect()
        };
        let starts = futures_util::future::join_all(unread.iter().map(|q| newest(q))).await;
        let mut starts: HashMap<&QueueName, EventsFrom> =
            unread.iter().map(|q| q.name()).zip(starts).collect();
        let mut readers = self.lock();
        for queue in &queues {
            let reader = readers
                .entry(self.group(queue.name()))
                .or_insert_with(|| self.start_reader());
            let count = reader.watches.entry(queue.name().clone()).or_insert(0);
            if *count == 0 {
                // Watched anew since it was looked at: read from now.
                let from = starts.remove(queue.name()).unwrap_or(EventsFrom::Now);
                let _ = reader.changes.send(Change::Add(queue.clone(), from));
            }
            *count += 1;
        }
        Watch {
            hub: self.clone(),
            queues: queues.iter().map(|q| q.name().clone()).collect(),
            news,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Group, Reader>> {
        self.0
            .readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn group(&self, queue: &QueueName) -> Group {
        self.0.connector.is_cluster().then(|| queue.clone())
    }

    fn is_read(&self, readers: &HashMap<Group, Reader>, queue: &QueueName) -> bool {
        readers
            .get(&self.group(queue))
            .is_some_and(|r| r.watches.contains_key(queue))
    }

    fn start_reader(&self) -> Reader {
        let (changes, told) = mpsc::unbounded_channel();
        let task = tokio::spawn(read(self.0.connector.clone(), told, self.0.news.clone()));
        Reader {
            watches: HashMap::new(),
            changes,
            task,
        }
    }

    /// One watch of `queues` fewer.
    fn unwatch(&self, queues: &[QueueName]) {
        let mut readers = self.lock();
        for queue in queues {
            let group = self.group(queue);
            let Some(reader) = readers.get_mut(&group) else {
                continue;
            };
            if let Some(count) = reader.watches.get_mut(queue) {
                *count -= 1;
                if *count == 0 {
                    reader.watches.remove(queue);
                    let _ = reader.changes.send(Change::Remove(queue.clone()));
                }
            }
            if reader.watches.is_empty() {
                readers.remove(&group);
            }
        }
    }
}

/// Where a reader of `queue` starts so as to miss nothing written after
/// now: after its newest entry (its first, when it has none yet).
async fn newest(queue: &Queue<Value>) -> EventsFrom {
    match queue.recent_events(1).await {
        Ok(events) => events
            .into_iter()
            .next()
            .map_or(EventsFrom::Beginning, |event| {
                EventsFrom::After(event.stream_id)
            }),
        // The reader reads its newest itself (and says why it cannot).
        Err(_) => EventsFrom::Now,
    }
}

/// A reader: applies the changes it is told between reads, and tells
/// the hub's watches which queues each read found events of. Runs until
/// aborted (its last queue unwatched).
async fn read(
    connector: Connector,
    mut told: mpsc::UnboundedReceiver<Change>,
    news: broadcast::Sender<News>,
) {
    let mut events = loop {
        match connector.merged_events().await {
            Ok(events) => break events,
            Err(err) => {
                tracing::warn!("live updates: connecting a reader of events: {err}");
                tokio::time::sleep(RETRY).await;
            }
        }
    };
    loop {
        if events.queues().next().is_none() {
            // Nothing to read until told.
            let Some(change) = told.recv().await else {
                return;
            };
            apply(&mut events, change).await;
        }
        while let Ok(change) = told.try_recv() {
            apply(&mut events, change).await;
        }
        match events.next_within(READ_WAIT).await {
            Ok(batch) if batch.is_empty() => {}
            Ok(batch) => {
                let mut seen = HashSet::new();
                let names: News = batch
                    .into_iter()
                    .map(|(queue, _)| queue)
                    .filter(|queue| seen.insert(queue.clone()))
                    .collect();
                // None watching right now is no error.
                let _ = news.send(names);
            }
            Err(err) if err.is_transient() => {
                tracing::debug!("live updates: reading events: {err}");
                tokio::time::sleep(RETRY).await;
            }
            Err(err) => {
                if !drop_unreadable(&connector, &mut events, &err).await {
                    tokio::time::sleep(RETRY).await;
                }
            }
        }
    }
}

async fn apply(events: &mut MergedEvents, change: Change) {
    match change {
        Change::Add(queue, from) => {
            if let Err(err) = events.add(&queue, from).await {
                tracing::warn!(
                    "live updates: the events of queue {} cannot be read: {err}",
                    queue.name()
                );
            }
        }
        Change::Remove(queue) => {
            events.remove(&queue);
        }
    }
}

/// After a read refused by the server (a queue's events key holding
/// another type, an ACL): reads each queue's stream alone and stops
/// reading those that fail, so that one queue does not stop the others'
/// updates. False when every stream reads alone.
async fn drop_unreadable(
    connector: &Connector,
    events: &mut MergedEvents,
    err: &echomq::Error,
) -> bool {
    let names: Vec<QueueName> = events.queues().cloned().collect();
    let mut dropped = false;
    for name in names {
        let Ok(queue) = connector.queue::<Value>(name.as_str()) else {
            continue;
        };
        if let Err(alone) = queue.recent_events(1).await {
            tracing::warn!(
                "live updates: the events of queue {name} cannot be read ({alone}); \
                 the queue's pages update every 10 s instead (the read failed: {err})"
            );
            events.remove(&name);
            dropped = true;
        }
    }
    dropped
}

/// Interest in some queues' news: their events are read while it lives.
pub(crate) struct Watch {
    hub: Hub,
    queues: Vec<QueueName>,
    news: broadcast::Receiver<News>,
}

impl Watch {
    /// Waits for news of one of the watched queues.
    pub(crate) async fn news(&mut self) {
        loop {
            match self.news.recv().await {
                Ok(names) if names.iter().any(|n| self.queues.contains(n)) => return,
                Ok(_) => {}
                // Fell behind: some of it may have been ours.
                Err(broadcast::error::RecvError::Lagged(_)) => return,
                Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
            }
        }
    }

    /// Forgets news already come (a render is about to read it all).
    pub(crate) fn forget(&mut self) {
        self.news = self.news.resubscribe();
    }

    /// The queues watched.
    pub(crate) fn queues(&self) -> &[QueueName] {
        &self.queues
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.hub.unwatch(&self.queues);
    }
}
