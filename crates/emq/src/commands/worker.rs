//! `emq worker <queue> --exec <command>`: a worker in any language, over
//! one queue or several (`emq worker mail,sms,reports --weights 5,2,1 |
//! --strict`: one worker, [`Worker::over`]). Each job runs `sh -c
//! <command>` (see [`super::exec`]):
//!
//! - stdin: the payload, the JSON bytes as stored;
//! - environment: `EMQ_QUEUE`, `EMQ_JOB_ID`, `EMQ_ATTEMPT` (from 1),
//!   `EMQ_MAX_ATTEMPTS` and `EMQ_TOKEN` (the claim's fencing token, for a
//!   command that fences writes of its own, or records which claim ran);
//! - exit 0 completes the job; its stdout (trailing newlines trimmed) is
//!   the result — stored as is when it parses as JSON, as a JSON string
//!   otherwise, `null` when empty;
//! - any other exit fails the attempt (retried with the library's backoff
//!   while attempts remain, then dead-lettered); the error is the last 4 KB
//!   of stderr, trimmed, or `exited with status N` when stderr is empty;
//! - a cancelled job (`emq cancel`, or a voided lease) gets SIGTERM on its
//!   process group and lands in `cancelled`;
//! - a job with a time limit (`emq enqueue … --time-limit`) gets SIGTERM on
//!   its process group at the limit, then SIGKILL after
//!   `--shutdown-deadline`, and the attempt fails with `time limit <d>
//!   exceeded` (retried with the library's backoff while attempts remain).
//!
//! The worker renews leases while commands run and runs the stalled sweep.
//! Ctrl-C or SIGTERM stops it gracefully: no more claims, running commands
//! get `--shutdown-deadline` to finish, then SIGTERM, and their jobs go back
//! to pending; it exits 0 after printing its counters on stderr.
//!
//! Output: one line per finished attempt on stderr (`completed job <id>`,
//! `failed job <id>: <error> (…)`, `cancelled job <id>`, `released job
//! <id> back to pending`, `lost job <id>: …`) unless
//! `--quiet`; with `--json`, one JSON object per finished attempt on stdout
//! instead. Nothing else is written on stdout. The library's warnings share
//! the stderr lines' plain form (`crate::logging`).

use super::exec::{self, Finished};
use super::stop::StopSignal;
use super::{connect, out_json, queue_name};
use crate::cli::{Global, WorkerArgs};
use crate::error::CliError;
use crate::terminal::escape;
use crate::time::format_duration;
use echomq::{
    CancelReason, Connector, JobContext, JobError, Queue, QueueName, Worker, WorkerStats,
};
use serde::Serialize;
use serde_json::value::RawValue;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What every job's run shares.
#[derive(Debug)]
struct Exec {
    command: String,
    json: bool,
    quiet: bool,
    /// How long a stopped command has after SIGTERM before SIGKILL: the
    /// worker's `--shutdown-deadline`.
    kill_after: Duration,
}

/// One finished attempt (`--json`).
#[derive(Debug, Serialize)]
struct Report<'a> {
    queue: &'a str,
    id: &'a str,
    attempt: u64,
    max_attempts: u64,
    /// `completed`, `failed`, `cancelled`, `released` (back to pending at
    /// shutdown) or `lost` (the lease was taken back first).
    outcome: &'static str,
    /// For `failed`: whether another attempt follows.
    #[serde(skip_serializing_if = "Option::is_none")]
    retry: Option<bool>,
    exit_code: Option<i32>,
    duration_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
}

