//! Control characters (the bytes 0x00–0x1F, NUL included, and 0x7F) are
//! refused in job ids, groups, dedup keys and queue names, as whitespace
//! is (`docs/protocol.md`, "The job-id rule"): each refusal sent raw to
//! the server and through the library, writing nothing, on wire 4 and
//! again on wire 6 (`…::on_wire_6`). A name holding ESC would otherwise
//! reach an operator's terminal.

#[path = "control_characters/cases.rs"]
mod cases;
