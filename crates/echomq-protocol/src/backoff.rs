//! Retry delay curves: how long a failed job waits before its next attempt.
//!
//! A [`Backoff`] is a pure function of the number of failures so far. The
//! host computes the delay and passes it as `RETRY_IN` to `EMQ.FAIL`; the
//! server never evaluates a curve. How many attempts a job gets is the job's
//! business (its `ATTEMPTS`), not the curve's.
//!
//! Every curve first computes its *ceiling* (the curve without jitter), then
//! applies its [`Jitter`]:
//!
//! | curve | ceiling after `n` failures |
//! | --- | --- |
//! | [`Backoff::Fixed`] | `delay` |
//! | [`Backoff::Linear`] | `base + (n − 1)·step`, at most `max` (`step` defaults to `base`) |
//! | [`Backoff::Exponential`] | `base·factor^(n − 1)`, at most `max` |
//! | [`Backoff::Custom`] | whatever the function returns (no jitter) |
//!
//! `n` counts from 1; a `failures` of 0 is read as 1. The arithmetic is exact
//! (nanoseconds in 128 bits) and saturates at the cap, so no input, not even
//! `u64::MAX` failures with a huge factor, overflows or panics.
//!
//! ```
//! use std::time::Duration;
//! use echomq_protocol::backoff::{Backoff, Jitter};
//!
//! let curve = Backoff::exponential(Duration::from_secs(1), 2, Duration::from_secs(60));
//! assert_eq!(curve.delay(1), Duration::from_secs(1));
//! assert_eq!(curve.delay(3), Duration::from_secs(4));
//! assert_eq!(curve.delay(100), Duration::from_secs(60));
//!
//! let jittered = curve.jitter(Jitter::Equal);
//! let d = jittered.delay(3);
//! assert!(d >= Duration::from_secs(2) && d <= Duration::from_secs(4));
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// How a curve's ceiling is randomised, to spread retries of jobs that
/// failed together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Jitter {
    /// No randomness: the delay is the ceiling.
    #[default]
    None,
    /// Uniform in `[0, ceiling]`.
    Full,
    /// `ceiling/2` plus a uniform share of the other half: in
    /// `[ceiling/2, ceiling]`.
    Equal,
}

/// The signature of a [`Backoff::Custom`] curve: failures so far (at least 1)
/// to delay.
pub type CustomCurve = dyn Fn(u64) -> Duration + Send + Sync;

/// A retry delay curve: a pure function of the number of failures so far.
///
/// The default is exponential from 1 s with factor 2, capped at 1 h, with
/// full jitter.
#[derive(Clone)]
pub enum Backoff {
    /// The same delay after every failure.
    Fixed {
        /// The delay.
        delay: Duration,
        /// How the delay is randomised.
        jitter: Jitter,
    },
    /// `base + (failures − 1)·step`, at most `max`.
    Linear {
        /// The delay after the first failure.
        base: Duration,
        /// What each further failure adds; `None` means `base`.
        step: Option<Duration>,
        /// The cap.
        max: Duration,
        /// How the delay is randomised.
        jitter: Jitter,
    },
    /// `base·factor^(failures − 1)`, at most `max`.
    Exponential {
        /// The delay after the first failure.
        base: Duration,
        /// The growth per failure; 0 counts as 1 (a constant curve).
        factor: u32,
        /// The cap.
        max: Duration,
        /// How the delay is randomised.
        jitter: Jitter,
    },
    /// A caller's own curve, called with the failures so far (at least 1).
    /// No jitter is applied.
    Custom(Arc<CustomCurve>),
}

impl fmt::Debug for Backoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fixed { delay, jitter } => f
                .debug_struct("Fixed")
                .field("delay", delay)
                .field("jitter", jitter)
                .finish(),
            Self::Linear {
                base,
                step,
                max,
                jitter,
            } => f
                .debug_struct("Linear")
                .field("base", base)
                .field("step", step)
                .field("max", max)
                .field("jitter", jitter)
                .finish(),
            Self::Exponential {
                base,
                factor,
                max,
                jitter,
            } => f
                .debug_struct("Exponential")
                .field("base", base)
                .field("factor", factor)
                .field("max", max)
                .field("jitter", jitter)
                .finish(),
            Self::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self::exponential(Duration::from_secs(1), 2, Duration::from_secs(3600)).jitter(Jitter::Full)
    }
}

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// Builds a `Duration` from nanoseconds that are known to fit (they never
/// exceed a `Duration` the caller holds).
fn from_nanos(nanos: u128) -> Duration {
    let secs = u64::try_from(nanos / NANOS_PER_SEC).unwrap_or(u64::MAX);
    // The remainder is below 10^9, so it fits a u32.
    let sub = (nanos % NANOS_PER_SEC) as u32;
    Duration::new(secs, sub)
}

