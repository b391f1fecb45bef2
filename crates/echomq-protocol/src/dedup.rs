//! Deduplication: the three modes a job's key holds in, and the rule of a
//! key (`docs/protocol.md`, "Deduplication").

use crate::name::{JobId, NameError};
use std::fmt;
use std::str::FromStr;

/// How a job's deduplication key holds, stored in its `dedup_mode` field
/// (absent for [`DedupMode::Simple`], see [`DedupMode::of_job`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DedupMode {
    /// `DEDUP key`: held from the enqueue that created the job until the
    /// job finishes or is deleted.
    Simple,
    /// `DEDUP key DEDUP_FOR ms`: held for ms from that enqueue, whatever
    /// becomes of the job.
    Throttle,
    /// `DEDUP key DEBOUNCE ms`: the job waits ms; each enqueue with the key
    /// while it waits replaces its payload and pushes its run-at; held
    /// until the job is claimed.
    Debounce,
}

impl DedupMode {
    /// Every mode.
    pub const ALL: [DedupMode; 3] = [DedupMode::Simple, DedupMode::Throttle, DedupMode::Debounce];

    /// The mode of a job from its `dedup` and `dedup_mode` fields: none
    /// without a key; simple for a key without a mode (a simple key's job
    /// stores none: one field less to write at each enqueue); else the
    /// mode stored (`None` for a word no mode has).
    pub fn of_job(key: Option<&str>, mode: Option<&str>) -> Option<DedupMode> {
        match (key, mode) {
            (None, _) => None,
            (Some(_), None) => Some(DedupMode::Simple),
            (Some(_), Some(mode)) => mode.parse().ok(),
        }
    }

    /// The word stored in `dedup_mode` (never stored for `simple`).
    pub fn as_str(self) -> &'static str {
        match self {
            DedupMode::Simple => "simple",
            DedupMode::Throttle => "throttle",
            DedupMode::Debounce => "debounce",
        }
    }
}

impl fmt::Display for DedupMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DedupMode {
    type Err = String;

    fn from_str(word: &str) -> Result<Self, Self::Err> {
        DedupMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == word)
            .ok_or_else(|| format!("{word:?} is no dedup mode (simple, throttle, debounce)"))
    }
}

/// Checks a deduplication key: the job-id rule (1–256 bytes, no
/// whitespace, no braces, no control characters), and not `*`. The servers answer `BADARG dedup`
/// for any other.
///
/// ```
/// use echomq_protocol::dedup::check_key;
/// assert!(check_key("invoice:42").is_ok());
/// assert!(check_key("two words").is_err());
/// assert!(check_key("*").is_err());
/// ```
pub fn check_key(key: &str) -> Result<(), String> {
    if key == JobId::GENERATE {
        return Err("a dedup key may not be *".into());
    }
    JobId::new(key).map(drop).map_err(|err: NameError| {
        err.to_string()
            .replacen("job id", "dedup key", 1)
            .replace("job id", "dedup key")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_round_trip_through_their_words() {
        for mode in DedupMode::ALL {
            assert_eq!(mode.as_str().parse::<DedupMode>(), Ok(mode));
        }
        assert!("Simple".parse::<DedupMode>().is_err());
    }

    #[test]
    fn a_key_follows_the_job_id_rule() {
        assert!(check_key(&"k".repeat(256)).is_ok());
        let long = check_key(&"k".repeat(257)).unwrap_err();
        assert!(long.starts_with("dedup key is 257 bytes long"), "{long}");
        for bad in ["", "a b", "{a}", "*"] {
            assert!(check_key(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_key_with_a_control_character_is_refused() {
        for bad in ["k\u{1b}]52;c;aGk=\u{7}", "k\0", "k\u{7f}"] {
            let err = check_key(bad).unwrap_err();
            assert!(err.starts_with("dedup key "), "{err}");
            assert!(err.contains("control characters"), "{err}");
        }
    }
}
