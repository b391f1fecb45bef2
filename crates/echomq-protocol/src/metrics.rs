//! The metrics every queue keeps on the server (docs/protocol.md
//! "Metrics"): what its finishing transitions count, the histogram they
//! fill, the windows they write and the settings that shape them. Both
//! wires write by these names; the client reads by them.

/// Infix between the base key and the rest of a metrics key.
pub const METRICS_INFIX: &str = ":metrics:";

/// Upper bounds (inclusive, ms) of the wait and run histograms' bins; one
/// more bin holds what is above them all.
pub const BOUNDS_MS: [u64; 16] = [
    5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000,
    3_600_000,
];

/// Bins of each histogram: one per bound and one above them all.
pub const BINS: usize = BOUNDS_MS.len() + 1;

/// Default width of a fine window: one minute.
pub const DEFAULT_FINE_MS: u64 = 60_000;
/// Default number of fine windows kept: 24 hours of minutes.
pub const DEFAULT_FINE_KEEP: u64 = 1440;
/// Default width of a coarse window: one hour.
pub const DEFAULT_COARSE_MS: u64 = 3_600_000;
/// Default number of coarse windows kept: 14 days of hours.
pub const DEFAULT_COARSE_KEEP: u64 = 336;

/// Most windows kept of one resolution: a larger `keep` reads as this
/// (it bounds a queue's metrics memory and what `OBLITERATE` deletes).
pub const MAX_KEEP: u64 = 10_000;

/// The bin of a sample of `ms`: the first whose bound is ≥ `ms`.
///
/// ```
/// use echomq_protocol::metrics::{bin, BINS};
/// assert_eq!(bin(0), 0);
/// assert_eq!(bin(5), 0);
/// assert_eq!(bin(6), 1);
/// assert_eq!(bin(u64::MAX), BINS - 1);
/// ```
pub fn bin(ms: u64) -> usize {
    BOUNDS_MS.partition_point(|bound| *bound < ms)
}

/// How a job left `active` (or a waiting job was cancelled): the counter
/// it adds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// `COMPLETE`.
    Completed,
    /// `FAIL` with attempts left: the job is retried.
    Failed,
    /// `FAIL` out of attempts or `DEAD`, or a stall past `max_stalls`.
    Dead,
    /// A cancellation: of a waiting job, or of a running one by `FAIL` or
    /// the stalled sweep.
    Cancelled,
    /// A job whose lease ran out, sent back to pending by the sweep.
    Stalled,
}

impl Outcome {
    /// Every outcome, in the order the protocol lists them.
    pub const ALL: [Outcome; 5] = [
        Outcome::Completed,
        Outcome::Failed,
        Outcome::Dead,
        Outcome::Cancelled,
        Outcome::Stalled,
    ];

    /// The counter's field in a metrics hash (and the Prometheus label).
    pub fn field(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Failed => "failed",
            Outcome::Dead => "dead",
            Outcome::Cancelled => "cancelled",
            Outcome::Stalled => "stalled",
        }
    }
}

/// One of the two histograms every metrics hash holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Histogram {
    /// From ready (`run_at`, else `created_at`) to `claimed_at`.
    Wait,
    /// From `claimed_at` to the finishing transition.
    Run,
}

impl Histogram {
    /// The letter its fields start with: `w` or `r`.
    pub fn letter(self) -> &'static str {
        match self {
            Histogram::Wait => "w",
            Histogram::Run => "r",
        }
    }

    /// The field of its sum in ms: `ws` or `rs`.
    pub fn sum_field(self) -> String {
        format!("{}s", self.letter())
    }

    /// The field of its bin `i`: `w<i>` or `r<i>`.
    pub fn bin_field(self, i: usize) -> String {
        format!("{}{i}", self.letter())
    }
}

/// The two resolutions of the windowed metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resolution {
    /// One-minute windows by default, kept 24 hours.
    Fine,
    /// One-hour windows by default, kept 14 days.
    Coarse,
}

impl Resolution {
    /// Both, finest first.
    pub const ALL: [Resolution; 2] = [Resolution::Fine, Resolution::Coarse];

    /// Its name in keys and settings: `fine` or `coarse`.
    pub fn name(self) -> &'static str {
        match self {
            Resolution::Fine => "fine",
            Resolution::Coarse => "coarse",
        }
    }

    /// The meta field of its width, and its default.
    pub fn width_setting(self) -> (&'static str, u64) {
        match self {
            Resolution::Fine => ("metrics_fine_ms", DEFAULT_FINE_MS),
            Resolution::Coarse => ("metrics_coarse_ms", DEFAULT_COARSE_MS),
        }
    }

    /// The meta field of the number of windows kept, and its default.
    pub fn keep_setting(self) -> (&'static str, u64) {
        match self {
            Resolution::Fine => ("metrics_fine_keep", DEFAULT_FINE_KEEP),
            Resolution::Coarse => ("metrics_coarse_keep", DEFAULT_COARSE_KEEP),
        }
    }
}

