//! `emq demo`: enqueue N jobs (every 10th fails once), process them with a
//! worker under a live progress bar, and print a summary.

use super::{How, connect_to, out, out_json, tls_options, unix_ms};
use crate::cli::{DemoArgs, Global};
use crate::embedded::Target;
use crate::error::CliError;
use crate::info;
use crate::table::{Align, Table};
use echomq::{JobContext, JobError, NewJob, Queue, QueueSettings, Worker};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use serde_json::{Value, json};
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// How often the counts are read while the demo runs.
const POLL: Duration = Duration::from_millis(50);
/// The demo fails when no job finishes for this long.
const STALL: Duration = Duration::from_secs(30);
/// How long running jobs may take to finish at shutdown.
const SHUTDOWN: Duration = Duration::from_secs(10);

/// The summary of a demo run (`--json` output).
#[derive(Debug, Serialize)]
struct Summary {
    queue: String,
    jobs: u64,
    completed: u64,
    retried: u64,
    dead: u64,
    elapsed_ms: u128,
    jobs_per_sec: f64,
    concurrency: u64,
    wire: &'static str,
    wire_name: &'static str,
    server: String,
    embedded: bool,
    /// Whether the demo's queue was kept (`--keep`); removed otherwise.
    kept: bool,
    /// The embedded server's binary path, when the demo started one.
    server_binary: Option<String>,
}

pub(crate) async fn run(args: &DemoArgs, global: &Global) -> Result<(), CliError> {
    super::one_url_only(global, "demo")?;
    let target = Target::resolve(global.url.as_deref()).await?;
    let url = target.url.clone();
    let work = demo(args, global, &url, target.embedded_binary());
    let summary = target.run(work).await?;
    if global.json {
        return out_json(&summary);
    }
    out(&render(&summary))
}

async fn demo(
    args: &DemoArgs,
    global: &Global,
    url: &str,
    server_binary: Option<String>,
) -> Result<Summary, CliError> {
    // `run` refused --sentinel: the one server at `url`, its TLS files
    // read once for both connections.
    let tls = tls_options(global)?;
    let how = How {
        prefix: &global.prefix,
        wire: global.wire,
        durability: global.durability,
    };
    let connector = connect_to(url, how, tls.clone()).await?;
    let mut plain = info::plain_connection(url, tls.as_ref()).await?;
    let server = info::server_version(&mut plain).await?;
    if server_binary.is_none() && !global.json {
        // The user's own server (--url or EMQ_URL), reached: say so before
        // writing.
        eprintln!(
            "emq demo: running on {} (--url / EMQ_URL); its queue demo-<ms> is {}",
            crate::error::redact(url),
            if args.keep {
                "kept (--keep)"
            } else {
                "removed when the demo ends (--keep keeps it)"
            }
        );
    }
    let name = format!("demo-{}", unix_ms());
    let queue = connector.queue::<Value>(&name)?;
    // Keep every completed job so the counts reach N.
    let defaults = QueueSettings::default();
    queue
        .configure(&QueueSettings {
            keep_completed: defaults.keep_completed.max(args.jobs),
            ..defaults
        })
        .await?;

    let bar = progress_bar(args.jobs, global.json);
    let started = Instant::now();
    let worker = Worker::new(queue.clone(), |job: JobContext<Value>| async move {
        let n = job.payload.get("n").and_then(Value::as_u64).unwrap_or(1);
        if n.is_multiple_of(10) && job.attempt == 1 {
            return Err(JobError::retry("demo: every 10th job fails once"));
        }
        Ok(())
    })
    .concurrency(args.concurrency as usize)
    .retry_delay(Duration::ZERO)
    .start();
    let enqueued = queue
        .enqueue_bulk((0..args.jobs).map(|n| NewJob::new(json!({ "n": n }))))
        .await;
    if let Err(err) = enqueued {
        worker.shutdown(SHUTDOWN).await;
        return Err(err.into());
    }

    let mut last = (0, 0);
    let mut moved = Instant::now();
    let waited = loop {
        let counts = match queue.admin().counts().await {
            Ok(counts) => counts,
            Err(err) => break Err(CliError::from(err)),
        };
        let stats = worker.stats();
        bar.set_position(counts.completed.min(args.jobs));
        let rate = counts.completed as f64 / started.elapsed().as_secs_f64().max(1e-3);
        bar.set_message(format!(
            "{rate:.0} jobs/s  retried {}  dead {}",
            stats.retried, counts.dead
        ));
        if counts.completed + counts.dead >= args.jobs {
            break Ok(());
        }
        if (counts.completed, stats.finished()) != last {
            last = (counts.completed, stats.finished());
            moved = Instant::now();
        } else if moved.elapsed() > STALL {
            break Err(CliError::usage(format!(
                "demo stalled: {} of {} jobs completed, nothing moved for {}s",
                counts.completed,
                args.jobs,
                STALL.as_secs()
            )));
        }
        tokio::time::sleep(POLL).await;
    };
    let elapsed = started.elapsed();
    bar.finish_and_clear();
    let stats = worker.shutdown(SHUTDOWN).await;
    // Read before the queue goes; removed whether the demo ended or stalled.
    let counts = match waited {
        Ok(()) => queue.admin().counts().await.map_err(CliError::from),
        Err(err) => Err(err),
    };
    remove_unless_kept(&queue, args.keep).await?;
    let counts = counts?;
    Ok(Summary {
        queue: name,
        jobs: args.jobs,
        completed: counts.completed,
        retried: stats.retried,
        dead: counts.dead,
        elapsed_ms: elapsed.as_millis(),
        jobs_per_sec: args.jobs as f64 / elapsed.as_secs_f64(),
        concurrency: args.concurrency,
        wire: global.wire.as_str(),
        wire_name: global.wire.describe(),
        server,
        embedded: server_binary.is_some(),
        server_binary,
        kept: args.keep,
    })
}

