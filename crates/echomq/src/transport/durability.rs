//! Durability levels: how far a write must reach before the client
//! answers its caller (docs/protocol.md, Durability). The wait is sent in
//! the same pipeline as the write (`dispatch.rs`), so it covers the write
//! even when the connection is replaced meanwhile.

use crate::error::{Error, Result};
use crate::transport::link::Link;
use crate::transport::server_check::{ServerInfo, info_field, node_replies};
use redis::{Cmd, Pipeline, Value};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// How long a wait lasts unless the level names another.
pub const DEFAULT_WAIT: Duration = Duration::from_millis(5_000);

/// How far an acknowledged write has reached when the client answers its
/// caller. Set it with [`ConnectorBuilder::durability`](crate::ConnectorBuilder::durability);
/// the CLI takes `--durability memory|local|replicas:N[:MS]` or
/// `EMQ_DURABILITY`.
///
/// A level above [`Durability::Memory`] applies to every control whose
/// reply a caller relies on: enqueues, a worker's outcomes (one wait per
/// batch it sends) and operator verbs; never to reads, claims, heartbeats
/// or sweeps, which the queue makes again by itself. A wait that falls
/// short is [`Error::NotDurable`]; a server that cannot give the level is
/// [`Error::DurabilityUnavailable`] at connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// In the primary's memory: the server's reply, nothing more (the
    /// default). A crash before the next fsync, or a failover that promotes
    /// a replica the write never reached, can lose it.
    #[default]
    Memory,
    /// Fsynced to the primary's append-only file (`WAITAOF 1 0`): survives
    /// a crash and restart of the primary, not the loss of its disk or a
    /// failover. Needs `appendonly yes` and `WAITAOF` (Valkey ≥ 7.2, Redis ≥ 7.2).
    Local,
    /// Fsynced to the append-only file of `n` replicas (`WAITAOF 0 n`;
    /// `WAIT n`, in their memory, on Redis 7.0): survives a failover to
    /// any of them. Needs `n` replicas online, with `appendonly yes`.
    Replicas {
        /// How many replicas must confirm (at least 1).
        n: u32,
        /// How long to wait for them.
        timeout: Duration,
    },
}

impl Durability {
    /// `n` replicas, waited for [`DEFAULT_WAIT`].
    pub fn replicas(n: u32) -> Self {
        Durability::Replicas {
            n,
            timeout: DEFAULT_WAIT,
        }
    }

    /// How long a wait at this level lasts (zero for memory).
    pub fn timeout(self) -> Duration {
        match self {
            Durability::Memory => Duration::ZERO,
            Durability::Local => DEFAULT_WAIT,
            Durability::Replicas { timeout, .. } => timeout,
        }
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Durability::Memory => f.write_str("memory"),
            Durability::Local => f.write_str("local"),
            Durability::Replicas { n, timeout } if *timeout == DEFAULT_WAIT => {
                write!(f, "replicas:{n}")
            }
            Durability::Replicas { n, timeout } => {
                write!(f, "replicas:{n}:{}", timeout.as_millis())
            }
        }
    }
}

impl FromStr for Durability {
    type Err = Error;

    /// `memory`, `local`, `replicas:N` or `replicas:N:MS` (a wait of MS
    /// milliseconds instead of 1,000).
    fn from_str(text: &str) -> Result<Self> {
        let bad = |reason: String| Error::BadArgument {
            name: "durability",
            reason,
        };
        let mut parts = text.split(':');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("memory"), None, ..) => Ok(Durability::Memory),
            (Some("local"), None, ..) => Ok(Durability::Local),
            (Some("replicas"), Some(n), timeout, None) => {
                let n: u32 = n.parse().ok().filter(|n| *n >= 1).ok_or_else(|| {
                    bad(format!(
                        "{text:?}: the number of replicas must be a whole number ≥ 1, not {n:?}"
                    ))
                })?;
                let timeout = match timeout {
                    None => DEFAULT_WAIT,
                    Some(ms) => ms
                        .parse::<u64>()
                        .ok()
                        .filter(|ms| *ms >= 1)
                        .map(Duration::from_millis)
                        .ok_or_else(|| {
                            bad(format!(
                                "{text:?}: the wait must be a whole number of ms ≥ 1, not {ms:?}"
                            ))
                        })?,
                };
                Ok(Durability::Replicas { n, timeout })
            }
            _ => Err(bad(format!(
                "{text:?} is no durability level: say memory, local, replicas:N or replicas:N:MS"
            ))),
        }
    }
}

/// What the server can do for a level, learnt at connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wait {
    level: Durability,
    /// Whether the server has `WAITAOF` (else `WAIT`, replicas only).
    waitaof: bool,
}

impl Wait {
    /// The wait for `level` on a server that has `WAITAOF` or not; `None`
    /// for memory.
    pub(crate) fn new(level: Durability, waitaof: bool) -> Option<Self> {
        (level != Durability::Memory).then_some(Self { level, waitaof })
    }

    /// The level waited for.
    pub(crate) fn level(&self) -> Durability {
        self.level
    }

