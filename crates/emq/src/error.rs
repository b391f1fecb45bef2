//! The CLI's error: a one-line cause, its machine code ([`ErrorCode`]) and
//! the exit code it maps to.
//!
//! Exit codes: `0` done; `1` a refused transition, a missing job, a
//! queue `emq queues` could not read, or a job waited for that ended
//! otherwise than completed; `2` a usage error (bad argument, bad name) or
//! a connection/server error; `3` a wait for a job's outcome that ran out
//! of time. Under `--json` an error is printed
//! as one line of JSON on stderr, `{"error":{"code":…,"message":…}}`
//! ([`CliError::to_json`]).

use echomq::Refusal;
use serde::Serialize;
use std::fmt;

/// Exit code of a refused transition, a missing job, or a queue `emq
/// queues` could not read.
pub const EXIT_REFUSED: u8 = 1;
/// Exit code of a usage or connection error.
pub const EXIT_USAGE: u8 = 2;
/// Exit code of a wait for a job's outcome that ran out of time (the job
/// left as it was, running on).
pub const EXIT_TIMEOUT: u8 = 3;
/// What a "cannot reach" error adds: how to get a server to talk to.
pub const UNREACHABLE_HINT: &str = "; start one with `emq server` (it listens on \
    redis://127.0.0.1:6379), or point --url / EMQ_URL at a running server";

/// Exit code after Ctrl-C (128 + SIGINT).
pub const EXIT_INTERRUPTED: u8 = 130;

/// What kind of failure a [`CliError`] is: the `code` of its JSON form
/// (snake case, stable: scripts match on it) and its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Exit 2: a bad argument, option, name, payload or URL, found before
    /// anything was sent (clap's usage errors too).
    Usage,
    /// Exit 2: the server could not be reached (refused, timed out, no
    /// route).
    Unreachable,
    /// Exit 2: the server refused the connection's password or user.
    Auth,
    /// Exit 2: TLS settings that cannot be used (a PEM that does not
    /// parse, TLS files for a URL without TLS).
    Tls,
    /// Exit 2: the server's ACL refuses the user a key or a command.
    NotPermitted,
    /// Exit 2: `--wire native` on a server without the EchoMQ module, or
    /// with one that lacks a command.
    Wire,
    /// Exit 2: the server answered an error or something the protocol does
    /// not allow, or is too old.
    Server,
    /// Exit 2: the server cannot give `--durability`'s level (no AOF, too
    /// few replicas, no `WAITAOF`).
    Durability,
    /// Exit 2: an address or port to listen on could not be bound.
    Listen,
    /// Exit 2: a local file or stream could not be read or written.
    Io,
    /// Exit 1: no such job (`NOJOB`) or repeat definition.
    NotFound,
    /// Exit 1: the job is in a state the verb does not accept (`BADSTATE`).
    BadState,
    /// Exit 1: the job is not active under the token given (`NOTACTIVE`).
    NotActive,
    /// Exit 1: obliterate of a queue that is not paused (`NOTPAUSED`).
    NotPaused,
    /// Exit 1: the write was applied, but the wait of `--durability` fell
    /// short: it may or may not survive a failover.
    NotDurable,
    /// Exit 1: any other refusal: a server `SYNTAX`/`BADARG`, an
    /// obliterate not confirmed, a queue `emq queues` could not read.
    Refused,
    /// Exit 1: the job waited for (`--wait`, `emq wait`) is dead.
    Dead,
    /// Exit 1: the job waited for was cancelled.
    Cancelled,
    /// Exit 1: the job waited for does not exist (any more): removed,
    /// drained, obliterated, trimmed by retention, or never enqueued.
    Removed,
    /// Exit 3: the wait for a job's outcome ran out of time; the job was
    /// left as it was and runs on.
    Timeout,
    /// Exit 130: stopped by Ctrl-C.
    Interrupted,
}

