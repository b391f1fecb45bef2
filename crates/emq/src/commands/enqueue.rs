//! `emq enqueue <queue> <json>`: one job, idempotent with `--id`; scheduled
//! with `--in` (server clock) or `--at` (an instant); deduplicated by
//! `--dedup KEY` (with `--dedup-for` or `--debounce`); each run limited
//! by `--time-limit`; never started after `--start-by` or
//! `--start-within`; with `--wait`, its outcome waited for and printed
//! (`super::wait`).

use super::{connect, json_arg, out, out_json, queue_name, wait};
use crate::cli::{EnqueueArgs, Global};
use crate::error::CliError;
use crate::time::{format_duration, now_ms, rfc3339, unix_ms};
use echomq::{EnqueueOutcome, JobState, NewJob};
use serde_json::{Map, Value, json};

pub(crate) async fn run(args: &EnqueueArgs, global: &Global) -> Result<(), CliError> {
    let name = queue_name(&args.queue)?;
    let payload = json_arg("<json>", &args.payload)?;
    let mut job = NewJob::new(payload)
        .priority(args.priority)
        .attempts(args.attempts);
    if let Some(id) = &args.id {
        job = job
            .id(id.as_str())
            .map_err(|err| CliError::usage(err.to_string()))?;
    }
    // What the run-at should be, on the host clock (only for the output when
    // the server's own record cannot be read back).
    let mut expected = None;
    if let Some(delay) = args.delay {
        job = job.after(delay);
        expected = Some(now_ms().saturating_add(delay.as_millis() as u64));
    }
    if let Some(at) = args.at {
        job = job.at(at);
        expected = Some(unix_ms(at));
    }
    if let Some(key) = &args.dedup {
        echomq::protocol::dedup::check_key(key)
            .map_err(|reason| CliError::usage(format!("--dedup {key:?}: {reason}")))?;
        job = job.dedup(key.as_str());
    }
    if let Some(period) = args.dedup_for {
        job = job.dedup_for(period);
    }
    if let Some(wait) = args.debounce {
        job = job.debounce(wait);
        expected = Some(now_ms().saturating_add(wait.as_millis() as u64));
    }
    if let Some(group) = &args.group {
        echomq::protocol::GroupName::new(group.as_str())
            .map_err(|err| CliError::usage(format!("--group: {err}")))?;
        job = job.group(group.as_str());
    }
    if let Some(limit) = args.time_limit {
        if limit.as_millis() == 0 {
            return Err(CliError::usage(format!(
                "--time-limit {}: a time limit is at least 1ms",
                format_duration(limit)
            )));
        }
        job = job.time_limit(limit);
    }
    if args.lifo {
        job = job.lifo();
    }
    if let Some(deadline) = args.start_by {
        if deadline <= std::time::SystemTime::now() {
            return Err(CliError::usage(format!(
                "--start-by {}: a start-by deadline is later than now",
                rfc3339(unix_ms(deadline))
            )));
        }
        job = job.start_by(deadline);
    }
    if let Some(within) = args.start_within {
        if within.as_millis() == 0 {
            return Err(CliError::usage(format!(
                "--start-within {}: a start-by deadline is at least 1ms from now",
                format_duration(within)
            )));
        }
        job = job.start_within(within);
    }
    if args.wait {
        // Its wait is registered at the enqueue: no read of the job.
        job = job.awaited();
    }
    let url = global.url_or_default();
    let queue = connect(&url, global).await?.queue::<Value>(name.as_str())?;
    let enqueued = queue.enqueue(job).await?;
    // A new scheduled job, or a debounced one: read back the run-at the
    // server stored (counted on its clock). A run-at already due left it
    // pending.
    let mut scheduled = None;
    let moved = matches!(
        enqueued.effect,
        EnqueueOutcome::Created | EnqueueOutcome::Debounced
    );
    if moved && expected.is_some() {
        scheduled = match queue.jobs().get(&enqueued.id).await? {
            Some(record) if record.state == JobState::Scheduled => record.run_at.or(expected),
            Some(_) => None,
            None => expected,
        };
    }
    let mut fields = Map::new();
    fields.insert("id".into(), json!(enqueued.id.as_str()));
    fields.insert("created".into(), json!(enqueued.created));
    fields.insert("effect".into(), json!(enqueued.effect.as_str()));
    if let Some(key) = &args.dedup {
        fields.insert("dedup".into(), json!(key));
    }
    if expected.is_some() && moved {
        fields.insert("scheduled".into(), Value::Bool(scheduled.is_some()));
        fields.insert("run_at".into(), json!(scheduled));
        fields.insert("run_at_utc".into(), json!(scheduled.map(rfc3339)));
    }
    if args.wait {
        let waited = enqueued.outcome(args.wait_timeout).await;
        return wait::finish(
            &queue,
            &enqueued.id,
            waited,
            args.wait_timeout,
            &fields,
            global.json,
        );
    }
    if global.json {
        return out_json(&fields);
    }
    let key = args.dedup.as_deref().unwrap_or_default();
    let id = &enqueued.id;
    let line = match (enqueued.effect, scheduled) {
        (EnqueueOutcome::Existed, _) => format!("job {id} exists already: nothing enqueued"),
        (EnqueueOutcome::Deduplicated, _) => format!("deduplicated: job {id} holds {key}"),
        (EnqueueOutcome::Debounced, Some(at)) => {
            format!("debounced: job {id} holds {key}, runs at {}", rfc3339(at))
        }
        (EnqueueOutcome::Debounced, None) => format!("debounced: job {id} holds {key}"),
        (EnqueueOutcome::Created, Some(at)) => format!("scheduled job {id} at {}", rfc3339(at)),
        (EnqueueOutcome::Created, None) if expected.is_some() => {
            format!("enqueued job {id} (its run-at had already passed)")
        }
        (EnqueueOutcome::Created, None) => format!("enqueued job {id}"),
    };
    out(&format!("{line}\n"))
}
