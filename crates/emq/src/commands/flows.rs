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
use crate::time::parse_positive_duration;
use echomq::{Connector, Flow, JobId, NewJob, Policy, Submitted};
use serde::Deserialize;
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

/// The flow file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlowFile {
    id: String,
    jobs: Vec<FileJob>,
}

/// One job of the flow file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileJob {
    #[serde(rename = "ref")]
    reference: String,
    queue: String,
    payload: Value,
    #[serde(default)]
    after: Vec<After>,
    on_failure: Option<String>,
    id: Option<String>,
    priority: Option<u8>,
    attempts: Option<u64>,
    group: Option<String>,
    #[serde(default)]
    lifo: bool,
    /// How long after the job is unblocked (or written) it may run.
    delay: Option<String>,
    time_limit: Option<String>,
}

/// One entry of a job's `after`: a ref of the flow, or a job outside it.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum After {
    Ref(String),
    Outside(OutsideJob),
}

/// A job outside the flow: `{"queue": "q", "id": "x"}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutsideJob {
    queue: String,
    id: String,
}

/// `emq flow add FILE|-`.
async fn add(args: &FlowAddArgs, global: &Global) -> Result<(), CliError> {
    let text = read(&args.file)?;
    let file: FlowFile = serde_json::from_str(&text)
        .map_err(|err| CliError::usage(format!("flow file {}: {err}", args.file)))?;
    let connector = connect(&global.url_or_default(), global).await?;
    let flow = build(&connector, &file)?;
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

/// The library's flow of `file`, each job's fields checked.
fn build(connector: &Connector, file: &FlowFile) -> Result<Flow, CliError> {
    let mut flow = Flow::new(file.id.as_str());
    for job in &file.jobs {
        let bad = |what: &str, reason: String| {
            CliError::usage(format!(
                "flow {}: job {}: {what}: {reason}",
                file.id, job.reference
            ))
        };
        let queue = connector
            .queue::<Value>(&job.queue)
            .map_err(|err| bad("queue", err.to_string()))?;
        let mut new = NewJob::new(job.payload.clone());
        if let Some(id) = &job.id {
            new = new
                .id(id.as_str())
                .map_err(|err| bad("id", err.to_string()))?;
        }
        if let Some(priority) = job.priority {
            new = new.priority(priority);
        }
        if let Some(attempts) = job.attempts {
            new = new.attempts(attempts);
        }
        if let Some(group) = &job.group {
            new = new.group(group.as_str());
        }
        if job.lifo {
            new = new.lifo();
        }
        if let Some(delay) = &job.delay {
            new = new.after(parse_positive_duration(delay).map_err(|err| bad("delay", err))?);
        }
        if let Some(limit) = &job.time_limit {
            let limit = parse_positive_duration(limit).map_err(|err| bad("time_limit", err))?;
            new = new.time_limit(limit);
        }
        if let Some(word) = &job.on_failure {
            let policy = Policy::parse(word).ok_or_else(|| {
                bad(
                    "on_failure",
                    format!("{word:?} is not fail, ignore or cancel"),
                )
            })?;
            new = new.on_dependency_failure(policy);
        }
        let mut after = Vec::with_capacity(job.after.len());
        for entry in &job.after {
            after.push(match entry {
                After::Ref(name) => flow.job_ref(name),
                After::Outside(outside) => {
                    let queue = connector
                        .queue::<Value>(&outside.queue)
                        .map_err(|err| bad("after", err.to_string()))?;
                    let id = JobId::new(outside.id.as_str())
                        .map_err(|err| bad("after", err.to_string()))?;
                    flow.existing(&queue, &id)
                }
            });
        }
        flow.add_as(&job.reference, &queue, new.depends_on(&after));
    }
    Ok(flow)
}

/// Each job's ref, queue and id, in the file's order.
fn report(file: &FlowFile, submitted: &Submitted, global: &Global) -> Result<(), CliError> {
    let placed = |job: &FileJob| {
        let enqueued = submitted
            .by_name(&job.reference)
            .expect("the submit answers every job");
        (enqueued.id.as_str().to_string(), enqueued.created)
    };
    if global.json {
        let mut jobs = Map::new();
        for job in &file.jobs {
            let (id, created) = placed(job);
            jobs.insert(
                job.reference.clone(),
                json!({"queue": job.queue, "id": id, "created": created}),
            );
        }
        return out_json(&json!({"flow": file.id, "jobs": jobs}));
    }
    let mut table = Table::new([Align::Left, Align::Left, Align::Left, Align::Left]);
    table.row(["ref", "queue", "id", "created"]);
    for job in &file.jobs {
        let (id, created) = placed(job);
        let created = if created { "yes" } else { "no (existed)" };
        table.row([
            job.reference.as_str(),
            job.queue.as_str(),
            id.as_str(),
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
