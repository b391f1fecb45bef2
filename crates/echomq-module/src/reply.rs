//! The values commands answer with: bulk strings, integers, and the
//! `[id, created, …]` of the enqueue family. Every command family builds
//! its replies from these.

use valkey_module::ValkeyValue;

/// A bulk string reply.
pub(crate) fn bulk(bytes: impl Into<Vec<u8>>) -> ValkeyValue {
    ValkeyValue::StringBuffer(bytes.into())
}

/// An integer reply.
pub(crate) fn int(n: i64) -> ValkeyValue {
    ValkeyValue::Integer(n)
}

/// The `[id, created, …]` reply of ENQUEUE and SCHEDULE and their bulk
/// forms: created 1, existed 0, deduplicated 2, debounced 3.
pub(crate) fn enqueued_reply(created: Vec<(Vec<u8>, i64)>) -> ValkeyValue {
    ValkeyValue::Array(
        created
            .into_iter()
            .flat_map(|(id, code)| [bulk(id), int(code)])
            .collect(),
    )
}
