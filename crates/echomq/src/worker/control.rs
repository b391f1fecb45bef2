//! The runtime's hold on each running job: its cancellation token, why it
//! fired, and whether the lease was lost (after which nothing more is
//! written for the job).

use echomq_protocol::JobId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use tokio_util::sync::CancellationToken;

/// Why a running job's cancellation token fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelReason {
    /// Someone asked (`Jobs::cancel`, or the lease was voided by a requeue
    /// or a forced remove). A handler that gives up lands the job in
    /// `cancelled`; one that completes anyway may.
    Requested,
    /// A lease checkpoint answered `NOTACTIVE`: the job was taken back.
    /// The runtime writes nothing more for it.
    LeaseLost,
    /// The worker is shutting down past its deadline: the job goes back to
    /// pending for another worker.
    Shutdown,
    /// The run reached the job's time limit
    /// ([`NewJob::time_limit`](crate::NewJob::time_limit)), by the worker's
    /// timer or because a lease checkpoint answered `TIMELIMIT`: the
    /// attempt fails with the error `time limit <d> exceeded` and is
    /// retried under the job's attempts and the worker's backoff.
    TimeLimit,
}

/// One running job.
#[derive(Debug)]
pub(crate) struct JobControl {
    pub id: JobId,
    pub token: u64,
    pub cancel: CancellationToken,
    reason: OnceLock<CancelReason>,
    lost: AtomicBool,
}

impl JobControl {
    pub(crate) fn new(id: JobId, token: u64) -> Self {
        Self {
            id,
            token,
            cancel: CancellationToken::new(),
            reason: OnceLock::new(),
            lost: AtomicBool::new(false),
        }
    }

    /// Fires the token; the first reason is the one reported, but a lost
    /// lease is always remembered.
    pub(crate) fn fire(&self, reason: CancelReason) {
        if reason == CancelReason::LeaseLost {
            self.lost.store(true, Ordering::Relaxed);
        }
        let _ = self.reason.set(reason);
        self.cancel.cancel();
    }

    pub(crate) fn reason(&self) -> Option<CancelReason> {
        self.reason.get().copied()
    }

    pub(crate) fn lease_lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed)
    }
}

/// Every running job of one worker, by id.
#[derive(Debug, Clone, Default)]
pub(crate) struct Registry(Arc<Mutex<HashMap<JobId, Arc<JobControl>>>>);

impl Registry {
    pub(super) fn insert(&self, control: Arc<JobControl>) {
        self.0
            .lock()
            .expect("registry lock")
            .insert(control.id.clone(), control);
    }

    pub(super) fn remove(&self, id: &JobId) {
        self.0.lock().expect("registry lock").remove(id);
    }

    pub(super) fn get(&self, id: &str) -> Option<Arc<JobControl>> {
        let id = JobId::new(id).ok()?;
        self.0.lock().expect("registry lock").get(&id).cloned()
    }

    pub(super) fn all(&self) -> Vec<Arc<JobControl>> {
        self.0
            .lock()
            .expect("registry lock")
            .values()
            .cloned()
            .collect()
    }
}
