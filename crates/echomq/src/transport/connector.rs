//! The connector: one multiplexed connection (or cluster connection) that
//! reconnects by itself, the key prefix and the wire. Its handles on queues
//! (`Connector::queue`) are made in `src/registry.rs`, which needs the queue.

use crate::acl;
use crate::error::{Error, Result};
use crate::transport::discovery::ScanCache;
use crate::transport::dispatch::{Call, Dispatch, Wire};
use crate::transport::durability::{self, Durability};
use crate::transport::link::Link;
use crate::transport::outcome_channel::OutcomeChannels;
use crate::transport::reconnect::{managed, tcp_settings};
use crate::transport::sentinel::SentinelLink;
use crate::transport::server_check::{self, ServerInfo};
use crate::transport::tls::{TlsOptions, is_tls_url, refused_handshake};
use echomq_protocol::keyspace::DEFAULT_PREFIX;
use echomq_protocol::{Keyspace, QueueName, Transition};
use redis::cluster::ClusterClient;
use redis::{IntoConnectionInfo, Value};
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Where to connect: one server, the seed nodes of a cluster, or the
/// sentinels that name a primary.
#[derive(Debug, Clone)]
enum Target {
    Single(String),
    Cluster(Vec<String>),
    Sentinel {
        sentinels: Vec<String>,
        service: String,
        /// The primary's credentials (`ConnectorBuilder::primary_auth`).
        primary: redis::RedisConnectionInfo,
    },
}

impl Target {
    /// The user the connections authenticate as: the URL's (the first
    /// seed's on a cluster, the primary's credentials behind Sentinel), or
    /// `default`.
    fn user(&self) -> String {
        let named = match self {
            Target::Sentinel { primary, .. } => primary.username().map(str::to_string),
            _ => self.urls().first().and_then(|url| {
                url.as_str()
                    .into_connection_info()
                    .ok()
                    .and_then(|info| info.redis_settings().username().map(str::to_string))
            }),
        };
        named.unwrap_or_else(|| "default".to_string())
    }

    /// The URLs given: the one server, the cluster seeds, or the sentinels.
    fn urls(&self) -> &[String] {
        match self {
            Target::Single(url) => std::slice::from_ref(url),
            Target::Cluster(urls) => urls,
            Target::Sentinel { sentinels, .. } => sentinels,
        }
    }
}

/// How to connect; [`ConnectorBuilder::connect`] opens the connection.
#[derive(Debug, Clone)]
pub struct ConnectorBuilder {
    target: Target,
    prefix: String,
    wire: Wire,
    tls: Option<TlsOptions>,
    durability: Durability,
}

impl ConnectorBuilder {
    /// A builder for `target` with the defaults: prefix `emq`, wire 4, no
    /// TLS options, durability memory.
    fn to(target: Target) -> Self {
        Self {
            target,
            prefix: DEFAULT_PREFIX.to_string(),
            wire: Wire::Script,
            tls: None,
            durability: Durability::Memory,
        }
    }

    /// The key prefix (default `emq`): every key of queue `q` lives under `<prefix>:{q}`.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The wire (default [`Wire::Script`]).
    pub fn wire(mut self, wire: Wire) -> Self {
        self.wire = wire;
        self
    }

    /// How far an acknowledged write must reach before the client answers
    /// (default [`Durability::Memory`]); checked against the server at
    /// connect (docs/protocol.md, Durability).
    pub fn durability(mut self, level: Durability) -> Self {
        self.durability = level;
        self
    }

    /// The user and password of the primary Sentinel names (for a
    /// [`Connector::sentinel`] builder; the sentinels' own take theirs in
    /// their URLs). Ignored for other targets.
    pub fn primary_auth(mut self, username: Option<&str>, password: &str) -> Self {
        if let Target::Sentinel { primary, .. } = &mut self.target {
            let info = std::mem::take(primary).set_password(password);
            *primary = match username {
                Some(user) => info.set_username(user),
                None => info,
            };
        }
        self
    }

