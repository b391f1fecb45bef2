//! A sharded subscription to one of a queue's channels: the worker's to
//! the cancel channel, a connector's to the outcome channel.
//!
//! Every worker holds one `SSUBSCRIBE <base>:cancel` per queue. The ids
//! published there (a cancellation request, or a lease voided by REQUEUE,
//! REMOVE FORCE or OBLITERATE FORCE) reach the running handler's token
//! within milliseconds. The subscription speaks plain RESP2 over its own TCP
//! connection: the client library's subscriber has no sharded variant for a
//! single server, and on a cluster the connection goes straight to the node
//! that owns the queue's slot (a node that does not answers `MOVED`, and the
//! next one is tried). It goes wherever the queue's connection goes: TCP,
//! TLS over TCP (`rediss://`, with the connector's TLS settings), or a Unix
//! socket.

use std::io;
use std::sync::Arc;
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, ReadHalf,
    WriteHalf,
};
use tokio::net::TcpStream;

/// A byte stream to the server: TCP, TLS over TCP, or a Unix socket.
trait Transport: AsyncRead + AsyncWrite + Unpin + Send {}
impl<S: AsyncRead + AsyncWrite + Unpin + Send> Transport for S {}

type Reader = BufReader<ReadHalf<Box<dyn Transport>>>;

/// One RESP2 value.
#[derive(Debug)]
enum Resp {
    Simple,
    Error(String),
    Int,
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Resp>>),
}

/// A live subscription to one cancel channel.
pub(crate) struct ShardSubscription {
    reader: Reader,
    _writer: WriteHalf<Box<dyn Transport>>,
}

fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend(format!("${}\r\n", arg.len()).into_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn broken(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

async fn read_line(reader: &mut Reader) -> io::Result<String> {
    let mut line = String::new();
    if reader.read_line(&mut line).await? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "subscription closed",
        ));
    }
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

async fn read_value(reader: &mut Reader) -> io::Result<Resp> {
    let line = read_line(reader).await?;
    let (kind, rest) = line
        .split_at_checked(1)
        .ok_or_else(|| broken("empty reply line"))?;
    let number = || {
        rest.parse::<i64>()
            .map_err(|_| broken(format!("bad length {rest:?}")))
    };
    Ok(match kind {
        "+" => Resp::Simple,
        "-" => Resp::Error(rest.to_string()),
        ":" => {
            number()?;
            Resp::Int
        }
        "$" => match number()? {
            -1 => Resp::Bulk(None),
            len => {
                let mut data = vec![0; len as usize + 2];
                reader.read_exact(&mut data).await?;
                data.truncate(len as usize);
                Resp::Bulk(Some(data))
            }
        },
        "*" => match number()? {
            -1 => Resp::Array(None),
            len => {
                let mut items = Vec::with_capacity(len as usize);
                for _ in 0..len {
                    items.push(Box::pin(read_value(reader)).await?);
                }
                Resp::Array(Some(items))
            }
        },
        other => return Err(broken(format!("unknown reply type {other:?}"))),
    })
}

