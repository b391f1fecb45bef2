//! Reading several queues' events over one connection: one `XREAD BLOCK`
//! over all their streams ([`MergedEvents`]).

use crate::error::{Error, Result};
use crate::events::{Event, EventsFrom, READ_COUNT, parse, streams};
use crate::queue::Queue;
use crate::transport::connector::Connector;
use crate::transport::link::Link;
use echomq_protocol::QueueName;
use redis::Value;
use std::collections::VecDeque;
use std::time::Duration;

/// A live reader of several queues' events over one connection of its
/// own: each read is one `XREAD BLOCK` over the events stream of every
/// queue it reads, so a program that follows many queues (the dashboard)
/// holds one connection, not one per queue. Queues join
/// ([`MergedEvents::add`]) and leave ([`MergedEvents::remove`]) between
/// reads.
///
/// On a cluster each queue's keys hash to a slot of their own and one
/// read cannot span slots: a merged reader there reads one queue, and
/// [`MergedEvents::add`] refuses a second (open a reader per queue).
///
/// ```
/// # use echomq::{Connector, EventsFrom};
/// # use std::time::Duration;
/// # async fn run(emq: Connector) -> echomq::Result<()> {
/// let mut reader = emq.merged_events().await?;
/// for name in ["mail", "thumbnails"] {
///     reader.add(&emq.queue::<()>(name)?, EventsFrom::Now).await?;
/// }
/// for (queue, event) in reader.next_within(Duration::from_secs(5)).await? {
///     println!("{queue}: {:?}", event.kind);
/// }
/// # Ok(()) }
/// ```
pub struct MergedEvents {
    cluster: bool,
    link: Link,
    streams: Vec<Stream>,
    /// Events read (or left of a partly read entry) not handed out yet.
    buffered: VecDeque<(QueueName, Event)>,
}

/// One queue's events stream, and how far it has been read.
struct Stream {
    queue: QueueName,
    key: String,
    last: String,
}

impl Connector {
    /// A reader of several queues' events over one connection of its own,
    /// reading none yet ([`MergedEvents::add`]).
    pub async fn merged_events(&self) -> Result<MergedEvents> {
        Ok(MergedEvents {
            cluster: self.is_cluster(),
            link: self.dedicated_link().await?,
            streams: Vec::new(),
            buffered: VecDeque::new(),
        })
    }
}

impl MergedEvents {
    /// Reads `queue`'s events too, from `from`; a queue already read keeps
    /// its place. On a cluster, a second queue is refused
    /// ([`Error::BadArgument`]): one read cannot span two slots.
    pub async fn add<T>(&mut self, queue: &Queue<T>, from: EventsFrom) -> Result<()> {
        if self.streams.iter().any(|s| &s.queue == queue.name()) {
            return Ok(());
        }
        if let (true, Some(read)) = (self.cluster, self.streams.first()) {
            return Err(Error::BadArgument {
                name: "queue",
                reason: format!(
                    "this merged reader already reads queue {} on a cluster, where each queue's \
                     events stream is in a slot of its own and one read cannot span two slots; \
                     read queue {} with a reader of its own",
                    read.queue,
                    queue.name()
                ),
            });
        }
        let (last, rest) = queue.events_start(&mut self.link, from).await?;
        let name = queue.name().clone();
        self.buffered
            .extend(rest.into_iter().map(|event| (name.clone(), event)));
        self.streams.push(Stream {
            queue: name,
            key: queue.keys().events(),
            last,
        });
        Ok(())
    }

    /// Stops reading `queue`'s events (its events not handed out yet are
    /// dropped); false when it was not read.
    pub fn remove(&mut self, queue: &QueueName) -> bool {
        let before = self.streams.len();
        self.streams.retain(|s| &s.queue != queue);
        self.buffered.retain(|(name, _)| name != queue);
        self.streams.len() != before
    }

    /// The queues read, in the order they were added.
    pub fn queues(&self) -> impl Iterator<Item = &QueueName> {
        self.streams.iter().map(|s| &s.queue)
    }

    /// Every event of the next read, each with its queue, in order within
    /// each queue: waits up to `wait` for the first, then takes what each
    /// stream holds (up to 500 entries of each). None when nothing arrived
    /// within `wait`; reading no queue, that is after `wait`.
    pub async fn next_within(&mut self, wait: Duration) -> Result<Vec<(QueueName, Event)>> {
        if !self.buffered.is_empty() {
            return Ok(self.buffered.drain(..).collect());
        }
        if self.streams.is_empty() {
            tokio::time::sleep(wait).await;
            return Ok(Vec::new());
        }
        let mut xread = redis::cmd("XREAD");
        xread
            .arg("COUNT")
            .arg(READ_COUNT)
            .arg("BLOCK")
            .arg((wait.as_millis() as u64).max(1))
            .arg("STREAMS");
        for stream in &self.streams {
            xread.arg(&stream.key);
        }
        for stream in &self.streams {
            xread.arg(&stream.last);
        }
        let reply: Value = xread.query_async(&mut self.link).await?;
        let mut events = Vec::new();
        for (key, entries) in streams(reply)? {
            let Some(stream) = self.streams.iter_mut().find(|s| s.key == key) else {
                continue;
            };
            for (id, fields) in entries {
                stream.last = id.clone();
                events.extend(
                    parse(id, fields)?
                        .into_iter()
                        .map(|event| (stream.queue.clone(), event)),
                );
            }
        }
        Ok(events)
    }
}
