//! The bulk verbs (`POST /queues/{queue}/act/bulk`): reprocess, cancel,
//! remove or promote the selected jobs (`id`, repeated), or with `all=1`
//! every job of `state` matching the search `by`/`q` (the whole state
//! without one, and behind the queue's name typed again), walked with a
//! cursor [`SEARCH_BATCH`] entries at a time.

use crate::actions::{Fields, all, field};
use crate::error::PageError;
use crate::selection::{parse_match, parse_state};
use echomq::{JobId, JobMatch, JobState, Jobs, Queue, SEARCH_BATCH};
use futures_util::future::join_all;
use serde_json::Value;

/// Jobs one bulk action on everything matching acts on at most; past it,
/// the notice says to run it again.
const BULK_MOST: u64 = 10_000;

/// A bulk verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verb {
    Reprocess,
    Cancel,
    Remove,
    Promote,
}

impl Verb {
    fn parse(text: Option<&str>) -> Result<Self, PageError> {
        match text {
            Some("reprocess") => Ok(Verb::Reprocess),
            Some("cancel") => Ok(Verb::Cancel),
            Some("remove") => Ok(Verb::Remove),
            Some("promote") => Ok(Verb::Promote),
            other => Err(PageError::BadInput(format!(
                "verb: {:?} is none of reprocess, cancel, remove, promote",
                other.unwrap_or("")
            ))),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Verb::Reprocess => "reprocess",
            Verb::Cancel => "cancel",
            Verb::Remove => "remove",
            Verb::Promote => "promote",
        }
    }
}

/// What a bulk action did.
#[derive(Debug, Default)]
struct Tally {
    done: u64,
    refused: u64,
    /// The first refusal's protocol line (`BADSTATE pending`).
    reason: Option<String>,
    /// Stopped at [`BULK_MOST`] with more to walk.
    stopped: bool,
}

impl Tally {
    fn add(&mut self, outcome: Result<(), String>) {
        match outcome {
            Ok(()) => self.done += 1,
            Err(line) => {
                self.refused += 1;
                self.reason.get_or_insert(line);
            }
        }
    }

    fn notice(&self, verb: Verb) -> String {
        let mut notice = format!(
            "{}: {} done, {} refused",
            verb.name(),
            self.done,
            self.refused
        );
        if let Some(reason) = &self.reason {
            notice.push_str(&format!(" ({reason})"));
        }
        if self.stopped {
            notice.push_str(&format!(
                "; stopped after {BULK_MOST} jobs: run it again for the rest"
            ));
        }
        notice
    }
}

/// Runs the bulk action the form describes; the notice to show.
pub(super) async fn run(queue: &Queue<Value>, fields: &Fields) -> Result<String, PageError> {
    let verb = Verb::parse(field(fields, "verb"))?;
    let jobs = queue.jobs();
    let mut tally = Tally::default();
    if field(fields, "all") == Some("1") {
        super::confirmed(queue.name().as_str(), fields)?;
        let state = parse_state(field(fields, "state"))?;
        let matching =
            parse_match(field(fields, "by"), field(fields, "q"))?.unwrap_or(JobMatch::All);
        let mut cursor = 0;
        loop {
            let page = jobs
                .search(
                    state,
                    &matching,
                    cursor,
                    SEARCH_BATCH as usize,
                    SEARCH_BATCH,
                )
                .await?;
            let outcomes = join_all(
                page.jobs
                    .iter()
                    .map(|job| apply(&jobs, verb, &job.id, Some(job.state))),
            )
            .await;
            for outcome in outcomes {
                tally.add(outcome?);
            }
            if page.cursor == 0 {
                break;
            }
            if tally.done + tally.refused >= BULK_MOST {
                tally.stopped = true;
                break;
            }
            cursor = page.cursor;
        }
    } else {
        let ids = all(fields, "id")
            .map(|id| JobId::new(id.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        if ids.is_empty() {
            return Err(PageError::BadInput(
                "id: select at least one job, or act on everything matching".into(),
            ));
        }
        let outcomes = join_all(ids.iter().map(|id| apply(&jobs, verb, id, None))).await;
        for outcome in outcomes {
            tally.add(outcome?);
        }
    }
    Ok(tally.notice(verb))
}

/// Applies `verb` to job `id` (in state `known`, when the walk read it):
/// `Ok(Err(line))` when the protocol refused it, with its reason.
async fn apply(
    jobs: &Jobs<Value>,
    verb: Verb,
    id: &JobId,
    known: Option<JobState>,
) -> Result<Result<(), String>, PageError> {
    let done = match verb {
        Verb::Reprocess => jobs.reprocess(id).await,
        Verb::Cancel => jobs.cancel(id).await.map(|_| ()),
        Verb::Remove => match jobs.remove(id, echomq::IfActive::Refuse).await {
            Ok(true) => Ok(()),
            Ok(false) => return Ok(Err("NOJOB".into())),
            Err(err) => Err(err),
        },
        Verb::Promote => {
            // Promote is scheduled → pending now; requeue would also take an
            // active job, which is not what promote means.
            let state = match known {
                Some(state) => Some(state),
                None => jobs.get(id).await?.map(|job| job.state),
            };
            match state {
                None => return Ok(Err("NOJOB".into())),
                Some(JobState::Scheduled) => jobs.requeue(id).await,
                Some(other) => return Ok(Err(format!("BADSTATE {}", other.as_str()))),
            }
        }
    };
    match done {
        Ok(()) => Ok(Ok(())),
        Err(echomq::Error::Refused(refused)) => Ok(Err(refused.reason.line())),
        Err(err) => Err(err.into()),
    }
}
