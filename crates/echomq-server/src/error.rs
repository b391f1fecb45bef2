//! [`ServerError`]: what went wrong locating, starting or stopping a server.
//!
//! `Display`, `Error` and `From<io::Error>` are written out here rather
//! than derived: the crate depends on the standard library only.

use std::error::Error;
use std::fmt;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use crate::LOG_FILE;

/// Errors from locating, starting and stopping a server. Each message says
/// what to do about it.
#[derive(Debug)]
pub enum ServerError {
    /// No usable server binary was found.
    NotFound {
        /// What was looked for, e.g. `"valkey-server"`.
        what: String,
        /// Where it was looked for.
        searched: String,
        /// What the user can do about it.
        hint: String,
    },
    /// The binary could not be run, or the server exited before it was ready.
    Spawn {
        /// The binary.
        path: PathBuf,
        /// What went wrong.
        reason: String,
        /// The last lines of `server.log` (may be empty).
        log_tail: String,
    },
    /// The server was started but did not answer `PING` in time (it was killed).
    NotReady {
        /// The binary.
        path: PathBuf,
        /// The port it was told to listen on.
        port: u16,
        /// The server's directory (holding `server.log`).
        dir: PathBuf,
        /// How long readiness was awaited.
        waited: Duration,
        /// The last lines of `server.log` (may be empty).
        log_tail: String,
    },
    /// An I/O error talking to the server or handling its files.
    Io(io::Error),
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerError::NotFound {
                what,
                searched,
                hint,
            } => write!(f, "{what} not found (looked at: {searched}); {hint}"),
            ServerError::Spawn {
                path,
                reason,
                log_tail,
            } => write!(
                f,
                "could not start {}: {reason}{}",
                path.display(),
                fmt_tail(log_tail)
            ),
            ServerError::NotReady {
                path,
                port,
                dir,
                waited,
                log_tail,
            } => write!(
                f,
                "{} on 127.0.0.1:{port} did not answer PING within {}s and was killed; \
                 check the log in {}{}",
                path.display(),
                waited.as_secs(),
                dir.display(),
                fmt_tail(log_tail)
            ),
            ServerError::Io(err) => write!(f, "server I/O error: {err}"),
        }
    }
}

impl Error for ServerError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            ServerError::Io(err) => Some(err),
            _ => None,
        }
    }
}

impl From<io::Error> for ServerError {
    fn from(err: io::Error) -> Self {
        ServerError::Io(err)
    }
}

fn fmt_tail(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!("\n--- tail of {LOG_FILE} ---\n{}", tail.trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_quote_the_log_tail_only_when_there_is_one() {
        let spawn = |log_tail: &str| ServerError::Spawn {
            path: PathBuf::from("/bin/valkey-server"),
            reason: "it exited".into(),
            log_tail: log_tail.into(),
        };
        assert_eq!(
            spawn("  \n").to_string(),
            "could not start /bin/valkey-server: it exited"
        );
        assert_eq!(
            spawn("bind: Address already in use\n").to_string(),
            "could not start /bin/valkey-server: it exited\n\
             --- tail of server.log ---\nbind: Address already in use"
        );
    }

    #[test]
    fn an_io_error_is_the_source() {
        let err = ServerError::from(io::Error::other("reset"));
        assert_eq!(err.to_string(), "server I/O error: reset");
        assert!(err.source().is_some());
    }
}
