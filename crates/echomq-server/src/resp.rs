//! The hand-written RESP the readiness probe and `SHUTDOWN` speak over a
//! [`TcpStream`]: enough for `PING`, `INFO server` and `SHUTDOWN`, and no
//! client library.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

/// A connection to 127.0.0.1:`port` with short timeouts.
pub(crate) fn connect(port: u16) -> io::Result<TcpStream> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500))?;
    stream.set_read_timeout(Some(Duration::from_secs(1)))?;
    stream.set_write_timeout(Some(Duration::from_secs(1)))?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// `args` as a RESP array of bulk strings.
pub(crate) fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n{arg}\r\n", arg.len()).as_bytes());
    }
    out
}

/// One reply line without its `\r\n`; `None` on EOF.
pub(crate) fn read_line(reader: &mut impl BufRead) -> io::Result<Option<String>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(Some(line.trim_end_matches(['\r', '\n']).to_owned()))
}

/// An I/O error saying the server's reply was not what was expected.
pub(crate) fn protocol_error(what: impl fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// `PING` then `INFO server`: the pid of the server that answered `PONG`.
pub(crate) fn probe(port: u16) -> io::Result<u32> {
    let mut stream = connect(port)?;
    let mut request = encode(&["PING"]);
    request.extend(encode(&["INFO", "server"]));
    stream.write_all(&request)?;
    let mut reader = BufReader::new(stream);
    match read_line(&mut reader)? {
        Some(line) if line == "+PONG" => {}
        other => return Err(protocol_error(format!("PING answered {other:?}"))),
    }
    let header = read_line(&mut reader)?.ok_or_else(|| protocol_error("EOF after PONG"))?;
    let len: usize = header
        .strip_prefix('$')
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| protocol_error(format!("INFO answered {header:?}")))?;
    let mut body = vec![0; len + 2];
    reader.read_exact(&mut body)?;
    String::from_utf8_lossy(&body)
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .and_then(|pid| pid.trim().parse().ok())
        .ok_or_else(|| protocol_error("INFO server has no process_id"))
}

/// Send `SHUTDOWN <modifier>`. `Ok(None)`: the server closed the connection
/// (it is going down); `Ok(Some(err))`: it refused with an error reply.
pub(crate) fn send_shutdown(
    port: u16,
    modifier: &str,
    timeout: Duration,
) -> io::Result<Option<String>> {
    let mut stream = connect(port)?;
    stream.write_all(&encode(&["SHUTDOWN", modifier]))?;
    // A successful shutdown closes the connection without a reply; a SAVE
    // can take a while, so allow more time than the default read timeout.
    // On timeout the caller's bounded wait (and kill) takes over.
    stream.set_read_timeout(Some(timeout))?;
    let mut reader = BufReader::new(stream);
    match read_line(&mut reader) {
        Ok(None) => Ok(None),
        Ok(Some(line)) if line.starts_with('-') => {
            Ok(Some(line.trim_start_matches('-').to_owned()))
        }
        Ok(Some(_)) => Ok(None),
        // Reset by the exiting server: it is going down.
        Err(e) if e.kind() == io::ErrorKind::ConnectionReset => Ok(None),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}
