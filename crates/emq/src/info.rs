//! Reading the server itself over a plain connection: its version and the
//! CPU time it has used (`INFO`).

use crate::error::CliError;
use echomq::TlsOptions;
use redis::aio::MultiplexedConnection;

/// A plain connection to `url` (for `INFO`), apart from the queue's; `tls`
/// as for the queue's, for a `rediss://` server.
pub async fn plain_connection(
    url: &str,
    tls: Option<&TlsOptions>,
) -> Result<MultiplexedConnection, CliError> {
    let client = match tls {
        Some(tls) => redis::Client::build_with_tls(url, tls.certificates()),
        None => redis::Client::open(url),
    }
    .map_err(|err| CliError::from_redis(url, &err))?;
    client
        .get_multiplexed_async_connection()
        .await
        .map_err(|err| CliError::from_redis(url, &err))
}

/// One `INFO` section as text.
pub async fn info(conn: &mut MultiplexedConnection, section: &str) -> Result<String, CliError> {
    redis::cmd("INFO")
        .arg(section)
        .query_async::<String>(conn)
        .await
        .map_err(|err| CliError::usage(format!("INFO {section}: {err}")))
}

/// The value of `name:value` in `INFO` text.
pub fn field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
}

/// `Valkey 9.1.2` or `Redis 7.0.15`, from `INFO server`.
pub fn version_of(info: &str) -> String {
    if let Some(version) = field(info, "valkey_version") {
        return format!("Valkey {version}");
    }
    let name = match field(info, "server_name") {
        Some(name) if name.eq_ignore_ascii_case("valkey") => "Valkey",
        _ => "Redis",
    };
    match field(info, "redis_version") {
        Some(version) => format!("{name} {version}"),
        None => format!("{name} (unknown version)"),
    }
}

/// The server's version, e.g. `Valkey 9.1.2`.
pub async fn server_version(conn: &mut MultiplexedConnection) -> Result<String, CliError> {
    Ok(version_of(&info(conn, "server").await?))
}

/// CPU seconds (system + user) used by the server's main process so far,
/// from `INFO cpu`.
pub async fn cpu_seconds(conn: &mut MultiplexedConnection) -> Result<f64, CliError> {
    let text = info(conn, "cpu").await?;
    cpu_of(&text).ok_or_else(|| CliError::usage("INFO cpu has no used_cpu_sys / used_cpu_user"))
}

/// The server's memory without its clients' (bytes): `used_memory` of
/// `INFO memory` less the `tot-mem` of every client in `CLIENT LIST`, both
/// read in one `MULTI`. A client's buffers come and go with the commands it
/// sent (the query buffer of a 270 KB `FUNCTION LOAD` is freed by the
/// server's cron a moment later), so `used_memory` alone can read lower
/// after writing a few hundred kilobytes than before.
pub async fn memory_without_clients(conn: &mut MultiplexedConnection) -> Result<u64, CliError> {
    let (text, clients): (String, String) = redis::pipe()
        .atomic()
        .cmd("INFO")
        .arg("memory")
        .cmd("CLIENT")
        .arg("LIST")
        .query_async(conn)
        .await
        .map_err(|err| CliError::usage(format!("INFO memory, CLIENT LIST: {err}")))?;
    let used: u64 = field(&text, "used_memory")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| CliError::usage("INFO memory has no used_memory"))?;
    let held = clients_memory(&clients)
        .ok_or_else(|| CliError::usage("CLIENT LIST has a client without tot-mem"))?;
    Ok(used.saturating_sub(held))
}

/// The sum of `tot-mem` over the lines of `CLIENT LIST`.
fn clients_memory(list: &str) -> Option<u64> {
    list.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            line.split_whitespace()
                .find_map(|pair| pair.strip_prefix("tot-mem="))
                .and_then(|value| value.parse::<u64>().ok())
        })
        .sum()
}

/// Whether any fixed key of the queue `keys` exists (`EXISTS` over them
/// all: they share one slot).
pub async fn queue_exists(
    conn: &mut MultiplexedConnection,
    keys: &echomq::protocol::Keyspace,
) -> Result<bool, CliError> {
    let fixed: Vec<String> = echomq::protocol::QueueKey::ALL[1..]
        .iter()
        .map(|key| keys.key(*key))
        .collect();
    let found: u64 = redis::cmd("EXISTS")
        .arg(&fixed)
        .query_async(conn)
        .await
        .map_err(|err| CliError::usage(format!("EXISTS of a bench queue's keys: {err}")))?;
    Ok(found > 0)
}

/// `used_cpu_sys + used_cpu_user` of `INFO cpu` text.
pub fn cpu_of(info: &str) -> Option<f64> {
    let get = |name| field(info, name).and_then(|v| v.parse::<f64>().ok());
    Some(get("used_cpu_sys")? + get("used_cpu_user")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_versions() {
        let valkey =
            "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n";
        assert_eq!(version_of(valkey), "Valkey 9.1.2");
        let redis = "# Server\r\nredis_version:7.0.15\r\n";
        assert_eq!(version_of(redis), "Redis 7.0.15");
    }

    #[test]
    fn reads_cpu() {
        let text = "# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\nused_cpu_sys_children:9.0\r\n";
        assert_eq!(cpu_of(text), Some(3.75));
        assert_eq!(cpu_of("# CPU\r\n"), None);
    }

    #[test]
    fn sums_the_memory_of_every_client() {
        let list = "id=3 addr=127.0.0.1:1 qbuf=0 tot-mem=17002 events=r\n\
                    id=4 addr=127.0.0.1:2 qbuf=270000 tot-mem=287000 events=r\n";
        assert_eq!(clients_memory(list), Some(304_002));
        assert_eq!(clients_memory("id=3 addr=127.0.0.1:1 events=r\n"), None);
    }
}
