//! `emq bench` and `emq bench --lateness`: see [`crate::bench`].

use super::{out, out_json, tls_options};
use crate::bench::{
    BenchConfig, Comparison, Configuration, DEFAULT_JOBS, FlowPhases, LATENESS_JOBS,
    LatenessConfig, Rounds, lateness, render, render_comparison, render_lateness, render_rounds,
    run as measure,
};
use crate::cli::{BenchArgs, Global, WireArg};
use crate::error::CliError;
use serde::Serialize;

pub(crate) async fn run(args: &BenchArgs, global: &Global) -> Result<(), CliError> {
    let runtime = args.runtime.as_str().to_string();
    super::one_url_only(global, "bench")?;
    let tls = tls_options(global)?;
    if args.lateness {
        let config = LatenessConfig {
            runs: args
                .jobs
                .map_or_else(|| LATENESS_JOBS.to_vec(), |jobs| vec![jobs]),
            url: global.url.clone(),
            prefix: global.prefix.clone(),
            wire: global.wire,
            tls: tls.clone(),
        };
        let mut report = lateness(&config).await?;
        report.setup.runtime = runtime;
        return print(&report, global.json, render_lateness);
    }
    let config = |wire| BenchConfig {
        jobs: args.jobs.unwrap_or(DEFAULT_JOBS),
        url: global.url.clone(),
        prefix: global.prefix.clone(),
        wire,
        tls: tls.clone(),
        flow: FlowPhases {
            rate_limit: args.rate_limit,
            concurrency_cap: args.concurrency_cap,
            dedup: args.dedup,
        },
        groups: args.groups.clone(),
        metrics_cost: args.metrics_cost,
        outcomes: args.outcomes,
        many_queues: args.many_queues,
        flows: args.flows,
        http: args.http,
        durability: global.durability,
        scrape: args.scrape,
        dashboard: args.dashboard,
        configuration: if args.like_bullmq {
            Configuration::LikeBullmq
        } else {
            Configuration::Default
        },
        claim_ahead: args.claim_ahead,
    };
    if args.compare {
        let mut rounds = Vec::new();
        for round in 0..args.rounds {
            // Wire 4 first in odd rounds, wire 6 first in even ones.
            let (mut script, mut native) = if round % 2 == 0 {
                let script = measure(&config(WireArg::Script)).await?;
                (script, measure(&config(WireArg::Native)).await?)
            } else {
                let native = measure(&config(WireArg::Native)).await?;
                (measure(&config(WireArg::Script)).await?, native)
            };
            script.setup.runtime.clone_from(&runtime);
            native.setup.runtime.clone_from(&runtime);
            rounds.push(Comparison::of(script, native));
        }
        if rounds.len() == 1 {
            let comparison = rounds.remove(0);
            return print(&comparison, global.json, render_comparison);
        }
        return print(&Rounds::of(rounds), global.json, render_rounds);
    }
    let mut report = measure(&config(global.wire)).await?;
    report.setup.runtime = runtime;
    print(&report, global.json, render)
}

/// The report as JSON, or as the table `render` makes.
fn print<R: Serialize>(report: &R, json: bool, render: fn(&R) -> String) -> Result<(), CliError> {
    if json {
        return out_json(report);
    }
    out(&render(report))
}
