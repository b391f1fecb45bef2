//! `emq promote <queue> [--limit N]`: due scheduled jobs to pending now.

use super::{open, out, out_json};
use crate::cli::{Global, PromoteArgs};
use crate::error::CliError;
use serde_json::json;

pub(crate) async fn run(args: &PromoteArgs, global: &Global) -> Result<(), CliError> {
    let queue = open(&args.queue, global).await?;
    let promoted = queue.promote(args.limit).await?;
    if global.json {
        return out_json(&json!({ "promoted": promoted }));
    }
    let jobs = if promoted == 1 { "job" } else { "jobs" };
    out(&format!("promoted {promoted} {jobs}\n"))
}
