//! LIFO jobs (docs/protocol.md, "Time limits, start-by deadlines, LIFO and
//! retention by age"): [`NewJob::lifo`].

use crate::NewJob;

impl<T> NewJob<T> {
    /// Claims the job before every job of its priority that waits, the
    /// newest LIFO job first (`LIFO`): on a queue with groups, inside its
    /// group's lane. It keeps its place at the front each time it enters
    /// pending again (a retry, a requeue). Such a job goes as its own
    /// `ENQUEUE`/`SCHEDULE`, not in a bulk call.
    ///
    /// ```
    /// use echomq::NewJob;
    /// let job = NewJob::new("newest first").lifo();
    /// ```
    pub fn lifo(mut self) -> Self {
        self.lifo = true;
        self
    }

    /// `LIFO` as a protocol argument when the job is LIFO.
    pub(crate) fn lifo_args(&self) -> Vec<Vec<u8>> {
        if self.lifo {
            vec![b"LIFO".to_vec()]
        } else {
            Vec::new()
        }
    }
}
