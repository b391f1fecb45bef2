//! `emq job <queue> <id> [--logs N]`: every field of one job (`-` where a
//! field does not apply to its state: `super::stale`), its dependencies
//! and dependents when it has any (`super::job_edges`), and the newest N
//! lines of its log (10 unless given; 0 shows none).

use super::job_edges::{Edges, EdgesJson};
use super::stale::Field;
use super::{job_id, no_job, open, out, out_json};
use crate::cli::{Global, JobArgs};
use crate::error::CliError;
use crate::table::{Align, Table};
use crate::terminal::escape;
use echomq::JobRecord;
use serde::Serialize;
use serde_json::Value;

pub(crate) async fn run(args: &JobArgs, global: &Global) -> Result<(), CliError> {
    let id = job_id(&args.id)?;
    let queue = open(&args.queue, global).await?;
    let Some(record) = queue.jobs().get(&id).await? else {
        return Err(CliError::not_found(no_job(&queue, &id)));
    };
    // The newest `--logs` lines; 0 reads none.
    let log = if record.logs > 0 {
        queue.jobs().logs(&id, args.logs).await?
    } else {
        Vec::new()
    };
    let edges = Edges::read(&queue.jobs(), &record).await?;
    if global.json {
        return out_json(&to_json(&record, edges.json(), log));
    }
    let mut table = Table::new([Align::Left, Align::Left]);
    for (field, value) in rows(&record) {
        // One line per field: a value's own line breaks shown as `\n`.
        table.row([field.to_string(), escape(&value).into_owned()]);
    }
    let mut text = table.render();
    text.push_str(&edges.text());
    if !log.is_empty() {
        text.push_str(&format!("log (newest {} of {}):\n", log.len(), record.logs));
        for line in &log {
            text.push_str(&format!("  {}\n", escape(line)));
        }
    }
    out(&text)
}

/// The record's fields in the protocol's order, as text; `-` for a field
/// that does not apply to the job's state ([`Field`]).
fn rows(job: &JobRecord) -> Vec<(&'static str, String)> {
    let text = |value: &Option<String>| value.clone().unwrap_or_else(|| "-".into());
    let only = |field: Field, value: String| field.show(job.state, value);
    vec![
        ("id", job.id.to_string()),
        ("state", job.state.to_string()),
        ("payload", job.payload.clone()),
        ("priority", job.priority.to_string()),
        ("max_attempts", job.max_attempts.to_string()),
        ("claims", job.claims.to_string()),
        ("failures", job.failures.to_string()),
        ("stalls", job.stalls.to_string()),
        ("created_at", timestamp(job.created_at)),
        ("run_at", only(Field::RunAt, timestamp(job.run_at))),
        (
            "claimed_at",
            only(Field::Attempt, timestamp(job.claimed_at)),
        ),
        (
            "finished_at",
            only(Field::FinishedAt, timestamp(job.finished_at)),
        ),
        ("worker", only(Field::Attempt, text(&job.worker))),
        ("progress", only(Field::Attempt, text(&job.progress))),
        ("result", only(Field::Result, text(&job.result))),
        ("error", only(Field::Error, text(&job.error))),
        (
            "cancel_requested",
            only(
                Field::CancelRequested,
                if job.cancel_requested { "yes" } else { "no" }.into(),
            ),
        ),
        ("repeat", text(&job.repeat)),
        ("dedup", text(&job.dedup)),
        (
            "dedup_mode",
            job.dedup_mode
                .map_or_else(|| "-".into(), |mode| mode.to_string()),
        ),
        ("group", text(&job.group)),
        (
            "time_limit",
            job.time_limit
                .map_or_else(|| "-".into(), echomq::protocol::time_limit::shown),
        ),
        ("start_by", timestamp(job.start_by)),
        ("reason", text(&job.reason)),
        ("lifo", if job.lifo { "yes" } else { "no" }.into()),
        ("flow", text(&job.flow)),
        ("ref", text(&job.flow_ref)),
        ("on_failure", text(&on_failure(job).map(str::to_string))),
        ("deps", count(job.deps)),
        ("deps_left", count(job.deps_left)),
        ("dependents", count(job.dependents)),
        ("logs", job.logs.to_string()),
    ]
}