impl ShardSubscription {
    /// Subscribes to `channel` on the first of `servers` that serves it;
    /// `tls` configures the `rediss://` ones.
    pub(crate) async fn open(
        servers: &[redis::ConnectionInfo],
        channel: &str,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> io::Result<Self> {
        let mut last = broken("no server to subscribe on");
        for info in servers {
            match Self::open_one(info, channel, tls.clone()).await {
                Ok(subscription) => return Ok(subscription),
                Err(err) => last = err,
            }
        }
        Err(last)
    }

    async fn open_one(
        info: &redis::ConnectionInfo,
        channel: &str,
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> io::Result<Self> {
        let url = info.addr().to_string();
        let stream = connect(info.addr(), tls).await?;
        let (read, mut write) = tokio::io::split(stream);
        let mut reader = BufReader::new(read);
        let settings = info.redis_settings();
        if let Some(password) = settings.password() {
            let user = settings.username().unwrap_or("default");
            write
                .write_all(&encode(&[b"AUTH", user.as_bytes(), password.as_bytes()]))
                .await?;
            if let Resp::Error(err) = read_value(&mut reader).await? {
                return Err(broken(format!("AUTH: {err}")));
            }
        }
        write
            .write_all(&encode(&[b"SSUBSCRIBE", channel.as_bytes()]))
            .await?;
        match read_value(&mut reader).await? {
            Resp::Array(Some(_)) => Ok(Self {
                reader,
                _writer: write,
            }),
            Resp::Error(err) => Err(broken(format!("SSUBSCRIBE on {url}: {err}"))),
            other => Err(broken(format!("SSUBSCRIBE on {url}: unexpected {other:?}"))),
        }
    }

    /// The next id published on the channel.
    pub(crate) async fn next_id(&mut self) -> io::Result<String> {
        let id = self.next_message().await?;
        String::from_utf8(id).map_err(|_| broken("id is not UTF-8"))
    }

    /// Waits until the subscription has bytes to read, or its connection
    /// ended. Cancel-safe, unlike [`ShardSubscription::next_message`]: a
    /// wait cut short (a timeout) loses nothing of a message half read.
    pub(crate) async fn readable(&mut self) -> io::Result<()> {
        self.reader.fill_buf().await.map(|_| ())
    }

    /// Sends `PING` and returns every message read before its answer: the
    /// server answers it after whatever it published to this connection
    /// before reading it, so once this returns, no message published
    /// before the call is still on its way. A `PING` the server's ACL
    /// refuses answers in turn too.
    pub(crate) async fn messages_before_now(&mut self) -> io::Result<Vec<Vec<u8>>> {
        self._writer.write_all(&encode(&[b"PING"])).await?;
        let mut messages = Vec::new();
        loop {
            match read_value(&mut self.reader).await? {
                Resp::Array(Some(items)) => match items.as_slice() {
                    [Resp::Bulk(Some(kind)), _, Resp::Bulk(Some(message))]
                        if kind.as_slice() == b"smessage" =>
                    {
                        messages.push(message.clone());
                    }
                    [Resp::Bulk(Some(kind)), ..] if kind.as_slice() == b"pong" => {
                        return Ok(messages);
                    }
                    [Resp::Bulk(Some(kind)), ..] if kind.as_slice() == b"sunsubscribe" => {
                        return Err(io::Error::new(
                            io::ErrorKind::ConnectionReset,
                            "the server ended the subscription (its node no longer serves the slot)",
                        ));
                    }
                    _ => {}
                },
                Resp::Simple | Resp::Error(_) => return Ok(messages),
                _ => {}
            }
        }
    }

    /// The next message published on the channel.
    pub(crate) async fn next_message(&mut self) -> io::Result<Vec<u8>> {
        loop {
            let Resp::Array(Some(items)) = read_value(&mut self.reader).await? else {
                continue;
            };
            match items.as_slice() {
                [Resp::Bulk(Some(kind)), _, Resp::Bulk(Some(message))]
                    if kind.as_slice() == b"smessage" =>
                {
                    return Ok(message.clone());
                }
                // The server ended the subscription itself: the node no
                // longer serves the channel's slot (a failover made it a
                // replica, or the slot moved). Subscribe again, where the
                // slot is served now.
                [Resp::Bulk(Some(kind)), ..] if kind.as_slice() == b"sunsubscribe" => {
                    return Err(io::Error::new(
                        io::ErrorKind::ConnectionReset,
                        "the server ended the subscription (its node no longer serves the slot)",
                    ));
                }
                _ => {}
            }
        }
    }
}

/// Opens the byte stream to `addr`, with the TCP settings of every
/// connection on a TCP socket.
async fn connect(
    addr: &redis::ConnectionAddr,
    tls: Option<Arc<rustls::ClientConfig>>,
) -> io::Result<Box<dyn Transport>> {
    match addr {
        redis::ConnectionAddr::Tcp(host, port) => Ok(Box::new(tcp(host, *port).await?)),
        redis::ConnectionAddr::TcpTls { host, port, .. } => {
            let config = tls.ok_or_else(|| broken(format!("{addr}: no TLS configuration")))?;
            let name = rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|err| broken(format!("{addr}: {err}")))?;
            let stream = tcp(host, *port).await?;
            let stream = tokio_rustls::TlsConnector::from(config)
                .connect(name, stream)
                .await?;
            Ok(Box::new(stream))
        }
        #[cfg(unix)]
        redis::ConnectionAddr::Unix(path) => {
            Ok(Box::new(tokio::net::UnixStream::connect(path).await?))
        }
        #[allow(unreachable_patterns)]
        other => Err(broken(format!(
            "{addr}: a sharded subscription cannot reach {other:?}"
        ))),
    }
}

async fn tcp(host: &str, port: u16) -> io::Result<TcpStream> {
    let stream = TcpStream::connect((host, port)).await?;
    crate::transport::reconnect::apply_tcp_settings(&stream)?;
    Ok(stream)
}