    /// Adds the wait behind the writes of `pipe`.
    pub(crate) fn add_to(&self, pipe: &mut Pipeline) {
        for cmd in self.commands() {
            pipe.add_command(cmd);
        }
    }

    /// Takes the wait's replies off the end of `replies` (the pipeline's,
    /// [`Wait::add_to`]'s last), and returns the one [`Wait::check`] reads.
    pub(crate) fn take_reply(&self, replies: &mut Vec<Value>) -> Option<Value> {
        let at = replies.len().saturating_sub(self.commands().len());
        replies.drain(at..).next_back()
    }

    /// The commands sent behind a write, the one whose reply counts last.
    ///
    /// `replicas:N` sends `WAIT` before `WAITAOF`: a replica answers the
    /// primary's request for acknowledgement (which follows the write in
    /// the replication stream) before it fsyncs the write, and then says
    /// nothing more until its next periodic acknowledgement, up to a
    /// second later. A `WAITAOF` right behind the write waited for that
    /// (200–1000 ms, measured); behind a `WAIT`, the primary asks again
    /// once the replica has the write, by then fsynced (under 1 ms).
    fn commands(&self) -> Vec<Cmd> {
        let timeout = self.level.timeout().as_millis() as u64;
        let wait = |n: u32| {
            let mut cmd = redis::cmd("WAIT");
            cmd.arg(n).arg(timeout);
            cmd
        };
        let waitaof = |local: u32, n: u32| {
            let mut cmd = redis::cmd("WAITAOF");
            cmd.arg(local).arg(n).arg(timeout);
            cmd
        };
        match (self.level, self.waitaof) {
            (Durability::Replicas { n, .. }, false) => vec![wait(n)],
            (Durability::Replicas { n, .. }, true) => vec![wait(n), waitaof(0, n)],
            _ => vec![waitaof(1, 0)],
        }
    }

    /// Checks the wait's reply: what it confirmed against what the level
    /// wants. A reply the wait cannot give (an error: `NOPERM`, a replica)
    /// is a wait that fell short and says why.
    pub(crate) fn check(&self, reply: Value) -> Result<()> {
        let count = |value: &Value| match value {
            Value::Int(n) => Some((*n).max(0) as u32),
            _ => None,
        };
        let (acked, wanted) = match (self.level, reply) {
            (Durability::Replicas { n, .. }, Value::Int(acked)) => (acked.max(0) as u32, n),
            (Durability::Replicas { n, .. }, Value::Array(counts)) => {
                (counts.get(1).and_then(count).unwrap_or(0), n)
            }
            (_, Value::Array(counts)) => (counts.first().and_then(count).unwrap_or(0), 1),
            (_, Value::ServerError(err)) => {
                return Err(Error::NotDurable {
                    level: self.level,
                    acked: 0,
                    wanted: self.wanted(),
                    why: Some(format!("{}: {}", err.code(), err.details().unwrap_or(""))),
                });
            }
            (_, other) => {
                return Err(Error::NotDurable {
                    level: self.level,
                    acked: 0,
                    wanted: self.wanted(),
                    why: Some(format!("the wait answered {other:?}")),
                });
            }
        };
        if acked >= wanted {
            return Ok(());
        }
        Err(Error::NotDurable {
            level: self.level,
            acked,
            wanted,
            why: None,
        })
    }

    fn wanted(&self) -> u32 {
        match self.level {
            Durability::Replicas { n, .. } => n,
            _ => 1,
        }
    }
}

/// Checks at connect that the server can give `level`, and returns the
/// wait to send behind each durable write (`None` for memory). `server`
/// is what `INFO server` said (`None`: the ACL refused it). A server that
/// cannot give the level is [`Error::DurabilityUnavailable`]; a user whose
/// ACL refuses `INFO` is taken at its word (said once per process).
pub(crate) async fn check(
    link: &Link,
    level: Durability,
    server: Option<&ServerInfo>,
) -> Result<Option<Wait>> {
    if level == Durability::Memory {
        return Ok(None);
    }
    let unavailable = |reason: String| Error::DurabilityUnavailable { level, reason };
    let waitaof = server.is_none_or(ServerInfo::has_waitaof);
    if level == Durability::Local && !waitaof {
        let (major, minor, patch) = server.map(|s| s.version).unwrap_or_default();
        return Err(unavailable(format!(
            "redis {major}.{minor}.{patch} has no WAITAOF (Redis ≥ 7.2 or Valkey has it)"
        )));
    }
    let reply: redis::RedisResult<Value> = redis::cmd("INFO")
        .arg("persistence")
        .arg("replication")
        .query_async(&mut link.clone())
        .await;
    let reply = match reply {
        Ok(reply) => reply,
        Err(err) if err.code().is_some() => {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                tracing::info!(error = %err, "INFO refused: the server's AOF and replicas are not checked for the durability level");
            });
            return Ok(Wait::new(level, waitaof));
        }
        Err(err) => return Err(err.into()),
    };
    for (node, info) in node_replies(reply) {
        let info = info.unwrap_or_default();
        let at = |reason: String| match &node {
            Some(node) => unavailable(format!("{node}: {reason}")),
            None => unavailable(reason),
        };
        if info_field(&info, "role") != Some("master") {
            // A cluster answers for its replicas too; a single server that
            // is a replica would refuse the writes anyway.
            if node.is_some() {
                continue;
            }
            return Err(at("the server is a replica: connect to the primary".into()));
        }
        match level {
            Durability::Local if info_field(&info, "aof_enabled") != Some("1") => {
                return Err(at(
                    "appendonly is off: set appendonly yes (appendfsync everysec or always)".into(),
                ));
            }
            Durability::Replicas { n, .. } => {
                let online = online_replicas(&info);
                if online < n {
                    return Err(at(format!(
                        "{online} replica(s) online, {n} wanted (INFO replication)"
                    )));
                }
            }
            _ => {}
        }
    }
    Ok(Wait::new(level, waitaof))
}

