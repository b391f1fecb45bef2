//! Durations (`300ms`, `5s`, `1h30m`) and instants (RFC 3339) on the
//! command line, and instants printed back as RFC 3339 UTC.

use chrono::{DateTime, NaiveDateTime, SecondsFormat};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use echomq::duration::{DURATION_FORMS, parse_duration, parse_positive_duration};

/// A duration the way [`parse_duration`] reads it, largest units first:
/// `1h30m`, `300ms`, `0ms`.
///
/// ```
/// use emq::time::format_duration;
/// use std::time::Duration;
/// assert_eq!(format_duration(Duration::from_millis(5_400_250)), "1h30m250ms");
/// ```
pub fn format_duration(duration: Duration) -> String {
    let mut ms = duration.as_millis();
    if ms == 0 {
        return "0ms".into();
    }
    let mut out = String::new();
    for (unit, scale) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
        ("ms", 1),
    ] {
        if ms >= scale {
            out.push_str(&format!("{}{unit}", ms / scale));
            ms %= scale;
        }
    }
    out
}

/// An age in milliseconds, short and rounded: `850ms`, `3.2s`, `4m12s`,
/// `2h05m`, `3d04h`.
///
/// ```
/// assert_eq!(emq::time::format_age(3_240), "3.2s");
/// assert_eq!(emq::time::format_age(252_000), "4m12s");
/// ```
pub fn format_age(ms: u64) -> String {
    const MINUTE: u64 = 60_000;
    const HOUR: u64 = 60 * MINUTE;
    const DAY: u64 = 24 * HOUR;
    match ms {
        0..1_000 => format!("{ms}ms"),
        1_000..MINUTE => format!("{:.1}s", ms as f64 / 1000.0),
        MINUTE..HOUR => format!("{}m{:02}s", ms / MINUTE, ms % MINUTE / 1000),
        HOUR..DAY => format!("{}h{:02}m", ms / HOUR, ms % HOUR / MINUTE),
        _ => format!("{}d{:02}h", ms / DAY, ms % DAY / HOUR),
    }
}

/// Parses an RFC 3339 instant (`2099-01-01T09:00:00Z`,
/// `2099-01-01T10:00:00.250+01:00`); instants before 1970 are refused, and
/// so is a date and time without an offset, naming what to add.
pub fn parse_rfc3339(text: &str) -> Result<SystemTime, String> {
    let parsed = DateTime::parse_from_rfc3339(text).map_err(|err| {
        if lacks_offset(text) {
            format!("{text:?} has no offset: add Z for UTC or an offset like +01:00 (e.g. {text}Z)")
        } else {
            format!("{text:?} is not an RFC 3339 instant ({err}): expected e.g. 2099-01-01T09:00:00Z or 2099-01-01T10:00:00+01:00")
        }
    })?;
    let ms = u64::try_from(parsed.timestamp_millis())
        .map_err(|_| format!("{text:?} is before 1970-01-01T00:00:00Z"))?;
    Ok(UNIX_EPOCH + Duration::from_millis(ms))
}

/// Whether `text` is a whole RFC 3339 date and time but for its offset
/// (`2026-01-01T09:00:00`, `2026-01-01 09:00:00.250`).
fn lacks_offset(text: &str) -> bool {
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .any(|form| NaiveDateTime::parse_from_str(text, form).is_ok())
}

/// Milliseconds since the Unix epoch of `at` (0 before it).
pub fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
}

/// The host clock now, in Unix milliseconds.
pub fn now_ms() -> u64 {
    unix_ms(SystemTime::now())
}

/// Unix milliseconds as RFC 3339 UTC with milliseconds:
/// `2024-04-05T19:34:38.901Z`.
///
/// ```
/// assert_eq!(emq::time::rfc3339(1_712_345_678_901), "2024-04-05T19:34:38.901Z");
/// ```
pub fn rfc3339(ms: u64) -> String {
    i64::try_from(ms)
        .ok()
        .and_then(DateTime::from_timestamp_millis)
        .map_or_else(
            || format!("{ms} ms after the epoch"),
            |at| at.to_rfc3339_opts(SecondsFormat::Millis, true),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_durations() {
        let ms = |text| parse_duration(text).map(|d| d.as_millis());
        assert_eq!(ms("300ms"), Ok(300));
        assert_eq!(ms("5s"), Ok(5_000));
        assert_eq!(ms("5m"), Ok(300_000));
        assert_eq!(ms("2h"), Ok(7_200_000));
        assert_eq!(ms("1d"), Ok(86_400_000));
        assert_eq!(ms("1h30m"), Ok(5_400_000));
        assert_eq!(ms("1m30s250ms"), Ok(90_250));
        assert_eq!(ms("0s"), Ok(0));
    }

    #[test]
    fn refuses_bad_durations_saying_why() {
        for (text, why) in [
            ("", "empty"),
            ("5", "no unit"),
            ("5x", "unknown unit \"x\""),
            ("h", "no number"),
            ("1h-5m", "no number"),
            ("1.5h", "whole numbers with units"),
            ("1,5h", "whole numbers with units"),
            ("-5m", "never negative"),
            (" 5s", "no number"),
            ("99999999999999999999d", "too long"),
        ] {
            let err = parse_duration(text).unwrap_err();
            assert!(err.contains(why), "{text:?}: {err}");
            assert!(err.contains("1h30m"), "{text:?}: {err}");
        }
    }

    #[test]
    fn formats_durations_back() {
        for text in [
            "300ms",
            "5s",
            "5m",
            "2h",
            "1d",
            "1h30m",
            "1d2h3m4s5ms",
            "0ms",
        ] {
            assert_eq!(format_duration(parse_duration(text).unwrap()), text);
        }
    }

    #[test]
    fn formats_ages() {
        assert_eq!(format_age(0), "0ms");
        assert_eq!(format_age(999), "999ms");
        assert_eq!(format_age(1_000), "1.0s");
        assert_eq!(format_age(59_949), "59.9s");
        assert_eq!(format_age(60_000), "1m00s");
        assert_eq!(format_age(3_599_999), "59m59s");
        assert_eq!(format_age(7_500_000), "2h05m");
        assert_eq!(format_age(273_600_000), "3d04h");
    }

    #[test]
    fn parses_and_prints_rfc3339() {
        let at = parse_rfc3339("2024-04-05T21:34:38.901+02:00").unwrap();
        assert_eq!(unix_ms(at), 1_712_345_678_901);
        assert_eq!(rfc3339(unix_ms(at)), "2024-04-05T19:34:38.901Z");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert!(parse_rfc3339("2024-04-05 19:34").is_err());
        for local in ["2026-01-01T09:00:00", "2026-01-01T09:00:00.250"] {
            let err = parse_rfc3339(local).unwrap_err();
            assert!(
                err.contains("add Z for UTC or an offset like +01:00"),
                "{err}"
            );
        }
        assert!(parse_rfc3339("tomorrow").unwrap_err().contains("RFC 3339"));
        assert!(
            parse_rfc3339("1969-12-31T23:59:59Z")
                .unwrap_err()
                .contains("before 1970")
        );
    }
}