    /// TLS settings for `rediss://` servers beyond what the URL says (the
    /// CAs to trust, a client certificate). A `rediss://` URL without them
    /// trusts the system's roots.
    pub fn tls(mut self, tls: TlsOptions) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Opens the connection. It reads the server's `INFO`: a server older
    /// than Valkey 7.2 or Redis 7.0 fails with [`Error::UnsupportedServer`],
    /// and an eviction policy that may delete a queue's keys is warned of
    /// (see [`Connector::eviction_policy`]). On wire 6 it reads
    /// `EMQ.VERSION` and fails with [`Error::ModuleMissing`] when the
    /// server has no module.
    pub async fn connect(self) -> Result<Connector> {
        QueueName::new(self.prefix.clone()).map_err(|err| {
            Error::Name(echomq_protocol::NameError::Prefix {
                reason: err.to_string(),
            })
        })?;
        let subscription_tls = self.subscription_tls()?;
        let (clients, link) = open(&self.target, self.tls.as_ref()).await?;
        let server = server_check::inspect(&link).await?;
        let wait = durability::check(&link, self.durability, server.as_ref()).await?;
        let native = match self.wire {
            Wire::Script => HashSet::new(),
            Wire::Native => module_commands(&link).await?,
        };
        let wait_links = WaitLinks::open(self.durability, &self.target, self.tls.as_ref()).await?;
        Ok(Connector {
            inner: Arc::new(Inner {
                target: self.target.clone(),
                tls: self.tls,
                subscription_tls,
                server,
                clients,
                link,
                wait_links,
                outcome_channels: OutcomeChannels::default(),
                prefix: self.prefix,
                dispatch: Dispatch::new(self.wire, native, self.target.user(), wait),
                scanned: ScanCache::default(),
            }),
        })
    }
}

impl ConnectorBuilder {
    /// The TLS configuration of the sharded subscriptions' own sockets when
    /// the servers speak TLS; checks the [`TlsOptions`] given, which only
    /// `rediss://` servers take.
    fn subscription_tls(&self) -> Result<Option<Arc<rustls::ClientConfig>>> {
        let tls = self.target.urls().iter().any(|url| is_tls_url(url));
        match (&self.tls, tls) {
            (Some(_), false) => Err(Error::Tls(
                "TLS options were given but the server URL does not ask for TLS: use rediss://host:port".into(),
            )),
            (options, true) => Ok(Some(options.clone().unwrap_or_default().client_config()?)),
            (None, false) => Ok(None),
        }
    }
}

/// The clients and a connection to `target`, checked with a `PING`: a
/// server that asks for a password the URL does not give says so here, not
/// on the first transition. Errors of access are [`refused_access`]'s.
async fn open(target: &Target, tls: Option<&TlsOptions>) -> Result<(Clients, Link)> {
    let opened = async {
        let (clients, link) = match target {
            Target::Single(url) => {
                let info = with_tcp_settings(url.as_str())?;
                let client = match tls {
                    Some(tls) => redis::Client::build_with_tls(info, tls.certificates())?,
                    None => redis::Client::open(info)?,
                };
                let conn = managed(&client).await?;
                (Clients::Single(Box::new(client)), Link::Single(conn))
            }
            Target::Cluster(urls) => {
                let client = cluster_client(urls, tls)?;
                let conn = client.get_async_connection().await?;
                (Clients::Cluster(Box::new(client)), Link::Cluster(conn))
            }
            Target::Sentinel {
                sentinels,
                service,
                primary,
            } => {
                let link =
                    Arc::new(SentinelLink::connect(sentinels, service, primary.clone()).await?);
                (Clients::Sentinel(link.clone()), Link::Sentinel(link))
            }
        };
        redis::cmd("PING")
            .query_async::<Value>(&mut link.clone())
            .await?;
        Ok((clients, link))
    };
    match opened.await {
        Ok(opened) => Ok(opened),
        Err(err) => {
            let reason = match (&err, target) {
                (Error::Redis(redis), Target::Single(url))
                    if redis.kind() == redis::ErrorKind::AuthenticationFailed =>
                {
                    auth_refusal(url, tls).await
                }
                _ => None,
            };
            Err(refused_access(err, target, reason))
        }
    }
}

