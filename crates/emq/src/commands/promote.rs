//! `emq promote <queue> [--limit N]`: due scheduled jobs to pending now.

use super::{connect, out, out_json, queue_name};
use crate::cli::{Global, PromoteArgs};
use crate::error::CliError;
use serde_json::{Value, json};

pub(crate) async fn run(args: &PromoteArgs, global: &Global) -> Result<(), CliError> {
    let name = queue_name(&args.queue)?;
    let url = global.url_or_default();
    let queue = connect(&url, global).await?.queue::<Value>(name.as_str())?;
    let promoted = queue.promote(args.limit).await?;
    if global.json {
        return out_json(&json!({ "promoted": promoted }));
    }
    let jobs = if promoted == 1 { "job" } else { "jobs" };
    out(&format!("promoted {promoted} {jobs}\n"))
}
