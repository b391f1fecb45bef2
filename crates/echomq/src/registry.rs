//! The queues of a connector: a handle on one ([`Connector::queue`]) and
//! every one the prefix holds ([`Connector::queues`]).
//!
//! Here rather than in `transport/connector.rs`: a [`Queue`] holds its
//! [`Connector`], so the connector cannot make one without the two modules
//! importing each other. This module depends on both and neither depends on it.

use crate::error::Result;
use crate::queue::Queue;
use crate::transport::connector::Connector;
use echomq_protocol::{Keyspace, QueueName};

impl Connector {
    /// A handle on queue `name` whose payloads are `T` (JSON on the wire).
    pub fn queue<T>(&self, name: &str) -> Result<Queue<T>> {
        let keys = Keyspace::new(self.prefix(), &QueueName::new(name)?)?;
        Ok(Queue::new(self.clone(), keys))
    }

    /// Every queue of this prefix, sorted: the registry's members (a queue
    /// joins it on its first successful enqueue through this client and
    /// leaves it when obliterated), and the queues a walk of the keyspace
    /// finds by their meta hash, made without the client (raw `EMQ.*`
    /// commands) — `docs/protocol.md`, "Discovery", says what the walk
    /// costs and how often it runs. A registry member that is not a queue
    /// name is left out: [`Connector::read_queues`] names it.
    pub async fn queues(&self) -> Result<Vec<String>> {
        let found = self.discover().await?;
        Ok(found.queues.iter().map(ToString::to_string).collect())
    }
}
