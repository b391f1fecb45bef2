//! [`Jobs`]: the verbs that reach into one job's row, from any process.

use crate::decode;
use crate::dispatch::Call;
use crate::error::{Error, Result};
use crate::job::JobRecord;
use crate::queue::{Queue, requeue_call};
use echomq_protocol::{JobId, Transition};
use std::time::SystemTime;

/// What `CANCEL` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The job was waiting (pending or scheduled) and is now cancelled.
    Cancelled,
    /// The job is running: its holder was asked to stop (the cancel flag is
    /// set and its id published on the queue's cancel channel).
    Requested,
}

/// Per-job verbs of a queue: `queue.jobs()`.
#[derive(Debug)]
pub struct Jobs<T> {
    queue: Queue<T>,
}

impl<T> Queue<T> {
    /// The per-job verbs of this queue.
    pub fn jobs(&self) -> Jobs<T> {
        Jobs {
            queue: self.clone(),
        }
    }
}

impl<T> Jobs<T> {
    /// Reads one job; `None` when absent.
    pub async fn get(&self, id: &JobId) -> Result<Option<JobRecord>> {
        self.queue.get(id).await
    }

    /// Cancels a job: a waiting one at once, a running one by asking its
    /// holder to stop (it lands in `cancelled` when its handler gives up; a
    /// handler that ignores the request and completes is allowed to).
    /// `BADSTATE` for a finished job, `NOJOB` for none.
    pub async fn cancel(&self, id: &JobId) -> Result<CancelOutcome> {
        let call = Call::new(Transition::Cancel, Some(id)).arg(id.as_str());
        match decode::text("CANCEL", self.queue.call(call).await?)?.as_str() {
            "cancelled" => Ok(CancelOutcome::Cancelled),
            "requested" => Ok(CancelOutcome::Requested),
            other => Err(Error::UnexpectedReply {
                transition: "CANCEL",
                detail: other.to_string(),
            }),
        }
    }

    /// Sends a scheduled or active job back to pending now. An active job's
    /// lease is voided: its holder's token stops fencing and the holder is
    /// told to stop. `BADSTATE` otherwise, `NOJOB` for none.
    pub async fn requeue(&self, id: &JobId) -> Result<()> {
        decode::ok("REQUEUE", self.queue.call(requeue_call(id)).await?)
    }

    /// Moves a scheduled job's run-at (the caller's clock). `BADSTATE` for
    /// a job in any other state, `NOJOB` for none.
    pub async fn reschedule(&self, id: &JobId, at: SystemTime) -> Result<()> {
        self.queue.reschedule(id, at).await
    }

    /// Deletes a job and its logs: `true` when it existed. An active job is
    /// refused (`BADSTATE active`) unless `force`.
    pub async fn remove(&self, id: &JobId, force: bool) -> Result<bool> {
        self.queue.remove(id, force).await
    }
}
