//! How the library's connections find a dead server out and reconnect:
//! the TCP settings of every socket (keepalive probes, a limit on
//! unacknowledged data) and the connection manager a connection to one
//! server runs under. The connector, the Sentinel link and the cancel
//! subscription all open their connections with these.

use crate::error::Result;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::io::tcp::TcpSettings;
use std::time::Duration;

/// How long sent data may go unacknowledged, and an idle connection
/// unanswered by keepalive probes, before the connection counts as dead (a
/// server host that vanished without closing it, a network partition): it
/// is closed, and the connection reconnects.
const DEAD_PEER: Duration = Duration::from_secs(30);

/// Keepalive probes from 10 s of silence, every 5 s, 4 of them.
fn keepalive() -> socket2::TcpKeepalive {
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(Duration::from_secs(10))
        .with_interval(Duration::from_secs(5));
    #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
    let keepalive = keepalive.with_retries(4);
    keepalive
}

/// The TCP settings of every connection: no Nagle delay (a request goes
/// out when written), [`keepalive`] probes, and [`DEAD_PEER`] as the limit
/// for unacknowledged data (`TCP_USER_TIMEOUT`, on Linux).
pub(crate) fn tcp_settings() -> TcpSettings {
    let settings = TcpSettings::default()
        .set_nodelay(true)
        .set_keepalive(keepalive());
    #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
    let settings = settings.set_user_timeout(DEAD_PEER);
    settings
}

/// Applies [`tcp_settings`] to a socket opened outside the client library
/// (the cancel subscription), as the library applies them to its own.
pub(crate) fn apply_tcp_settings(stream: &tokio::net::TcpStream) -> std::io::Result<()> {
    let settings = tcp_settings();
    stream.set_nodelay(settings.nodelay())?;
    let socket = socket2::SockRef::from(stream);
    if let Some(keepalive) = settings.keepalive() {
        socket.set_tcp_keepalive(keepalive)?;
    }
    #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
    socket.set_tcp_user_timeout(settings.user_timeout())?;
    Ok(())
}

/// A connection to one server that reconnects by itself when the server
/// closes it. No response timeout: a blocking wait or a long obliterate
/// chunk is not a failure. A (re)connection is tried three times, up to
/// 100 and then 200 ms apart, before the command waiting on it fails;
/// callers that loop (the worker) back off on their own for longer
/// outages.
pub(crate) async fn managed(client: &redis::Client) -> Result<ConnectionManager> {
    let config = ConnectionManagerConfig::new()
        .set_response_timeout(None)
        .set_connection_timeout(Some(Duration::from_secs(5)))
        .set_number_of_retries(2)
        .set_min_delay(Duration::from_millis(100))
        .set_max_delay(Duration::from_secs(1));
    Ok(ConnectionManager::new_with_config(client.clone(), config).await?)
}