/// `floor(nanos · unit)`, never above `nanos`; `unit` is clamped to `[0, 1]`
/// and NaN counts as 0.
fn scale(nanos: u128, unit: f64) -> u128 {
    let unit = if unit.is_nan() {
        0.0
    } else {
        unit.clamp(0.0, 1.0)
    };
    // f64 → u128 casts saturate; rounding of a huge `nanos` could land a hair
    // above it, hence the `min`.
    ((nanos as f64 * unit) as u128).min(nanos)
}

impl Backoff {
    /// The same `delay` after every failure, without jitter.
    pub fn fixed(delay: Duration) -> Self {
        Self::Fixed {
            delay,
            jitter: Jitter::None,
        }
    }

    /// `base`, `2·base`, `3·base`, … capped at `max`, without jitter. Set
    /// another step with [`Backoff::step`].
    pub fn linear(base: Duration, max: Duration) -> Self {
        Self::Linear {
            base,
            step: None,
            max,
            jitter: Jitter::None,
        }
    }

    /// `base`, `base·factor`, `base·factor²`, … capped at `max`, without
    /// jitter. A `factor` of 0 counts as 1.
    pub fn exponential(base: Duration, factor: u32, max: Duration) -> Self {
        Self::Exponential {
            base,
            factor,
            max,
            jitter: Jitter::None,
        }
    }

    /// A caller's own curve, called with the failures so far (at least 1).
    pub fn custom(f: impl Fn(u64) -> Duration + Send + Sync + 'static) -> Self {
        Self::Custom(Arc::new(f))
    }

    /// The same curve with `jitter`; a [`Backoff::Custom`] curve is returned
    /// unchanged.
    pub fn jitter(mut self, jitter: Jitter) -> Self {
        match &mut self {
            Self::Fixed { jitter: j, .. }
            | Self::Linear { jitter: j, .. }
            | Self::Exponential { jitter: j, .. } => *j = jitter,
            Self::Custom(_) => {}
        }
        self
    }

    /// The same curve with `step` added per further failure; only a
    /// [`Backoff::Linear`] curve changes.
    pub fn step(mut self, step: Duration) -> Self {
        if let Self::Linear { step: s, .. } = &mut self {
            *s = Some(step);
        }
        self
    }

    /// The curve's jitter ([`Jitter::None`] for a custom curve).
    pub fn jitter_kind(&self) -> Jitter {
        match self {
            Self::Fixed { jitter, .. }
            | Self::Linear { jitter, .. }
            | Self::Exponential { jitter, .. } => *jitter,
            Self::Custom(_) => Jitter::None,
        }
    }

    /// The delay before the next attempt after `failures` failures
    /// (failures >= 1; 0 is treated as 1), with the curve's jitter drawn from
    /// a fast thread-local generator.
    pub fn delay(&self, failures: u64) -> Duration {
        let unit = match self.jitter_kind() {
            Jitter::None => 0.0,
            Jitter::Full | Jitter::Equal => fastrand::f64(),
        };
        self.delay_with(failures, unit)
    }

    /// The delay after `failures` failures with the jitter's random draw
    /// given as `unit` in `[0, 1)` (clamped to `[0, 1]`; NaN counts as 0).
    /// Deterministic: [`Backoff::delay`] calls it with a random `unit`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use echomq_protocol::backoff::{Backoff, Jitter};
    ///
    /// let curve = Backoff::fixed(Duration::from_secs(10)).jitter(Jitter::Full);
    /// assert_eq!(curve.delay_with(1, 0.0), Duration::ZERO);
    /// assert_eq!(curve.delay_with(1, 0.5), Duration::from_secs(5));
    /// ```
    pub fn delay_with(&self, failures: u64, unit: f64) -> Duration {
        let ceiling = self.ceiling(failures);
        let nanos = ceiling.as_nanos();
        match self.jitter_kind() {
            Jitter::None => ceiling,
            Jitter::Full => from_nanos(scale(nanos, unit)),
            Jitter::Equal => {
                let half = nanos / 2;
                from_nanos(half + scale(nanos - half, unit))
            }
        }
    }