/// Removes the demo's queue (pause, then obliterate, active jobs too)
/// unless `keep`: a demo on the user's server leaves nothing behind.
async fn remove_unless_kept(queue: &Queue<Value>, keep: bool) -> Result<(), CliError> {
    if keep {
        return Ok(());
    }
    let admin = queue.admin();
    admin.pause().await?;
    admin.obliterate(echomq::IfActive::Force).await?;
    Ok(())
}

/// A bar on stderr; hidden when stderr is not a terminal or with `--json`.
fn progress_bar(jobs: u64, json: bool) -> ProgressBar {
    let target = if json || !std::io::stderr().is_terminal() {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    };
    let style = ProgressStyle::with_template(
        "{elapsed_precise} [{bar:25.cyan/blue}] {pos}/{len} done  {msg}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    ProgressBar::with_draw_target(Some(jobs), target).with_style(style)
}

fn render(s: &Summary) -> String {
    let mut table = Table::new([Align::Left, Align::Right, Align::Left]);
    table
        .row(["jobs", &s.jobs.to_string(), ""])
        .row(["completed", &s.completed.to_string(), ""])
        .row([
            "retried",
            &s.retried.to_string(),
            "(failed once, then completed)",
        ])
        .row(["dead", &s.dead.to_string(), ""])
        .row([
            "elapsed".to_string(),
            format!("{:.2}", s.elapsed_ms as f64 / 1000.0),
            "s".to_string(),
        ])
        .row([
            "throughput".to_string(),
            format!("{:.0}", s.jobs_per_sec),
            "jobs/s".to_string(),
        ])
        .row(["concurrency", &s.concurrency.to_string(), ""]);
    let embedded = match &s.server_binary {
        Some(path) => format!(" (embedded: {path})"),
        None => String::new(),
    };
    // The label column of the table above: its longest label and two spaces.
    let w = "concurrency".len() + 2;
    let left = if s.kept {
        "kept (--keep)"
    } else {
        "removed (--keep keeps it)"
    };
    format!(
        "EchoMQ demo on queue {}\n{table}{:<w$}{}\n{:<w$}{}{embedded}\n{:<w$}{left}\n",
        s.queue, "wire", s.wire_name, "server", s.server, "queue"
    )
}
