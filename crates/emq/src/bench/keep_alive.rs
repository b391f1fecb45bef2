//! One HTTP/1.1 keep-alive connection of `emq bench --http`: requests sent
//! one after another on the same socket, each answer read whole by its
//! `Content-Length` (the API answers every request with one). Small on
//! purpose: the bench measures the server, and this adds no dependency.

use crate::error::CliError;
use std::net::SocketAddr;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// One open connection to the API.
pub(super) struct KeepAlive {
    addr: SocketAddr,
    stream: BufReader<TcpStream>,
}

/// A whole answer: its status and body.
pub(super) struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

impl KeepAlive {
    pub(super) async fn open(addr: SocketAddr) -> Result<Self, CliError> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Self {
            addr,
            stream: BufReader::new(stream),
        })
    }

    /// `POST path` with a JSON `body`; the answer, whatever its status.
    pub(super) async fn post(&mut self, path: &str, body: &[u8]) -> Result<Answer, CliError> {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        let socket = self.stream.get_mut();
        socket.write_all(head.as_bytes()).await?;
        socket.write_all(body).await?;
        self.read_answer(path).await
    }

    /// `POST path` that must answer `status`: its body.
    pub(super) async fn post_expect(
        &mut self,
        path: &str,
        body: &[u8],
        status: u16,
    ) -> Result<Vec<u8>, CliError> {
        let answer = self.post(path, body).await?;
        if answer.status != status {
            return Err(CliError::usage(format!(
                "bench: POST {path} answered {} ({}), not {status}",
                answer.status,
                String::from_utf8_lossy(&answer.body)
            )));
        }
        Ok(answer.body)
    }

    async fn read_answer(&mut self, path: &str) -> Result<Answer, CliError> {
        let broken = |what: &str| CliError::usage(format!("bench: POST {path}: {what}"));
        let mut line = String::new();
        self.stream.read_line(&mut line).await?;
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse::<u16>().ok())
            .ok_or_else(|| broken(&format!("no status line ({line:?})")))?;
        let mut length = None;
        loop {
            line.clear();
            if self.stream.read_line(&mut line).await? == 0 {
                return Err(broken("the connection closed mid-answer"));
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse::<usize>().ok();
                } else if name.eq_ignore_ascii_case("transfer-encoding") {
                    return Err(broken("a chunked answer (the API sends lengths)"));
                }
            }
        }
        let mut body = vec![0; length.ok_or_else(|| broken("no Content-Length"))?];
        self.stream.read_exact(&mut body).await?;
        Ok(Answer { status, body })
    }
}
