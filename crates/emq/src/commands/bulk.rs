//! The verbs on many jobs.
//!
//! - [`each`]: a per-job verb (`cancel`, `remove`, `reprocess`, `requeue`)
//!   on every id given, in order, one line each (a refused id on stderr);
//!   exit 1 naming the refused ids when any was. With one id, exactly the
//!   single verb: its line, or its error.

use super::{job_id, open, out, out_json};
use crate::cli::Global;
use crate::error::{CliError, ErrorCode};
use crate::terminal::escape;
use echomq::{JobId, Queue};
use serde_json::{Value, json};
use std::future::Future;

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
fn show(global: &Global, done: &Done) -> Result<(), CliError> {
    if global.json {
        return out_json(&done.json);
    }
    out(&format!("{}\n", done.line))
}
