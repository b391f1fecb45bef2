//! Repeat cadences on the host clock.
//!
//! A repeat definition in `emq:{q}:repeat` holds a [`Schedule`]: a
//! [`Cadence`] (a fixed interval on an anchor, or a cron expression in an
//! IANA time zone) with an optional start, end and limit. Any host computes
//! the next occurrence with [`Schedule::next_after`] and enqueues it with
//! `SCHEDULE` under the deterministic id `repeat:<key>:<run_at_ms>`, so hosts
//! that agree on the schedule agree on the id. All times are unix
//! milliseconds; nothing here reads a clock.
//!
//! # Cron expressions
//!
//! Parsed by `croner`: five fields (`min hour dom month dow`) or six with
//! seconds first (`sec min hour dom month dow`), plus croner's extensions
//! (`L`, `W`, `#`, `+`, names such as `MON`/`JAN`, `@daily`-style
//! nicknames). Occurrences fall on whole seconds.
//!
//! # Daylight saving time
//!
//! Occurrences are wall clock times in the cadence's zone, turned into
//! instants by these rules (croner's, checked by this module's tests with
//! Europe/Berlin's 2026 changes):
//!
//! - **Fixed-time expressions** (one value each for second, minute and hour,
//!   e.g. `0 30 2 * * *`) fire **once per matching day**:
//!   - in a spring-forward gap, a time that does not exist fires at the
//!     **first real instant after the gap**: `02:30` on 2026-03-29 in Berlin
//!     fires at `03:00` CEST (01:00 UTC), not at `03:30`;
//!   - in a fall-back overlap, a time that happens twice fires only at its
//!     **first (earlier, summer-time) instant**: `02:30` on 2026-10-25 in
//!     Berlin fires at `02:30` CEST (00:30 UTC) and not again at `02:30` CET.
//! - **Interval expressions** (a wildcard, step, range or list in the second,
//!   minute or hour field, e.g. `0 0 * * * *` or `*/15 * * * *`) fire at
//!   every real instant whose wall clock matches: wall times inside a gap do
//!   not exist and are skipped, and wall times in an overlap fire in both
//!   passes, an hour apart. So an hourly expression keeps one occurrence per
//!   real hour across both changes, strictly increasing, never doubled.
//!
//! Whatever croner answers, [`Cadence::next_after`] only ever returns an
//! instant strictly after its input, so iterating it is strictly increasing
//! and never yields the same instant twice.
//!
//! # Storage
//!
//! [`Schedule::encode`] writes a compact `key=value;…` text for a Valkey hash
//! field and [`Schedule::decode`] reads it back:
//!
//! ```text
//! every=60000;anchor=1767225600000;limit=10
//! cron=0 30 2 * * *;tz=Europe/Berlin;start=1767225600000;end=1798761600000
//! ```
//!
//! Keys are `every` + `anchor` or `cron` + `tz`, then optional `start`, `end`
//! and `limit`, in any order, each at most once. Numbers are plain decimal
//! digits. In values, `%`, `;` and `=` are written `%25`, `%3B` and `%3D`.

use std::fmt::Write as _;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, TimeDelta};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds};

/// Why a cadence or schedule was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CadenceError {
    /// An `every` interval shorter than 1 ms or longer than `u64::MAX` ms.
    #[error("repeat interval {interval:?} is refused: {reason}")]
    Interval {
        /// The refused interval.
        interval: Duration,
        /// What was wrong with it.
        reason: &'static str,
    },
    /// A cron expression that does not parse.
    #[error("cron expression {expression:?} is invalid: {reason}")]
    Expression {
        /// The refused expression.
        expression: String,
        /// The parser's complaint.
        reason: String,
    },
    /// A time zone name that is not in the IANA database.
    #[error(
        "time zone {timezone:?} is unknown: expected an IANA name such as \"Europe/Berlin\" or \"UTC\" (names are case-sensitive)"
    )]
    Timezone {
        /// The refused zone name.
        timezone: String,
    },
    /// A stored schedule text that does not decode.
    #[error("schedule encoding refused at `{field}`: {reason}")]
    Decode {
        /// The field (or the malformed part) at fault.
        field: String,
        /// What was wrong with it.
        reason: String,
    },
}

/// When a repeat definition fires.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Cadence {
    /// At `anchor_ms + k·interval_ms` for every `k >= 0`.
    Every {
        /// The interval in milliseconds, at least 1.
        interval_ms: u64,
        /// An instant on the grid (unix ms); the first occurrence.
        anchor_ms: u64,
    },
    /// When the cron expression matches the wall clock of the time zone.
    ///
    /// Build it with [`Cadence::cron`], which validates both fields; one
    /// built by hand with an invalid field never fires.
    Cron {
        /// The cron expression, 5 or 6 fields (seconds optional).
        expression: String,
        /// The IANA time zone name, e.g. `Europe/Berlin` or `UTC`.
        timezone: String,
    },
}