impl ErrorCode {
    /// Every code, in the order the docs list them.
    pub const ALL: [ErrorCode; 21] = [
        ErrorCode::Usage,
        ErrorCode::Unreachable,
        ErrorCode::Auth,
        ErrorCode::Tls,
        ErrorCode::NotPermitted,
        ErrorCode::Wire,
        ErrorCode::Server,
        ErrorCode::Durability,
        ErrorCode::Listen,
        ErrorCode::Io,
        ErrorCode::NotFound,
        ErrorCode::BadState,
        ErrorCode::NotActive,
        ErrorCode::NotPaused,
        ErrorCode::NotDurable,
        ErrorCode::Refused,
        ErrorCode::Dead,
        ErrorCode::Cancelled,
        ErrorCode::Removed,
        ErrorCode::Timeout,
        ErrorCode::Interrupted,
    ];

    /// The code as JSON writes it: `"not_found"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Usage => "usage",
            ErrorCode::Unreachable => "unreachable",
            ErrorCode::Auth => "auth",
            ErrorCode::Tls => "tls",
            ErrorCode::NotPermitted => "not_permitted",
            ErrorCode::Wire => "wire",
            ErrorCode::Server => "server",
            ErrorCode::Durability => "durability",
            ErrorCode::Listen => "listen",
            ErrorCode::Io => "io",
            ErrorCode::NotFound => "not_found",
            ErrorCode::BadState => "bad_state",
            ErrorCode::NotActive => "not_active",
            ErrorCode::NotPaused => "not_paused",
            ErrorCode::NotDurable => "not_durable",
            ErrorCode::Refused => "refused",
            ErrorCode::Dead => "dead",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::Removed => "removed",
            ErrorCode::Timeout => "timeout",
            ErrorCode::Interrupted => "interrupted",
        }
    }

    /// The process exit code of an error of this kind.
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorCode::NotFound
            | ErrorCode::BadState
            | ErrorCode::NotActive
            | ErrorCode::NotPaused
            | ErrorCode::NotDurable
            | ErrorCode::Refused
            | ErrorCode::Dead
            | ErrorCode::Cancelled
            | ErrorCode::Removed => EXIT_REFUSED,
            ErrorCode::Timeout => EXIT_TIMEOUT,
            ErrorCode::Interrupted => EXIT_INTERRUPTED,
            _ => EXIT_USAGE,
        }
    }

    /// The code of a refusal the server (or the library) answered.
    fn of_refusal(reason: &Refusal) -> Self {
        match reason {
            Refusal::NoJob => ErrorCode::NotFound,
            Refusal::BadState(_) => ErrorCode::BadState,
            Refusal::NotActive => ErrorCode::NotActive,
            Refusal::NotPaused => ErrorCode::NotPaused,
            Refusal::Syntax(_) | Refusal::BadArg(_) | Refusal::TimeLimit | Refusal::Conflict(_) => {
                ErrorCode::Refused
            }
        }
    }
}

/// A failed command: what to print (after `emq: `) and how to exit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    /// The process exit code (`kind.exit_code()`).
    pub code: u8,
    /// What kind of failure it is: the `code` under `--json`.
    pub kind: ErrorCode,
    /// The cause, one line where possible.
    pub message: String,
}

/// `{"error": {"code": …, "message": …}}`, an error under `--json`.
#[derive(Serialize)]
struct JsonError<'a> {
    error: JsonErrorBody<'a>,
}

#[derive(Serialize)]
struct JsonErrorBody<'a> {
    code: ErrorCode,
    message: &'a str,
}

