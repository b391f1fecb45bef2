//! Turning protocol replies into values; anything off-contract is an
//! [`Error::UnexpectedReply`] naming the verb.

use crate::error::{Error, Result};
use echomq_protocol::Transition;
use redis::Value;
use std::collections::HashMap;
use std::fmt::Write;

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

/// `bytes` as text, each byte of a sequence that is not UTF-8 written
/// `\xNN` (`\xff`): a job's payload and fields are opaque bytes, which a
/// record shows as they are rather than failing to read. Valid UTF-8 is
/// kept as it is, backslashes included.
pub(crate) fn escaped(bytes: Vec<u8>) -> String {
    let bytes = match String::from_utf8(bytes) {
        Ok(text) => return text,
        Err(err) => err.into_bytes(),
    };
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for byte in chunk.invalid() {
            let _ = write!(out, "\\x{byte:02x}");
        }
    }
    out
}

/// A flat `[name, value, name, value…]` array as a map; integer values are
/// kept as their decimal text, and bytes that are not UTF-8 [`escaped`].
pub(crate) fn flat_map(transition: Transition, value: Value) -> Result<HashMap<String, String>> {
    let items = array(transition, value)?;
    let mut map = HashMap::with_capacity(items.len() / 2);
    let mut items = items.into_iter();
    while let (Some(name), Some(value)) = (items.next(), items.next()) {
        map.insert(field(transition, name)?, field(transition, value)?);
    }
    Ok(map)
}

/// One name or value of a flat map: bytes [`escaped`], an integer as its
/// decimal text.
fn field(transition: Transition, value: Value) -> Result<String> {
    match value {
        Value::BulkString(bytes) => Ok(escaped(bytes)),
        Value::Int(n) => Ok(n.to_string()),
        other => text(transition, other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_that_are_not_utf8_are_escaped_and_the_rest_kept() {
        assert_eq!(escaped(b"plain \\x41 \xc3\xa9".to_vec()), "plain \\x41 é");
        assert_eq!(escaped(b"a\xffb\xc3".to_vec()), "a\\xffb\\xc3");
        assert_eq!(escaped(vec![0xed, 0xa0, 0x80]), "\\xed\\xa0\\x80");
    }

    #[test]
    fn a_flat_map_keeps_escaped_bytes_and_integers() {
        let reply = Value::Array(vec![
            Value::BulkString(b"payload".to_vec()),
            Value::BulkString(vec![b'{', 0xff, b'}']),
            Value::BulkString(b"claims".to_vec()),
            Value::Int(2),
        ]);
        let map = flat_map(Transition::Get, reply).unwrap();
        assert_eq!(map["payload"], "{\\xff}");
        assert_eq!(map["claims"], "2");
    }
}
