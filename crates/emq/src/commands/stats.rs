//! `emq stats <queue>`: job counts per state.

use super::{connect, out, out_json, queue_name};
use crate::cli::{Global, StatsArgs};
use crate::error::CliError;
use crate::table::{Align, Table};
use echomq::JobState;

pub(crate) async fn run(args: &StatsArgs, global: &Global) -> Result<(), CliError> {
    let name = queue_name(&args.queue)?;
    let url = global.url_or_default();
    let queue = connect(&url, global)
        .await?
        .queue::<serde_json::Value>(name.as_str())?;
    let counts = queue.counts().await?;
    if global.json {
        return out_json(&counts);
    }
    let mut table = Table::new([Align::Left, Align::Right]);
    table.row(["state", "jobs"]);
    for state in JobState::ALL {
        table.row([state.as_str().to_string(), counts.get(state).to_string()]);
    }
    table.row(["total".to_string(), counts.total().to_string()]);
    table.row(["paused", if counts.paused { "yes" } else { "no" }]);
    out(&format!("queue {name}\n{table}"))
}
