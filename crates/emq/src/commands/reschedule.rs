//! `emq reschedule <queue> <id> --at <RFC 3339> | --in <duration>`: moves
//! a scheduled job's run-at. `--in` counts from this host's clock (the new
//! run-at is sent as an absolute instant).

use super::{connect, out, out_json, queue_name};
use crate::cli::{Global, RescheduleArgs};
use crate::error::CliError;
use crate::time::{rfc3339, unix_ms};
use echomq::JobId;
use serde_json::{Value, json};
use std::time::SystemTime;

pub(crate) async fn run(args: &RescheduleArgs, global: &Global) -> Result<(), CliError> {
    let name = queue_name(&args.queue)?;
    let id = JobId::new(args.id.as_str()).map_err(|err| CliError::usage(err.to_string()))?;
    let at = match (args.at, args.delay) {
        (Some(at), _) => at,
        (None, Some(delay)) => SystemTime::now() + delay,
        (None, None) => return Err(CliError::usage("reschedule needs --at or --in")),
    };
    let url = global.url_or_default();
    let queue = connect(&url, global).await?.queue::<Value>(name.as_str())?;
    queue.reschedule(&id, at).await?;
    let ms = unix_ms(at);
    if global.json {
        return out_json(&json!({ "id": id.as_str(), "run_at": ms, "run_at_utc": rfc3339(ms) }));
    }
    out(&format!("rescheduled {id} at {}\n", rfc3339(ms)))
}
