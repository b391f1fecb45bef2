//! The client's error type.

use crate::acl::Denied;
use crate::transport::durability::Durability;
use echomq_protocol::{NameError, Refused, Transition};

/// Everything the client can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server refused a transition (`NOTACTIVE`, `NOJOB`, `BADSTATE`, …);
    /// the value names the job, the transition and what was found.
    #[error(transparent)]
    Refused(#[from] Refused),
    /// A queue name, job id or prefix was refused before any key was built.
    #[error(transparent)]
    Name(#[from] NameError),
    /// An argument was refused on the client before anything was sent.
    #[error("bad argument {name}: {reason}")]
    BadArgument {
        /// Which argument.
        name: &'static str,
        /// What was wrong with it.
        reason: String,
    },
    /// A job's payload could not be encoded or decoded as JSON (a job's
    /// result fails as [`Error::JobResult`]).
    #[error("payload is not valid for this queue's type: {0}")]
    Payload(#[from] serde_json::Error),
    /// A job's result could not be encoded as JSON
    /// ([`crate::Queue::complete`]), or a stored result could not be
    /// decoded to the type an outcome wait asked for
    /// ([`crate::Queue::outcome`], [`crate::Queue::outcomes`],
    /// [`crate::Enqueued::outcome`]).
    #[error("result is not valid for its type: {0}")]
    JobResult(serde_json::Error),
    /// Connecting or talking to the server failed.
    #[error("server: {0}")]
    Redis(#[from] redis::RedisError),
    /// The server answered a transition with something the protocol does
    /// not allow.
    #[error("unexpected reply to {} ({}): {detail}", transition.verb(), transition.native())]
    UnexpectedReply {
        /// The transition that was sent.
        transition: Transition,
        /// What came back.
        detail: String,
    },
    /// A queue's events stream held an entry the protocol does not allow.
    #[error("unexpected entry in the events stream: {0}")]
    UnexpectedEvent(String),
    /// Wire 6 was chosen but the loaded module does not serve this transition.
    #[error(
        "wire 6: the loaded EchoMQ module does not serve {name}; upgrade the module or use wire 4 (Wire::Script)"
    )]
    Wire6Unsupported {
        /// The `EMQ.*` command that is missing.
        name: String,
    },
    /// A wait for a job's outcome ran out of time with the job undecided
    /// ([`Queue::outcome`](crate::Queue::outcome)): the job runs on, and a
    /// later wait picks it up.
    #[error(
        "job {job} was not finished after {} ms of waiting; it was left as it was, and a later wait can pick it up",
        waited.as_millis()
    )]
    Timeout {
        /// The job waited for.
        job: echomq_protocol::JobId,
        /// How long the wait lasted.
        waited: std::time::Duration,
    },
    /// A write was applied on the primary, but the wait of the connector's
    /// durability level fell short: it may or may not survive a crash or a
    /// failover. Sending it again is safe where it is idempotent (an
    /// enqueue with the same job id changes nothing if the first survived).
    #[error(
        "not durable: the write was applied on the primary, but {acked} of {wanted} {} confirmed it within {} ms (durability {level}){}; it may or may not survive a failover, and sending it again is safe where it is idempotent",
        if matches!(level, Durability::Local) { "local AOF fsyncs" } else { "replicas" },
        level.timeout().as_millis(),
        why.as_deref().map(|why| format!(": {why}")).unwrap_or_default()
    )]
    NotDurable {
        /// The level waited for.
        level: Durability,
        /// How many confirmed (replicas, or the local fsync: 0 or 1).
        acked: u32,
        /// How many the level wants.
        wanted: u32,
        /// Why the wait could not be made, when it answered an error.
        why: Option<String>,
    },
    /// The server cannot give the connector's durability level (no AOF,
    /// too few replicas, no `WAITAOF`): refused at connect rather than
    /// waited for in vain on every write.
    #[error("durability {level} is not available on this server: {reason}")]
    DurabilityUnavailable {
        /// The level asked for.
        level: Durability,
        /// What the server lacks.
        reason: String,
    },
    /// Wire 6 was chosen but the server has no EchoMQ module loaded.
    #[error(
        "wire 6: the server has no EchoMQ module loaded (EMQ.VERSION failed: {0}); load libechomq_module.so or use wire 4 (Wire::Script)"
    )]
    ModuleMissing(String),
    /// The server asks for a password the connector was not given, or
    /// refused the user and password it was given; the text says where to
    /// give them (the URL, or `primary_auth` behind Sentinel).
    #[error("the server refused the connection ({0})")]
    Auth(String),
    /// TLS settings that cannot be used: a PEM that does not parse, or
    /// [`TlsOptions`](crate::TlsOptions) for a server URL without TLS.
    #[error("TLS: {0}")]
    Tls(String),
    /// The server is older than EchoMQ runs on (Valkey 7.2, Redis 7.0).
    #[error("unsupported server: {0}")]
    UnsupportedServer(String),
    /// The server's ACL refused the connection's user a key, a channel or
    /// a command: the user may not use this queue (or run this command).
    /// The message says what was refused and the rule that would grant it.
    #[error(
        "the server's ACL refuses user {user} {denied}{}: grant it with `ACL SETUSER {user} {}` ({detail})",
        queue.as_ref().map(|queue| format!(" (queue {queue})")).unwrap_or_default(),
        denied.rule()
    )]
    NotPermitted {
        /// The user the connection authenticated as (`default` when the
        /// URL names none).
        user: String,
        /// The key, channel or command refused.
        denied: Denied,
        /// The queue the call was for, when it was for one.
        queue: Option<String>,
        /// The server's reply.
        detail: String,
    },
}

