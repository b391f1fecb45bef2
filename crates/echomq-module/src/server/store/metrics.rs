//! The queue's metrics (docs/protocol.md "Metrics"): a call tallies the
//! jobs it finishes, summed per field in the order first met, then writes
//! each field once per metrics key (`tally_*`, `record_metrics` of the
//! scripts).

use crate::server::key::Kind;
use crate::server::store::{Settings, Store, number};
use echomq_protocol::metrics::{
    BINS, Histogram, Outcome, Resolution, bin, total_key, window_key, window_start,
};
use valkey_module::ValkeyError;

/// The fields a finishing job's sample reads, after the caller's own.
pub(crate) const TIMING_FIELDS: [&[u8]; 3] = [b"claimed_at", b"run_at", b"created_at"];

/// When a job was claimed and since when it was ready (its `run_at`, else
/// its `created_at`), as stored; `None` when absent or not a number.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Timing {
    claimed_at: Option<i64>,
    ready_at: Option<i64>,
}

impl Timing {
    /// From the stored `claimed_at` and the stored ready instant.
    pub(crate) fn read(claimed_at: Option<&[u8]>, ready_at: Option<&[u8]>) -> Self {
        Self {
            claimed_at: number(claimed_at),
            ready_at: number(ready_at),
        }
    }
}

/// One call's tally: counts per outcome, samples per bin, the sums
/// (`tally_new` and friends of the scripts).
#[derive(Debug, Default)]
pub(crate) struct Tally {
    outcomes: [i64; Outcome::ALL.len()],
    wait: [i64; BINS],
    run: [i64; BINS],
    wait_sum: i64,
    run_sum: i64,
    samples: i64,
}

impl Tally {
    /// Counts one job with `outcome`, without a sample (a cancelled
    /// waiting job).
    pub(crate) fn outcome(&mut self, outcome: Outcome) {
        if let Some(at) = Outcome::ALL.iter().position(|o| *o == outcome) {
            self.outcomes[at] += 1;
        }
    }

    /// Counts one job that leaves `active` with `outcome` at `now`, with a
    /// wait and a run sample (`tally_finished`).
    pub(crate) fn finished(&mut self, outcome: Outcome, timing: Timing, now: i64) {
        self.outcome(outcome);
        let claimed = timing.claimed_at.unwrap_or(now);
        let wait = (claimed - timing.ready_at.unwrap_or(claimed)).max(0);
        let run = (now - claimed).max(0);
        self.wait[bin(wait as u64)] += 1;
        self.run[bin(run as u64)] += 1;
        self.wait_sum += wait;
        self.run_sum += run;
        self.samples += 1;
    }

    /// Whether it counted nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.outcomes.iter().all(|n| *n == 0)
    }

    /// The fields and sums, in the scripts' fixed order (`tally_fields`):
    /// the outcomes counted, then each histogram's bins counted and its sum
    /// whenever there is a sample.
    fn fields(&self) -> Vec<(String, i64)> {
        let mut out: Vec<(String, i64)> = Outcome::ALL
            .iter()
            .zip(self.outcomes)
            .filter(|(_, n)| *n > 0)
            .map(|(outcome, n)| (outcome.field().to_string(), n))
            .collect();
        if self.samples > 0 {
            for (kind, bins, sum) in [
                (Histogram::Wait, &self.wait, self.wait_sum),
                (Histogram::Run, &self.run, self.run_sum),
            ] {
                for (i, n) in bins.iter().enumerate().filter(|(_, n)| **n > 0) {
                    out.push((kind.bin_field(i), *n));
                }
                out.push((kind.sum_field(), sum));
            }
        }
        out
    }
}

impl Store<'_> {
    /// The metrics keys a call at `now` writes: the total, then the window
    /// of each resolution kept, with its expiry; none when metrics are off.
    fn metrics_keys(&self, conf: &Settings, now: u64) -> Vec<(Vec<u8>, Option<i64>)> {
        if !conf.metrics {
            return Vec::new();
        }
        let mut out = vec![(total_key(self.base()), None)];
        for resolution in Resolution::ALL {
            let (width, keep) = conf.windows.of(resolution);
            if keep > 0 {
                let start = window_start(now, width);
                let expire = start.saturating_add(keep.saturating_mul(width));
                let key = window_key(self.base(), resolution, start as i64);
                out.push((key, Some(expire as i64)));
            }
        }
        out
    }

    /// Checks the types of the metrics keys a call at `now` writes.
    pub(crate) fn expect_metrics_types(
        &self,
        conf: &Settings,
        now: u64,
    ) -> Result<(), ValkeyError> {
        for (key, _) in self.metrics_keys(conf, now) {
            self.expect_type_of(&key, Kind::Hash)?;
        }
        Ok(())
    }

    /// Writes a call's tally: one write of the new values per key, then a
    /// window's expiry when it has none (`record_metrics`).
    pub(crate) fn record_metrics(
        &self,
        conf: &Settings,
        tally: &Tally,
        now: u64,
    ) -> Result<(), ValkeyError> {
        let fields = tally.fields();
        if fields.is_empty() {
            return Ok(());
        }
        let adds: Vec<(&[u8], i64)> = fields
            .iter()
            .map(|(field, sum)| (field.as_bytes(), *sum))
            .collect();
        for (key, expire) in self.metrics_keys(conf, now) {
            self.hash_incr(&key, &adds)?;
            if let Some(at) = expire {
                self.expire_at_nx(&key, at);
            }
        }
        Ok(())
    }

    /// Records one job leaving `active` with `outcome` (a call that
    /// finishes one job).
    pub(crate) fn record_finished(
        &self,
        conf: &Settings,
        outcome: Outcome,
        timing: Timing,
        now: u64,
    ) -> Result<(), ValkeyError> {
        if !conf.metrics {
            return Ok(());
        }
        let mut tally = Tally::default();
        tally.finished(outcome, timing, now as i64);
        self.record_metrics(conf, &tally, now)
    }

    /// Every metrics key the settings keep at `now` (`OBLITERATE` deletes
    /// them): the total and, per resolution, the `keep` windows up to
    /// now's.
    pub(crate) fn metrics_windows_kept(&self, conf: &Settings, now: u64) -> Vec<Vec<u8>> {
        let mut out = vec![total_key(self.base())];
        for resolution in Resolution::ALL {
            let (width, keep) = conf.windows.of(resolution);
            let start = window_start(now, width) as i64;
            for i in 0..keep as i64 {
                out.push(window_key(
                    self.base(),
                    resolution,
                    start - i * width as i64,
                ));
            }
        }
        out
    }
}