/// The replicas `INFO replication` lists as `state=online`.
fn online_replicas(info: &str) -> u32 {
    info.lines()
        .filter(|line| line.starts_with("slave") && line.contains("state=online"))
        .count() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_replicas_online_count() {
        let info = "role:master\r\nconnected_slaves:2\r\nslave0:ip=127.0.0.1,port=1,state=online,offset=1,lag=0\r\nslave1:ip=127.0.0.1,port=2,state=wait_bgsave,offset=0,lag=0\r\n";
        assert_eq!(online_replicas(info), 1);
        assert_eq!(info_field(info, "role"), Some("master"));
    }

    #[test]
    fn levels_read_as_they_are_written() {
        for text in ["memory", "local", "replicas:1", "replicas:2:2000"] {
            let level: Durability = text.parse().expect(text);
            assert_eq!(level.to_string(), text);
        }
        assert_eq!(
            "replicas:3".parse::<Durability>().unwrap(),
            Durability::replicas(3)
        );
    }

    #[test]
    fn a_level_that_is_no_level_is_refused_naming_the_levels() {
        let err = "disk".parse::<Durability>().unwrap_err().to_string();
        assert!(err.contains("\"disk\" is no durability level"), "{err}");
        assert!(err.contains("replicas:N"), "{err}");
    }

    #[test]
    fn replicas_without_a_count_of_at_least_one_are_refused() {
        for text in ["replicas:0", "replicas:x", "replicas:"] {
            let err = text.parse::<Durability>().unwrap_err().to_string();
            assert!(err.contains("whole number ≥ 1"), "{text}: {err}");
        }
    }

    #[test]
    fn a_wait_that_is_not_a_whole_number_of_ms_is_refused() {
        for text in ["replicas:1:0", "replicas:1:soon", "replicas:1:5:6"] {
            assert!(text.parse::<Durability>().is_err(), "{text}");
        }
    }

    #[test]
    fn each_level_sends_its_wait() {
        let args = |wait: Wait| {
            wait.commands()
                .iter()
                .map(|cmd| {
                    cmd.args_iter()
                        .map(|arg| match arg {
                            redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).to_string(),
                            _ => String::new(),
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        let local = Wait::new(Durability::Local, true).unwrap();
        assert_eq!(args(local), "WAITAOF 1 0 5000");
        let replicas = Wait::new(Durability::replicas(2), true).unwrap();
        assert_eq!(args(replicas), "WAIT 2 5000; WAITAOF 0 2 5000");
        let redis_7_0 = Wait::new(Durability::replicas(2), false).unwrap();
        assert_eq!(args(redis_7_0), "WAIT 2 5000");
        assert!(Wait::new(Durability::Memory, true).is_none());
    }

    #[test]
    fn the_reply_checked_is_the_last_wait_s() {
        let wait = Wait::new(Durability::replicas(1), true).unwrap();
        let mut replies = vec![
            Value::Okay,
            Value::Int(1),
            Value::Array(vec![Value::Int(0), Value::Int(1)]),
        ];
        let last = wait.take_reply(&mut replies);
        assert_eq!(replies, vec![Value::Okay]);
        assert!(wait.check(last.unwrap()).is_ok());
    }

    #[test]
    fn a_wait_that_confirms_fewer_than_wanted_is_not_durable() {
        let wait = Wait::new(Durability::replicas(2), true).unwrap();
        assert!(
            wait.check(Value::Array(vec![Value::Int(0), Value::Int(2)]))
                .is_ok()
        );
        let short = wait
            .check(Value::Array(vec![Value::Int(1), Value::Int(1)]))
            .unwrap_err();
        assert!(
            matches!(
                short,
                Error::NotDurable {
                    acked: 1,
                    wanted: 2,
                    ..
                }
            ),
            "{short:?}"
        );
        let local = Wait::new(Durability::Local, true).unwrap();
        assert!(
            local
                .check(Value::Array(vec![Value::Int(0), Value::Int(0)]))
                .is_err()
        );
        let wait = Wait::new(Durability::replicas(1), false).unwrap();
        assert!(wait.check(Value::Int(1)).is_ok());
        assert!(wait.check(Value::Int(0)).is_err());
    }
}