/// The meta field that turns a queue's metrics off (`0`).
pub const METRICS_SETTING: &str = "metrics";

/// The shape of a queue's windows: width and windows kept, per resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Windows {
    /// Width of a fine window, ms (≥ 1).
    pub fine_ms: u64,
    /// Fine windows kept (0: none written).
    pub fine_keep: u64,
    /// Width of a coarse window, ms (≥ 1).
    pub coarse_ms: u64,
    /// Coarse windows kept (0: none written).
    pub coarse_keep: u64,
}

impl Default for Windows {
    fn default() -> Self {
        Self {
            fine_ms: DEFAULT_FINE_MS,
            fine_keep: DEFAULT_FINE_KEEP,
            coarse_ms: DEFAULT_COARSE_MS,
            coarse_keep: DEFAULT_COARSE_KEEP,
        }
    }
}

impl Windows {
    /// The width and windows kept of one resolution.
    pub fn of(&self, resolution: Resolution) -> (u64, u64) {
        match resolution {
            Resolution::Fine => (self.fine_ms, self.fine_keep),
            Resolution::Coarse => (self.coarse_ms, self.coarse_keep),
        }
    }

    /// The windows as stored settings, their defaults for what is absent
    /// or malformed (a width must be ≥ 1, a count ≥ 0; a count above
    /// [`MAX_KEEP`] reads as it), as both wires read them. `value` answers a meta field's stored text.
    pub fn from_settings<'a>(value: impl Fn(&str) -> Option<&'a [u8]>) -> Self {
        let read = |(field, default): (&str, u64), min: u64| {
            value(field)
                .and_then(|v| std::str::from_utf8(v).ok())
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|n| *n >= min && *n <= crate::arg::MAX_INT)
                .unwrap_or(default)
        };
        Self {
            fine_ms: read(Resolution::Fine.width_setting(), 1),
            fine_keep: read(Resolution::Fine.keep_setting(), 0).min(MAX_KEEP),
            coarse_ms: read(Resolution::Coarse.width_setting(), 1),
            coarse_keep: read(Resolution::Coarse.keep_setting(), 0).min(MAX_KEEP),
        }
    }
}

/// `<base>:metrics:total`, the queue's metrics since it began (the
/// client's keyspace and the module build it here).
pub fn total_key(base: &[u8]) -> Vec<u8> {
    [base, METRICS_INFIX.as_bytes(), b"total"].concat()
}

/// `<base>:metrics:<resolution>:<start>`, a window's key (a start below 0
/// names a window no call writes, which `OBLITERATE` may still list).
pub fn window_key(base: &[u8], resolution: Resolution, start: i64) -> Vec<u8> {
    let tail = format!("{}:{start}", resolution.name());
    [base, METRICS_INFIX.as_bytes(), tail.as_bytes()].concat()
}

/// The start of the window of `now` for a width (a multiple of it).
pub fn window_start(now: u64, width: u64) -> u64 {
    now - now % width
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sixteen_bounds_as_the_scripts_search_them() {
        // include/metrics.lua's metrics_bin searches in steps of 8, 4, 2 and 1, then
        // checks the last bound: right for exactly 16 bounds.
        assert_eq!(BOUNDS_MS.len(), 16);
        assert!(BOUNDS_MS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn bins_split_at_inclusive_bounds() {
        for (i, bound) in BOUNDS_MS.iter().enumerate() {
            assert_eq!(bin(*bound), i);
            assert_eq!(bin(bound + 1), i + 1);
        }
    }

    #[test]
    fn malformed_windows_read_as_defaults() {
        let stored = |field: &str| match field {
            "metrics_fine_ms" => Some(b"0".as_slice()),
            "metrics_fine_keep" => Some(b"0".as_slice()),
            "metrics_coarse_ms" => Some(b"x".as_slice()),
            _ => None,
        };
        let windows = Windows::from_settings(stored);
        assert_eq!(windows.fine_ms, DEFAULT_FINE_MS);
        assert_eq!(windows.fine_keep, 0);
        assert_eq!(windows.coarse_ms, DEFAULT_COARSE_MS);
        assert_eq!(windows.coarse_keep, DEFAULT_COARSE_KEEP);
    }

    #[test]
    fn a_window_starts_on_a_multiple_of_its_width() {
        assert_eq!(window_start(125_000, 60_000), 120_000);
        assert_eq!(window_start(120_000, 60_000), 120_000);
    }
}
