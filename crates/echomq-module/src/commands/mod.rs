//! The upper layer: the `EMQ.*` command handlers, one file per scope of
//! the registry (`echomq_protocol::control::Scope::name`), each handler
//! the native twin of its script in `crates/echomq/scripts/`. A handler
//! reads its arguments, opens the queue's [`Store`](crate::server::store::Store)
//! and calls the shared bookkeeping of `server/`; it never calls another
//! family's handler.

pub(crate) mod dependencies;
pub(crate) mod flow;
pub(crate) mod group;
pub(crate) mod in_hand;
pub(crate) mod job;
pub(crate) mod queue;
pub(crate) mod settle;
pub(crate) mod spine;
pub(crate) mod time;
