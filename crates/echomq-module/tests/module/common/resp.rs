//! A byte-exact RESP2 connection: error and status lines are kept as the
//! bytes the server sent (the `redis` crate requires them to be UTF-8 and
//! drops the connection otherwise), so a reply that differs in one byte
//! shows as a difference, not as a broken pipe.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    Status(Vec<u8>),
    Error(Vec<u8>),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// Whether this is an error reply.
    pub(crate) fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    /// The first word of an error reply.
    pub(crate) fn code(&self) -> Option<String> {
        match self {
            Reply::Error(line) => Some(
                String::from_utf8_lossy(line.split(|b| *b == b' ').next().unwrap_or_default())
                    .into_owned(),
            ),
            _ => None,
        }
    }
}

/// A plain connection to one server.
pub(crate) struct RawConn {
    reader: BufReader<TcpStream>,
}

impl RawConn {
    /// Connects to 127.0.0.1:`port`; a reply that takes over 30 s is a failure.
    pub(crate) fn open(port: u16) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("connecting to port {port}: {e}"));
        stream.set_nodelay(true).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Self {
            reader: BufReader::new(stream),
        }
    }

    /// Sends commands without reading their replies.
    pub(crate) fn send(&mut self, cmds: &[redis::Cmd]) {
        let mut packed = Vec::new();
        for cmd in cmds {
            packed.extend(cmd.get_packed_command());
        }
        self.reader
            .get_mut()
            .write_all(&packed)
            .unwrap_or_else(|e| panic!("sending {} commands: {e}", cmds.len()));
    }

    /// Reads the next reply.
    pub(crate) fn read(&mut self) -> Reply {
        read_reply(&mut self.reader).unwrap_or_else(|e| panic!("reading a reply: {e}"))
    }

    /// Sends one command and reads its reply.
    pub(crate) fn call(&mut self, cmd: &redis::Cmd) -> Reply {
        self.send(std::slice::from_ref(cmd));
        self.read()
    }

    /// Sends commands in one pipeline and reads every reply.
    pub(crate) fn pipeline(&mut self, cmds: &[redis::Cmd]) -> Vec<Reply> {
        self.send(cmds);
        cmds.iter().map(|_| self.read()).collect()
    }
}

fn line(reader: &mut BufReader<TcpStream>) -> std::io::Result<Vec<u8>> {
    let mut line = Vec::new();
    reader.read_until(b'\n', &mut line)?;
    if !line.ends_with(b"\r\n") {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("a reply line without CRLF: {line:?}"),
        ));
    }
    line.truncate(line.len() - 2);
    Ok(line)
}

fn number(bytes: &[u8]) -> std::io::Result<i64> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("not a number: {bytes:?}"),
            )
        })
}

fn read_reply(reader: &mut BufReader<TcpStream>) -> std::io::Result<Reply> {
    let line = line(reader)?;
    let (kind, rest) = line.split_first().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, "an empty reply line")
    })?;
    Ok(match kind {
        b'+' => Reply::Status(rest.to_vec()),
        b'-' => Reply::Error(rest.to_vec()),
        b':' => Reply::Int(number(rest)?),
        b'$' => match number(rest)? {
            n if n < 0 => Reply::Bulk(None),
            n => {
                let mut data = vec![0; n as usize + 2];
                reader.read_exact(&mut data)?;
                data.truncate(n as usize);
                Reply::Bulk(Some(data))
            }
        },
        b'*' => match number(rest)? {
            n if n < 0 => Reply::Array(None),
            n => {
                let mut items = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    items.push(read_reply(reader)?);
                }
                Reply::Array(Some(items))
            }
        },
        other => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("unknown reply type {:?}", *other as char),
            ));
        }
    })
}
