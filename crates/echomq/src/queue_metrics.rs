//! Reading the metrics each queue keeps on the server (docs/protocol.md
//! "Metrics"; docs/observability.md): what finished and how, per window of
//! the server clock, and how long jobs waited and ran.

use crate::queue::{Queue, server_ms};
use crate::{Error, Result};
use echomq_protocol::metrics::{
    BINS, BOUNDS_MS, Histogram as Kind, METRICS_SETTING, Outcome, Resolution, Windows, window_start,
};
use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Most windows one read returns (the most a queue keeps of one resolution).
pub const MAX_WINDOWS: u64 = echomq_protocol::metrics::MAX_KEEP;

/// A histogram of samples in ms over the protocol's fixed bins
/// ([`echomq_protocol::metrics::BOUNDS_MS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Histogram {
    /// Samples per bin, not cumulative; the last bin is above every bound.
    pub bins: [u64; BINS],
    /// The sum of the samples, ms.
    pub sum_ms: u64,
}

impl Histogram {
    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.bins.iter().sum()
    }

    /// The mean sample, when there is one.
    pub fn mean(&self) -> Option<Duration> {
        let count = self.count();
        (count > 0).then(|| Duration::from_millis(self.sum_ms / count))
    }

    /// The `q` quantile (0 ≤ q ≤ 1), interpolated inside its bin as
    /// Prometheus's `histogram_quantile` does; a quantile in the last bin
    /// (above every bound) reads as the last bound. `None` without samples.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let count = self.count();
        if count == 0 {
            return None;
        }
        let rank = q.clamp(0.0, 1.0) * count as f64;
        let mut below = 0u64;
        for (i, n) in self.bins.iter().enumerate() {
            if *n > 0 && (below + n) as f64 >= rank {
                let Some(upper) = BOUNDS_MS.get(i) else {
                    return Some(Duration::from_millis(BOUNDS_MS[BOUNDS_MS.len() - 1]));
                };
                let lower = if i == 0 { 0 } else { BOUNDS_MS[i - 1] };
                let share = ((rank - below as f64) / *n as f64).clamp(0.0, 1.0);
                let ms = lower as f64 + (upper - lower) as f64 * share;
                return Some(Duration::from_micros((ms * 1000.0) as u64));
            }
            below += n;
        }
        None
    }

    fn merge(&mut self, other: &Histogram) {
        for (bin, n) in self.bins.iter_mut().zip(other.bins) {
            *bin += n;
        }
        self.sum_ms += other.sum_ms;
    }
}

/// What one window (or a whole range, or the queue's life) counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MetricsWindow {
    /// Where the window starts, ms on the server clock (0 for totals).
    pub start_ms: u64,
    /// Jobs completed.
    pub completed: u64,
    /// Failed attempts that will be retried.
    pub failed: u64,
    /// Jobs dead-lettered.
    pub dead: u64,
    /// Jobs cancelled (waiting or running).
    pub cancelled: u64,
    /// Jobs the stalled sweep sent back to pending.
    pub stalled: u64,
    /// From ready to claimed, one sample per job that left `active`.
    pub wait: Histogram,
    /// From claimed to finished, one sample per job that left `active`.
    pub run: Histogram,
}

impl MetricsWindow {
    /// The count of one outcome.
    pub fn outcome(&self, outcome: Outcome) -> u64 {
        match outcome {
            Outcome::Completed => self.completed,
            Outcome::Failed => self.failed,
            Outcome::Dead => self.dead,
            Outcome::Cancelled => self.cancelled,
            Outcome::Stalled => self.stalled,
        }
    }

    /// Jobs that finished: completed, dead or cancelled.
    pub fn finished(&self) -> u64 {
        self.completed + self.dead + self.cancelled
    }

    fn merge(&mut self, other: &MetricsWindow) {
        self.completed += other.completed;
        self.failed += other.failed;
        self.dead += other.dead;
        self.cancelled += other.cancelled;
        self.stalled += other.stalled;
        self.wait.merge(&other.wait);
        self.run.merge(&other.run);
    }

