//! The module clock, read once per command (and carried by its
//! replication: see `replicate.rs`).
//!
//! `valkey-module` 0.1.15 has no safe wrapper for `RedisModule_Milliseconds`,
//! so this one small file calls the raw binding (`key/` and `acl.rs` are
//! the crate's other users of `unsafe`).
#![allow(unsafe_code)]

use valkey_module::raw;

/// The clock of the running command in unix ms: the server's, read at its
/// first use and the same for the rest of the command; a replayed
/// command's is the one its primary read.
pub(crate) fn now_ms() -> u64 {
    crate::server::replicate::now()
}

/// The server's clock in unix ms (`RedisModule_Milliseconds`).
pub(crate) fn read() -> u64 {
    // SAFETY: the function pointer is filled in by `RedisModule_Init` when the
    // module loads, before any command can run, and is never written again;
    // reading it copies a plain `Option<fn>` (no reference to the static).
    let clock = unsafe { raw::RedisModule_Milliseconds };
    // SAFETY: `RedisModule_Milliseconds` takes no arguments, has no
    // preconditions and is callable from any command context.
    let now = clock.map_or(0, |clock| unsafe { clock() });
    u64::try_from(now).unwrap_or(0)
}

/// `now + ms` as the scripts compute it: Lua numbers are doubles, so past
/// 2^53 the sum is the nearest double (round half to even), and both wires
/// store the same instant.
pub(crate) fn after(now: u64, ms: u64) -> u64 {
    (now as f64 + ms as f64) as u64
}