impl Error {
    /// The refusal, when the server refused a transition.
    pub fn refused(&self) -> Option<&Refused> {
        match self {
            Error::Refused(refused) => Some(refused),
            _ => None,
        }
    }

    /// Whether the connection failed under the call (dropped, refused,
    /// timed out, an I/O error) rather than the server answering it: the
    /// call may or may not have been applied, and the next one goes out on
    /// a new connection. A transition sent again is fenced, so at worst it
    /// is refused (`NOTACTIVE`) the second time.
    pub fn is_connection(&self) -> bool {
        match self {
            Error::Redis(err) => connection_failed(err),
            _ => false,
        }
    }

    /// Whether the server answered `WRONGTYPE`: a key of the queue holds
    /// another type of value than the queue keeps there
    /// ([`Admin::wrong_types`](crate::Admin::wrong_types) says which).
    pub fn is_wrong_type(&self) -> bool {
        matches!(self, Error::Redis(err) if err.code() == Some("WRONGTYPE"))
    }

    /// Whether the call failed for a reason that passes by itself: the
    /// connection failed under it ([`Error::is_connection`]), or the server
    /// could not take it just then — out of memory (`OOM`), loading its
    /// data after a restart (`LOADING`), busy in a long script (`BUSY`), a
    /// cluster in flux (`TRYAGAIN`, `CLUSTERDOWN`, `MASTERDOWN`), a primary
    /// demoted by a failover (`READONLY`: the connection is opened again,
    /// and goes to whatever server the URL names now). Sending a fenced
    /// transition again is safe.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Redis(err) => {
                self.is_connection()
                    || matches!(
                        err.code(),
                        Some(
                            "OOM"
                                | "LOADING"
                                | "BUSY"
                                | "TRYAGAIN"
                                | "CLUSTERDOWN"
                                | "MASTERDOWN"
                                | "READONLY"
                        )
                    )
            }
            _ => false,
        }
    }
}

/// Whether `err` is the connection failing under a call (dropped, refused,
/// timed out, an I/O error) rather than the server answering it.
pub(crate) fn connection_failed(err: &redis::RedisError) -> bool {
    err.is_io_error()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || err.is_timeout()
}

/// The client's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
