//! The lower layer: what talks to the server and holds the queue's data.
//!
//! - `key/`: the server's key API on one open key ([`key::Handle`]) and
//!   its strings ([`key::Str`]), the only way a command reads or writes a
//!   key without `RedisModule_Call`.
//! - `store/`: one command's view of its queue ([`store::Store`]): its
//!   keys and settings, and the bookkeeping every command family shares,
//!   the twins of the helpers in `scripts/include/` (the pending set,
//!   events, metrics, groups, deduplication, flow control, the bodies of
//!   enqueue, claim and complete).
//! - `replicate.rs` replicates each call that wrote as one `EMQ.REPLAY`;
//!   `clock.rs` reads the clock once per command; `acl.rs` puts the
//!   commands in the ACL category `emq`; `publish.rs` publishes on a
//!   sharded channel through the module API.
//! - `args.rs` reads a command's arguments and words its refusals;
//!   `reply.rs` builds its reply values; `fast_hash.rs` hashes the
//!   per-command maps.
//!
//! Nothing here names a command handler: `commands/` calls into this
//! layer, never the other way.

pub(crate) mod acl;
pub(crate) mod args;
pub(crate) mod clock;
pub(crate) mod fast_hash;
pub(crate) mod key;
pub(crate) mod publish;
pub(crate) mod replicate;
pub(crate) mod reply;
pub(crate) mod store;
