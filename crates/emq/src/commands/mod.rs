//! One module per command family; [`run`] dispatches.

mod acl;
mod bench;
mod bulk;
mod confirm;
mod control;
mod dashboard;
mod dedup;
mod demo;
mod enqueue;
mod exec;
mod flow;
mod flow_show;
mod flows;
mod groups;
mod job;
mod job_edges;
mod last_hour;
mod list;
mod map;
pub(crate) mod metrics;
mod obliterate;
mod paging;
mod promote;
mod repeat;
mod reschedule;
mod retention;
mod row;
mod server;
mod stale;
mod stats;
mod stop;
mod token;
mod wait;
mod watch;
mod watch_filter;
mod worker;

use crate::cli::{Cli, Command, Global, WireArg};
use crate::error::{CliError, redact};
use crate::terminal::escape_lines;
use echomq::{Connector, JobId, Queue, QueueName, TlsOptions};
use serde::Serialize;
use serde_json::Value;
use std::io::Write;

/// Runs one parsed command line.
pub(crate) async fn run(cli: Cli) -> Result<(), CliError> {
    let global = &cli.global;
    match &cli.command {
        Command::Server(args) => server::run(args, global).await,
        Command::Demo(args) => demo::run(args, global).await,
        Command::Enqueue(args) => enqueue::run(args, global).await,
        Command::Wait(args) => wait::run(args, global).await,
        Command::Flow(command) => flows::run(command, global).await,
        Command::Reschedule(args) => reschedule::run(args, global).await,
        Command::Promote(args) => promote::run(args, global).await,
        Command::Repeat(command) => repeat::run(command, global).await,
        Command::Stats(args) => stats::run(args, global).await,
        Command::Metrics(args) => metrics::run(args, global).await,
        Command::Dashboard(args) | Command::Serve(args) => dashboard::run(args, global).await,
        Command::Token(command) => token::run(command, global).await,
        Command::Queues => list::queues(global).await,
        Command::Jobs(args) => list::jobs(args, global).await,
        Command::Job(args) => job::run(args, global).await,
        Command::Dedup(args) => dedup::run(args, global).await,
        Command::Worker(args) => worker::run(args, global).await,
        Command::Watch(args) => watch::run(args, global).await,
        Command::Cancel(args) => row::cancel(args, global).await,
        Command::Update(args) => row::update(args, global).await,
        Command::Remove(args) => row::remove(args, global).await,
        Command::Reprocess(args) => row::reprocess(args, global).await,
        Command::Requeue(args) => row::requeue(args, global).await,
        Command::Retry(args) => bulk::retry(args, global).await,
        Command::Clean(args) => bulk::clean(args, global).await,
        Command::Log(args) => row::log(args, global).await,
        Command::Pause(args) => control::pause(args, global).await,
        Command::Resume(args) => control::resume(args, global).await,
        Command::Drain(args) => control::drain(args, global).await,
        Command::Obliterate(args) => obliterate::run(args, global).await,
        Command::Sweep(args) => control::sweep(args, global).await,
        Command::RateLimit(args) => flow::rate_limit(args, global).await,
        Command::Groups(args) => groups::list(args, global).await,
        Command::Group(args) => groups::one(args, global).await,
        Command::ConcurrencyCap(args) => flow::concurrency_cap(args, global).await,
        Command::Retention(args) => retention::run(args, global).await,
        Command::Controls(args) => map::run(args, global).await,
        Command::Acl(args) => acl::run(args, global).await,
        Command::Bench(args) => bench::run(args, global).await,
    }
}

/// Connects to `url` with the global prefix and wire; an unreachable
/// server is a one-line error naming the URL.
pub(crate) async fn connect(url: &str, global: &Global) -> Result<Connector, CliError> {
    if let Some(service) = &global.sentinel_service
        && !global.sentinel.is_empty()
    {
        let builder = Connector::sentinel(global.sentinel.clone(), service.as_str())
            .prefix(global.prefix.as_str())
            .wire(global.wire.wire())
            .durability(global.durability);
        let builder = match &global.primary_password {
            Some(password) => builder.primary_auth(None, password),
            None => builder,
        };
        // Each URL without its password (`unreachable` reads its text as
        // one URL, and would hide the first password only).
        let sentinels: Vec<String> = global.sentinel.iter().map(|url| redact(url)).collect();
        let sentinels = sentinels.join(",");
        return builder
            .connect()
            .await
            .map_err(|err| CliError::unreachable(&sentinels, &err));
    }
    if !global.cluster.is_empty() {
        let builder = Connector::cluster(global.cluster.clone())
            .prefix(global.prefix.as_str())
            .wire(global.wire.wire())
            .durability(global.durability);
        let builder = match tls_options(global)? {
            Some(tls) => builder.tls(tls),
            None => builder,
        };
        let nodes: Vec<String> = global.cluster.iter().map(|url| redact(url)).collect();
        return builder
            .connect()
            .await
            .map_err(|err| CliError::unreachable(&nodes.join(","), &err));
    }
    let how = How {
        prefix: &global.prefix,
        wire: global.wire,
        durability: global.durability,
    };
    connect_to(url, how, tls_options(global)?).await
}

/// How to connect, beside where: the key prefix, the wire and the
/// durability level.
#[derive(Debug, Clone, Copy)]
pub(crate) struct How<'a> {
    pub prefix: &'a str,
    pub wire: WireArg,
    pub durability: echomq::Durability,
}

/// Connects to the one server at `url`; an unreachable server is a
/// one-line error naming the URL.
pub(crate) async fn connect_to(
    url: &str,
    how: How<'_>,
    tls: Option<TlsOptions>,
) -> Result<Connector, CliError> {
    let builder = Connector::builder(url)
        .prefix(how.prefix)
        .wire(how.wire.wire())
        .durability(how.durability);
    let builder = match tls {
        Some(tls) => builder.tls(tls),
        None => builder,
    };
    builder
        .connect()
        .await
        .map_err(|err| CliError::unreachable(url, &err))
}

