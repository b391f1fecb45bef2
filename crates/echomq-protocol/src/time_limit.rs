//! A run's time limit as both wires and the worker write it
//! (docs/protocol.md, "Time limits, start-by deadlines, LIFO and retention
//! by age"): the error of an attempt stopped at its limit.

use crate::arg::{MS_PER_HOUR as MS_PER_H, MS_PER_MINUTE as MS_PER_MIN};

const MS_PER_S: u64 = 1000;

/// A limit in the largest unit that divides it: `2h`, `30m`, `45s`, else
/// `1500ms`.
///
/// ```
/// use echomq_protocol::time_limit::shown;
/// assert_eq!(shown(7_200_000), "2h");
/// assert_eq!(shown(90_000), "90s");
/// assert_eq!(shown(1500), "1500ms");
/// ```
pub fn shown(ms: u64) -> String {
    match ms {
        0 => "0ms".into(),
        ms if ms % MS_PER_H == 0 => format!("{}h", ms / MS_PER_H),
        ms if ms % MS_PER_MIN == 0 => format!("{}m", ms / MS_PER_MIN),
        ms if ms % MS_PER_S == 0 => format!("{}s", ms / MS_PER_S),
        ms => format!("{ms}ms"),
    }
}

/// The error of an attempt stopped at its limit: `time limit 30s exceeded`.
///
/// ```
/// assert_eq!(echomq_protocol::time_limit::exceeded(30_000), "time limit 30s exceeded");
/// ```
pub fn exceeded(ms: u64) -> String {
    format!("time limit {} exceeded", shown(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_unit_is_the_largest_that_divides() {
        assert_eq!(shown(3_600_000), "1h");
        assert_eq!(shown(1_800_000), "30m");
        assert_eq!(shown(5_400_000), "90m");
        assert_eq!(shown(45_000), "45s");
        assert_eq!(shown(1), "1ms");
        assert_eq!(shown(61_001), "61001ms");
    }
}
