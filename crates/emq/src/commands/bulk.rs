//! The verbs on many jobs.
//!
//! - [`each`]: a per-job verb (`cancel`, `remove`, `reprocess`, `requeue`,
//!   `retry <ids>`) on every id given, in order, one line each (a refused
//!   id on stderr); exit 1 naming the refused ids when any was. With one
//!   id, exactly the single verb: its line, or its error.
//! - `retry --all` and `clean`: every job of a finished state (for `clean
//!   --older-than`, those finished before a cutoff), with the library
//!   calls the dashboard's bulk verbs make (`Jobs::reprocess`,
//!   `Jobs::remove`), over a bounded, paged walk of `Jobs::list`: oldest
//!   first, at most as many jobs as the state held when the walk began (a
//!   job that fails again during it waits for the next run).

use super::confirm::{ask, yes_or_terminal};
use super::control::plural;
use super::{job_id, open, out, out_json, queue_name};
use crate::cli::{CleanArgs, Global, RetryArgs};
use crate::error::{CliError, ErrorCode};
use crate::terminal::escape;
use crate::time::rfc3339;
use echomq::{JobId, JobState, Queue};
use serde_json::{Value, json};
use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Jobs read (and acted on at once) per page of a walk.
const PAGE: u64 = 500;

/// What a verb did to one job: its line for people, its `--json` object.
pub(crate) struct Done {
    pub(crate) line: String,
    pub(crate) json: Value,
}

/// Checks every id before anything is sent, then opens the queue.
pub(crate) async fn open_ids(
    queue: &str,
    ids: &[String],
    global: &Global,
) -> Result<(Queue<Value>, Vec<JobId>), CliError> {
    let ids = ids
        .iter()
        .map(|id| job_id(id))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((open(queue, global).await?, ids))
}

/// Runs `act` on each id in turn and prints what it did. One id: its line
/// or its error, as the verb always did. Several: a line (or `--json`
/// object) per id on stdout, a refused id's error on stderr (`--json`: an
/// object `{"id", "error"}` on stdout), then, when any failed, an error
/// naming them all (exit 1, or 2 for a connection error).
pub(crate) async fn each<F, Fut>(
    global: &Global,
    verb: &str,
    ids: Vec<JobId>,
    mut act: F,
) -> Result<(), CliError>
where
    F: FnMut(JobId) -> Fut,
    Fut: Future<Output = Result<Done, CliError>>,
{
    if let [id] = ids.as_slice() {
        return show(global, &act(id.clone()).await?);
    }
    let total = ids.len();
    let mut failed: Vec<JobId> = Vec::new();
    // The worst failure (the highest exit code) names the whole run's.
    let mut worst: Option<(u8, ErrorCode)> = None;
    for id in ids {
        match act(id.clone()).await {
            Ok(done) => show(global, &done)?,
            Err(err) => {
                if global.json {
                    let error = json!({ "code": err.kind.as_str(), "message": err.message });
                    out_json(&json!({ "id": id.as_str(), "error": error }))?;
                } else {
                    eprintln!("emq: {}", escape(&err.message));
                }
                if worst.is_none_or(|(code, _)| err.code > code) {
                    worst = Some((err.code, err.kind));
                }
                failed.push(id);
            }
        }
    }
    let Some((code, kind)) = worst else {
        return Ok(());
    };
    let names: Vec<&str> = failed.iter().map(JobId::as_str).collect();
    Err(CliError {
        code,
        kind,
        message: format!(
            "{verb} failed for {} of {total} jobs: {}",
            failed.len(),
            names.join(", ")
        ),
    })
}

/// Prints one job's outcome.
pub(crate) fn show(global: &Global, done: &Done) -> Result<(), CliError> {
    if global.json {
        return out_json(&done.json);
    }
    out(&format!("{}\n", done.line))
}

/// `emq retry <queue> (<id>… | --all [--state S] [--yes])`.
pub(crate) async fn retry(args: &RetryArgs, global: &Global) -> Result<(), CliError> {
    let state = args.state;
    match (args.all, args.ids.is_empty()) {
        (true, false) => Err(CliError::usage(format!(
            "retry takes job ids or --all, not both (--all retries every {state} job of the queue)"
        ))),
        (false, true) => Err(CliError::usage(
            "retry needs the ids of the jobs to retry, or --all for every job of --state (dead unless given)",
        )),
        (false, false) => {
            let (queue, ids) = open_ids(&args.queue, &args.ids, global).await?;
            each(global, "reprocess", ids, |id| {
                super::row::reprocess_one(&queue, id)
            })
            .await
        }
        (true, true) => {
            let name = queue_name(&args.queue)?;
            yes_or_terminal(
                args.yes,
                &format!("retry every {state} job of queue {name}"),
            )?;
            let queue = open(&args.queue, global).await?;
            let count = queue.admin().counts().await?.get(state);
            let question = format!("Reprocess every {state} job of queue {name} ({count})?");
            if !args.yes && count > 0 && !ask(&question).await? {
                return Err(CliError::refused("aborted"));
            }
            let tally = walk(&queue, state, None, Verb::Reprocess).await?;
            report(global, &queue, state, None, &tally)
        }
    }
}

