//! Raw sockets against a server under test: what a slow or stalled
//! client sees.

use std::io::{ErrorKind, Read};
use std::net::TcpStream;

/// Reads until the server closes the connection (a reset counts as
/// closed); what it sent. Panics when the server keeps the connection
/// open past the stream's read timeout.
pub fn read_to_close(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    match stream.read_to_end(&mut answer) {
        Ok(_) => {}
        Err(err) if err.kind() == ErrorKind::ConnectionReset => {}
        Err(err) => panic!("the server kept the connection open past the read timeout: {err}"),
    }
    String::from_utf8_lossy(&answer).into_owned()
}
