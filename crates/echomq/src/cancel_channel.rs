//! The queue's cancel channel, read with a sharded subscription.
//!
//! Every worker holds one `SSUBSCRIBE <base>:cancel` per queue. The ids
//! published there (a cancellation request, or a lease voided by REQUEUE,
//! REMOVE FORCE or OBLITERATE FORCE) reach the running handler's token
//! within milliseconds. The subscription speaks plain RESP2 over its own TCP
//! connection: the client library's subscriber has no sharded variant for a
//! single server, and on a cluster the connection goes straight to the node
//! that owns the queue's slot (a node that does not answers `MOVED`, and the
//! next one is tried).

use std::io;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedReadHalf;

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
pub(crate) struct CancelSubscription {
    reader: BufReader<OwnedReadHalf>,
    _writer: tokio::net::tcp::OwnedWriteHalf,
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

async fn read_line(reader: &mut BufReader<OwnedReadHalf>) -> io::Result<String> {
    let mut line = String::new();
    if reader.read_line(&mut line).await? == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "subscription closed",
        ));
    }
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

async fn read_value(reader: &mut BufReader<OwnedReadHalf>) -> io::Result<Resp> {
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

impl CancelSubscription {
    /// Subscribes to `channel` on the first of `urls` that serves it.
    pub async fn open(urls: &[String], channel: &str) -> io::Result<Self> {
        let mut last = broken("no server URL");
        for url in urls {
            match Self::open_one(url, channel).await {
                Ok(subscription) => return Ok(subscription),
                Err(err) => last = err,
            }
        }
        Err(last)
    }

    async fn open_one(url: &str, channel: &str) -> io::Result<Self> {
        use redis::IntoConnectionInfo;
        let info = url
            .into_connection_info()
            .map_err(|err| broken(err.to_string()))?;
        let redis::ConnectionAddr::Tcp(host, port) = info.addr() else {
            return Err(broken(format!(
                "{url}: the cancel subscription needs a plain TCP address"
            )));
        };
        let stream = TcpStream::connect((host.as_str(), *port)).await?;
        crate::link::apply_tcp_settings(&stream)?;
        let (read, mut write) = stream.into_split();
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
    pub async fn next_id(&mut self) -> io::Result<String> {
        loop {
            let Resp::Array(Some(items)) = read_value(&mut self.reader).await? else {
                continue;
            };
            if let [Resp::Bulk(Some(kind)), _, Resp::Bulk(Some(id))] = items.as_slice()
                && kind.as_slice() == b"smessage"
            {
                return String::from_utf8(id.clone()).map_err(|_| broken("id is not UTF-8"));
            }
        }
    }
}
