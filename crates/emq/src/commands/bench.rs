//! `emq bench`: see [`crate::bench`].

use super::{out, out_json};
use crate::bench::{BenchConfig, render, run as measure};
use crate::cli::{BenchArgs, Global};
use crate::error::CliError;

pub(crate) async fn run(args: &BenchArgs, global: &Global) -> Result<(), CliError> {
    let config = BenchConfig {
        jobs: args.jobs,
        url: global.url.clone(),
        prefix: global.prefix.clone(),
        wire: global.wire,
    };
    let mut report = measure(&config).await?;
    report.runtime = args.runtime.as_str().to_string();
    if global.json {
        return out_json(&report);
    }
    out(&render(&report))
}