/// The server's own reason for refusing the user and password of `url`
/// (the handshake's error drops it): a connection without them sends the
/// same `AUTH`, and its refusal is returned (`WRONGPASS invalid
/// username-password pair…`, or `ERR AUTH <password> called without any
/// password configured…`). `None` when that connection cannot say.
async fn auth_refusal(url: &str, tls: Option<&TlsOptions>) -> Option<String> {
    let info = with_tcp_settings(url).ok()?;
    let settings = info.redis_settings();
    let password = settings.password()?.to_string();
    let username = settings.username().map(str::to_string);
    let info = info.set_redis_settings(redis::RedisConnectionInfo::default());
    let client = match tls {
        Some(tls) => redis::Client::build_with_tls(info, tls.certificates()).ok()?,
        None => redis::Client::open(info).ok()?,
    };
    let mut conn = client.get_multiplexed_async_connection().await.ok()?;
    let mut auth = redis::cmd("AUTH");
    auth.arg(username).arg(password);
    match auth.query_async::<Value>(&mut conn).await {
        Err(err) => Some(match (err.code(), err.detail()) {
            (Some(code), Some(detail)) => format!("{code} {detail}"),
            _ => err.to_string(),
        }),
        Ok(_) => None,
    }
}

/// `url` with the TCP settings of every connection ([`tcp_settings`]).
fn with_tcp_settings(url: &str) -> Result<redis::ConnectionInfo> {
    Ok(url.into_connection_info()?.set_tcp_settings(tcp_settings()))
}

fn cluster_client(urls: &[String], tls: Option<&TlsOptions>) -> Result<ClusterClient> {
    let builder = ClusterClient::builder(urls.iter().map(String::as_str))
        .tcp_settings(tcp_settings())
        .response_timeout(Duration::from_secs(60))
        .connection_timeout(Duration::from_secs(5));
    let builder = match tls {
        Some(tls) => builder.certs(tls.certificates()),
        None => builder,
    };
    Ok(builder.build()?)
}

/// [`Error::Auth`] for the server asking for credentials or refusing them
/// (a wrong password fails the handshake, a missing one the first command),
/// [`Error::Tls`] for a refused TLS handshake; any other error as it is.
///
/// `reason` is the server's refusal of the credentials given
/// ([`auth_refusal`]): it says a wrong password apart from a server that
/// asks for none.
fn refused_access(err: Error, target: &Target, reason: Option<String>) -> Error {
    if let Error::Redis(redis) = &err
        && let Some(tls) = refused_handshake(redis)
    {
        return tls;
    }
    match err {
        Error::Redis(err)
            if err.kind() == redis::ErrorKind::AuthenticationFailed
                || matches!(err.code(), Some("NOAUTH" | "WRONGPASS")) =>
        {
            let hint = match target {
                Target::Sentinel { .. } => {
                    "give the primary's password with ConnectorBuilder::primary_auth (emq: --primary-password); a sentinel's own goes in its URL"
                }
                _ if err.code() == Some("NOAUTH") => {
                    "the server asks for a password: give the password in the URL: redis://:password@host:port or redis://user:password@host:port"
                }
                _ => match &reason {
                    Some(reason) if reason.contains("without any password configured") => {
                        return Error::Auth(format!(
                            "{reason}; the server asks for no password: drop it from the URL"
                        ));
                    }
                    Some(reason) => {
                        return Error::Auth(format!(
                            "{reason}; the user or password in the URL is wrong"
                        ));
                    }
                    None => {
                        "give the password in the URL: redis://:password@host:port or redis://user:password@host:port"
                    }
                },
            };
            Error::Auth(format!("{err}; {hint}"))
        }
        other => other,
    }
}

