//! What a connect checks of the server (`INFO server memory`): a version
//! EchoMQ runs on, and an eviction policy that never deletes a queue's
//! keys behind its back.

use crate::error::{Error, Result};
use crate::transport::link::Link;
use redis::Value;

/// The oldest Redis the scripts run on: sharded pub/sub (`SSUBSCRIBE`),
/// `ZADD … LT`, `ZRANGE … BYSCORE`.
const MIN_REDIS: (u32, u32) = (7, 0);
/// The oldest Valkey (its first release).
const MIN_VALKEY: (u32, u32) = (7, 2);

/// The server as `INFO server memory` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerInfo {
    /// `valkey` or `redis`.
    pub software: &'static str,
    /// Major, minor and patch of that software.
    pub version: (u32, u32, u32),
    /// `maxmemory-policy` (`maxmemory_policy` in `INFO memory`).
    pub eviction: Option<String>,
}

impl ServerInfo {
    /// Reads the fields of `INFO` text; `None` when it names no version.
    pub(crate) fn parse(info: &str) -> Option<Self> {
        let field = |name: &str| info_field(info, name);
        let (software, version) = match field("valkey_version") {
            Some(version) => ("valkey", version),
            None => ("redis", field("redis_version")?),
        };
        let mut parts = version.split('.').map(|part| part.parse::<u32>().ok());
        let mut next = || parts.next().flatten();
        let version = (next()?, next().unwrap_or(0), next().unwrap_or(0));
        Some(Self {
            software,
            version,
            eviction: field("maxmemory_policy").map(str::to_string),
        })
    }

    /// Refuses a server older than EchoMQ runs on.
    pub(crate) fn check_version(&self) -> Result<()> {
        let min = if self.software == "valkey" {
            MIN_VALKEY
        } else {
            MIN_REDIS
        };
        let (major, minor, patch) = self.version;
        if (major, minor) >= min {
            return Ok(());
        }
        Err(Error::UnsupportedServer(format!(
            "this server is {} {major}.{minor}.{patch}; EchoMQ needs Valkey ≥ {}.{} or Redis ≥ {}.{} (sharded pub/sub, ZADD LT, ZRANGE BYSCORE)",
            self.software, MIN_VALKEY.0, MIN_VALKEY.1, MIN_REDIS.0, MIN_REDIS.1
        )))
    }

    /// Whether the server has `WAITAOF` (Valkey, Redis ≥ 7.2).
    pub(crate) fn has_waitaof(&self) -> bool {
        let (major, minor, _) = self.version;
        self.software == "valkey" || (major, minor) >= (7, 2)
    }

    /// Whether the eviction policy may delete any key under memory
    /// pressure (`allkeys-*`), a queue's jobs included. The `volatile-*`
    /// policies evict only keys with a time to live, which EchoMQ never
    /// sets.
    pub(crate) fn evicts_queue_keys(&self) -> bool {
        self.eviction
            .as_deref()
            .is_some_and(|policy| policy.starts_with("allkeys-"))
    }
}

