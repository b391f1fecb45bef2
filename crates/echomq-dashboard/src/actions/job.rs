//! The actions on one job: `POST /queues/{queue}/jobs/{id}/act/{action}`
//! — cancel, requeue, promote, reprocess, remove (`force` for an active
//! job), update (the payload, checked as JSON first).

use super::{Fields, field};
use crate::action_map::{self, Place};
use crate::error::PageError;
use crate::state::App;
use echomq::{CancelOutcome, IfActive};
use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What a job action did.
#[derive(Debug)]
pub(super) struct Done {
    /// The notice to show.
    pub(super) notice: String,
    /// The job is no more: go back to its queue's page.
    pub(super) gone: bool,
}

impl Done {
    fn kept(notice: String) -> Self {
        Self {
            notice,
            gone: false,
        }
    }
}

/// Whether a form's flag field is set (`1`, `true`, `on`).
fn flag(fields: &Fields, name: &str) -> bool {
    field(fields, name).is_some_and(|v| matches!(v, "1" | "true" | "on"))
}

/// The payload of an update form, checked as JSON: the bytes to write, or
/// 400 naming the parse error.
pub(crate) fn checked_payload(fields: &Fields) -> Result<Vec<u8>, PageError> {
    let text = field(fields, "payload")
        .ok_or_else(|| PageError::BadInput("the form has no payload field".into()))?
        .trim();
    serde_json::from_str::<Value>(text)
        .map_err(|err| PageError::BadInput(format!("the payload is not JSON: {err}")))?;
    Ok(text.as_bytes().to_vec())
}

/// The `run_at` field (`YYYY-MM-DDTHH:MM[:SS]`, UTC) as a time, or 400.
fn run_at(fields: &Fields) -> Result<SystemTime, PageError> {
    let text = field(fields, "run_at").unwrap_or_default().trim();
    let at = ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"]
        .iter()
        .find_map(|format| chrono::NaiveDateTime::parse_from_str(text, format).ok())
        .ok_or_else(|| {
            PageError::BadInput(format!(
                "run_at {text:?} is not a date and time (YYYY-MM-DDTHH:MM[:SS], UTC)"
            ))
        })?;
    let ms = u64::try_from(at.and_utc().timestamp_millis())
        .map_err(|_| PageError::BadInput(format!("run_at {text:?} is before 1970")))?;
    Ok(UNIX_EPOCH + Duration::from_millis(ms))
}

fn ms_of(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
}

/// Runs job action `action` on job `id` of queue `name`.
pub(super) async fn act(
    app: &App,
    name: &str,
    id: &str,
    action: &str,
    fields: &Fields,
) -> Result<Done, PageError> {
    if action_map::find(Place::Job, action).is_none() {
        return Err(PageError::NotFound(format!(
            "no job action named {action:?}"
        )));
    }
    let queue = app.connector.queue::<Value>(name)?;
    let id = echomq::JobId::new(id.to_string())?;
    let jobs = queue.jobs();
    let notice = match action {
        "cancel" => match jobs.cancel(&id).await? {
            CancelOutcome::Cancelled => format!("cancelled job {id}"),
            CancelOutcome::Requested => format!("asked the holder of job {id} to stop"),
        },
        "requeue" => {
            jobs.requeue(&id).await?;
            format!("job {id} is pending now")
        }
        "promote" => {
            jobs.requeue(&id).await?;
            format!("promoted job {id}: pending now")
        }
        "reschedule" => {
            let at = run_at(fields)?;
            jobs.reschedule(&id, at).await?;
            format!("job {id} runs at {} UTC", crate::layout::time(ms_of(at)))
        }
        "reprocess" => {
            jobs.reprocess(&id).await?;
            format!("job {id} is pending again")
        }
        "update" => {
            let payload = checked_payload(fields)?;
            jobs.update_raw(&id, payload).await?;
            format!("updated the payload of job {id}")
        }
        "remove" => {
            let active = if flag(fields, "force") {
                IfActive::Force
            } else {
                IfActive::Refuse
            };
            if !jobs.remove(&id, active).await? {
                return Err(PageError::NotFound(format!("no job {id} in queue {name}")));
            }
            return Ok(Done {
                notice: format!("removed job {id}"),
                gone: true,
            });
        }
        _ => {
            return Err(PageError::NotFound(format!(
                "no job action named {action:?}"
            )));
        }
    };
    Ok(Done::kept(notice))
}

/// The job actions this handler runs: every job action of the table.
#[cfg(test)]
const HANDLED: [&str; 7] = [
    "cancel",
    "requeue",
    "promote",
    "reschedule",
    "reprocess",
    "update",
    "remove",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_job_action_of_the_table_is_handled() {
        let table: Vec<&str> = action_map::ACTIONS
            .iter()
            .filter(|a| a.place == Place::Job)
            .map(|a| a.verb)
            .collect();
        let mut handled = HANDLED.to_vec();
        handled.sort_unstable();
        let mut sorted = table.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, handled);
    }

    #[test]
    fn a_payload_is_checked_as_json() {
        let fields = |v: &str| vec![("payload".to_string(), v.to_string())];
        assert_eq!(
            checked_payload(&fields(" {\"a\": 1}\n")).unwrap(),
            b"{\"a\": 1}"
        );
        let err = checked_payload(&fields("{nope")).unwrap_err();
        assert!(matches!(err, PageError::BadInput(m) if m.contains("not JSON")));
        assert!(checked_payload(&vec![]).is_err());
    }

    #[test]
    fn a_run_at_is_read_as_utc() {
        let fields = |v: &str| vec![("run_at".to_string(), v.to_string())];
        let at = run_at(&fields("2026-12-02T07:23:02")).unwrap();
        assert_eq!(ms_of(at), 1_796_196_182_000);
        assert_eq!(
            ms_of(run_at(&fields("2026-12-02T07:23")).unwrap()),
            1_796_196_180_000
        );
        assert!(matches!(
            run_at(&fields("soon")),
            Err(PageError::BadInput(_))
        ));
    }
}
