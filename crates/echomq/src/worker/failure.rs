//! A worker the server's ACL refuses stops, keeping the error: no retry
//! mends a user that may not use the queue, so retrying for ever would
//! only hide it.

use crate::error::Error;
use std::sync::{Arc, OnceLock};
use tokio_util::sync::CancellationToken;

/// The error that stopped a worker, shared by its tasks.
#[derive(Clone)]
pub(crate) struct Failure {
    error: Arc<OnceLock<Arc<Error>>>,
    stop: CancellationToken,
}

impl Failure {
    /// A failure that stops the worker by cancelling `stop`.
    pub(super) fn new(stop: CancellationToken) -> Self {
        Self {
            error: Arc::default(),
            stop,
        }
    }

    /// `Ok(())` when `err` ends the worker — the server's ACL refused its
    /// user ([`Error::NotPermitted`]): it is kept (the first one), logged,
    /// and the worker stops. Any other error comes back for the caller to
    /// retry.
    pub(super) fn ends(&self, err: Error) -> Result<(), Error> {
        if !matches!(err, Error::NotPermitted { .. }) {
            return Err(err);
        }
        if self.error.set(Arc::new(err)).is_ok()
            && let Some(err) = self.error.get()
        {
            tracing::error!(error = %err, "the worker stops: the server's ACL refuses it the queue");
        }
        self.stop.cancel();
        Ok(())
    }

    /// The error that stopped the worker, if one did.
    pub(super) fn error(&self) -> Option<Arc<Error>> {
        self.error.get().cloned()
    }
}
