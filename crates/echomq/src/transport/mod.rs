//! The plumbing under the public rooms: the connection and how a call
//! reaches the server and its reply comes back.
//!
//! - `connector.rs`: [`Connector`](crate::Connector), the builder and holder
//!   of the connection, the key prefix and the wire.
//! - `link.rs`, `reconnect.rs`, `sentinel.rs`, `tls.rs`: the connection
//!   itself — one server or a cluster, reconnecting by itself, found through
//!   Sentinel, over TLS.
//! - `server_check.rs`: what a connect checks of the server.
//! - `dispatch.rs` (and `dispatch/`): a call sent over wire 4 (the Lua
//!   library) or wire 6 (the module); `decode.rs`: its reply read back.
//! - `durability.rs`: [`Durability`](crate::Durability), the wait sent
//!   behind a durable write, and the connect-time check of the level.
//! - `outcome_channel.rs`: a connector's listener to a queue's outcome
//!   channel, and the waits it hands outcomes to.
//! - `shard_subscription.rs`: a sharded subscription to one of a queue's
//!   channels (the worker's to the cancel channel), on a socket of its own.
//! - `discovery.rs`: the walk of the keyspace for queues the connector
//!   caches.
//!
//! Nothing here imports a public room (`queue.rs`, `jobs.rs`, `admin.rs`,
//! `worker/`, …); they import it. Its own imports are the error type, the
//! ACL reading of a refusal (`acl`) and the Lua library (`scripts.rs`). The tracing targets of these files keep
//! their names from before the move (`echomq::server_check`, …), so log
//! filters written for them still match.

pub(crate) mod connector;
pub(crate) mod decode;
pub(crate) mod discovery;
pub(crate) mod dispatch;
pub(crate) mod durability;
pub(crate) mod link;
pub(crate) mod outcome_channel;
pub(crate) mod reconnect;
pub(crate) mod sentinel;
pub(crate) mod server_check;
pub(crate) mod shard_subscription;
pub(crate) mod tls;