    /// The curve without jitter after `failures` failures (0 is treated as
    /// 1): the most [`Backoff::delay`] can return.
    pub fn ceiling(&self, failures: u64) -> Duration {
        let n = failures.max(1);
        match self {
            Self::Fixed { delay, .. } => *delay,
            Self::Linear {
                base, step, max, ..
            } => {
                let step = step.unwrap_or(*base).as_nanos();
                let grown = step
                    .checked_mul(u128::from(n - 1))
                    .and_then(|g| g.checked_add(base.as_nanos()));
                match grown {
                    Some(g) if g < max.as_nanos() => from_nanos(g),
                    _ => *max,
                }
            }
            Self::Exponential {
                base, factor, max, ..
            } => {
                let cap = max.as_nanos();
                let mut value = base.as_nanos();
                let factor = u128::from((*factor).max(1));
                if factor > 1 {
                    // Each step at least doubles `value`, so a nonzero value
                    // reaches the cap (at most ~2^94 ns) within ~100 steps
                    // whatever `n` is; zero stays zero.
                    let mut exponent = n - 1;
                    while exponent > 0 && value != 0 && value < cap {
                        value = value.saturating_mul(factor);
                        exponent -= 1;
                    }
                }
                if value < cap { from_nanos(value) } else { *max }
            }
            Self::Custom(f) => f(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    #[test]
    fn default_is_exponential_from_one_second_to_an_hour_with_full_jitter() {
        let b = Backoff::default();
        assert_eq!(b.jitter_kind(), Jitter::Full);
        let ceilings: Vec<_> = (1..=14).map(|n| b.ceiling(n)).collect();
        assert_eq!(
            ceilings,
            [
                1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 3600, 3600
            ]
            .map(S)
        );
        assert_eq!(b.ceiling(0), S(1));
        assert_eq!(b.ceiling(u64::MAX), S(3600));
        for n in [0, 1, 5, 13, u64::MAX] {
            let d = b.delay(n);
            assert!(d <= b.ceiling(n), "{d:?} above {:?}", b.ceiling(n));
        }
    }

    #[test]
    fn fixed_is_constant() {
        let b = Backoff::fixed(Duration::from_millis(250));
        for n in [0, 1, 2, 1000, u64::MAX] {
            assert_eq!(b.delay(n), Duration::from_millis(250));
        }
    }

    #[test]
    fn linear_grows_by_its_step_up_to_the_cap() {
        let b = Backoff::linear(S(5), S(22));
        let got: Vec<_> = (0..=6).map(|n| b.delay(n)).collect();
        assert_eq!(got, [5, 5, 10, 15, 20, 22, 22].map(S));
        let stepped = Backoff::linear(S(10), S(60)).step(S(1));
        assert_eq!(stepped.delay(1), S(10));
        assert_eq!(stepped.delay(4), S(13));
        assert_eq!(stepped.delay(u64::MAX), S(60));
        // A huge step times huge failures saturates instead of overflowing.
        let huge = Backoff::linear(Duration::MAX, Duration::MAX);
        assert_eq!(huge.delay(u64::MAX), Duration::MAX);
    }

    #[test]
    fn exponential_saturates_for_huge_inputs() {
        let b = Backoff::exponential(S(1), u32::MAX, Duration::MAX);
        assert_eq!(b.delay(1), S(1));
        assert_eq!(b.delay(2), S(u64::from(u32::MAX)));
        assert_eq!(b.delay(u64::MAX), Duration::MAX);
        let b = Backoff::exponential(Duration::MAX, 2, S(7));
        assert_eq!(b.delay(1), S(7));
        let constant = Backoff::exponential(S(3), 1, S(100));
        assert_eq!(constant.delay(u64::MAX), S(3));
        let zero_factor = Backoff::exponential(S(3), 0, S(100));
        assert_eq!(zero_factor.delay(u64::MAX), S(3));
        let zero_base = Backoff::exponential(Duration::ZERO, 10, S(100));
        assert_eq!(zero_base.delay(u64::MAX), Duration::ZERO);
        let sub_second = Backoff::exponential(Duration::from_millis(100), 3, S(2));
        let got: Vec<_> = (1..=5).map(|n| sub_second.delay(n)).collect();
        assert_eq!(got, [100, 300, 900, 2000, 2000].map(Duration::from_millis));
    }

    #[test]
    fn jitter_maps_the_unit_onto_its_range() {
        let full = Backoff::fixed(S(10)).jitter(Jitter::Full);
        assert_eq!(full.delay_with(1, 0.0), Duration::ZERO);
        assert_eq!(full.delay_with(1, 0.25), Duration::from_millis(2500));
        assert_eq!(full.delay_with(1, 1.0), S(10));
        assert_eq!(full.delay_with(1, 7.0), S(10));
        assert_eq!(full.delay_with(1, -1.0), Duration::ZERO);
        assert_eq!(full.delay_with(1, f64::NAN), Duration::ZERO);
        let equal = Backoff::fixed(S(10)).jitter(Jitter::Equal);
        assert_eq!(equal.delay_with(1, 0.0), S(5));
        assert_eq!(equal.delay_with(1, 0.5), Duration::from_millis(7500));
        assert_eq!(equal.delay_with(1, 1.0), S(10));
        let none = Backoff::fixed(S(10));
        assert_eq!(none.delay_with(1, 0.3), S(10));
    }

    #[test]
    fn custom_is_called_with_at_least_one_and_ignores_jitter() {
        let b = Backoff::custom(|n| Duration::from_millis(n * 7)).jitter(Jitter::Full);
        assert_eq!(b.delay(0), Duration::from_millis(7));
        assert_eq!(b.delay(3), Duration::from_millis(21));
        assert_eq!(b.delay_with(3, 0.0), Duration::from_millis(21));
        let clone = b.clone();
        assert_eq!(clone.delay(2), Duration::from_millis(14));
        assert_eq!(format!("{b:?}"), "Custom(..)");
    }

    #[test]
    fn builders_only_touch_the_curves_they_apply_to() {
        let b = Backoff::fixed(S(1)).step(S(9));
        assert!(matches!(b, Backoff::Fixed { .. }));
        let debug = format!("{:?}", Backoff::linear(S(1), S(2)).jitter(Jitter::Equal));
        assert_eq!(
            debug,
            "Linear { base: 1s, step: None, max: 2s, jitter: Equal }"
        );
    }

    fn duration() -> impl Strategy<Value = Duration> {
        prop_oneof![
            (0u64..10_000_000_000).prop_map(Duration::from_nanos),
            (0u64..1_000_000).prop_map(Duration::from_secs),
            (any::<u64>(), 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
        ]
    }

    fn jitter() -> impl Strategy<Value = Jitter> {
        prop_oneof![Just(Jitter::None), Just(Jitter::Full), Just(Jitter::Equal)]
    }

    fn curve() -> impl Strategy<Value = Backoff> {
        prop_oneof![
            (duration(), jitter()).prop_map(|(d, j)| Backoff::fixed(d).jitter(j)),
            (
                duration(),
                proptest::option::of(duration()),
                duration(),
                jitter()
            )
                .prop_map(|(base, step, max, j)| Backoff::Linear {
                    base,
                    step,
                    max,
                    jitter: j
                }),
            (duration(), any::<u32>(), duration(), jitter()).prop_map(|(base, factor, max, j)| {
                Backoff::exponential(base, factor, max).jitter(j)
            }),
            (duration(), 0u32..5, duration(), jitter()).prop_map(|(base, factor, max, j)| {
                Backoff::exponential(base, factor, max).jitter(j)
            }),
        ]
    }

    fn failures() -> impl Strategy<Value = u64> {
        prop_oneof![0u64..200, any::<u64>()]
    }

    fn cap(b: &Backoff) -> Option<Duration> {
        match b {
            Backoff::Linear { max, .. } | Backoff::Exponential { max, .. } => Some(*max),
            _ => None,
        }
    }

    proptest! {
        #[test]
        fn ceiling_is_non_decreasing_and_capped(b in curve(), n in failures(), m in failures()) {
            let (lo, hi) = if n <= m { (n, m) } else { (m, n) };
            prop_assert!(b.ceiling(lo) <= b.ceiling(hi), "{b:?}: {lo} → {:?}, {hi} → {:?}", b.ceiling(lo), b.ceiling(hi));
            prop_assert!(b.ceiling(lo) <= b.ceiling(lo.saturating_add(1)));
            if let Some(max) = cap(&b) {
                prop_assert!(b.ceiling(n) <= max);
            }
        }

        #[test]
        fn jitter_stays_in_its_range(b in curve(), n in failures(), unit in 0.0f64..1.0) {
            let ceiling = b.ceiling(n);
            let d = b.delay_with(n, unit);
            match b.jitter_kind() {
                Jitter::None => prop_assert_eq!(d, ceiling),
                Jitter::Full => prop_assert!(d <= ceiling),
                Jitter::Equal => prop_assert!(d >= ceiling / 2 && d <= ceiling, "{d:?} outside [{:?}, {ceiling:?}]", ceiling / 2),
            }
            let random = b.delay(n);
            prop_assert!(random <= ceiling);
        }

        #[test]
        fn jitter_is_non_decreasing_in_the_unit(b in curve(), n in failures(), u in 0.0f64..1.0, v in 0.0f64..1.0) {
            let (lo, hi) = if u <= v { (u, v) } else { (v, u) };
            prop_assert!(b.delay_with(n, lo) <= b.delay_with(n, hi));
        }
    }
}
