//! What the clients saw: the enqueues acknowledged to the producers, and
//! every run of a handler with the token of its claim.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// One run of a handler: the job, the token of the claim it ran under,
/// and who ran it.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    pub(crate) id: String,
    pub(crate) token: u64,
    pub(crate) by: Runner,
}

/// Who ran a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runner {
    /// A library worker: its result names the run by its number.
    Library,
    /// An `emq worker --exec` command: its result names the run by its
    /// token (`{"exec_token": …}`), its record joins the ledger at the end.
    Exec,
}

/// The clients' side of the run, shared by producers and workers.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    acknowledged: Mutex<Vec<String>>,
    refused: AtomicU64,
    runs: Mutex<Vec<Run>>,
}

impl Ledger {
    /// The enqueue of `id` was acknowledged (at the run's level).
    pub(crate) fn acknowledged(&self, id: String) {
        self.acknowledged.lock().unwrap().push(id);
    }

    /// An enqueue failed (`NotDurable`, I/O): not acknowledged; the
    /// producer sends it again with the same id.
    pub(crate) fn refused(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    /// A handler runs `id` under `token`; returns the run's number, which
    /// the handler stores as the job's result so that the server's record
    /// names the run whose completion it accepted.
    pub(crate) fn ran(&self, id: String, token: u64) -> usize {
        let mut runs = self.runs.lock().unwrap();
        runs.push(Run {
            id,
            token,
            by: Runner::Library,
        });
        runs.len() - 1
    }

    /// An `emq worker --exec` command ran `id` under `token`.
    pub(crate) fn exec_ran(&self, id: String, token: u64) {
        self.runs.lock().unwrap().push(Run {
            id,
            token,
            by: Runner::Exec,
        });
    }

    /// The acknowledged ids, the failed enqueue attempts and the runs.
    pub(crate) fn snapshot(&self) -> (Vec<String>, u64, Vec<Run>) {
        (
            self.acknowledged.lock().unwrap().clone(),
            self.refused.load(Ordering::Relaxed),
            self.runs.lock().unwrap().clone(),
        )
    }
}
