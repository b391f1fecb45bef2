//! The last hour of a queue's metrics as `emq stats` shows them: finished
//! jobs per minute as a sparkline, and the wait and run time percentiles.

use crate::time::format_age;
use echomq::{Histogram, MetricsRange, Queue, QueueMetrics};
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;

/// The levels of a sparkline, lowest first.
const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
/// Characters of the sparkline at most: an hour of one-minute windows and
/// the current one, which with its label fit 80 columns.
pub(crate) const SPARK_WIDTH: usize = 61;
/// The percentiles shown.
const PERCENTILES: [(&str, f64); 3] = [("p50", 0.5), ("p95", 0.95), ("p99", 0.99)];

/// The last hour of a queue's metrics (`emq stats --json`'s `last_hour`).
#[derive(Debug, Serialize)]
pub(crate) struct LastHour {
    /// Jobs finished (completed, dead or cancelled) in each window, oldest
    /// first.
    pub finished_per_window: Vec<u64>,
    /// The width of a window, ms (a minute by default).
    pub window_ms: u64,
    pub completed: u64,
    pub failed: u64,
    pub dead: u64,
    pub cancelled: u64,
    pub stalled: u64,
    /// Wait time (ready → claimed) percentiles, ms; null without samples.
    pub wait_ms: Percentiles,
    /// Run time (claimed → finished) percentiles, ms.
    pub run_ms: Percentiles,
}

/// p50, p95 and p99 in ms, each null without samples.
#[derive(Debug, Serialize)]
pub(crate) struct Percentiles {
    p50: Option<u64>,
    p95: Option<u64>,
    p99: Option<u64>,
}

impl Percentiles {
    fn of(histogram: &Histogram) -> Self {
        let ms = |q: f64| histogram.quantile(q).map(|d| d.as_millis() as u64);
        Self {
            p50: ms(0.5),
            p95: ms(0.95),
            p99: ms(0.99),
        }
    }

    /// `p50 12ms · p95 80ms · p99 1.2s`, or `-` without samples.
    pub(crate) fn describe(&self) -> String {
        let values = [self.p50, self.p95, self.p99];
        if values.iter().all(Option::is_none) {
            return "-".into();
        }
        PERCENTILES
            .iter()
            .zip(values)
            .map(|((name, _), ms)| format!("{name} {}", ms.map_or("-".into(), format_age)))
            .collect::<Vec<_>>()
            .join(" · ")
    }
}

impl LastHour {
    /// Reads the last hour of `queue`'s windows.
    pub(crate) async fn read(queue: &Queue<Value>) -> echomq::Result<Self> {
        let read = queue
            .metrics(MetricsRange::Last(Duration::from_secs(3600)))
            .await?;
        Ok(Self::from_metrics(&read))
    }

    /// Finished jobs in windows of `window_ms`, no samples.
    #[cfg(test)]
    pub(crate) fn with_windows(finished_per_window: Vec<u64>, window_ms: u64) -> Self {
        let none = || Percentiles {
            p50: None,
            p95: None,
            p99: None,
        };
        Self {
            finished_per_window,
            window_ms,
            completed: 0,
            failed: 0,
            dead: 0,
            cancelled: 0,
            stalled: 0,
            wait_ms: Percentiles {
                p50: Some(86_399_999),
                p95: Some(86_399_999),
                p99: Some(86_399_999),
            },
            run_ms: none(),
        }
    }

    fn from_metrics(read: &QueueMetrics) -> Self {
        let sum = read.summary();
        Self {
            finished_per_window: read.windows.iter().map(|w| w.finished()).collect(),
            window_ms: read.width.as_millis() as u64,
            completed: sum.completed,
            failed: sum.failed,
            dead: sum.dead,
            cancelled: sum.cancelled,
            stalled: sum.stalled,
            wait_ms: Percentiles::of(&sum.wait),
            run_ms: Percentiles::of(&sum.run),
        }
    }

    /// The finished jobs per window as a sparkline of at most
    /// [`SPARK_WIDTH`] characters (adjacent windows summed when there are
    /// more), and `1234 finished, peak 56 per 1m00s` for the same bars.
    pub(crate) fn describe_throughput(&self) -> (String, String) {
        let per_bar = self.finished_per_window.len().div_ceil(SPARK_WIDTH).max(1);
        let bars: Vec<u64> = self
            .finished_per_window
            .chunks(per_bar)
            .map(|chunk| chunk.iter().sum())
            .collect();
        let total: u64 = bars.iter().sum();
        let peak = bars.iter().copied().max().unwrap_or(0);
        let bar_ms = self.window_ms.saturating_mul(per_bar as u64);
        (
            sparkline(&bars),
            format!("{total} finished, peak {peak} per {}", format_age(bar_ms)),
        )
    }
}

/// One character per value, scaled to the largest: the lowest level for 0.
pub(crate) fn sparkline(values: &[u64]) -> String {
    let max = values.iter().copied().max().unwrap_or(0);
    values
        .iter()
        .map(|n| {
            if max == 0 || *n == 0 {
                LEVELS[0]
            } else {
                let top = (LEVELS.len() - 1) as u64;
                LEVELS[(1 + (n * top - 1) / max).min(top) as usize]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sparkline_scales_to_its_peak() {
        assert_eq!(sparkline(&[0, 1, 7, 14]), "▁▂▅█");
        assert_eq!(sparkline(&[0, 0]), "▁▁");
        assert_eq!(sparkline(&[]), "");
    }
}