/// The cron parser every cadence uses: seconds optional.
fn parser() -> CronParser {
    CronParser::builder().seconds(Seconds::Optional).build()
}

fn parse_cron(expression: &str) -> Result<Cron, CadenceError> {
    parser()
        .parse(expression)
        .map_err(|e| CadenceError::Expression {
            expression: expression.to_owned(),
            reason: e.to_string(),
        })
}

fn parse_zone(timezone: &str) -> Result<Tz, CadenceError> {
    Tz::from_str(timezone).map_err(|_| CadenceError::Timezone {
        timezone: timezone.to_owned(),
    })
}

/// The first occurrence of `cron` in `zone` strictly after `after_ms`.
fn cron_next_after(cron: &Cron, zone: Tz, after_ms: u64) -> Option<u64> {
    // Occurrences fall on whole seconds, so searching past the whole second
    // at or before `after_ms` finds exactly the occurrences after it.
    let secs = i64::try_from(after_ms / 1000).ok()?;
    let mut origin = DateTime::from_timestamp(secs, 0)?.with_timezone(&zone);
    let mut inclusive = false;
    // croner answers after its origin; the loop only guards that promise, so
    // that no caller ever sees an instant at or before its input.
    for _ in 0..8 {
        let next = cron.find_next_occurrence(&origin, inclusive).ok()?;
        let ms = u64::try_from(next.timestamp_millis()).ok()?;
        if ms > after_ms {
            return Some(ms);
        }
        // Both are whole seconds at or before `after_ms`: the next
        // candidate is the second after the later of them, inclusive.
        origin = next.max(origin).checked_add_signed(TimeDelta::seconds(1))?;
        inclusive = true;
    }
    None
}

impl Cadence {
    /// Every `interval` from `anchor_ms` on. The interval must be at least
    /// 1 ms; a sub-millisecond remainder is dropped.
    ///
    /// ```
    /// use std::time::Duration;
    /// use echomq_protocol::cadence::Cadence;
    ///
    /// let c = Cadence::every(Duration::from_secs(60), 1_000).unwrap();
    /// assert_eq!(c.next_after(0), Some(1_000));
    /// assert_eq!(c.next_after(1_000), Some(61_000));
    /// assert!(Cadence::every(Duration::from_micros(999), 0).is_err());
    /// ```
    pub fn every(interval: Duration, anchor_ms: u64) -> Result<Self, CadenceError> {
        let interval_ms =
            u64::try_from(interval.as_millis()).map_err(|_| CadenceError::Interval {
                interval,
                reason: "at most u64::MAX ms is allowed",
            })?;
        if interval_ms == 0 {
            return Err(CadenceError::Interval {
                interval,
                reason: "at least 1 ms is required",
            });
        }
        Ok(Self::Every {
            interval_ms,
            anchor_ms,
        })
    }

    /// A cron `expression` (5 fields, or 6 with seconds first) on the wall
    /// clock of the IANA zone `timezone`. Both are validated now.
    ///
    /// ```
    /// use echomq_protocol::cadence::{Cadence, CadenceError};
    ///
    /// assert!(Cadence::cron("0 */5 * * * *", "Europe/Berlin").is_ok());
    /// assert!(Cadence::cron("*/5 * * * *", "UTC").is_ok());
    /// assert!(matches!(Cadence::cron("61 * * * *", "UTC"), Err(CadenceError::Expression { .. })));
    /// assert!(matches!(Cadence::cron("* * * * *", "Mars/Olympus"), Err(CadenceError::Timezone { .. })));
    /// ```
    pub fn cron(expression: &str, timezone: &str) -> Result<Self, CadenceError> {
        parse_cron(expression)?;
        parse_zone(timezone)?;
        Ok(Self::Cron {
            expression: expression.to_owned(),
            timezone: timezone.to_owned(),
        })
    }