    /// A window from a metrics hash's fields (absent fields are 0).
    pub(crate) fn from_fields(start_ms: u64, fields: &HashMap<String, u64>) -> Self {
        let get = |name: &str| fields.get(name).copied().unwrap_or(0);
        let histogram = |kind: Kind| Histogram {
            bins: std::array::from_fn(|i| get(&kind.bin_field(i))),
            sum_ms: get(&kind.sum_field()),
        };
        Self {
            start_ms,
            completed: get(Outcome::Completed.field()),
            failed: get(Outcome::Failed.field()),
            dead: get(Outcome::Dead.field()),
            cancelled: get(Outcome::Cancelled.field()),
            stalled: get(Outcome::Stalled.field()),
            wait: histogram(Kind::Wait),
            run: histogram(Kind::Run),
        }
    }
}

/// Which span of the server clock [`Queue::metrics`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricsRange {
    /// The last span, up to the server's now.
    Last(Duration),
    /// From one instant to another (the caller's clock, as the server's).
    Between(SystemTime, SystemTime),
}

/// A queue's metrics over a range: one entry per window, oldest first,
/// windows with nothing in them included (all zero).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueMetrics {
    /// The resolution read: fine where the range lies within what the
    /// queue keeps of it, else coarse.
    pub resolution: Resolution,
    /// The width of each window.
    pub width: Duration,
    /// The server's now when read, ms.
    pub now_ms: u64,
    /// The windows, oldest first.
    pub windows: Vec<MetricsWindow>,
}

impl QueueMetrics {
    /// Every window added up.
    pub fn summary(&self) -> MetricsWindow {
        let mut sum = MetricsWindow {
            start_ms: self.windows.first().map_or(0, |w| w.start_ms),
            ..MetricsWindow::default()
        };
        for window in &self.windows {
            sum.merge(window);
        }
        sum
    }
}

/// Whether a queue keeps metrics, and the shape of its windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricsSettings {
    /// On by default; off, finishing jobs read and write no metrics.
    pub enabled: bool,
    /// Width and windows kept of each resolution.
    pub windows: Windows,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            windows: Windows::default(),
        }
    }
}

/// The meta fields [`MetricsSettings`] is stored in, in a fixed order.
fn setting_fields() -> [&'static str; 5] {
    let [fine, coarse] = Resolution::ALL;
    [
        METRICS_SETTING,
        fine.width_setting().0,
        fine.keep_setting().0,
        coarse.width_setting().0,
        coarse.keep_setting().0,
    ]
}

impl<T> Queue<T> {
    /// Stores whether the queue keeps metrics and the shape of its windows
    /// in its meta hash. A width must be ≥ 1 ms; a change applies to the
    /// windows written from then on.
    pub async fn configure_metrics(&self, settings: &MetricsSettings) -> Result<()> {
        let w = settings.windows;
        for (name, width) in [("fine_ms", w.fine_ms), ("coarse_ms", w.coarse_ms)] {
            if width == 0 {
                return Err(Error::BadArgument {
                    name,
                    reason: "a metrics window is at least 1 ms wide".into(),
                });
            }
        }
        for (name, keep) in [("fine_keep", w.fine_keep), ("coarse_keep", w.coarse_keep)] {
            if keep > MAX_WINDOWS {
                return Err(Error::BadArgument {
                    name,
                    reason: format!(
                        "a queue keeps at most {MAX_WINDOWS} windows of each resolution"
                    ),
                });
            }
        }
        let values = [
            u64::from(settings.enabled),
            w.fine_ms,
            w.fine_keep,
            w.coarse_ms,
            w.coarse_keep,
        ];
        let mut cmd = redis::cmd("HSET");
        cmd.arg(self.keys().meta());
        for (field, value) in setting_fields().iter().zip(values) {
            cmd.arg(field).arg(value);
        }
        self.query::<()>(&cmd).await
    }

    /// The queue's metrics settings, as the wires read them (defaults for
    /// what is absent or malformed).
    pub async fn metrics_settings(&self) -> Result<MetricsSettings> {
        Ok(self.read_settings().await?.1)
    }

    /// The server's now and the metrics settings, in one round trip.
    async fn read_settings(&self) -> Result<(u64, MetricsSettings)> {
        let fields = setting_fields();
        let (time, values): ((u64, u64), Vec<Option<Vec<u8>>>) = self
            .query_pipe(
                redis::pipe()
                    .cmd("TIME")
                    .cmd("HMGET")
                    .arg(self.keys().meta())
                    .arg(&fields[..]),
            )
            .await?;
        let stored = |name: &str| {
            let at = fields.iter().position(|f| *f == name)?;
            values.get(at)?.as_deref()
        };
        let settings = MetricsSettings {
            enabled: stored(METRICS_SETTING) != Some(b"0".as_slice()),
            windows: Windows::from_settings(stored),
        };
        Ok((server_ms(time), settings))
    }

