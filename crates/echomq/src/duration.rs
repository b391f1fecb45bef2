//! Durations as people write them (`300ms`, `5s`, `1h30m`): the one
//! parser the command line, the flow document ([`crate::FlowDocument`])
//! and the HTTP API share.

use std::time::Duration;

/// What a duration looks like, for error messages and help.
pub const DURATION_FORMS: &str = "300ms, 5s, 5m, 2h, 1d or combinations such as 1h30m";

/// Parses a duration: one or more `<number><unit>` parts, units `ms`, `s`,
/// `m`, `h` and `d`, added up (`1h30m`, `2m500ms`). A negative or
/// fractional duration is refused saying so (the CLI's duration options
/// take values starting with `-`, so `-5m` reaches this parser).
///
/// ```
/// use echomq::duration::parse_duration;
/// use std::time::Duration;
/// assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
/// assert_eq!(parse_duration("300ms"), Ok(Duration::from_millis(300)));
/// assert!(parse_duration("5").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = |why: String| {
        Err(format!(
            "{why}: expected a duration such as {DURATION_FORMS}"
        ))
    };
    if text.is_empty() {
        return bad("empty duration".into());
    }
    if let Some(positive) = text.strip_prefix('-') {
        return bad(format!(
            "{text:?}: a duration is never negative (for {positive:?} from now, drop the minus)"
        ));
    }
    let mut total_ms: u64 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return bad(format!("{text:?} has no number before {rest:?}"));
        }
        let (number, after) = rest.split_at(digits);
        if after.starts_with(['.', ',']) {
            return bad(format!(
                "{text:?}: durations take whole numbers with units (1h30m, not 1.5h)"
            ));
        }
        let units = after.len()
            - after
                .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .len();
        let (unit, after) = after.split_at(units);
        let scale: u64 = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            "" => return bad(format!("{text:?}: {number} has no unit")),
            other => return bad(format!("{text:?}: unknown unit {other:?}")),
        };
        let part = number
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(scale))
            .and_then(|ms| total_ms.checked_add(ms));
        match part {
            Some(sum) => total_ms = sum,
            None => return bad(format!("{text:?} is too long")),
        }
        rest = after;
    }
    Ok(Duration::from_millis(total_ms))
}

/// Parses a duration as [`parse_duration`] does, refusing zero: for an
/// interval or a timeout, where 0 would mean nothing or never.
///
/// ```
/// use echomq::duration::parse_positive_duration;
/// use std::time::Duration;
/// assert_eq!(parse_positive_duration("5s"), Ok(Duration::from_secs(5)));
/// assert!(parse_positive_duration("0s").is_err());
/// ```
pub fn parse_positive_duration(text: &str) -> Result<Duration, String> {
    match parse_duration(text)? {
        Duration::ZERO => Err(format!("{text:?} is zero: expected at least 1ms")),
        duration => Ok(duration),
    }
}
