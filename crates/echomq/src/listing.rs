//! Reading every queue of a prefix for a listing — `emq queues`, the
//! dashboard's overview, the Prometheus scrape — where one queue that
//! cannot be read is named with its key and what that key holds, and the
//! others read as usual ([`Connector::read_queues`]).

use crate::admin::WrongType;
use crate::error::{Error, Result};
use crate::queue::Queue;
use crate::transport::connector::Connector;
use crate::transport::decode;
use echomq_protocol::QueueName;
use futures_util::future::join_all;
use serde_json::Value;
use std::fmt;
use std::future::Future;

/// A queue a listing could not read, and why: shown in its place by
/// `emq queues`, the dashboard and `/metrics` (as
/// `queue b: emq:{b}:pending holds a string, expected a zset`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The queue's name; for a registry member that names no queue, the
    /// member as stored, bytes that are not UTF-8 written `\xNN`.
    pub queue: String,
    /// What is wrong.
    pub problem: Problem,
}

/// What keeps a listing from reading a queue, naming the key and what it
/// holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Fixed keys of the queue hold another type of value than the queue
    /// keeps there (in [`QueueKey::ALL`](echomq_protocol::QueueKey::ALL)
    /// order).
    WrongType(Vec<WrongType>),
    /// The registry holds a member that is not a queue name.
    NotAQueueName {
        /// The registry's key, `<prefix>:queues`.
        registry: String,
        /// Why the member is not a queue name.
        reason: String,
    },
    /// A read met what the protocol does not allow: a key of the wrong
    /// type that is not a fixed key (a job's hash), a job without a state,
    /// an id no job may have. The text is the error's.
    BadRecord(String),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::WrongType(keys) => {
                let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
                f.write_str(&keys.join("; "))
            }
            Problem::NotAQueueName { registry, reason } => {
                write!(
                    f,
                    "{registry} holds a member that is not a queue name: {reason}"
                )
            }
            Problem::BadRecord(text) => f.write_str(text),
        }
    }
}

impl Connector {
    /// Reads each queue of the prefix ([`Connector::queues`]) with `read`,
    /// concurrently, and answers in name order: each queue's reading, or
    /// what keeps it from being read — a registry member that is not a
    /// queue name, a key of the wrong type ([`Problem::WrongType`] names
    /// each), a record the protocol does not allow. A failure that is not
    /// one queue's (the connection, the server's ACL) fails the listing.
    pub async fn read_queues<R, F, Fut>(
        &self,
        read: F,
    ) -> Result<Vec<std::result::Result<R, Unreadable>>>
    where
        F: Fn(QueueName) -> Fut,
        Fut: Future<Output = Result<R>>,
    {
        let found = self.discover().await?;
        let reads = found
            .queues
            .iter()
            .map(|name| self.read_or_diagnose(name, &read));
        let mut listed = Vec::with_capacity(found.queues.len() + found.bad_members.len());
        for read in join_all(reads).await {
            listed.push(read?);
        }
        for member in found.bad_members {
            let reason = match std::str::from_utf8(&member) {
                Ok(text) => QueueName::new(text)
                    .err()
                    .map_or_else(String::new, |e| e.to_string()),
                Err(_) => "its bytes are not UTF-8".to_string(),
            };
            let queue = decode::escaped(member);
            let problem = Problem::NotAQueueName {
                registry: found.registry.clone(),
                reason,
            };
            listed.push((queue.clone(), Err(Unreadable { queue, problem })));
        }
        listed.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(listed.into_iter().map(|(_, entry)| entry).collect())
    }
}

impl Connector {
    /// Queue `name` read with `read`, or what keeps it from being read;
    /// with its name, for sorting.
    async fn read_or_diagnose<R, F, Fut>(
        &self,
        name: &QueueName,
        read: &F,
    ) -> Result<(String, std::result::Result<R, Unreadable>)>
    where
        F: Fn(QueueName) -> Fut,
        Fut: Future<Output = Result<R>>,
    {
        let failed = match read(name.clone()).await {
            Ok(reading) => return Ok((name.to_string(), Ok(reading))),
            Err(err) => err,
        };
        let queue = self.queue::<Value>(name.as_str())?;
        let unreadable = Unreadable {
            queue: name.to_string(),
            problem: diagnose(&queue, failed).await?,
        };
        Ok((name.to_string(), Err(unreadable)))
    }
}

/// What a read of `queue` that failed with `err` says of the queue; `err`
/// itself when the failure is not the queue's.
async fn diagnose(queue: &Queue<Value>, err: Error) -> Result<Problem> {
    if err.is_wrong_type() {
        let wrong = queue.admin().wrong_types().await?;
        return Ok(if wrong.is_empty() {
            Problem::BadRecord(err.to_string())
        } else {
            Problem::WrongType(wrong)
        });
    }
    match err {
        Error::UnexpectedReply { .. }
        | Error::Name(_)
        | Error::UnexpectedEvent(_)
        | Error::Payload(_) => Ok(Problem::BadRecord(err.to_string())),
        other => Err(other),
    }
}
