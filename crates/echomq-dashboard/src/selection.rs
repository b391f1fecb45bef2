//! Which jobs a queue page's query or a bulk form selects: a state and a
//! search (`by`, `q`), read and written in the words both use. The queue
//! page (`pages/queue.rs`) and the bulk verbs (`actions/queue/bulk.rs`)
//! import it; it imports neither.

use crate::error::PageError;
use echomq::{JobMatch, JobState};

/// The state named `text` (pending when none); 400 for a bad name.
pub(crate) fn parse_state(text: Option<&str>) -> Result<JobState, PageError> {
    match text {
        None | Some("") => Ok(JobState::Pending),
        Some(text) => text
            .parse::<JobState>()
            .map_err(|_| PageError::BadInput(format!("no state named {text:?}"))),
    }
}

/// The search `by` and `q` describe: `None` without a text; 400 for a bad
/// `by`.
pub(crate) fn parse_match(
    by: Option<&str>,
    q: Option<&str>,
) -> Result<Option<JobMatch>, PageError> {
    let Some(q) = q.filter(|q| !q.is_empty()) else {
        return Ok(None);
    };
    let q = q.to_string();
    match by.unwrap_or("id") {
        "id" => Ok(Some(JobMatch::IdPrefix(q))),
        "payload" => Ok(Some(JobMatch::Payload(q))),
        "error" => Ok(Some(JobMatch::Error(q))),
        other => Err(PageError::BadInput(format!(
            "no search by {other:?}: by id, payload or error"
        ))),
    }
}

/// The `by` of a search, as the form names it.
pub(crate) fn by_name(matching: &JobMatch) -> &'static str {
    match matching {
        JobMatch::Payload(_) => "payload",
        JobMatch::Error(_) => "error",
        JobMatch::All | JobMatch::IdPrefix(_) => "id",
    }
}
