//! Arguments of `emq wait`: a job's outcome, waited for.

use crate::time::parse_positive_duration;
use clap::Args;
use std::time::Duration;

/// `emq wait`.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// Queue name.
    #[arg(value_name = "queue")]
    pub queue: String,
    /// Job id: any job of the queue, enqueued by any process. One that
    /// does not exist answers `removed`.
    #[arg(value_name = "id")]
    pub id: String,
    /// How long to wait at most (300ms, 5s, 5m, 2h, 1d, 1h30m); past it,
    /// exit 3 and the job is left as it is: it runs on.
    #[arg(long, value_name = "duration", default_value = "30s",
          value_parser = parse_positive_duration, allow_hyphen_values = true)]
    pub timeout: Duration,
}
