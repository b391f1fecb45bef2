//! The constants written into the Lua as literals: where a script's code
//! names one of the protocol's (`MAX_PRIORITY`), the book writes its value
//! (`255`), in decimal as `arg.rs` holds it; where it names one of the
//! prelude's own of one literal (`local MS_PER_S = 1000`), that literal. A
//! `local` per constant would cost the library's top level one of the 200
//! locals Lua 5.1 allows one function (`LUAI_MAXVARS`).
//!
//! Only names in code are replaced: never inside a quoted or long string,
//! a comment, after `.` or `:` (a field or a method), or before a single
//! `=` (an assignment's target or a table constructor's key).

use super::{literal_constant, prelude_helpers};
use echomq_protocol::arg::SHARED;
use std::collections::HashMap;
use std::sync::LazyLock;

/// Each constant's name and its Lua literal: the shared constants, then
/// the prelude's of one literal.
static CONSTANT_LITERALS: LazyLock<HashMap<String, String>> = LazyLock::new(|| {
    SHARED
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .chain(prelude_helpers().iter().filter_map(literal_constant))
        .collect()
});

/// `lua` with every constant its code names written as its literal.
pub(super) fn with_constant_literals(lua: &str) -> String {
    with_literals(lua, &CONSTANT_LITERALS)
}

/// `lua` with every name of `literals` in its code replaced by its
/// literal; strings and comments are copied as they are.
pub(super) fn with_literals(lua: &str, literals: &HashMap<String, String>) -> String {
    let bytes = lua.as_bytes();
    let mut out = String::with_capacity(lua.len());
    let mut at = 0;
    while at < bytes.len() {
        let start = at;
        at = match bytes[at] {
            b'-' if bytes.get(at + 1) == Some(&b'-') => end_of_comment(bytes, at + 2),
            quote @ (b'\'' | b'"') => end_of_quoted(bytes, at + 1, quote),
            b'[' if long_bracket_level(bytes, at).is_some() => end_of_long(bytes, at),
            // A number, with whatever letters it holds (`0x1F`, `1e5`).
            b'0'..=b'9' => end_of_run(bytes, at, |b| b.is_ascii_alphanumeric() || b == b'.'),
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let end = end_of_run(bytes, at, |b| b.is_ascii_alphanumeric() || b == b'_');
                let literal = literals
                    .get(&lua[at..end])
                    .filter(|_| names_a_value(bytes, at, end));
                if let Some(literal) = literal {
                    out.push_str(literal);
                    // `255..x` would read as a malformed number.
                    if bytes.get(end) == Some(&b'.') {
                        out.push(' ');
                    }
                    at = end;
                    continue;
                }
                end
            }
            _ => at + lua[at..].chars().next().map_or(1, char::len_utf8),
        };
        out.push_str(&lua[start..at]);
    }
    out
}

/// Whether the name at `start..end` reads a variable: not a field or
/// method (`t.NAME`, `t:NAME`), nor a target or key (`NAME = …`).
fn names_a_value(bytes: &[u8], start: usize, end: usize) -> bool {
    let mut before = bytes[..start]
        .iter()
        .rev()
        .skip_while(|b| b.is_ascii_whitespace());
    let field = match before.next() {
        Some(b':') => true,
        // One dot indexes; two concatenate.
        Some(b'.') => before.next() != Some(&b'.'),
        _ => false,
    };
    let mut after = bytes[end..].iter().skip_while(|b| b.is_ascii_whitespace());
    let target = after.next() == Some(&b'=') && after.next() != Some(&b'=');
    !field && !target
}

/// The end of the run of bytes from `at` that `within` takes (a name, or
/// a number).
fn end_of_run(bytes: &[u8], at: usize, within: impl Fn(u8) -> bool) -> usize {
    bytes[at..]
        .iter()
        .position(|b| !within(*b))
        .map_or(bytes.len(), |n| at + n)
}

/// The end of a comment whose text starts at `at` (after its `--`): a long
/// comment's closing bracket, or the end of its line.
fn end_of_comment(bytes: &[u8], at: usize) -> usize {
    if long_bracket_level(bytes, at).is_some() {
        return end_of_long(bytes, at);
    }
    bytes[at..]
        .iter()
        .position(|b| *b == b'\n')
        .map_or(bytes.len(), |n| at + n)
}

/// The end of a string quoted by `quote` whose text starts at `at`: after
/// its closing quote (a backslash escapes the byte after it), or at the
/// line's end where it is left open (Lua refuses it).
fn end_of_quoted(bytes: &[u8], mut at: usize, quote: u8) -> usize {
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'\n' => return at,
            b if b == quote => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

/// The level of the long bracket opening at `at` (`[[` 0, `[==[` 2), if
/// one does.
fn long_bracket_level(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'[') {
        return None;
    }
    let level = bytes[at + 1..].iter().take_while(|b| **b == b'=').count();
    (bytes.get(at + 1 + level) == Some(&b'[')).then_some(level)
}

/// The end of the long string or comment opening at `at`: after the
/// closing bracket of its level, or the text's end where it has none.
fn end_of_long(bytes: &[u8], at: usize) -> usize {
    let level = long_bracket_level(bytes, at).unwrap_or(0);
    let close: Vec<u8> = [b']']
        .into_iter()
        .chain(std::iter::repeat_n(b'=', level))
        .chain([b']'])
        .collect();
    let text = at + level + 2;
    bytes[text..]
        .windows(close.len())
        .position(|window| window == close.as_slice())
        .map_or(bytes.len(), |n| text + n + close.len())
}
