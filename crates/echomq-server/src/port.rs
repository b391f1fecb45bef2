//! Free loopback ports, each handed out once per process.

use std::collections::HashSet;
use std::io;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::{Mutex, OnceLock};

/// Ports handed out by [`free_loopback_port`] in this process, never handed out twice.
fn handed_out() -> &'static Mutex<HashSet<u16>> {
    static PORTS: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();
    PORTS.get_or_init(|| Mutex::new(HashSet::new()))
}

/// A currently free TCP port on 127.0.0.1, chosen by the kernel, and never
/// one this process handed out before. Another process may still take it
/// before it is used: callers must be ready to retry.
pub fn free_loopback_port() -> io::Result<u16> {
    let mut seen = handed_out().lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..64 {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let port = listener.local_addr()?.port();
        if seen.insert(port) {
            return Ok(port);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AddrNotAvailable,
        "no fresh free port on 127.0.0.1 after 64 attempts",
    ))
}