    /// The first occurrence strictly after `after_ms` (unix ms), or `None`
    /// when there is none (past the representable range, a cron expression
    /// that never matches again, or a hand-built cron cadence with an
    /// invalid field).
    pub fn next_after(&self, after_ms: u64) -> Option<u64> {
        match self {
            Self::Every {
                interval_ms,
                anchor_ms,
            } => {
                if after_ms < *anchor_ms {
                    return Some(*anchor_ms);
                }
                let interval = (*interval_ms).max(1);
                let k = (after_ms - anchor_ms) / interval + 1;
                k.checked_mul(interval)?.checked_add(*anchor_ms)
            }
            Self::Cron {
                expression,
                timezone,
            } => {
                let cron = parse_cron(expression).ok()?;
                let zone = parse_zone(timezone).ok()?;
                cron_next_after(&cron, zone, after_ms)
            }
        }
    }
}

/// A repeat definition's schedule: cadence plus optional start, end and
/// limit.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Schedule {
    /// When it fires.
    pub cadence: Cadence,
    /// No occurrence before this instant (unix ms); one at it is allowed.
    pub start_ms: Option<u64>,
    /// No occurrence after this instant (unix ms); one at it is allowed.
    pub end_ms: Option<u64>,
    /// At most this many occurrences in all.
    pub limit: Option<u64>,
}

impl From<Cadence> for Schedule {
    fn from(cadence: Cadence) -> Self {
        Self::new(cadence)
    }
}

impl Schedule {
    /// The cadence alone: no start, end or limit.
    pub fn new(cadence: Cadence) -> Self {
        Self {
            cadence,
            start_ms: None,
            end_ms: None,
            limit: None,
        }
    }

    /// The next occurrence strictly after `after_ms`, honouring start (no
    /// occurrence before start), end (none after end) and limit (given
    /// `fired` occurrences so far, none once fired >= limit).
    ///
    /// ```
    /// use std::time::Duration;
    /// use echomq_protocol::cadence::{Cadence, Schedule};
    ///
    /// let s = Schedule {
    ///     start_ms: Some(5_000),
    ///     end_ms: Some(8_000),
    ///     limit: Some(2),
    ///     ..Schedule::new(Cadence::every(Duration::from_secs(1), 0).unwrap())
    /// };
    /// assert_eq!(s.next_after(0, 0), Some(5_000));
    /// assert_eq!(s.next_after(5_000, 1), Some(6_000));
    /// assert_eq!(s.next_after(6_000, 2), None); // limit reached
    /// assert_eq!(s.next_after(8_000, 0), None); // past the end
    /// ```
    pub fn next_after(&self, after_ms: u64, fired: u64) -> Option<u64> {
        if self.limit.is_some_and(|limit| fired >= limit) {
            return None;
        }
        let after = match self.start_ms {
            // `start > after_ms >= 0`, so `start - 1` cannot underflow.
            Some(start) if after_ms < start => start - 1,
            _ => after_ms,
        };
        let next = self.cadence.next_after(after)?;
        if self.end_ms.is_some_and(|end| next > end) {
            return None;
        }
        Some(next)
    }

    /// The compact `key=value;…` text stored in the repeat hash (see the
    /// module documentation). [`Schedule::decode`] reads it back.
    ///
    /// ```
    /// use echomq_protocol::cadence::{Cadence, Schedule};
    ///
    /// let s = Schedule::new(Cadence::cron("0 30 2 * * *", "Europe/Berlin").unwrap());
    /// assert_eq!(s.encode(), "cron=0 30 2 * * *;tz=Europe/Berlin");
    /// assert_eq!(Schedule::decode(&s.encode()).unwrap(), s);
    /// ```
    pub fn encode(&self) -> String {
        let mut out = String::new();
        match &self.cadence {
            Cadence::Every {
                interval_ms,
                anchor_ms,
            } => {
                let _ = write!(out, "every={interval_ms};anchor={anchor_ms}");
            }
            Cadence::Cron {
                expression,
                timezone,
            } => {
                out.push_str("cron=");
                escape_into(&mut out, expression);
                out.push_str(";tz=");
                escape_into(&mut out, timezone);
            }
        }
        for (key, value) in [
            ("start", self.start_ms),
            ("end", self.end_ms),
            ("limit", self.limit),
        ] {
            if let Some(value) = value {
                let _ = write!(out, ";{key}={value}");
            }
        }
        out
    }