pub(crate) async fn run(args: &WorkerArgs, global: &Global) -> Result<(), CliError> {
    // First: a SIGTERM from here on stops the worker gracefully.
    let mut stop = StopSignal::register()?;
    let names: Vec<QueueName> = args
        .queue
        .split(',')
        .map(queue_name)
        .collect::<Result<_, _>>()?;
    let url = global.url_or_default();
    let connector = connect(&url, global).await?;
    let queues: Vec<Queue<Box<RawValue>>> = names
        .iter()
        .map(|name| connector.queue(name.as_str()))
        .collect::<Result<_, _>>()?;
    let spec = Arc::new(Exec {
        command: args.exec.clone(),
        json: global.json,
        quiet: args.quiet,
        kill_after: args.shutdown_deadline,
    });
    let mut worker = Worker::over(queues, move |job: JobContext<Box<RawValue>>| {
        let spec = spec.clone();
        async move { run_job(&spec, job).await }
    })?;
    if let Some(weights) = &args.weights {
        worker = worker.weights(weights.iter().copied())?;
    }
    if args.strict {
        worker = worker.strict()?;
    }
    if names.len() > 1 {
        known(&connector, &names).await?;
    }
    let handle = worker
        .concurrency(args.concurrency as usize)
        .claim_ahead(args.claim_ahead as usize)
        .lease(args.lease)
        .max_stalls(args.max_stalls)
        .stalled_interval(args.stalled_interval)
        .start();
    if !args.quiet {
        eprintln!(
            "worker on {}: sh -c {:?}, concurrency {}, lease {}; Ctrl-C or SIGTERM stops it",
            over(&names, args),
            args.exec,
            args.concurrency,
            format_duration(args.lease)
        );
    }
    tokio::select! {
        _ = stop.recv() => {}
        // The worker stopped by itself: the server's ACL refuses it.
        _ = handle.stopped() => {}
    }
    let failure = handle.failure();
    if !args.quiet && failure.is_none() {
        eprintln!(
            "stopping: no more claims; running commands get {} to finish",
            format_duration(args.shutdown_deadline)
        );
    }
    let stats = handle.shutdown(args.shutdown_deadline).await;
    eprintln!("{}", summary(&stats));
    match failure {
        Some(err) => Err(CliError::usage(format!("the worker stopped: {err}"))),
        None => Ok(()),
    }
}

/// Refuses a queue of a list that is not known: not in the registry and
/// with no meta hash (`Connector::queues`). A list's typo would otherwise
/// be a queue the worker waits on for ever; one queue alone may be new.
async fn known(connector: &Connector, names: &[QueueName]) -> Result<(), CliError> {
    let queues = connector.queues().await?;
    match names
        .iter()
        .find(|name| !queues.iter().any(|known| known == name.as_str()))
    {
        Some(unknown) => Err(CliError::usage(format!(
            "unknown queue {unknown}: no such queue under this prefix (`emq queues` lists the known ones)"
        ))),
        None => Ok(()),
    }
}