/// Reads `EMQ.VERSION`: `[version, [names…]]`. A user the server's ACL
/// does not let run it is taken to be served every command of the registry
/// (said once per process): a command the module lacks then fails when
/// sent, rather than before.
async fn module_commands(link: &Link) -> Result<HashSet<String>> {
    let reply: Value = match redis::cmd("EMQ.VERSION")
        .query_async(&mut link.clone())
        .await
    {
        Ok(reply) => reply,
        Err(err) if acl::is_acl_refusal(&err) => {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                tracing::warn!(target: "echomq::connector", error = %err,
                    "the server's ACL refuses EMQ.VERSION: taking the module to serve every command of this client");
            });
            return Ok(Transition::ALL
                .iter()
                .flat_map(|t| t.control().commands().map(|(_, c)| c.native.to_string()))
                .collect());
        }
        Err(err) => return Err(Error::ModuleMissing(err.to_string())),
    };
    let names = match reply {
        Value::Array(mut parts) if parts.len() == 2 => parts.pop(),
        _ => None,
    };
    match names {
        Some(Value::Array(names)) => Ok(names
            .into_iter()
            .filter_map(|name| redis::from_redis_value::<String>(name).ok())
            .map(|name| name.to_ascii_uppercase())
            .collect()),
        other => Err(Error::ModuleMissing(format!(
            "EMQ.VERSION answered {other:?}"
        ))),
    }
}

enum Clients {
    Single(Box<redis::Client>),
    Cluster(Box<ClusterClient>),
    Sentinel(Arc<SentinelLink>),
}

struct Inner {
    target: Target,
    /// The TLS options given, for connections opened later.
    tls: Option<TlsOptions>,
    /// The sharded subscriptions' TLS configuration, for `rediss://` servers.
    subscription_tls: Option<Arc<rustls::ClientConfig>>,
    /// What the connect read of the server (of a cluster node).
    server: Option<ServerInfo>,
    clients: Clients,
    link: Link,
    /// The connections durable writes go out on, with their waits.
    wait_links: WaitLinks,
    /// The listeners of the queues with outcome waits open.
    outcome_channels: OutcomeChannels,
    prefix: String,
    dispatch: Dispatch,
    /// What the last walk of the keyspace for queues found (`discovery.rs`).
    scanned: ScanCache,
}

/// A connection to the server (or cluster) that every [`Queue`](crate::Queue) shares.
/// Cloning is cheap: clones share the connection.
///
/// ```no_run
/// # async fn run() -> echomq::Result<()> {
/// use echomq::Connector;
/// let emq = Connector::connect("redis://127.0.0.1:6379").await?;
/// let queue = emq.queue::<serde_json::Value>("mail")?;
/// queue.enqueue(serde_json::json!({"to": "ada@example.com"})).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Connector {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("prefix", &self.inner.prefix)
            .field("wire", &self.inner.dispatch.wire)
            .finish()
    }
}

impl Connector {
    /// A builder for one server at `url`: `redis://[user:password@]host:port`,
    /// `rediss://…` for TLS (see [`ConnectorBuilder::tls`]), or
    /// `unix:///path/to/socket` for a Unix socket.
    pub fn builder(url: impl Into<String>) -> ConnectorBuilder {
        ConnectorBuilder::to(Target::Single(url.into()))
    }

