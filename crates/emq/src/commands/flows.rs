//! `emq flow add FILE|-`: a flow of jobs from JSON, submitted with
//! [`Connector::submit`] (docs/flows.md, "From the command line"); `emq
//! flow relay` and `emq flow show` (`super::flow_show`).
//!
//! The file is read and checked whole before anything is sent: malformed
//! JSON, an unknown field (named), a bad queue name, duration or policy,
//! and everything the library's submit checks (a cycle, a ref used twice
//! or unknown, a bad id) exit 2 with the reason, and nothing is written.

use super::{connect, open, out, out_json};
use crate::cli::{FlowAddArgs, FlowCommand, FlowRelayArgs, Global};
use crate::error::CliError;
use crate::table::{Align, Table};
use echomq::{FlowDocument, Submitted};
use serde_json::{Map, Value, json};
use std::io::Read;

/// `emq flow …`.
pub(crate) async fn run(command: &FlowCommand, global: &Global) -> Result<(), CliError> {
    match command {
        FlowCommand::Add(args) => add(args, global).await,
        FlowCommand::Relay(args) => relay(args, global).await,
        FlowCommand::Show(args) => super::flow_show::show(args, global).await,
    }
}

/// `emq flow relay <queue>…`: each queue's outbox delivered, then its due
/// check-ups run (FLOW.CHECKUP on the server's clock: a job blocked five
/// minutes or more); one line (or one `--json` object) a queue.
async fn relay(args: &FlowRelayArgs, global: &Global) -> Result<(), CliError> {
    let mut queues = Vec::new();
    for name in &args.queues {
        queues.push(open(name, global).await?);
    }
    for queue in queues {
        let mut relayed = queue.relay().await?;
        let checked = queue.checkup().await?;
        relayed.add(checked.relayed);
        if global.json {
            out_json(&json!({
                "queue": queue.name().as_str(),
                "resolved": relayed.resolved,
                "unblocked": relayed.unblocked,
                "decided": relayed.decided,
                "already": relayed.already,
                "left": relayed.left,
                "checkup": {
                    "jobs": checked.jobs,
                    "edges": checked.edges,
                    "waiting": checked.waiting,
                    "missing": checked.missing,
                    "left": checked.left,
                },
            }))?;
        } else {
            out(&format!(
                "queue {}: {} edges resolved ({} unblocked, {} decided by their policy), {} already, {} left; \
                 check-up of {} blocked jobs: {} edges waiting, {} dependencies missing, {} left\n",
                queue.name(),
                relayed.resolved,
                relayed.unblocked,
                relayed.decided,
                relayed.already,
                relayed.left,
                checked.jobs,
                checked.waiting,
                checked.missing,
                checked.left
            ))?;
        }
    }
    Ok(())
}

/// `emq flow add FILE|-`.
async fn add(args: &FlowAddArgs, global: &Global) -> Result<(), CliError> {
    let text = read(&args.file)?;
    let file: FlowDocument = serde_json::from_str(&text)
        .map_err(|err| CliError::usage(format!("flow file {}: {err}", args.file)))?;
    let connector = connect(&global.url_or_default(), global).await?;
    let flow = file
        .flow(&connector)
        .map_err(|err| CliError::usage(err.to_string()))?;
    let submitted = connector.submit(&flow).await?;
    report(&file, &submitted, global)
}

/// The file's text, or stdin's for `-`.
fn read(file: &str) -> Result<String, CliError> {
    let mut text = String::new();
    let read = match file {
        "-" => std::io::stdin().read_to_string(&mut text).map(drop),
        path => std::fs::read_to_string(path).map(|t| text = t),
    };
    read.map_err(|err| CliError::usage(format!("cannot read flow file {file}: {err}")))?;
    Ok(text)
}

/// Each job's ref, queue and id, in the file's order.
fn report(file: &FlowDocument, submitted: &Submitted, global: &Global) -> Result<(), CliError> {
    let placed = file.placed(submitted);
    if global.json {
        let jobs: Map<String, Value> = placed
            .iter()
            .map(|job| (job.reference.clone(), json!(job)))
            .collect();
        return out_json(&json!({"flow": file.id, "jobs": jobs}));
    }
    let mut table = Table::new([Align::Left, Align::Left, Align::Left, Align::Left]);
    table.row(["ref", "queue", "id", "created"]);
    for job in &placed {
        let created = if job.created { "yes" } else { "no (existed)" };
        table.row([
            job.reference.as_str(),
            job.queue.as_str(),
            job.id.as_str(),
            created,
        ]);
    }
    out(&format!(
        "flow {}: {} jobs, {} created\n{}",
        file.id,
        file.jobs.len(),
        submitted.created(),
        table.render()
    ))
}