/// Refuses `--sentinel` and `--cluster` for a command that measures one
/// server by its URL.
pub(crate) fn one_url_only(global: &Global, command: &str) -> Result<(), CliError> {
    let given = if !global.sentinel.is_empty() {
        "--sentinel"
    } else if !global.cluster.is_empty() {
        "--cluster"
    } else {
        return Ok(());
    };
    Err(CliError::usage(format!(
        "emq {command} reads the server's own counters over one URL: give --url (the primary), not {given}"
    )))
}

/// `--tls-ca-cert`, `--tls-cert` and `--tls-key`, read; `None` when none
/// is given. A file that cannot be read is an error naming the option.
pub(crate) fn tls_options(global: &Global) -> Result<Option<TlsOptions>, CliError> {
    let read = |option: &str, path: &std::path::Path| {
        std::fs::read(path)
            .map_err(|err| CliError::usage(format!("{option} {}: {err}", path.display())))
    };
    let mut tls = None;
    if let Some(path) = &global.tls_ca_cert {
        tls = Some(TlsOptions::new().root_certificates(read("--tls-ca-cert", path)?));
    }
    if let (Some(cert), Some(key)) = (&global.tls_cert, &global.tls_key) {
        let (cert, key) = (read("--tls-cert", cert)?, read("--tls-key", key)?);
        tls = Some(tls.unwrap_or_default().client_certificate(cert, key));
    }
    Ok(tls)
}

/// Checks a queue name before anything is sent.
pub(crate) fn queue_name(name: &str) -> Result<QueueName, CliError> {
    QueueName::new(name).map_err(|err| CliError::usage(err.to_string()))
}

/// Checks a job id before anything is sent.
pub(crate) fn job_id(id: &str) -> Result<JobId, CliError> {
    JobId::new(id).map_err(|err| CliError::usage(err.to_string()))
}

/// The one wording of a missing job, every command alike: `no job 42 in
/// queue mail`.
pub(crate) fn no_job(queue: &Queue<Value>, id: &JobId) -> String {
    format!("no job {id} in queue {}", queue.name())
}

/// The error of a verb on job `id`: a `NOJOB` refusal in the wording of
/// [`no_job`] (`cancel refused: no job 42 in queue mail (NOJOB)`), any
/// other error as it is.
pub(crate) fn on_job<'a>(
    queue: &'a Queue<Value>,
    id: &'a JobId,
) -> impl FnOnce(echomq::Error) -> CliError + 'a {
    move |err| match err.refused() {
        Some(refused) if refused.reason == echomq::Refusal::NoJob => CliError::refusal(
            &refused.reason,
            format!(
                "{} refused: {} (NOJOB)",
                refused.transition,
                no_job(queue, id)
            ),
        ),
        _ => err.into(),
    }
}

/// Checks the queue name, then connects (`--url` or the default URL) and
/// opens the queue.
pub(crate) async fn open(queue: &str, global: &Global) -> Result<Queue<Value>, CliError> {
    let name = queue_name(queue)?;
    let url = global.url_or_default();
    Ok(connect(&url, global).await?.queue::<Value>(name.as_str())?)
}

/// After a setting on `queue` (pause, a limit, a cap): a note on stderr
/// when the queue holds no job at all, the likely sign of a mistyped name
/// (`emq pause mial`). The setting is made all the same: it is real, and
/// `emq queues` lists the queue from then on. Nothing under `--json`.
pub(crate) async fn note_if_empty(queue: &Queue<Value>, global: &Global) -> Result<(), CliError> {
    if global.json || queue.admin().counts().await?.total() > 0 {
        return Ok(());
    }
    eprintln!(
        "note: queue {} holds no jobs yet (a new queue, or a mistyped name? `emq queues` lists them)",
        crate::terminal::escape(queue.name().as_str())
    );
    Ok(())
}

/// Parses a JSON argument; `what` names it in the error (`<json>`).
pub(crate) fn json_arg(what: &str, text: &str) -> Result<serde_json::Value, CliError> {
    serde_json::from_str(text).map_err(|err| {
        CliError::usage(format!(
            "argument {what} is not valid JSON: {err} (got {text:?})"
        ))
    })
}

/// Writes human-readable `text` to stdout, every control character but
/// its line breaks shown escaped ([`escape_lines`]): whatever a field of
/// it holds, the terminal is never told to do anything.
pub(crate) fn out(text: &str) -> Result<(), CliError> {
    write_stdout(&escape_lines(text))
}

/// Writes `text` to stdout as it is; a closed pipe (`emq … | head`) is not
/// an error.
fn write_stdout(text: &str) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => Err(err.into()),
        _ => Ok(()),
    }
}

/// Writes `value` as one line of JSON to stdout, its text exact (JSON
/// escapes control characters in strings itself).
pub(crate) fn out_json(value: &impl Serialize) -> Result<(), CliError> {
    let text = serde_json::to_string(value)
        .map_err(|err| CliError::usage(format!("encoding JSON output: {err}")))?;
    write_stdout(&format!("{text}\n"))
}

/// A listener's first stdout line, naming where it serves: `serving
/// <url>`, or under `--json` `{"url": "<url>"}`.
pub(crate) fn serving(url: &str, global: &Global) -> Result<(), CliError> {
    if global.json {
        return out_json(&serde_json::json!({ "url": url }));
    }
    out(&format!("serving {url}\n"))
}

/// Milliseconds since the Unix epoch (host clock), for unique queue names.
pub(crate) fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}