    /// A builder for a cluster, given some of its nodes' URLs; each
    /// transition is routed by its queue's slot.
    pub fn cluster<I, S>(urls: I) -> ConnectorBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ConnectorBuilder::to(Target::Cluster(urls.into_iter().map(Into::into).collect()))
    }

    /// A builder for the primary that the sentinels at `sentinels` name
    /// for `service` (`redis://host:26379`, a password in the URL for the
    /// sentinels themselves; [`ConnectorBuilder::primary_auth`] for the
    /// primary). After a failover the next call that meets the demoted
    /// primary (`READONLY`) or cannot reach it asks the sentinels again.
    pub fn sentinel<I, S>(sentinels: I, service: impl Into<String>) -> ConnectorBuilder
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ConnectorBuilder::to(Target::Sentinel {
            sentinels: sentinels.into_iter().map(Into::into).collect(),
            service: service.into(),
            primary: redis::RedisConnectionInfo::default(),
        })
    }

    /// Connects to one server with the defaults (prefix `emq`, wire 4).
    pub async fn connect(url: impl Into<String>) -> Result<Self> {
        Self::builder(url).connect().await
    }

    /// The server's `maxmemory-policy`, as read at connect (on a cluster:
    /// of a node whose policy may evict a queue's keys if any may, else of
    /// any node; `None` when the server refused `INFO`). An `allkeys-*`
    /// policy deletes any key under memory pressure, a queue's jobs
    /// included: the connect warns of it, per node (`tracing`);
    /// `noeviction` is the safe one.
    pub fn eviction_policy(&self) -> Option<&str> {
        self.inner.server.as_ref()?.eviction.as_deref()
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.inner.prefix
    }

    /// The wire, the module's commands and the user, for sending calls.
    pub(crate) fn dispatch(&self) -> &Dispatch {
        &self.inner.dispatch
    }

    /// The user the connections authenticate as (`default` when the URL
    /// names none): what [`Error::NotPermitted`] names.
    pub fn user(&self) -> &str {
        &self.inner.dispatch.user
    }

    /// The wire in use.
    pub fn wire(&self) -> Wire {
        self.inner.dispatch.wire
    }

    /// The durability level acknowledged writes wait for.
    pub fn durability(&self) -> Durability {
        self.inner.dispatch.durability()
    }

    /// Whether the bulk form of `transition` can be sent: always on wire 4;
    /// on wire 6 when the loaded module serves it.
    pub(crate) fn has_bulk(&self, transition: Transition) -> bool {
        self.inner.dispatch.has_bulk(transition)
    }

    /// Whether this connector talks to a cluster.
    pub fn is_cluster(&self) -> bool {
        matches!(self.inner.clients, Clients::Cluster(_))
    }

    /// Where the queues' servers are: the one server, the cluster seeds,
    /// or the primary the sentinels name now (the one named last when
    /// they cannot be asked).
    pub(crate) async fn node_addresses(&self) -> Vec<redis::ConnectionInfo> {
        match &self.inner.clients {
            Clients::Sentinel(link) => {
                let primary = link.ask().await.unwrap_or_else(|_| link.primary());
                vec![primary.get_connection_info().clone()]
            }
            _ => self
                .inner
                .target
                .urls()
                .iter()
                .filter_map(|url| url.as_str().into_connection_info().ok())
                .collect(),
        }
    }

    /// Whether the connector finds its primary through Sentinel.
    pub(crate) fn behind_sentinel(&self) -> bool {
        matches!(self.inner.clients, Clients::Sentinel(_))
    }

    /// Whether the sentinels now name a primary other than the servers of
    /// `subscribed` (addresses as [`redis::ConnectionAddr`] shows them):
    /// what a subscription opened on a primary a failover demoted must
    /// learn. `false` when not behind Sentinel or no sentinel answers.
    pub(crate) async fn primary_moved(&self, subscribed: &[String]) -> bool {
        let Clients::Sentinel(link) = &self.inner.clients else {
            return false;
        };
        match link.ask().await {
            Ok(primary) => {
                let now = primary.get_connection_info().addr().to_string();
                !subscribed.contains(&now)
            }
            Err(_) => false,
        }
    }

    /// The TLS configuration of sockets the client library does not open
    /// (the sharded subscriptions); `None` for servers without TLS.
    pub(crate) fn subscription_tls(&self) -> Option<Arc<rustls::ClientConfig>> {
        self.inner.subscription_tls.clone()
    }

    /// The shared connection.
    pub(crate) fn link(&self) -> &Link {
        &self.inner.link
    }

    /// The listeners of the queues with outcome waits open.
    pub(crate) fn outcome_channels(&self) -> &OutcomeChannels {
        &self.inner.outcome_channels
    }

    /// What the last walk of the keyspace for queues found.
    pub(crate) fn scan_cache(&self) -> &ScanCache {
        &self.inner.scanned
    }

    /// A connector to the same servers, with the same settings, over a
    /// connection of its own: a worker's claims and outcomes then never
    /// wait behind what other users of this connector pipelined (a bulk
    /// enqueue of thousands of jobs), nor theirs behind the worker's.
    pub(crate) async fn own_connection(&self) -> Result<Connector> {
        let inner = &self.inner;
        let (clients, link) = open(&inner.target, inner.tls.as_ref()).await?;
        let level = inner.dispatch.durability();
        let wait_links = WaitLinks::open(level, &inner.target, inner.tls.as_ref()).await?;
        Ok(Connector {
            inner: Arc::new(Inner {
                target: inner.target.clone(),
                tls: inner.tls.clone(),
                subscription_tls: inner.subscription_tls.clone(),
                server: inner.server.clone(),
                clients,
                link,
                wait_links,
                outcome_channels: OutcomeChannels::default(),
                prefix: inner.prefix.clone(),
                dispatch: inner.dispatch.clone(),
                scanned: ScanCache::default(),
            }),
        })
    }

    /// A new connection of its own, for blocking commands that must not
    /// hold up the shared one.
    pub(crate) async fn dedicated_link(&self) -> Result<Link> {
        Ok(match &self.inner.clients {
            Clients::Single(client) => Link::Single(managed(client).await?),
            Clients::Cluster(client) => Link::Cluster(client.get_async_connection().await?),
            Clients::Sentinel(link) => Link::Single(managed(&link.ask().await?).await?),
        })
    }

    pub(crate) async fn call(&self, keys: &Keyspace, call: &Call) -> Result<Value> {
        let link = self.link_for(std::slice::from_ref(call));
        self.inner.dispatch.call(link, keys, call).await
    }

    /// The connection `calls` go out on: for calls that wait for the
    /// durability level, the next of the [`WaitLinks`] if there are any;
    /// else the shared one.
    fn link_for(&self, calls: &[Call]) -> &Link {
        let inner = &self.inner;
        if calls.iter().any(|call| inner.dispatch.waits_for(call)) {
            inner.wait_links.next().unwrap_or(&inner.link)
        } else {
            &inner.link
        }
    }

    /// A part of a reply (an entry of an array) as [`Connector::call`]
    /// answers a whole one: an error entry is the refusal of `call`.
    pub(crate) fn nested(&self, keys: &Keyspace, call: &Call, part: Value) -> Result<Value> {
        self.inner.dispatch.nested(keys, call, part)
    }

    pub(crate) async fn call_many(
        &self,
        keys: &Keyspace,
        calls: &[Call],
    ) -> Result<Vec<Result<Value>>> {
        let link = self.link_for(calls);
        self.inner.dispatch.call_many(link, keys, calls).await
    }
}