    /// Reads the text [`Schedule::encode`] wrote. A cron cadence is validated
    /// as [`Cadence::cron`] does; anything malformed is a
    /// [`CadenceError`], never a panic.
    pub fn decode(s: &str) -> Result<Self, CadenceError> {
        const KEYS: [&str; 7] = ["every", "anchor", "cron", "tz", "start", "end", "limit"];
        let mut values: [Option<String>; 7] = Default::default();
        if s.is_empty() {
            return Err(decode_error(
                "",
                "the text is empty; expected `every=…;anchor=…` or `cron=…;tz=…`",
            ));
        }
        for part in s.split(';') {
            let Some((key, raw)) = part.split_once('=') else {
                return Err(decode_error(part, "is not a `key=value` pair"));
            };
            let Some(slot) = KEYS.iter().position(|k| *k == key) else {
                return Err(decode_error(
                    key,
                    "is not a known key (every, anchor, cron, tz, start, end, limit)",
                ));
            };
            if values[slot].is_some() {
                return Err(decode_error(key, "appears more than once"));
            }
            values[slot] = Some(unescape(raw).map_err(|reason| decode_error(key, reason))?);
        }
        let [every, anchor, cron, tz, start, end, limit] = values;
        let number = |key: &str, value: Option<String>| -> Result<Option<u64>, CadenceError> {
            value.map(|v| parse_u64(key, &v)).transpose()
        };
        let cadence = match (every, cron) {
            (Some(_), Some(_)) => {
                return Err(decode_error(
                    "cron",
                    "cannot stand beside `every`; a schedule has one cadence",
                ));
            }
            (None, None) => {
                return Err(decode_error(
                    "every",
                    "is missing, and so is `cron`; a schedule needs one cadence",
                ));
            }
            (Some(every), None) => {
                if tz.is_some() {
                    return Err(decode_error(
                        "tz",
                        "belongs to a `cron` cadence, not `every`",
                    ));
                }
                let interval_ms = parse_u64("every", &every)?;
                if interval_ms == 0 {
                    return Err(decode_error("every", "must be at least 1 (ms)"));
                }
                let anchor_ms = number("anchor", anchor)?
                    .ok_or_else(|| decode_error("anchor", "is missing; `every` needs it"))?;
                Cadence::Every {
                    interval_ms,
                    anchor_ms,
                }
            }
            (None, Some(expression)) => {
                if anchor.is_some() {
                    return Err(decode_error(
                        "anchor",
                        "belongs to an `every` cadence, not `cron`",
                    ));
                }
                let timezone =
                    tz.ok_or_else(|| decode_error("tz", "is missing; `cron` needs it"))?;
                Cadence::cron(&expression, &timezone)?
            }
        };
        Ok(Self {
            cadence,
            start_ms: number("start", start)?,
            end_ms: number("end", end)?,
            limit: number("limit", limit)?,
        })
    }
}

fn decode_error(field: &str, reason: impl Into<String>) -> CadenceError {
    CadenceError::Decode {
        field: field.to_owned(),
        reason: reason.into(),
    }
}

fn parse_u64(key: &str, value: &str) -> Result<u64, CadenceError> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(decode_error(
            key,
            format!("{value:?} is not an unsigned decimal integer"),
        ));
    }
    value
        .parse()
        .map_err(|_| decode_error(key, format!("{value} does not fit in 64 bits")))
}

/// Appends `value` with `%`, `;` and `=` written as `%XX`.
fn escape_into(out: &mut String, value: &str) {
    for c in value.chars() {
        match c {
            '%' => out.push_str("%25"),
            ';' => out.push_str("%3B"),
            '=' => out.push_str("%3D"),
            c => out.push(c),
        }
    }
}