impl CliError {
    /// An error of `kind`, exiting with its exit code.
    pub fn new(kind: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code: kind.exit_code(),
            kind,
            message: message.into(),
        }
    }

    /// A usage error (exit 2): a bad argument or name.
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Usage, message)
    }

    /// A refusal with no more precise code (exit 1).
    pub fn refused(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Refused, message)
    }

    /// A missing job or definition (exit 1).
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    /// A refusal for `reason` (`NOJOB`, `BADSTATE`, …), in the CLI's
    /// words (exit 1).
    pub fn refusal(reason: &Refusal, message: impl Into<String>) -> Self {
        Self::new(ErrorCode::of_refusal(reason), message)
    }

    /// Stopped by Ctrl-C (exit 130).
    pub fn interrupted() -> Self {
        Self::new(ErrorCode::Interrupted, "interrupted")
    }

    /// The error as `--json` prints it: one line,
    /// `{"error":{"code":"not_found","message":"…"}}` (the message exact;
    /// JSON escapes its control characters).
    pub fn to_json(&self) -> String {
        let error = JsonError {
            error: JsonErrorBody {
                code: self.kind,
                message: &self.message,
            },
        };
        serde_json::to_string(&error).expect("an error encodes as JSON")
    }

    /// The server at `url` could not be reached (exit 2).
    pub fn unreachable(url: &str, err: &echomq::Error) -> Self {
        match err {
            echomq::Error::Redis(redis) => Self::from_redis(url, redis),
            echomq::Error::Name(name) => Self::usage(format!("--prefix: {name}")),
            echomq::Error::ModuleMissing(_) | echomq::Error::Wire6Unsupported { .. } => {
                Self::wire_native(err)
            }
            echomq::Error::Auth(_) => Self::new(ErrorCode::Auth, format!("{}: {err}", redact(url))),
            echomq::Error::Tls(_) => Self::new(ErrorCode::Tls, format!("{}: {err}", redact(url))),
            other => Self::from_library(other),
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
        Self::new(ErrorCode::Wire, message)
    }

    /// `--listen addr` could not be bound (exit 2): the address is named,
    /// since the OS's cause (`Address already in use`) does not.
    pub fn cannot_listen(addr: std::net::SocketAddr, err: &std::io::Error) -> Self {
        Self::new(
            ErrorCode::Listen,
            format!(
                "cannot listen on {addr} (--listen): {}",
                strip_os_error(&err.to_string())
            ),
        )
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
        let kind = if err.kind() == redis::ErrorKind::AuthenticationFailed {
            ErrorCode::Auth
        } else {
            ErrorCode::Unreachable
        };
        Self::new(kind, format!("cannot reach {url}: {}{hint}", cause(err)))
    }

    /// An `echomq` error other than a refusal or a missing module, coded
    /// by its kind.
    fn from_library(err: &echomq::Error) -> Self {
        let kind = match err {
            echomq::Error::Auth(_) => ErrorCode::Auth,
            echomq::Error::Tls(_) => ErrorCode::Tls,
            echomq::Error::NotPermitted { .. } => ErrorCode::NotPermitted,
            echomq::Error::NotDurable { .. } => ErrorCode::NotDurable,
            echomq::Error::DurabilityUnavailable { .. } => ErrorCode::Durability,
            echomq::Error::Timeout { .. } => ErrorCode::Timeout,
            echomq::Error::Redis(_)
            | echomq::Error::UnexpectedReply { .. }
            | echomq::Error::UnexpectedEvent(_)
            | echomq::Error::UnsupportedServer(_) => ErrorCode::Server,
            _ => ErrorCode::Usage,
        };
        Self::new(kind, one_line(&err.to_string()))
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
            echomq::Error::Refused(refused) => Self::refusal(&refused.reason, refused.to_string()),
            echomq::Error::ModuleMissing(_) | echomq::Error::Wire6Unsupported { .. } => {
                Self::wire_native(&err)
            }
            echomq::Error::Redis(redis) => {
                Self::new(ErrorCode::Server, format!("server: {}", cause(redis)))
            }
            other => Self::from_library(other),
        }
    }
}

impl From<echomq_server::ServerError> for CliError {
    fn from(err: echomq_server::ServerError) -> Self {
        Self::new(ErrorCode::Server, err.to_string())
    }
}

impl From<std::io::Error> for CliError {
    fn from(err: std::io::Error) -> Self {
        Self::new(ErrorCode::Io, strip_os_error(&err.to_string()))
    }
}

