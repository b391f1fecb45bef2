//! `emq reschedule <queue> <id> --at <RFC 3339> | --in <duration>`: moves
//! a scheduled job's run-at. `--in` counts from this host's clock (the new
//! run-at is sent as an absolute instant).

use super::{job_id, on_job, open, out, out_json};
use crate::cli::{Global, RescheduleArgs};
use crate::error::CliError;
use crate::time::{rfc3339, unix_ms};
use serde_json::json;
use std::time::SystemTime;

pub(crate) async fn run(args: &RescheduleArgs, global: &Global) -> Result<(), CliError> {
    let id = job_id(&args.id)?;
    let at = match (args.at, args.delay) {
        (Some(at), _) => at,
        (None, Some(delay)) => SystemTime::now() + delay,
        (None, None) => return Err(CliError::usage("reschedule needs --at or --in")),
    };
    let queue = open(&args.queue, global).await?;
    queue
        .jobs()
        .reschedule(&id, at)
        .await
        .map_err(on_job(&queue, &id))?;
    let ms = unix_ms(at);
    if global.json {
        return out_json(&json!({ "id": id.as_str(), "run_at": ms, "run_at_utc": rfc3339(ms) }));
    }
    out(&format!("rescheduled job {id} at {}\n", rfc3339(ms)))
}
