//! A primary found through Redis/Valkey Sentinel, and found again after a
//! failover.
//!
//! The connection to the primary is an ordinary reconnecting one; what
//! Sentinel adds is where it goes. When the primary answers `READONLY` (a
//! failover demoted it) or cannot be reached, the next call asks the
//! sentinels for the primary again and opens a connection there.

use crate::error::Result;
use crate::transport::reconnect::managed;
use redis::aio::ConnectionManager;
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use redis::{Client, RedisConnectionInfo};
use std::sync::RwLock;
use tokio::sync::Mutex;

/// Where a Sentinel-managed primary is, and the connection to it.
pub(crate) struct SentinelLink {
    sentinels: Mutex<SentinelClient>,
    /// The primary's client (its address and credentials) and the shared
    /// connection to it.
    current: RwLock<(Client, ConnectionManager)>,
}

impl SentinelLink {
    /// Asks `sentinels` for the primary of `service` and connects to it;
    /// `master` holds the primary's credentials.
    pub(crate) async fn connect(
        sentinels: &[String],
        service: &str,
        master: RedisConnectionInfo,
    ) -> Result<Self> {
        let node = SentinelNodeConnectionInfo::default().set_redis_connection_info(master);
        let mut client = SentinelClient::build(
            sentinels.iter().map(String::as_str).collect(),
            service,
            Some(node),
            SentinelServerType::Master,
        )?;
        let primary = client.async_get_client().await?;
        let conn = managed(&primary).await?;
        Ok(Self {
            sentinels: Mutex::new(client),
            current: RwLock::new((primary, conn)),
        })
    }

    /// The shared connection to the primary as last found.
    pub(crate) fn connection(&self) -> ConnectionManager {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .1
            .clone()
    }

    /// The primary's client as last found.
    pub(crate) fn primary(&self) -> Client {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone()
    }

    /// The primary's client as the sentinels name it now (for connections
    /// of their own: a blocking wait, the cancel subscription).
    pub(crate) async fn ask(&self) -> Result<Client> {
        Ok(self.sentinels.lock().await.async_get_client().await?)
    }

    /// Asks the sentinels for the primary again and connects there; the
    /// connection to the old one is dropped. Calls in flight on it finish
    /// or fail as they would.
    pub(crate) async fn find_primary(&self) -> Result<()> {
        let primary = self.ask().await?;
        let conn = managed(&primary).await?;
        let address = primary.get_connection_info().addr().to_string();
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = (primary, conn);
        tracing::info!(target: "echomq::sentinel", primary = %address, "connected to the primary Sentinel names");
        Ok(())
    }
}
