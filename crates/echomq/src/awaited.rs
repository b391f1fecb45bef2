//! Jobs enqueued for a wait ([`NewJob::awaited`]): the enqueue says
//! `WAITED`, so the server marks each job it creates, and the job's wait,
//! registered as the reply comes, reads nothing on the server
//! (docs/protocol.md, "Marked at the enqueue"; docs/outcomes.md).

use crate::NewJob;
use crate::job::Enqueued;
use crate::transport::outcome_channel::{EarlyWaits, QueueWaits, Ticket};
use std::sync::{Arc, Mutex};

impl<T> NewJob<T> {
    /// Says the caller will wait for the job's outcome
    /// ([`Enqueued::outcome`]): the enqueue first makes sure the queue's
    /// outcome subscription is open, then sends `WAITED`, and the server
    /// marks the job as it creates it. The wait then costs the server no
    /// read of the job, where a wait begun later ([`crate::Queue::outcome`])
    /// costs one. A job that was not created (its id existed, its dedup key
    /// was held) is read once, as for any wait. Bulk enqueues keep such
    /// jobs in bulk calls.
    ///
    /// ```
    /// use echomq::NewJob;
    /// let job = NewJob::new("render the report").awaited();
    /// ```
    pub fn awaited(mut self) -> Self {
        self.awaited = true;
        self
    }

    /// `WAITED` as a protocol argument when the job is awaited.
    pub(crate) fn waited_args(&self) -> Vec<Vec<u8>> {
        if self.awaited {
            vec![b"WAITED".to_vec()]
        } else {
            Vec::new()
        }
    }
}

/// The wait registered at an awaited job's enqueue, until
/// [`Enqueued::outcome`] takes it; dropped untaken, it is forgotten.
pub(crate) struct EarlyTicket {
    waits: Arc<QueueWaits>,
    ticket: Mutex<Option<Ticket>>,
}

impl EarlyTicket {
    /// Registers the wait of `enqueued`, begun by `early`: trusted to the
    /// channel when the enqueue created the job (and marked it), else read.
    pub(crate) fn register(early: &EarlyWaits, enqueued: &Enqueued) -> Arc<Self> {
        let (waits, ticket) = if enqueued.created {
            early.register(&enqueued.id)
        } else {
            early.register_read(&enqueued.id)
        };
        Arc::new(Self {
            waits,
            ticket: Mutex::new(Some(ticket)),
        })
    }

    /// The wait, the first time it is asked for.
    pub(crate) fn take(&self) -> Option<(Arc<QueueWaits>, Ticket)> {
        let ticket = self
            .ticket
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()?;
        Some((self.waits.clone(), ticket))
    }
}

impl Drop for EarlyTicket {
    fn drop(&mut self) {
        if let Some(ticket) = self.take() {
            self.waits.forget_key(ticket.1.key());
        }
    }
}
