//! The W3C trace context a job may carry: its `traceparent` field, the
//! `TRACE tp` option of `ENQUEUE` and `SCHEDULE` (docs/protocol.md, "Job
//! hash fields").
//!
//! A traceparent is `<version>-<trace id>-<parent id>-<flags>`: 2, 32, 16
//! and 2 lowercase hex digits (55 bytes), the version not `ff`, neither id
//! all zeros. Every wire refuses anything else as `BADARG traceparent`
//! before it reads a key.

use crate::arg::{PARENT_ID_HEX, TRACE_ID_HEX};

/// The name a bad traceparent is refused with: `BADARG traceparent`.
pub const BADARG: &str = "traceparent";

/// Length in bytes of a traceparent: 2 + 1 + 32 + 1 + 16 + 1 + 2.
pub const TRACEPARENT_LEN: usize =
    2 + 1 + TRACE_ID_HEX as usize + 1 + PARENT_ID_HEX as usize + 1 + 2;

/// Checks a traceparent by the rule above; the reason when it breaks it.
///
/// ```
/// use echomq_protocol::trace::check_traceparent;
/// let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
/// assert!(check_traceparent(tp.as_bytes()).is_ok());
/// assert!(check_traceparent(tp.to_uppercase().as_bytes()).is_err());
/// assert!(check_traceparent(b"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").is_err());
/// ```
pub fn check_traceparent(value: &[u8]) -> Result<(), &'static str> {
    let parts: Vec<&[u8]> = value.split(|b| *b == b'-').collect();
    let [version, trace, parent, flags] = parts.as_slice() else {
        return Err("a traceparent is version-trace_id-parent_id-flags");
    };
    let widths = [2, TRACE_ID_HEX as usize, PARENT_ID_HEX as usize, 2];
    let hex = |part: &[u8]| part.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let fields = [*version, *trace, *parent, *flags];
    if fields
        .iter()
        .zip(widths)
        .any(|(part, width)| part.len() != width || !hex(part))
    {
        return Err("a traceparent has 2, 32, 16 and 2 lowercase hex digits");
    }
    if *version == b"ff" {
        return Err("version ff is invalid");
    }
    let zero = |part: &[u8]| part.iter().all(|b| *b == b'0');
    if zero(trace) || zero(parent) {
        return Err("an all-zero trace id or parent id is invalid");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_traceparent_is_55_bytes() {
        assert_eq!(TRACEPARENT_LEN, 55);
        assert_eq!(GOOD.len(), TRACEPARENT_LEN);
    }

    #[test]
    fn the_w3c_format_passes_and_its_breaches_do_not() {
        assert!(check_traceparent(GOOD.as_bytes()).is_ok());
        // A future version passes (the format is the same).
        assert!(check_traceparent(GOOD.replacen("00", "01", 1).as_bytes()).is_ok());
        for bad in [
            "",
            "00",
            &GOOD.to_uppercase(),
            &GOOD.replacen("00", "ff", 1),
            &GOOD.replace("4bf92f3577b34da6a3ce929d0e0e4736", &"0".repeat(32)),
            &GOOD.replace("00f067aa0ba902b7", &"0".repeat(16)),
            &format!("{GOOD}-00"),
            &GOOD[1..],
            &GOOD.replace('-', "_"),
            "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bg-01",
            " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert!(check_traceparent(bad.as_bytes()).is_err(), "{bad:?}");
        }
    }
}
