//! Sharded publishing through the module API
//! (`RedisModule_PublishMessageShard`), what `SPUBLISH` does without a
//! call of it: no command lookup, no argument vector, no reply object,
//! and no open key closed for it.
//!
//! It publishes to the server's own subscribers and, on a cluster, to the
//! other nodes of its shard, as `SPUBLISH` does; it writes nothing to the
//! replication stream or the AOF, as a `SPUBLISH` called without the `!`
//! flag did not: the command that publishes is replicated whole
//! (`replicate.rs`), and a replica publishes again as it replays it.
#![allow(unsafe_code)]

use valkey_module::{Context, raw};

use crate::server::key::Str;

/// Publishes `message` on the sharded `channel`. `false` when the server's
/// module API has no shard publish (a server before Redis 7.0, which has
/// no `SPUBLISH` either): the caller calls `SPUBLISH`.
pub(crate) fn publish_shard(ctx: &Context, channel: &Str, message: &[u8]) -> bool {
    // SAFETY: reading the pointer `RedisModule_Init` filled in at load,
    // before any command ran; never written again.
    let Some(publish) = (unsafe { raw::RedisModule_PublishMessageShard }) else {
        return false;
    };
    let message = Str::new(ctx, message);
    // SAFETY: the live context of the running command and two live server
    // strings, which the server reads (and copies what it keeps) before it
    // returns.
    unsafe { publish(ctx.ctx, channel.ptr(), message.ptr()) };
    true
}
