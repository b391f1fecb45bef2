//! Arguments of `emq retention`: how many finished jobs each finished set
//! keeps and for how long.

use super::whole;
use crate::time::parse_duration;
use clap::Args;
use echomq::protocol::arg::MAX_INT;
use std::time::Duration;

/// `emq retention`.
#[derive(Debug, Args)]
pub struct RetentionArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// Keep the newest N completed jobs (0 keeps none).
    #[arg(long, value_name = "N", value_parser = whole::between(0, MAX_INT), allow_hyphen_values = true)]
    pub completed: Option<u64>,
    /// Delete a completed job once it finished longer than this ago (1d,
    /// 12h, 300ms); 0 or off removes the age rule.
    #[arg(long, value_name = "duration", value_parser = parse_age, allow_hyphen_values = true)]
    pub completed_for: Option<Age>,
    /// Keep the newest N dead jobs (0 keeps none).
    #[arg(long, value_name = "N", value_parser = whole::between(0, MAX_INT), allow_hyphen_values = true)]
    pub dead: Option<u64>,
    /// Delete a dead job once it finished longer than this ago; 0 or off
    /// removes the age rule.
    #[arg(long, value_name = "duration", value_parser = parse_age, allow_hyphen_values = true)]
    pub dead_for: Option<Age>,
    /// Keep the newest N cancelled jobs (0 keeps none).
    #[arg(long, value_name = "N", value_parser = whole::between(0, MAX_INT), allow_hyphen_values = true)]
    pub cancelled: Option<u64>,
    /// Delete a cancelled job once it finished longer than this ago; 0 or
    /// off removes the age rule.
    #[arg(long, value_name = "duration", value_parser = parse_age, allow_hyphen_values = true)]
    pub cancelled_for: Option<Age>,
}

/// An age option's value: an age rule, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Age {
    /// Delete a finished job once it is this old.
    Keep(Duration),
    /// Remove the age rule (`0`, `0s`, `off`).
    Off,
}

/// An age: a duration of whole ms (1d, 12h, 300ms), at most 2^53 − 1 ms;
/// `off` or a zero (`0`, `0s`) for none.
pub(super) fn parse_age(text: &str) -> Result<Age, String> {
    if text == "off" || text == "0" {
        return Ok(Age::Off);
    }
    let age = parse_duration(text)?;
    if age.is_zero() {
        return Ok(Age::Off);
    }
    if age.as_millis() > u128::from(MAX_INT) {
        return Err(format!("{text:?}: an age is at most 2^53 - 1 ms"));
    }
    Ok(Age::Keep(age))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_age_is_a_duration_and_zero_or_off_removes_it() {
        assert_eq!(parse_age("1d"), Ok(Age::Keep(Duration::from_secs(86_400))));
        assert_eq!(parse_age("0"), Ok(Age::Off));
        assert_eq!(parse_age("0s"), Ok(Age::Off));
        assert_eq!(parse_age("off"), Ok(Age::Off));
        assert!(parse_age("-1h").unwrap_err().contains("never negative"));
        assert!(parse_age("soon").is_err());
        assert!(parse_age("5").unwrap_err().contains("no unit"));
        assert!(parse_age("300000000d").unwrap_err().contains("2^53"));
    }
}
