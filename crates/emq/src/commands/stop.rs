//! Ctrl-C (SIGINT) and SIGTERM, the signals that stop the long-running
//! commands (`server`, `worker`, `watch`) cleanly.

use crate::error::CliError;

/// The stop signals, listened for from [`StopSignal::register`] on: a
/// signal that arrives before the first [`StopSignal::recv`] is not lost
/// (and does not kill the process).
#[derive(Debug)]
pub(crate) struct StopSignal {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl StopSignal {
    /// Starts listening for SIGINT and SIGTERM.
    pub(crate) fn register() -> Result<Self, CliError> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Self {})
        }
    }

    /// Waits for the next stop signal (cancel-safe).
    pub(crate) async fn recv(&mut self) {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => {}
                _ = self.terminate.recv() => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
