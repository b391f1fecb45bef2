//! [`EndpointProxy`]: a TCP forwarder on loopback whose target can be
//! switched, as a failover endpoint (a DNS name, a load balancer) is
//! switched to the new primary.

use std::io;
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

/// Forwards every connection made to it to its current target. Switching
/// the target ([`EndpointProxy::switch_to`]) affects new connections only:
/// those already open keep talking to the old target, as connections to a
/// failed-over endpoint do until they are closed. Stops accepting on drop.
#[derive(Debug)]
pub struct EndpointProxy {
    port: u16,
    target: Arc<Mutex<SocketAddr>>,
    stopped: Arc<AtomicBool>,
}

impl EndpointProxy {
    /// A proxy on a free loopback port forwarding to `target_port` on
    /// 127.0.0.1. Panics when no port can be bound.
    pub fn start(target_port: u16) -> Self {
        let listener =
            TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("EndpointProxy: binding a port");
        let port = listener.local_addr().expect("a bound address").port();
        let target = Arc::new(Mutex::new(loopback(target_port)));
        let stopped = Arc::new(AtomicBool::new(false));
        let (to, stop) = (target.clone(), stopped.clone());
        thread::spawn(move || {
            for client in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                let server = *to.lock().unwrap_or_else(|e| e.into_inner());
                // A target that refuses: the client sees its connection closed.
                if let Ok(server) = TcpStream::connect(server) {
                    let _ = forward(client, server);
                }
            }
        });
        Self {
            port,
            target,
            stopped,
        }
    }

    /// `redis://127.0.0.1:PORT` of the proxy.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// New connections go to `port` on 127.0.0.1 from now on.
    pub fn switch_to(&self, port: u16) {
        *self.target.lock().unwrap_or_else(|e| e.into_inner()) = loopback(port);
    }
}

impl Drop for EndpointProxy {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(loopback(self.port));
    }
}

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

/// Copies bytes both ways until either side closes, then closes both.
fn forward(client: TcpStream, server: TcpStream) -> io::Result<()> {
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let pipe = |mut from: TcpStream, mut to: TcpStream| {
        thread::spawn(move || {
            let _ = io::copy(&mut from, &mut to);
            let _ = from.shutdown(Shutdown::Both);
            let _ = to.shutdown(Shutdown::Both);
        });
    };
    pipe(client.try_clone()?, server.try_clone()?);
    pipe(server, client);
    Ok(())
}