/// Reads `INFO server memory` over `link` (on a cluster, of every node),
/// refuses a server too old, and warns (`tracing`) of each one whose
/// eviction policy may delete a queue's keys. Returns what was read: of
/// the one server, or of a cluster node (one that may evict when any
/// does). A server that refuses `INFO` (an ACL, a managed service) is
/// taken as it is: `None`.
pub(crate) async fn inspect(link: &Link) -> Result<Option<ServerInfo>> {
    let reply: redis::RedisResult<Value> = redis::cmd("INFO")
        .arg("server")
        .arg("memory")
        .query_async(&mut link.clone())
        .await;
    let reply = match reply {
        Ok(reply) => reply,
        Err(err) if err.code().is_some() => {
            // Said once per process: every connect of a user the server's
            // ACL keeps from INFO would say it again.
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                tracing::info!(target: "echomq::server_check", error = %err, "INFO refused (the server's ACL, or a managed service): the server's version and eviction policy are not checked");
            });
            return Ok(None);
        }
        Err(err) => return Err(err.into()),
    };
    let replies = node_replies(reply);
    let mut found: Option<ServerInfo> = None;
    for (node, reply) in replies {
        let Some(info) = reply.as_deref().and_then(ServerInfo::parse) else {
            continue;
        };
        let node = node.unwrap_or_default();
        info.check_version()
            .map_err(|err| match (err, node.is_empty()) {
                (Error::UnsupportedServer(why), false) => {
                    Error::UnsupportedServer(format!("{node}: {why}"))
                }
                (err, _) => err,
            })?;
        if info.evicts_queue_keys() {
            tracing::warn!(target: "echomq::server_check",
                node,
                maxmemory_policy = info.eviction.as_deref().unwrap_or_default(),
                "the server's eviction policy deletes any key under memory pressure, a queue's jobs included: set maxmemory-policy to noeviction so that no job is lost"
            );
        }
        if found.as_ref().is_none_or(|kept| !kept.evicts_queue_keys()) {
            found = Some(info);
        }
    }
    Ok(found)
}

/// Each node's `INFO` text: one server's reply, or a cluster's, which
/// answers with each node's reply by address. Also read by the
/// durability check (`durability.rs`).
pub(crate) fn node_replies(reply: Value) -> Vec<(Option<String>, Option<String>)> {
    match reply {
        Value::Map(nodes) => nodes
            .into_iter()
            .map(|(node, reply)| (text(node), text(reply)))
            .collect(),
        one => vec![(None, text(one))],
    }
}

/// The value of field `name` in `INFO` text.
pub(crate) fn info_field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
}

/// The text of a string reply.
fn text(value: Value) -> Option<String> {
    redis::from_redis_value(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(lines: &[&str]) -> ServerInfo {
        ServerInfo::parse(&lines.join("\r\n")).expect("a version")
    }

    #[test]
    fn valkey_reports_its_own_version_beside_the_redis_one_it_speaks() {
        let found = info(&[
            "# Server",
            "redis_version:7.2.4",
            "server_name:valkey",
            "valkey_version:9.1.2",
            "# Memory",
            "maxmemory_policy:noeviction",
        ]);
        assert_eq!(found.software, "valkey");
        assert_eq!(found.version, (9, 1, 2));
        assert_eq!(found.eviction.as_deref(), Some("noeviction"));
        assert!(found.check_version().is_ok());
        assert!(!found.evicts_queue_keys());
    }

    #[test]
    fn redis_7_0_is_taken_and_6_2_is_refused_naming_both() {
        assert!(info(&["redis_version:7.0.15"]).check_version().is_ok());
        let err = info(&["redis_version:6.2.14"]).check_version().unwrap_err();
        assert!(matches!(err, Error::UnsupportedServer(_)), "{err:?}");
        let text = err.to_string();
        assert!(text.contains("redis 6.2.14"), "{text}");
        assert!(text.contains("Redis ≥ 7.0"), "{text}");
        assert!(info(&["redis_version:5"]).check_version().is_err());
    }

    #[test]
    fn only_allkeys_policies_evict_a_queues_keys() {
        for (policy, evicts) in [
            ("noeviction", false),
            ("volatile-lru", false),
            ("volatile-ttl", false),
            ("allkeys-lru", true),
            ("allkeys-lfu", true),
            ("allkeys-random", true),
        ] {
            let found = info(&["redis_version:7.0.0", &format!("maxmemory_policy:{policy}")]);
            assert_eq!(found.evicts_queue_keys(), evicts, "{policy}");
        }
    }

    #[test]
    fn info_without_a_version_is_not_read() {
        assert_eq!(ServerInfo::parse("# Server\r\nuptime:3"), None);
        assert_eq!(ServerInfo::parse("redis_version:x.y"), None);
    }
}