/// `emq clean <queue> --state S [--older-than D] [--yes]`.
pub(crate) async fn clean(args: &CleanArgs, global: &Global) -> Result<(), CliError> {
    let state = args.state;
    let name = queue_name(&args.queue)?;
    let before = args.older_than.map(cutoff);
    let which = match before {
        Some(ms) => format!(
            "the {state} jobs of queue {name} finished before {}",
            rfc3339(ms)
        ),
        None => format!("every {state} job of queue {name}"),
    };
    yes_or_terminal(args.yes, &format!("delete {which}"))?;
    let queue = open(&args.queue, global).await?;
    let count = queue.admin().counts().await?.get(state);
    if !args.yes && count > 0 && !ask(&format!("Delete {which} (of {count})?")).await? {
        return Err(CliError::refused("aborted"));
    }
    let tally = walk(&queue, state, before, Verb::Remove).await?;
    report(global, &queue, state, before, &tally)
}

/// The instant `age` ago on this host's clock, in ms since the epoch.
fn cutoff(age: Duration) -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    now.saturating_sub(age).as_millis() as u64
}

/// What a walk does to each job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Reprocess,
    Remove,
}

impl Verb {
    /// The word for what was done.
    fn done(self) -> &'static str {
        match self {
            Verb::Reprocess => "reprocessed",
            Verb::Remove => "removed",
        }
    }
}

/// What a walk did.
#[derive(Debug)]
struct Tally {
    verb: Verb,
    done: u64,
    /// The jobs refused, each with its error (they left the state during
    /// the walk).
    refused: Vec<(JobId, String)>,
}

/// Applies `verb` to the jobs of `state`, oldest first, a page at a time
/// (each page's jobs at once), up to the first that finished at or after
/// `before` (ms) when given; at most as many jobs as the state held when
/// it began.
async fn walk(
    queue: &Queue<Value>,
    state: JobState,
    before: Option<u64>,
    verb: Verb,
) -> Result<Tally, CliError> {
    let jobs = queue.jobs();
    let mut tally = Tally {
        verb,
        done: 0,
        refused: Vec::new(),
    };
    let (_, budget) = jobs.list(state, 0, 1).await?;
    let mut seen = 0;
    while seen < budget {
        // Every job acted on leaves the state (a refused one had left it
        // already), so the next page starts at the head again.
        let (page, _) = jobs.list(state, 0, PAGE.min(budget - seen)).await?;
        if page.is_empty() {
            break;
        }
        let due = page
            .iter()
            .take_while(|job| match (before, job.finished_at) {
                (None, _) => true,
                (Some(cutoff), Some(at)) => at < cutoff,
                (Some(_), None) => false,
            })
            .count();
        let mut running = tokio::task::JoinSet::new();
        for job in &page[..due] {
            let (jobs, id) = (queue.jobs(), job.id.clone());
            running.spawn(async move {
                let outcome = match verb {
                    Verb::Reprocess => jobs.reprocess(&id).await,
                    Verb::Remove => {
                        jobs.remove(&id, echomq::IfActive::Refuse)
                            .await
                            .and_then(|found| {
                                found.then_some(()).ok_or_else(|| {
                                    echomq::Error::Refused(echomq::Refused {
                                        job: Some(id.clone()),
                                        transition: echomq::Transition::Remove,
                                        reason: echomq::Refusal::NoJob,
                                    })
                                })
                            })
                    }
                };
                (id, outcome)
            });
        }
        while let Some(joined) = running.join_next().await {
            let (id, outcome) =
                joined.map_err(|err| CliError::usage(format!("a job's call failed: {err}")))?;
            match outcome {
                Ok(()) => tally.done += 1,
                Err(echomq::Error::Refused(refused)) => {
                    tally.refused.push((id, refused.to_string()));
                }
                Err(err) => return Err(err.into()),
            }
        }
        seen += page.len() as u64;
        if due < page.len() {
            break;
        }
    }
    Ok(tally)
}

/// The walk's line (`reprocessed 3 dead jobs of queue q`) or `--json`
/// object; each refused job's error on stderr and exit 1 when any was.
fn report(
    global: &Global,
    queue: &Queue<Value>,
    state: JobState,
    before: Option<u64>,
    tally: &Tally,
) -> Result<(), CliError> {
    let name = queue.name().as_str();
    let word = tally.verb.done();
    let refused: Vec<&str> = tally.refused.iter().map(|(id, _)| id.as_str()).collect();
    if global.json {
        out_json(&json!({
            "queue": name,
            "state": state.as_str(),
            "finished_before": before,
            word: tally.done,
            "refused": refused,
        }))?;
    } else {
        let mut line = format!(
            "{word} {} {state} {} of queue {name}",
            tally.done,
            plural(tally.done, "job")
        );
        if let Some(ms) = before {
            line.push_str(&format!(" (finished before {})", rfc3339(ms)));
        }
        out(&format!("{line}\n"))?;
        for (_, error) in &tally.refused {
            eprintln!("emq: {}", escape(error));
        }
    }
    if refused.is_empty() {
        return Ok(());
    }
    Err(CliError::refused(format!(
        "{} of the {state} jobs of queue {name} left the state before they were {word}: {}",
        refused.len(),
        refused.join(", ")
    )))
}