/// Reverses [`escape_into`]: any `%XX` (two hex digits) becomes that byte.
fn unescape(raw: &str) -> Result<String, &'static str> {
    if !raw.contains('%') {
        return Ok(raw.to_owned());
    }
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("holds a `%` not followed by two hex digits")?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "unescapes to invalid UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Unix ms of a UTC civil time.
    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> u64 {
        let date = chrono::NaiveDate::from_ymd_opt(y, mo, d).unwrap();
        let at = date.and_hms_opt(h, mi, 0).unwrap().and_utc();
        u64::try_from(at.timestamp_millis()).unwrap()
    }

    fn iterate(c: &Cadence, mut after: u64, n: usize) -> Vec<u64> {
        (0..n)
            .map(|_| {
                after = c.next_after(after).unwrap();
                after
            })
            .collect()
    }

    #[test]
    fn every_starts_at_the_anchor_and_steps_on_its_grid() {
        let c = Cadence::every(Duration::from_millis(1500), 10_000).unwrap();
        assert_eq!(c.next_after(0), Some(10_000));
        assert_eq!(c.next_after(9_999), Some(10_000));
        assert_eq!(c.next_after(10_000), Some(11_500));
        assert_eq!(c.next_after(11_499), Some(11_500));
        assert_eq!(c.next_after(11_500), Some(13_000));
        let far = Cadence::every(Duration::from_millis(7), 0).unwrap();
        assert_eq!(far.next_after(u64::MAX), None);
        assert_eq!(
            far.next_after(u64::MAX - 20),
            Some(u64::MAX - 20 - (u64::MAX - 20) % 7 + 7)
        );
        let one = Cadence::every(Duration::from_millis(1), u64::MAX).unwrap();
        assert_eq!(one.next_after(5), Some(u64::MAX));
        assert_eq!(one.next_after(u64::MAX), None);
    }

    #[test]
    fn every_refuses_intervals_outside_one_to_u64_max_ms() {
        let err = Cadence::every(Duration::ZERO, 0).unwrap_err();
        assert!(err.to_string().contains("at least 1 ms"), "{err}");
        assert!(Cadence::every(Duration::from_micros(999), 0).is_err());
        assert_eq!(
            Cadence::every(Duration::from_micros(1999), 0),
            Ok(Cadence::Every {
                interval_ms: 1,
                anchor_ms: 0
            })
        );
        assert!(Cadence::every(Duration::MAX, 0).is_err());
    }

    #[test]
    fn cron_accepts_five_and_six_fields() {
        let six = Cadence::cron("0 */5 * * * *", "UTC").unwrap();
        let t = utc(2026, 1, 1, 0, 0);
        assert_eq!(
            iterate(&six, t, 3),
            [
                utc(2026, 1, 1, 0, 5),
                utc(2026, 1, 1, 0, 10),
                utc(2026, 1, 1, 0, 15)
            ]
        );
        let five = Cadence::cron("*/5 * * * *", "UTC").unwrap();
        assert_eq!(iterate(&five, t, 3), iterate(&six, t, 3));
        let seconds = Cadence::cron("*/20 * * * * *", "UTC").unwrap();
        assert_eq!(iterate(&seconds, t + 1, 2), [t + 20_000, t + 40_000]);
        // Strictly after, even from inside the matching second.
        assert_eq!(five.next_after(t - 1), Some(t));
        assert_eq!(five.next_after(t + 999), Some(t + 300_000));
    }

    #[test]
    fn cron_uses_the_wall_clock_of_its_zone() {
        let c = Cadence::cron("0 9 * * *", "America/New_York").unwrap();
        // 09:00 EST is 14:00 UTC in January.
        assert_eq!(
            c.next_after(utc(2026, 1, 15, 0, 0)),
            Some(utc(2026, 1, 15, 14, 0))
        );
        // 09:00 EDT is 13:00 UTC in July.
        assert_eq!(
            c.next_after(utc(2026, 7, 15, 0, 0)),
            Some(utc(2026, 7, 15, 13, 0))
        );
    }

    #[test]
    fn cron_errors_name_what_was_wrong() {
        let err = Cadence::cron("0 0 32 * *", "UTC").unwrap_err();
        assert!(
            matches!(&err, CadenceError::Expression { expression, .. } if expression == "0 0 32 * *")
        );
        assert!(err.to_string().contains("\"0 0 32 * *\""), "{err}");
        let err = Cadence::cron("not cron", "UTC").unwrap_err();
        assert!(err.to_string().contains("not cron"), "{err}");
        assert!(Cadence::cron("", "UTC").is_err());
        assert!(Cadence::cron("* * * *", "UTC").is_err());
        let err = Cadence::cron("* * * * *", "Europe/Atlantis").unwrap_err();
        assert_eq!(
            err,
            CadenceError::Timezone {
                timezone: "Europe/Atlantis".into()
            }
        );
        assert!(err.to_string().contains("Europe/Atlantis"), "{err}");
        assert!(Cadence::cron("* * * * *", "").is_err());
        // The expression is checked first.
        assert!(matches!(
            Cadence::cron("bad", "bad"),
            Err(CadenceError::Expression { .. })
        ));
    }

    #[test]
    fn hand_built_invalid_cron_never_fires() {
        let c = Cadence::Cron {
            expression: "nope".into(),
            timezone: "UTC".into(),
        };
        assert_eq!(c.next_after(0), None);
        let c = Cadence::Cron {
            expression: "* * * * *".into(),
            timezone: "Nowhere".into(),
        };
        assert_eq!(c.next_after(0), None);
    }

    #[test]
    fn cron_that_never_matches_again_is_none() {
        let c = Cadence::cron("0 0 0 1 1 * 2020", "UTC").unwrap();
        assert_eq!(c.next_after(utc(2026, 1, 1, 0, 0)), None);
        let leap = Cadence::cron("0 0 30 2 *", "UTC").unwrap();
        assert_eq!(leap.next_after(0), None);
        let c = Cadence::cron("* * * * *", "UTC").unwrap();
        assert_eq!(c.next_after(u64::MAX), None);
    }

    // Europe/Berlin in 2026: clocks go forward on Sunday 29 March at 02:00
    // CET (01:00 UTC) to 03:00 CEST, and back on Sunday 25 October at 03:00
    // CEST (01:00 UTC) to 02:00 CET.

    #[test]
    fn daily_fixed_time_fires_once_on_the_spring_forward_day() {
        let c = Cadence::cron("0 30 2 * * *", "Europe/Berlin").unwrap();
        assert_eq!(
            iterate(&c, utc(2026, 3, 27, 12, 0), 3),
            [
                utc(2026, 3, 28, 1, 30), // 02:30 CET
                utc(2026, 3, 29, 1, 0),  // 02:30 does not exist: 03:00 CEST
                utc(2026, 3, 30, 0, 30), // 02:30 CEST
            ]
        );
        // From inside the gap's replacement hour, the next is the next day.
        assert_eq!(
            c.next_after(utc(2026, 3, 29, 1, 0)),
            Some(utc(2026, 3, 30, 0, 30))
        );
        let five = Cadence::cron("30 2 * * *", "Europe/Berlin").unwrap();
        assert_eq!(
            iterate(&five, utc(2026, 3, 27, 12, 0), 3),
            iterate(&c, utc(2026, 3, 27, 12, 0), 3)
        );
    }

    #[test]
    fn daily_fixed_time_fires_once_on_the_fall_back_day() {
        let c = Cadence::cron("0 30 2 * * *", "Europe/Berlin").unwrap();
        assert_eq!(
            iterate(&c, utc(2026, 10, 23, 12, 0), 3),
            [
                utc(2026, 10, 24, 0, 30), // 02:30 CEST
                utc(2026, 10, 25, 0, 30), // the first 02:30 (CEST) only
                utc(2026, 10, 26, 1, 30), // 02:30 CET
            ]
        );
        // Not again at the repeated 02:30 CET (01:30 UTC), from either pass.
        for after in [
            utc(2026, 10, 25, 0, 30),
            utc(2026, 10, 25, 0, 45),
            utc(2026, 10, 25, 1, 0),
            utc(2026, 10, 25, 1, 15),
        ] {
            assert_eq!(c.next_after(after), Some(utc(2026, 10, 26, 1, 30)));
        }
    }

    #[test]
    fn hourly_keeps_one_occurrence_per_real_hour_across_both_changes() {
        let c = Cadence::cron("0 0 * * * *", "Europe/Berlin").unwrap();
        // Spring: 00:00 CET, 01:00 CET, (02:00 missing), 03:00 CEST, 04:00 CEST.
        assert_eq!(
            iterate(&c, utc(2026, 3, 28, 22, 30), 4),
            [
                utc(2026, 3, 28, 23, 0),
                utc(2026, 3, 29, 0, 0),
                utc(2026, 3, 29, 1, 0),
                utc(2026, 3, 29, 2, 0),
            ]
        );
        // Autumn: 00:00, 01:00, 02:00 CEST, 02:00 CET, 03:00 CET.
        assert_eq!(
            iterate(&c, utc(2026, 10, 24, 21, 30), 5),
            [
                utc(2026, 10, 24, 22, 0),
                utc(2026, 10, 24, 23, 0),
                utc(2026, 10, 25, 0, 0),
                utc(2026, 10, 25, 1, 0),
                utc(2026, 10, 25, 2, 0),
            ]
        );
        // A whole day around each change: 23 and 25 occurrences, an hour apart.
        for (from, hours) in [
            (utc(2026, 3, 28, 23, 0), 23),
            (utc(2026, 10, 24, 22, 0), 25),
        ] {
            let got = iterate(&c, from - 1, hours + 1);
            let want: Vec<u64> = (0..=hours as u64).map(|h| from + h * 3_600_000).collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn quarter_hours_in_the_repeated_hour_fire_in_both_passes() {
        let c = Cadence::cron("*/15 2 * * *", "Europe/Berlin").unwrap();
        let got = iterate(&c, utc(2026, 10, 24, 23, 0), 9);
        let want: Vec<u64> = (0..8)
            .map(|q| utc(2026, 10, 25, 0, 0) + q * 900_000)
            .chain([utc(2026, 10, 26, 1, 0)])
            .collect();
        assert_eq!(got, want);
        // In the gap they do not exist: nothing on 29 March.
        assert_eq!(
            c.next_after(utc(2026, 3, 28, 12, 0)),
            Some(utc(2026, 3, 30, 0, 0))
        );
    }

    #[test]
    fn schedule_honours_start_end_and_limit() {
        let every = Cadence::every(Duration::from_secs(10), 0).unwrap();
        let s = Schedule {
            start_ms: Some(25_000),
            end_ms: Some(50_000),
            limit: Some(3),
            ..Schedule::new(every.clone())
        };
        assert_eq!(s.next_after(0, 0), Some(30_000));
        assert_eq!(s.next_after(40_000, 2), Some(50_000));
        assert_eq!(s.next_after(40_000, 3), None);
        assert_eq!(s.next_after(50_000, 0), None);
        let at_start = Schedule {
            start_ms: Some(20_000),
            ..Schedule::new(every.clone())
        };
        assert_eq!(at_start.next_after(0, 0), Some(20_000));
        assert_eq!(at_start.next_after(20_000, 1), Some(30_000));
        let none = Schedule {
            limit: Some(0),
            ..Schedule::new(every)
        };
        assert_eq!(none.next_after(0, 0), None);
    }

    #[test]
    fn cron_schedule_round_trips_and_escapes() {
        let s = Schedule {
            cadence: Cadence::cron("0 0 9 * * MON-FRI", "America/New_York").unwrap(),
            start_ms: Some(1),
            end_ms: None,
            limit: Some(u64::MAX),
        };
        let text = s.encode();
        assert_eq!(
            text,
            "cron=0 0 9 * * MON-FRI;tz=America/New_York;start=1;limit=18446744073709551615"
        );
        assert_eq!(Schedule::decode(&text), Ok(s));
        // Keys in any order.
        assert_eq!(
            Schedule::decode("tz=UTC;limit=2;cron=@daily"),
            Ok(Schedule {
                limit: Some(2),
                ..Schedule::new(Cadence::cron("@daily", "UTC").unwrap())
            })
        );
        let mut out = String::new();
        escape_into(&mut out, "a%b;c=d");
        assert_eq!(out, "a%25b%3Bc%3Dd");
        assert_eq!(unescape(&out).as_deref(), Ok("a%b;c=d"));
    }

    #[test]
    fn decode_refuses_garbage_with_a_named_field() {
        let field = |s: &str| match Schedule::decode(s) {
            Err(CadenceError::Decode { field, .. }) => field,
            other => panic!("{s:?} decoded to {other:?}"),
        };
        assert_eq!(field(""), "");
        assert_eq!(field("garbage"), "garbage");
        assert_eq!(field("every=1;anchor=0;"), "");
        assert_eq!(field("every=1"), "anchor");
        assert_eq!(field("every=0;anchor=0"), "every");
        assert_eq!(field("every=-1;anchor=0"), "every");
        assert_eq!(field("every=+1;anchor=0"), "every");
        assert_eq!(field("every=1;anchor=99999999999999999999"), "anchor");
        assert_eq!(field("every=1;anchor=0;every=2"), "every");
        assert_eq!(field("every=1;anchor=0;colour=red"), "colour");
        assert_eq!(field("every=1;anchor=0;tz=UTC"), "tz");
        assert_eq!(field("every=1;anchor=0;cron=* * * * *"), "cron");
        assert_eq!(field("cron=* * * * *"), "tz");
        assert_eq!(field("cron=* * * * *;tz=UTC;anchor=0"), "anchor");
        assert_eq!(field("cron=* * * * *;tz=UTC;limit=x"), "limit");
        assert_eq!(field("cron=%;tz=UTC"), "cron");
        assert_eq!(field("cron=%zz;tz=UTC"), "cron");
        assert_eq!(field("cron=%ff;tz=UTC"), "cron");
        assert_eq!(field("start=1"), "every");
        let err = Schedule::decode("cron=* * * * *;tz=Nowhere").unwrap_err();
        assert!(matches!(err, CadenceError::Timezone { .. }));
        let err = Schedule::decode("cron=* * *;tz=UTC").unwrap_err();
        assert!(matches!(err, CadenceError::Expression { .. }));
        let err = Schedule::decode("every=1;anchor=x").unwrap_err();
        assert_eq!(
            err.to_string(),
            "schedule encoding refused at `anchor`: \"x\" is not an unsigned decimal integer"
        );
    }

    fn every() -> impl Strategy<Value = Cadence> {
        (
            prop_oneof![1u64..100_000, any::<u64>().prop_map(|i| i.max(1))],
            prop_oneof![0u64..1_000_000, any::<u64>()],
        )
            .prop_map(|(interval_ms, anchor_ms)| Cadence::Every {
                interval_ms,
                anchor_ms,
            })
    }

    fn instant() -> impl Strategy<Value = u64> {
        prop_oneof![0u64..2_000_000, any::<u64>()]
    }

    /// 2000-01-01 to 2040-01-01, in unix ms.
    fn recent() -> impl Strategy<Value = u64> {
        946_684_800_000u64..2_208_988_800_000
    }

    const CRONS: [(&str, &str); 8] = [
        ("0 0 * * * *", "Europe/Berlin"),
        ("0 30 2 * * *", "Europe/Berlin"),
        ("*/15 2 * * *", "Europe/Berlin"),
        ("*/7 * * * *", "America/New_York"),
        ("0 30 1 * * *", "Australia/Lord_Howe"),
        ("45 */3 * * SUN", "Pacific/Chatham"),
        ("0 0 L * *", "UTC"),
        ("0 0 2 * * *", "America/Santiago"),
    ];

    proptest! {
        #[test]
        fn every_lands_on_the_next_grid_point(c in every(), after in instant()) {
            let Cadence::Every { interval_ms, anchor_ms } = c else { unreachable!() };
            match c.next_after(after) {
                Some(next) => {
                    prop_assert!(next > after);
                    prop_assert!(next >= anchor_ms);
                    prop_assert_eq!((next - anchor_ms) % interval_ms, 0);
                    // The smallest such point: the one before is not after `after`.
                    if next > anchor_ms {
                        prop_assert!(next - interval_ms <= after);
                    }
                }
                None => {
                    // Only when the next grid point would pass u64::MAX.
                    prop_assert!(after >= anchor_ms);
                    let k = u128::from((after - anchor_ms) / interval_ms + 1);
                    prop_assert!(k * u128::from(interval_ms) + u128::from(anchor_ms) > u128::from(u64::MAX));
                }
            }
        }

        #[test]
        fn cron_iterates_strictly_increasing(which in 0..CRONS.len(), after in recent()) {
            let (expression, zone) = CRONS[which];
            let c = Cadence::cron(expression, zone).unwrap();
            let mut last = after;
            for _ in 0..12 {
                let next = c.next_after(last).unwrap();
                prop_assert!(next > last, "{expression} in {zone}: {next} after {last}");
                prop_assert_eq!(next % 1000, 0);
                last = next;
            }
        }

        #[test]
        fn schedule_honours_start_end_and_limit_everywhere(
            c in every(),
            start in proptest::option::of(instant()),
            end in proptest::option::of(instant()),
            limit in proptest::option::of(0u64..10),
            after in instant(),
            fired in 0u64..12,
        ) {
            let s = Schedule { cadence: c.clone(), start_ms: start, end_ms: end, limit };
            // Occurrences after `floor` are those after `after` and not before start.
            let floor = match start {
                Some(st) if st > after => st - 1,
                _ => after,
            };
            match s.next_after(after, fired) {
                Some(next) => {
                    prop_assert!(next > after);
                    prop_assert!(start.is_none_or(|st| next >= st));
                    prop_assert!(end.is_none_or(|e| next <= e));
                    prop_assert!(limit.is_none_or(|l| fired < l));
                    // It is the cadence's first occurrence at or after start.
                    prop_assert_eq!(Some(next), c.next_after(floor));
                }
                None => {
                    let unlimited = c.next_after(floor);
                    prop_assert!(
                        limit.is_some_and(|l| fired >= l)
                            || unlimited.is_none()
                            || end.is_some_and(|e| unlimited.unwrap() > e)
                    );
                }
            }
        }

        #[test]
        fn every_schedule_round_trips(
            c in every(),
            start in proptest::option::of(any::<u64>()),
            end in proptest::option::of(any::<u64>()),
            limit in proptest::option::of(any::<u64>()),
        ) {
            let s = Schedule { cadence: c, start_ms: start, end_ms: end, limit };
            prop_assert_eq!(Schedule::decode(&s.encode()), Ok(s));
        }

        #[test]
        fn escaping_round_trips(value in any::<String>()) {
            let mut out = String::new();
            escape_into(&mut out, &value);
            prop_assert!(!out.contains(';') && !out.contains('='));
            prop_assert_eq!(unescape(&out), Ok(value));
        }

        #[test]
        fn decode_never_panics(text in any::<String>()) {
            let _ = Schedule::decode(&text);
        }

        #[test]
        fn decode_never_panics_on_near_misses(
            text in "(every|anchor|cron|tz|start|end|limit|x)=[0-9a-z%;=* ]{0,12}(;(every|anchor|cron|tz|start|end|limit)=[0-9%;= *]{0,8}){0,4}"
        ) {
            let _ = Schedule::decode(&text);
        }
    }
}