/// A flow job's failure policy; none for a job outside any flow.
fn on_failure(job: &JobRecord) -> Option<&'static str> {
    (job.flow.is_some() || job.deps.is_some()).then(|| job.on_failure.as_str())
}

/// A count the job may not have, `-` then.
fn count(value: Option<u64>) -> String {
    value.map_or_else(|| "-".into(), |n| n.to_string())
}

/// The record as a JSON object (`--json`), fields in the protocol's order.
#[derive(Debug, Serialize)]
struct JobJson<'a> {
    id: &'a str,
    state: &'a str,
    payload: Value,
    priority: u64,
    max_attempts: u64,
    claims: u64,
    failures: u64,
    stalls: u64,
    created_at: Option<u64>,
    run_at: Option<u64>,
    claimed_at: Option<u64>,
    finished_at: Option<u64>,
    worker: Option<&'a str>,
    progress: Option<Value>,
    result: Option<Value>,
    error: Option<&'a str>,
    cancel_requested: bool,
    repeat: Option<&'a str>,
    dedup: Option<&'a str>,
    dedup_mode: Option<&'static str>,
    group: Option<&'a str>,
    /// Ms a run may last.
    time_limit: Option<u64>,
    /// Ms (unix, server clock) after which the job is never claimed.
    start_by: Option<u64>,
    /// Why the queue cancelled it (`expired`).
    reason: Option<&'a str>,
    /// Whether it was enqueued LIFO.
    lifo: bool,
    /// The flow it was added in.
    flow: Option<&'a str>,
    /// Its name in that flow.
    #[serde(rename = "ref")]
    flow_ref: Option<&'a str>,
    /// What it does when a dependency fails (a flow job's only).
    on_failure: Option<&'static str>,
    /// Its dependencies, how many are still unresolved, its dependents.
    deps: Option<u64>,
    deps_left: Option<u64>,
    dependents: Option<u64>,
    /// Each dependency with its edge, each dependent with whether it was
    /// told (empty lists for a job outside any flow).
    edges: EdgesJson,
    logs: u64,
    /// The newest log lines, oldest first.
    log: Vec<String>,
}

/// Payload, progress and result are embedded as JSON when they parse as
/// JSON, as strings otherwise.
fn to_json(job: &JobRecord, edges: EdgesJson, log: Vec<String>) -> JobJson<'_> {
    JobJson {
        id: job.id.as_str(),
        state: job.state.as_str(),
        payload: embed(&job.payload),
        priority: job.priority,
        max_attempts: job.max_attempts,
        claims: job.claims,
        failures: job.failures,
        stalls: job.stalls,
        created_at: job.created_at,
        run_at: job.run_at,
        claimed_at: job.claimed_at,
        finished_at: job.finished_at,
        worker: job.worker.as_deref(),
        progress: job.progress.as_deref().map(embed),
        result: job.result.as_deref().map(embed),
        error: job.error.as_deref(),
        cancel_requested: job.cancel_requested,
        repeat: job.repeat.as_deref(),
        dedup: job.dedup.as_deref(),
        dedup_mode: job.dedup_mode.map(|mode| mode.as_str()),
        group: job.group.as_deref(),
        time_limit: job.time_limit,
        start_by: job.start_by,
        reason: job.reason.as_deref(),
        lifo: job.lifo,
        flow: job.flow.as_deref(),
        flow_ref: job.flow_ref.as_deref(),
        on_failure: on_failure(job),
        deps: job.deps,
        deps_left: job.deps_left,
        dependents: job.dependents,
        edges,
        logs: job.logs,
        log,
    }
}

/// Stored text as JSON when it parses as JSON, as a string otherwise.
pub(crate) fn embed(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.into()))
}

/// `1712345678901 (2024-04-05 19:34:38.901 UTC)`, or `-`.
fn timestamp(ms: Option<u64>) -> String {
    match ms {
        Some(ms) => format!("{ms} ({})", utc(ms)),
        None => "-".into(),
    }
}

/// Unix milliseconds as a UTC date and time.
fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:03} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// Days since 1970-01-01 to (year, month, day) (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00:00.000 UTC");
        assert_eq!(utc(951_782_400_123), "2000-02-29 00:00:00.123 UTC");
        assert_eq!(utc(1_712_345_678_901), "2024-04-05 19:34:38.901 UTC");
    }
}
