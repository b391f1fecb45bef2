//! The CLI's error: a one-line cause and the exit code it maps to.
//!
//! Exit codes: `0` done; `1` a refused transition, a missing job, or a
//! queue `emq queues` could not read; `2` a usage error (bad argument, bad
//! name) or a connection/server error.

use std::fmt;

/// Exit code of a refused transition, a missing job, or a queue `emq
/// queues` could not read.
pub const EXIT_REFUSED: u8 = 1;
/// Exit code of a usage or connection error.
pub const EXIT_USAGE: u8 = 2;
/// What a "cannot reach" error adds: how to get a server to talk to.
pub const UNREACHABLE_HINT: &str = "; start one with `emq server` (it listens on \
    redis://127.0.0.1:6379), or point --url / EMQ_URL at a running server";

/// Exit code after Ctrl-C (128 + SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

/// A failed command: what to print (after `emq: `) and how to exit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// The process exit code.
    pub code: u8,
    /// The cause, one line where possible.
    pub message: String,
}

impl CliError {
    /// A usage error (exit 2): a bad argument or name.
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            code: EXIT_USAGE,
            message: message.into(),
        }
    }

    /// A refused transition or a missing job (exit 1).
    pub fn refused(message: impl Into<String>) -> Self {
        Self {
            code: EXIT_REFUSED,
            message: message.into(),
        }
    }

    /// Stopped by Ctrl-C (exit 130).
    pub fn interrupted() -> Self {
        Self {
            code: EXIT_INTERRUPTED,
            message: "interrupted".into(),
        }
    }

    /// The server at `url` could not be reached (exit 2).
    pub fn unreachable(url: &str, err: &echomq::Error) -> Self {
        match err {
            echomq::Error::Redis(redis) => Self::from_redis(url, redis),
            echomq::Error::Name(name) => Self::usage(format!("--prefix: {name}")),
            echomq::Error::ModuleMissing(_) | echomq::Error::Wire6Unsupported { .. } => {
                Self::wire_native(err)
            }
            echomq::Error::Auth(_) | echomq::Error::Tls(_) => {
                Self::usage(format!("{}: {err}", redact(url)))
            }
            other => Self::usage(one_line(&other.to_string())),
        }
    }

    /// `--wire native` against a server without the EchoMQ module, or
    /// with one that lacks a command (exit 2), in the CLI's words: the
    /// flag to use instead, or how to load the module.
    fn wire_native(err: &echomq::Error) -> Self {
        let message = match err {
            echomq::Error::ModuleMissing(cause) => format!(
                "--wire native: the server has no EchoMQ module loaded (EMQ.VERSION failed: {}); \
                 use --wire script, or start the server with --loadmodule /path/to/libechomq_module.so",
                one_line(cause)
            ),
            echomq::Error::Wire6Unsupported { name } => format!(
                "--wire native: the server's EchoMQ module does not serve {name}; \
                 upgrade the module or use --wire script"
            ),
            other => one_line(&other.to_string()),
        };
        Self::usage(message)
    }

    /// `--listen addr` could not be bound (exit 2): the address is named,
    /// since the OS's cause (`Address already in use`) does not.
    pub fn cannot_listen(addr: std::net::SocketAddr, err: &std::io::Error) -> Self {
        Self::usage(format!(
            "cannot listen on {addr} (--listen): {}",
            strip_os_error(&err.to_string())
        ))
    }

    /// A plain `redis` error met while connecting to `url` (exit 2). The
    /// URL is quoted without its password ([`redact`]).
    pub fn from_redis(url: &str, err: &redis::RedisError) -> Self {
        let url = redact(url);
        if err.kind() == redis::ErrorKind::InvalidClientConfig {
            let cause = cause(err).replace(" - InvalidClientConfig", "");
            return Self::usage(format!("invalid --url {url}: {cause}"));
        }
        let hint = if err.is_io_error() || err.is_connection_refusal() || err.is_timeout() {
            UNREACHABLE_HINT
        } else {
            ""
        };
        Self::usage(format!("cannot reach {url}: {}{hint}", cause(err)))
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

impl From<echomq::Error> for CliError {
    fn from(err: echomq::Error) -> Self {
        match &err {
            echomq::Error::Refused(refused) => Self::refused(refused.to_string()),
            echomq::Error::ModuleMissing(_) | echomq::Error::Wire6Unsupported { .. } => {
                Self::wire_native(&err)
            }
            echomq::Error::Redis(redis) => Self::usage(format!("server: {}", cause(redis))),
            other => Self::usage(one_line(&other.to_string())),
        }
    }
}

impl From<echomq_server::ServerError> for CliError {
    fn from(err: echomq_server::ServerError) -> Self {
        Self::usage(err.to_string())
    }
}

impl From<std::io::Error> for CliError {
    fn from(err: std::io::Error) -> Self {
        Self::usage(strip_os_error(&err.to_string()))
    }
}

/// `url` with the password of its user part, if any, shown as `***`
/// (`redis://:***@host:6379`, `redis://ada:***@host`): what error messages
/// quote.
pub fn redact(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|at| at + 3) else {
        return url.to_string();
    };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_string();
    };
    let Some(colon) = rest[..at].find(':') else {
        return url.to_string();
    };
    format!(
        "{}{}:***{}",
        &url[..scheme_end],
        &rest[..colon],
        &rest[at..]
    )
}

/// The readable cause of a `redis` error: `Connection refused`, not
/// `Connection refused (os error 111)`.
fn cause(err: &redis::RedisError) -> String {
    one_line(&strip_os_error(&err.to_string()))
}

/// Drops a trailing ` (os error N)`.
fn strip_os_error(text: &str) -> String {
    match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => text[..at].to_string(),
        _ => text.to_string(),
    }
}

/// Joins a multi-line message into one line.
fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_a_url_is_not_quoted() {
        assert_eq!(
            redact("redis://:s3cret@10.0.0.1:6379"),
            "redis://:***@10.0.0.1:6379"
        );
        assert_eq!(
            redact("redis://ada:p@ss:w0rd@host/0"),
            "redis://ada:***@host/0"
        );
        assert_eq!(
            redact("rediss://ada:pw@host?x=1"),
            "rediss://ada:***@host?x=1"
        );
        // Nothing to hide: no user part, or a user without a password.
        assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(redact("redis://ada@host:6379"), "redis://ada@host:6379");
        assert_eq!(redact("not a url"), "not a url");
    }

    #[test]
    fn os_error_suffix_is_dropped() {
        assert_eq!(
            strip_os_error("Connection refused (os error 111)"),
            "Connection refused"
        );
        assert_eq!(strip_os_error("no suffix"), "no suffix");
    }

    #[test]
    fn messages_become_one_line() {
        assert_eq!(one_line("a\n\n b \nc"), "a; b; c");
    }
}
