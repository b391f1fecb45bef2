//! Turning protocol replies into values; anything off-contract is an
//! [`Error::UnexpectedReply`] naming the verb.

use crate::error::{Error, Result};
use echomq_protocol::Transition;
use redis::Value;
use std::collections::HashMap;

pub(crate) fn unexpected(transition: Transition, value: &Value) -> Error {
    Error::UnexpectedReply {
        transition,
        detail: format!("{value:?}"),
    }
}

pub(crate) fn text(transition: Transition, value: Value) -> Result<String> {
    match value {
        Value::BulkString(bytes) => {
            String::from_utf8(bytes).map_err(|err| Error::UnexpectedReply {
                transition,
                detail: err.to_string(),
            })
        }
        Value::SimpleString(s) => Ok(s),
        Value::Okay => Ok("OK".into()),
        other => Err(unexpected(transition, &other)),
    }
}

pub(crate) fn bytes(transition: Transition, value: Value) -> Result<Vec<u8>> {
    match value {
        Value::BulkString(bytes) => Ok(bytes),
        Value::SimpleString(s) => Ok(s.into_bytes()),
        other => Err(unexpected(transition, &other)),
    }
}

pub(crate) fn int(transition: Transition, value: Value) -> Result<u64> {
    match value {
        Value::Int(n) if n >= 0 => Ok(n as u64),
        other => Err(unexpected(transition, &other)),
    }
}

pub(crate) fn array(transition: Transition, value: Value) -> Result<Vec<Value>> {
    match value {
        Value::Array(items) => Ok(items),
        Value::Nil => Ok(Vec::new()),
        other => Err(unexpected(transition, &other)),
    }
}

pub(crate) fn ok(transition: Transition, value: Value) -> Result<()> {
    match value {
        Value::Okay => Ok(()),
        Value::SimpleString(ref s) if s == "OK" => Ok(()),
        other => Err(unexpected(transition, &other)),
    }
}

/// A flat `[name, value, name, value…]` array as a map; integer values are
/// kept as their decimal text.
pub(crate) fn flat_map(transition: Transition, value: Value) -> Result<HashMap<String, String>> {
    let items = array(transition, value)?;
    let mut map = HashMap::with_capacity(items.len() / 2);
    let mut items = items.into_iter();
    while let (Some(name), Some(value)) = (items.next(), items.next()) {
        let value = match value {
            Value::Int(n) => n.to_string(),
            other => text(transition, other)?,
        };
        map.insert(text(transition, name)?, value);
    }
    Ok(map)
}
