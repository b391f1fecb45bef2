//! The queues of a connector: a handle on one ([`Connector::queue`]) and
//! the registry of those it knows ([`Connector::queues`]).
//!
//! Here rather than in `connector.rs`: a [`Queue`] holds its [`Connector`],
//! so the connector cannot make one without the two modules importing each
//! other. This module depends on both and neither depends on it.

use crate::acl;
use crate::connector::Connector;
use crate::error::Result;
use crate::queue::Queue;
use echomq_protocol::{Keyspace, QueueName};

impl Connector {
    /// A handle on queue `name` whose payloads are `T` (JSON on the wire).
    pub fn queue<T>(&self, name: &str) -> Result<Queue<T>> {
        let keys = Keyspace::new(self.prefix(), &QueueName::new(name)?)?;
        Ok(Queue::new(self.clone(), keys))
    }

    /// Every queue this prefix knows of (a queue joins the registry on its
    /// first successful enqueue and leaves it when obliterated), sorted.
    pub async fn queues(&self) -> Result<Vec<String>> {
        let registry = Keyspace::registry(self.prefix())?;
        let acl = acl::Target {
            user: self.user(),
            key: &registry,
            channel: None,
            queue: None,
        };
        let mut names: Vec<String> = redis::cmd("SMEMBERS")
            .arg(&registry)
            .query_async(&mut self.link().clone())
            .await
            .map_err(|err| acl.refusal(err))?;
        names.sort();
        Ok(names)
    }
}