/// What the worker runs over, for its first line: `queue mail`, or
/// `queues mail, sms (weights 5, 2)`.
fn over(names: &[QueueName], args: &WorkerArgs) -> String {
    let list = names
        .iter()
        .map(QueueName::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() == 1 {
        return format!("queue {list}");
    }
    let order = match &args.weights {
        Some(weights) => {
            let weights: Vec<String> = weights.iter().map(u64::to_string).collect();
            format!("weights {}", weights.join(", "))
        }
        None if args.strict => "strict order".to_string(),
        None => "evenly".to_string(),
    };
    format!("queues {list} ({order})")
}

/// Runs the command for one job and reports the attempt.
async fn run_job(spec: &Exec, job: JobContext<Box<RawValue>>) -> Result<Box<RawValue>, JobError> {
    let started = Instant::now();
    let env = [
        ("EMQ_QUEUE", job.queue().to_string()),
        ("EMQ_JOB_ID", job.id.to_string()),
        ("EMQ_ATTEMPT", job.attempt.to_string()),
        ("EMQ_MAX_ATTEMPTS", job.max_attempts.to_string()),
        ("EMQ_TOKEN", job.token.to_string()),
    ];
    let stdin = job.payload.get().as_bytes().to_vec();
    let stop = (job.cancelled(), spec.kill_after);
    let finished = exec::run(&spec.command, &env, stdin, stop).await;
    let exit_code = finished.as_ref().ok().and_then(|f| f.status.code());
    let outcome = match finished {
        Err(err) => Err(JobError::retry(format!("could not start sh: {err}"))),
        Ok(f) if job.is_cancelled() && (f.stopped || !f.status.success()) => {
            Err(JobError::Cancelled)
        }
        Ok(f) if f.status.success() => Ok(result_of(&f.stdout)),
        Ok(f) => Err(JobError::retry(error_of(&f))),
    };
    report(spec, &job, &outcome, exit_code, started.elapsed());
    outcome
}

/// Stdout as the job's result: JSON as is, other text as a JSON string,
/// nothing as `null`.
fn result_of(stdout: &[u8]) -> Box<RawValue> {
    let text = String::from_utf8_lossy(stdout);
    let text = text.trim_end_matches(['\n', '\r']);
    if text.trim().is_empty() {
        return RawValue::from_string("null".into()).expect("null is JSON");
    }
    serde_json::from_str::<Box<RawValue>>(text).unwrap_or_else(|_| {
        serde_json::value::to_raw_value(text).expect("a string encodes as JSON")
    })
}

/// The error of a failed run: its stderr tail, trimmed, or how it ended.
fn error_of(finished: &Finished) -> String {
    let stderr = String::from_utf8_lossy(&finished.stderr);
    let stderr = stderr.trim();
    if !stderr.is_empty() {
        return stderr.to_string();
    }
    match finished.status.code() {
        Some(code) => format!("exited with status {code}"),
        None => format!("ended by a signal ({})", finished.status),
    }
}

/// One line on stderr, or one JSON object on stdout with `--json`.
fn report(
    spec: &Exec,
    job: &JobContext<Box<RawValue>>,
    outcome: &Result<Box<RawValue>, JobError>,
    exit_code: Option<i32>,
    took: Duration,
) {
    let retry = job.attempt < job.max_attempts;
    // Stopped at its time limit: the attempt failed with this error.
    let over_limit = job
        .time_limit()
        .map(|limit| echomq::protocol::time_limit::exceeded(limit.as_millis() as u64));
    let (word, result, error) = match outcome {
        Ok(result) => ("completed", Some(result.as_ref()), None),
        Err(_) if job.cancel_reason() == Some(CancelReason::TimeLimit) => {
            ("failed", None, over_limit.as_deref())
        }
        Err(JobError::Cancelled) => match job.cancel_reason() {
            Some(CancelReason::Shutdown) => ("released", None, None),
            Some(CancelReason::LeaseLost) => ("lost", None, None),
            _ => ("cancelled", None, None),
        },
        Err(err) => ("failed", None, Some(err.message())),
    };
    if spec.json {
        let report = Report {
            queue: job.queue().as_str(),
            id: job.id.as_str(),
            attempt: job.attempt,
            max_attempts: job.max_attempts,
            outcome: word,
            retry: error.map(|_| retry),
            exit_code,
            duration_ms: took.as_millis() as u64,
            result,
            error,
        };
        // Stdout closed: nothing more to report to, the jobs still run.
        let _ = out_json(&report);
        return;
    }
    if spec.quiet {
        return;
    }
    let id = escape(job.id.as_str());
    match (word, error) {
        ("failed", Some(error)) => {
            let next = if retry { "will retry" } else { "dead-lettered" };
            let error = error.split_whitespace().collect::<Vec<_>>().join(" ");
            let error = escape(&error);
            eprintln!(
                "failed job {id}: {error} (attempt {} of {}, {next})",
                job.attempt, job.max_attempts
            );
        }
        ("released", _) => eprintln!("released job {id} back to pending"),
        ("lost", _) => eprintln!("lost job {id}: its lease was taken back"),
        _ => eprintln!("{word} job {id}"),
    }
}

/// The final counters, one line.
fn summary(stats: &WorkerStats) -> String {
    let mut line = format!(
        "worker stopped: {} claimed, {} completed, {} retried, {} dead, {} cancelled, {} released to pending",
        stats.claimed, stats.completed, stats.retried, stats.dead, stats.cancelled, stats.released
    );
    if stats.lost > 0 {
        line.push_str(&format!(", {} lost", stats.lost));
    }
    if stats.write_errors > 0 {
        line.push_str(&format!(
            ", {} not written (the stalled sweep recovers them)",
            stats.write_errors
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn stdout_becomes_the_result() {
        assert_eq!(result_of(b"{\"a\": 1}\n").get(), "{\"a\": 1}");
        assert_eq!(result_of(b"42").get(), "42");
        assert_eq!(result_of(b"hello world\n").get(), "\"hello world\"");
        assert_eq!(result_of(b"two\nlines\n\n").get(), "\"two\\nlines\"");
        assert_eq!(result_of(b"").get(), "null");
        assert_eq!(result_of(b"\n").get(), "null");
        let _: Value = serde_json::from_str(result_of(b"not {json").get()).unwrap();
    }
}
