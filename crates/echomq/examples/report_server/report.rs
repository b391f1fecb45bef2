//! The job behind the page: a month's sales report. The HTTP side checks
//! the month before it enqueues; the worker checks it again, since a job
//! may come from anywhere (`emq enqueue reports '{"month":"x"}'`).

use echomq::JobError;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The first month the shop sold anything; the worker refuses earlier
/// ones, which kills their jobs (the HTTP answer is 502).
const OPENED: Month = Month {
    year: 2020,
    month: 1,
};

/// A calendar month, written `YYYY-MM`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Month {
    year: u16,
    month: u8,
}

impl Month {
    /// `2026-11`; `None` for anything else (`2026-1`, `2026-13`, `26-11`).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let (year, month) = text.split_once('-')?;
        let digits = |s: &str, n| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(year, 4) || !digits(month, 2) {
            return None;
        }
        let month = Self {
            year: year.parse().ok()?,
            month: month.parse().ok()?,
        };
        (1..=12).contains(&month.month).then_some(month)
    }
}

impl fmt::Display for Month {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}", self.year, self.month)
    }
}

/// The job's payload.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct ReportRequest {
    /// `YYYY-MM`.
    pub(crate) month: String,
}

/// The job's result, which the page shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Report {
    pub(crate) month: String,
    pub(crate) orders: u32,
    pub(crate) revenue_cents: u64,
}

/// The worker's handler: the report of the payload's month, or a
/// permanent failure for a month that is not `YYYY-MM` or precedes the
/// shop. The figures are made up, and the same for a month every time.
pub(crate) fn produce(request: &ReportRequest) -> Result<Report, JobError> {
    let Some(month) = Month::parse(&request.month) else {
        return Err(JobError::permanent(format!(
            "month {:?} is not YYYY-MM",
            request.month
        )));
    };
    if month < OPENED {
        return Err(JobError::permanent(format!(
            "no orders before {OPENED}: the shop opened then"
        )));
    }
    let orders = 100 + (u32::from(month.year) * 12 + u32::from(month.month)) % 37;
    Ok(Report {
        month: month.to_string(),
        orders,
        revenue_cents: u64::from(orders) * 2_450,
    })
}