    /// The totals since the queue began (`<base>:metrics:total`): what a
    /// Prometheus counter reads.
    pub async fn metrics_total(&self) -> Result<MetricsWindow> {
        let fields: HashMap<String, u64> = self
            .query(redis::cmd("HGETALL").arg(self.keys().metrics_total()))
            .await?;
        Ok(MetricsWindow::from_fields(0, &fields))
    }

    /// The queue's metrics over `range`, one entry per window, oldest
    /// first: fine windows (a minute by default) where the queue keeps the
    /// whole range at that resolution, else coarse ones (an hour), at most
    /// 10,000 (the newest). Two round trips: the clock and the
    /// settings, then every window's hash.
    pub async fn metrics(&self, range: MetricsRange) -> Result<QueueMetrics> {
        let (now, settings) = self.read_settings().await?;
        let (from, to) = match range {
            MetricsRange::Last(span) => (now.saturating_sub(span.as_millis() as u64), now),
            MetricsRange::Between(from, to) => (unix_ms(from), unix_ms(to)),
        };
        let (resolution, width) = resolution_for(&settings.windows, from, now);
        let first = window_start(from, width);
        let last = window_start(to.max(from), width);
        let count = ((last - first) / width + 1).min(MAX_WINDOWS);
        let starts: Vec<u64> = (0..count).rev().map(|i| last - i * width).collect();
        let mut pipe = redis::pipe();
        for start in &starts {
            pipe.cmd("HGETALL")
                .arg(self.keys().metrics_window(resolution, *start));
        }
        let hashes: Vec<HashMap<String, u64>> = self.query_pipe(&pipe).await?;
        Ok(QueueMetrics {
            resolution,
            width: Duration::from_millis(width),
            now_ms: now,
            windows: starts
                .iter()
                .zip(&hashes)
                .map(|(start, fields)| MetricsWindow::from_fields(*start, fields))
                .collect(),
        })
    }
}

/// Fine when the queue keeps fine windows back to `from`, else coarse.
fn resolution_for(windows: &Windows, from: u64, now: u64) -> (Resolution, u64) {
    let kept_since = |(width, keep): (u64, u64)| {
        window_start(now, width).saturating_sub(keep.saturating_sub(1).saturating_mul(width))
    };
    let fine = windows.of(Resolution::Fine);
    if fine.1 > 0 && kept_since(fine) <= from.max(1) || windows.coarse_keep == 0 {
        (Resolution::Fine, fine.0)
    } else {
        (Resolution::Coarse, windows.coarse_ms)
    }
}

fn unix_ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(samples: &[u64]) -> Histogram {
        let mut h = Histogram::default();
        for ms in samples {
            h.bins[echomq_protocol::metrics::bin(*ms)] += 1;
            h.sum_ms += ms;
        }
        h
    }

    #[test]
    fn quantiles_interpolate_inside_a_bin() {
        // 100 samples in (50, 100]: the median is half way through.
        let h = histogram(&[60; 100]);
        assert_eq!(h.quantile(0.5), Some(Duration::from_millis(75)));
        assert_eq!(h.quantile(1.0), Some(Duration::from_millis(100)));
        assert_eq!(h.mean(), Some(Duration::from_millis(60)));
    }

    #[test]
    fn a_quantile_above_every_bound_reads_as_the_last_bound() {
        let h = histogram(&[10_000_000]);
        assert_eq!(h.quantile(0.99), Some(Duration::from_millis(3_600_000)));
        assert_eq!(Histogram::default().quantile(0.5), None);
    }

    #[test]
    fn a_range_older_than_the_fine_windows_reads_coarse_ones() {
        let windows = Windows::default();
        let now = 10 * 86_400_000;
        assert_eq!(
            resolution_for(&windows, now - 3_600_000, now).0,
            Resolution::Fine
        );
        assert_eq!(
            resolution_for(&windows, now - 2 * 86_400_000, now).0,
            Resolution::Coarse
        );
    }
}

/// `docs/observability.md`, whose examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/observability.md")]
pub struct ObservabilityGuide;
