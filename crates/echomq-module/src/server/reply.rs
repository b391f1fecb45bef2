//! The values commands answer with: bulk strings, integers, and the
//! `[id, created, …]` of the enqueue family. Every command family builds
//! its replies from these.

use std::collections::HashSet;
use std::sync::Mutex;
use valkey_module::{ValkeyError, ValkeyValue};

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

/// A refusal as an entry of an array reply (the CLAIM tail's, inside
/// `EMQ.COMPLETE.BULK`'s reply). An entry's error text must live for
/// ever: each distinct text is kept once (a refusal names a code and an
/// argument, so there are few).
pub(crate) fn error_entry(err: ValkeyError) -> ValkeyValue {
    static TEXTS: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let text = match err {
        ValkeyError::Str(text) => return ValkeyValue::StaticError(text),
        ValkeyError::String(text) => text,
        ValkeyError::WrongArity => "ERR wrong number of arguments".to_string(),
        ValkeyError::WrongType => crate::server::args::WRONGTYPE.to_string(),
    };
    let mut texts = TEXTS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let texts = texts.get_or_insert_with(HashSet::new);
    let kept = match texts.get(text.as_str()) {
        Some(kept) => kept,
        None => {
            let kept: &'static str = Box::leak(text.into_boxed_str());
            texts.insert(kept);
            kept
        }
    };
    ValkeyValue::StaticError(kept)
}