/// A clap error (a usage error found while parsing) as one [`CliError`]
/// line: clap's text without its `error: ` title, usage and `--help`
/// pointer, its lines joined (`…not provided: <queue>`).
impl From<&clap::Error> for CliError {
    fn from(err: &clap::Error) -> Self {
        let text = err.render().to_string();
        let mut message = String::new();
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with("Usage:") || line.starts_with("For more information") {
                break;
            }
            let line = line.strip_prefix("error: ").unwrap_or(line);
            if line.is_empty() {
                continue;
            }
            if !message.is_empty() {
                message.push_str(if message.ends_with(':') { " " } else { "; " });
            }
            message.push_str(line);
        }
        Self::new(ErrorCode::Usage, message)
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
    fn every_code_is_written_as_its_name_with_its_exit_code() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, code.as_str(), "{code:?}");
            let error = CliError::new(code, "m");
            assert_eq!(error.code, code.exit_code());
            let line: serde_json::Value = serde_json::from_str(&error.to_json()).unwrap();
            assert_eq!(
                line,
                serde_json::json!({"error": {"code": code.as_str(), "message": "m"}})
            );
        }
        assert_eq!(ErrorCode::Usage.exit_code(), EXIT_USAGE);
        assert_eq!(ErrorCode::Unreachable.exit_code(), EXIT_USAGE);
        assert_eq!(ErrorCode::NotFound.exit_code(), EXIT_REFUSED);
        assert_eq!(ErrorCode::Refused.exit_code(), EXIT_REFUSED);
        for outcome in [ErrorCode::Dead, ErrorCode::Cancelled, ErrorCode::Removed] {
            assert_eq!(outcome.exit_code(), EXIT_REFUSED, "{outcome:?}");
        }
        assert_eq!(ErrorCode::Timeout.exit_code(), EXIT_TIMEOUT);
        assert_eq!(ErrorCode::Interrupted.exit_code(), EXIT_INTERRUPTED);
    }

    #[test]
    fn each_refusal_has_its_code() {
        use echomq::JobState;
        for (reason, code) in [
            (Refusal::NoJob, ErrorCode::NotFound),
            (Refusal::BadState(JobState::Completed), ErrorCode::BadState),
            (Refusal::NotActive, ErrorCode::NotActive),
            (Refusal::NotPaused, ErrorCode::NotPaused),
            (Refusal::Syntax(String::new()), ErrorCode::Refused),
            (Refusal::BadArg("x".into()), ErrorCode::Refused),
        ] {
            assert_eq!(CliError::refusal(&reason, "m").kind, code, "{reason:?}");
        }
    }

    #[test]
    fn a_library_error_has_the_code_of_its_kind() {
        let of = |err: echomq::Error| CliError::from(err).kind;
        assert_eq!(of(echomq::Error::Tls("pem".into())), ErrorCode::Tls);
        assert_eq!(of(echomq::Error::Auth("no".into())), ErrorCode::Auth);
        assert_eq!(
            of(echomq::Error::UnsupportedServer("6.2".into())),
            ErrorCode::Server
        );
        assert_eq!(
            of(echomq::Error::ModuleMissing("ERR".into())),
            ErrorCode::Wire
        );
        let timeout = echomq::Error::Timeout {
            job: echomq::JobId::new("7").unwrap(),
            waited: std::time::Duration::from_secs(30),
        };
        let error = CliError::from(timeout);
        assert_eq!((error.kind, error.code), (ErrorCode::Timeout, EXIT_TIMEOUT));
        assert_eq!(
            of(echomq::Error::BadArgument {
                name: "x",
                reason: "y".into()
            }),
            ErrorCode::Usage
        );
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone (os error 2)");
        assert_eq!(CliError::from(io).kind, ErrorCode::Io);
    }

    #[test]
    fn a_clap_error_becomes_one_usage_line() {
        use clap::Parser;
        let err = crate::cli::Cli::try_parse_from(["emq", "stats"]).unwrap_err();
        let error = CliError::from(&err);
        assert_eq!(error.kind, ErrorCode::Usage);
        assert_eq!(
            error.message,
            "the following required arguments were not provided: <queue>"
        );
    }

    #[test]
    fn messages_become_one_line() {
        assert_eq!(one_line("a\n\n b \nc"), "a; b; c");
    }
}
