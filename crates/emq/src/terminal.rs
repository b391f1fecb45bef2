//! Text for a terminal: control characters shown, never obeyed.
//!
//! Job ids, payloads, error texts, worker names, log lines and group names
//! come from whoever enqueued or ran a job. Printed raw, an ESC in one of
//! them is a command to the operator's terminal: `ESC [2J` clears the
//! screen, `ESC ]52;c;…` writes the clipboard. Every human-readable line
//! `emq` prints passes through [`escape`] (a field of user data, its line
//! breaks included) or [`escape_lines`] (a whole text whose line breaks
//! are `emq`'s own). `--json` output is not touched: JSON escapes control
//! characters itself, and a reader of it wants the exact text.

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with every control character ([`char::is_control`]: C0, DEL and
/// C1) as a visible escape: `\n`, `\r`, `\t`, other C0 and DEL as `\x1b`,
/// C1 as `\u{9b}`. Everything else, backslashes included, is left as it
/// is: the output is for reading (`--json` gives the exact text), and
/// escaping twice changes nothing.
///
/// ```
/// use emq::terminal::escape;
/// assert_eq!(escape("boom\u{1b}[2J"), "boom\\x1b[2J");
/// assert_eq!(escape("two\nlines\u{9b}"), "two\\nlines\\u{9b}");
/// assert_eq!(escape("plain text"), "plain text");
/// ```
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.contains(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii_control() => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `text` with its line breaks (`\n`) kept and every other control
/// character escaped as [`escape`] does: for a whole output whose lines
/// `emq` laid out, the last guard before the terminal.
///
/// ```
/// use emq::terminal::escape_lines;
/// assert_eq!(escape_lines("a\u{1b}\nb\r\n"), "a\\x1b\nb\\r\n");
/// ```
pub fn escape_lines(text: &str) -> Cow<'_, str> {
    if !text.contains(|c: char| c.is_control() && c != '\n') {
        return Cow::Borrowed(text);
    }
    let lines: Vec<Cow<'_, str>> = text.split('\n').map(escape).collect();
    Cow::Owned(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_character_is_escaped_and_nothing_else() {
        for c in (0..=0x10ffff).filter_map(char::from_u32) {
            let shown = escape(c.encode_utf8(&mut [0; 4])).into_owned();
            if c.is_control() {
                assert!(shown.starts_with('\\') && shown.len() > 1, "{c:?}: {shown}");
                assert!(!shown.contains(char::is_control), "{c:?}: {shown}");
            } else {
                assert_eq!(shown, c.to_string());
            }
        }
    }

    #[test]
    fn escapes_read_as_their_character() {
        assert_eq!(escape("\u{0}\u{1b}\u{7f}"), "\\x00\\x1b\\x7f");
        assert_eq!(escape("\u{80}\u{9b}\u{9f}"), "\\u{80}\\u{9b}\\u{9f}");
        assert_eq!(escape("a\tb\r\n"), "a\\tb\\r\\n");
        assert_eq!(escape("ESC]52;c;aGk=\u{7}"), "ESC]52;c;aGk=\\x07");
    }

    #[test]
    fn escaping_twice_changes_nothing() {
        let once = escape("a\u{1b}[2J\\x1b\u{9b}\n").into_owned();
        assert_eq!(escape(&once), once);
        assert_eq!(escape_lines(&once), once);
    }

    #[test]
    fn text_without_control_characters_is_borrowed() {
        assert!(matches!(escape("id-42 ñ \\"), Cow::Borrowed(_)));
        assert!(matches!(escape_lines("a\nb\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn line_breaks_stay_line_breaks_in_a_whole_text() {
        assert_eq!(escape_lines("one\u{1b}c\ntwo\n"), "one\\x1bc\ntwo\n");
        assert_eq!(escape_lines("\n\n"), "\n\n");
    }
}