/// How many connections of its own a connector sends durable writes on.
///
/// A wait (`WAIT`, `WAITAOF`) holds up the connection it is sent on until
/// it is answered: the server reads nothing more from that client
/// meanwhile. So durable writes do not go out on the shared connection,
/// where claims, heartbeats and reads would queue behind every wait, but on
/// connections of their own, taken in turns: while one waits, the next
/// durable write goes out on another (a worker's writer keeps two batches
/// of outcomes in flight, each on its own connection, their waits
/// overlapping).
///
/// Only `replicas:N` has them: its wait lasts a round trip to the
/// replicas. `local`'s `WAITAOF 1 0` stays on the shared connection:
/// with `appendfsync always` the server answers it in the turn of the
/// write (0.83 of memory's c50 jobs/s on the shared connection, 0.80 on
/// connections of their own), and with `everysec` connections of their
/// own made it slower (902 jobs/s against 6,992, cause not found).
const WAIT_LINKS: usize = 2;

/// The connections durable writes go out on, taken in turns (none below
/// `replicas:N`).
struct WaitLinks {
    links: Vec<Link>,
    turn: AtomicUsize,
}

impl WaitLinks {
    /// [`WAIT_LINKS`] connections to `target` at `replicas:N`, else none.
    async fn open(level: Durability, target: &Target, tls: Option<&TlsOptions>) -> Result<Self> {
        let mut links = Vec::new();
        if matches!(level, Durability::Replicas { .. }) {
            for _ in 0..WAIT_LINKS {
                links.push(open(target, tls).await?.1);
            }
        }
        Ok(Self {
            links,
            turn: AtomicUsize::new(0),
        })
    }

    /// The connection whose turn it is; `None` when there are none.
    fn next(&self) -> Option<&Link> {
        let turn = self.turn.fetch_add(1, Ordering::Relaxed);
        self.links.get(turn % self.links.len().max(1))
    }
}
