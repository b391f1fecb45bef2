//! `emq queues` (every queue with its counts) and `emq jobs` (one page of
//! a queue's jobs in one state).

use super::job::embed;
use super::paging::Paging;
use super::stale::Field;
use super::{connect, open, out, out_json};
use crate::cli::{Global, JobsArgs};
use crate::error::CliError;
use crate::table::{Align, Table};
use crate::terminal::escape;
use crate::time::rfc3339;
use echomq::{Counts, JobRecord, JobState, Unreadable};
use serde::Serialize;
use serde_json::Value;

/// Characters of an error shown in the `jobs` table.
const ERROR_WIDTH: usize = 60;

/// One queue of `emq queues --json`: its counts, or why they could not
/// be read.
#[derive(Debug, Serialize)]
struct QueueRow {
    queue: String,
    #[serde(flatten)]
    counts: Option<Counts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// `emq queues`: every queue of the prefix with its counts. A queue that
/// cannot be read (a key of the wrong type, a registry member that is not a
/// queue name) is listed with the key and what it holds, the others as
/// usual, and the exit code is 1.
pub(crate) async fn queues(global: &Global) -> Result<(), CliError> {
    let url = global.url_or_default();
    let connector = connect(&url, global).await?;
    let listed = connector
        .read_queues(|name| {
            let connector = &connector;
            async move {
                let counts = connector
                    .queue::<Value>(name.as_str())?
                    .admin()
                    .counts()
                    .await?;
                Ok((name.to_string(), counts))
            }
        })
        .await?;
    let rows: Vec<QueueRow> = listed.into_iter().map(queue_row).collect();
    let broken: Vec<&str> = rows
        .iter()
        .filter(|row| row.error.is_some())
        .map(|row| row.queue.as_str())
        .collect();
    if global.json {
        out_json(&rows)?;
    } else if rows.is_empty() {
        out(&format!("no queues under prefix {}\n", global.prefix))?;
    } else {
        out(&queues_table(&rows))?;
    }
    if broken.is_empty() {
        return Ok(());
    }
    Err(CliError::refused(format!(
        "{} of {} queues could not be read: {}",
        broken.len(),
        rows.len(),
        broken.join(", ")
    )))
}

/// The row of one queue: its counts, or what keeps it from being read.
fn queue_row(listed: Result<(String, Counts), Unreadable>) -> QueueRow {
    match listed {
        Ok((queue, counts)) => QueueRow {
            queue,
            counts: Some(counts),
            error: None,
        },
        Err(unreadable) => QueueRow {
            queue: unreadable.queue,
            counts: None,
            error: Some(unreadable.problem.to_string()),
        },
    }
}

/// The table of `emq queues`: a row per readable queue, then a line per
/// queue that could not be read.
fn queues_table(rows: &[QueueRow]) -> String {
    let mut align = vec![Align::Left];
    align.extend(JobState::ALL.iter().map(|_| Align::Right));
    let mut table = Table::new(align);
    let mut header = vec!["queue".to_string()];
    header.extend(JobState::ALL.iter().map(|state| state.as_str().to_string()));
    header.push("paused".into());
    table.row(header);
    let mut notes = String::new();
    for row in rows {
        let Some(counts) = &row.counts else {
            let error = row.error.as_deref().unwrap_or_default();
            notes.push_str(&format!("queue {}: {}\n", row.queue, escape(error)));
            continue;
        };
        let mut cells = vec![row.queue.clone()];
        cells.extend(
            JobState::ALL
                .iter()
                .map(|state| counts.get(*state).to_string()),
        );
        cells.push(yes_no(counts.paused).into());
        table.row(cells);
    }
    format!("{}{notes}", table.render())
}

/// `emq jobs --json`.
#[derive(Debug, Serialize)]
struct Page {
    queue: String,
    state: &'static str,
    page: u64,
    per_page: u64,
    pages: u64,
    total: u64,
    jobs: Vec<ListedJob>,
}

/// One job of `emq jobs --json`.
#[derive(Debug, Serialize)]
struct ListedJob {
    id: String,
    state: &'static str,
    claims: u64,
    failures: u64,
    max_attempts: u64,
    priority: u64,
    created_at: Option<u64>,
    run_at: Option<u64>,
    finished_at: Option<u64>,
    error: Option<String>,
    payload: Value,
}

/// `emq jobs <queue> --state <s> [--page N] [--per-page M]`.
pub(crate) async fn jobs(args: &JobsArgs, global: &Global) -> Result<(), CliError> {
    let queue = open(&args.queue, global).await?;
    let offset = Paging::offset(args.page, args.per_page);
    let (records, total) = queue.jobs().list(args.state, offset, args.per_page).await?;
    let state = args.state.as_str();
    let paging = Paging {
        page: args.page,
        per_page: args.per_page,
        total,
    };
    if global.json {
        return out_json(&Page {
            queue: queue.name().to_string(),
            state,
            page: args.page,
            per_page: args.per_page,
            pages: paging.pages(),
            total,
            jobs: records.iter().map(listed).collect(),
        });
    }
    if paging.note_past_the_end(&format!("queue {}'s {state} jobs", queue.name())) {
        return Ok(());
    }
    if total == 0 {
        return out(&format!("queue {} has no {state} jobs\n", queue.name()));
    }
    let mut table = Table::new([Align::Left, Align::Left, Align::Right]);
    table.row(["id", "state", "failures", "created", "run_at", "error"]);
    for job in &records {
        table.row([
            escape(job.id.as_str()).into_owned(),
            job.state.to_string(),
            format!("{}/{}", job.failures, job.max_attempts),
            job.created_at.map_or_else(|| "-".into(), rfc3339),
            Field::RunAt.show(job.state, job.run_at.map_or_else(|| "-".into(), rfc3339)),
            Field::Error.show(
                job.state,
                job.error.as_deref().map_or_else(|| "-".into(), short_error),
            ),
        ]);
    }
    out(&format!("{table}{}", paging.footer("job", "jobs")))
}

fn listed(job: &JobRecord) -> ListedJob {
    ListedJob {
        id: job.id.to_string(),
        state: job.state.as_str(),
        claims: job.claims,
        failures: job.failures,
        max_attempts: job.max_attempts,
        priority: job.priority,
        created_at: job.created_at,
        run_at: job.run_at,
        finished_at: job.finished_at,
        error: job.error.clone(),
        payload: embed(&job.payload),
    }
}

/// An error on one line, its control characters escaped, cut to
/// [`ERROR_WIDTH`] characters.
fn short_error(error: &str) -> String {
    let line = error.split_whitespace().collect::<Vec<_>>().join(" ");
    let line = escape(&line).into_owned();
    if line.chars().count() <= ERROR_WIDTH {
        return line;
    }
    let cut: String = line.chars().take(ERROR_WIDTH - 1).collect();
    format!("{cut}…")
}

pub(crate) fn yes_no(flag: bool) -> &'static str {
    if flag { "yes" } else { "no" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_one_short_line() {
        assert_eq!(short_error("boom\n  at line 3"), "boom at line 3");
        let long = "x".repeat(100);
        let short = short_error(&long);
        assert_eq!(short.chars().count(), ERROR_WIDTH);
        assert!(short.ends_with('…'));
        assert_eq!(short_error("a\u{1b}[2J b"), "a\\x1b[2J b");
    }
}
