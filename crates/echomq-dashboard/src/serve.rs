//! [`serve`]: a router on a listener, with the limits `axum::serve` does
//! not set: a client has [`ConnectionLimits::header_wait`] to send a
//! request's headers (and no longer to sit idle between requests), and at
//! most [`ConnectionLimits::connections`] connections are open at once
//! (past it, new ones wait in the listen queue). What `emq dashboard` and
//! `emq metrics --listen` serve with.

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// The bounds on the connections [`serve`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// The longest a client may take to send a request's headers, and
    /// the longest an open connection may wait for its next request.
    pub header_wait: Duration,
    /// Connections open at once, at most.
    pub connections: usize,
    /// After the stop signal, how long open connections (live pages among
    /// them) have to finish.
    pub shutdown_wait: Duration,
}

impl Default for ConnectionLimits {
    /// 10 s for headers, 256 connections, 5 s to finish at shutdown.
    fn default() -> Self {
        Self {
            header_wait: Duration::from_secs(10),
            connections: 256,
            shutdown_wait: Duration::from_secs(5),
        }
    }
}

/// Serves `router` on `listener` until `stop` completes, within `limits`;
/// each request carries its client's address (`ConnectInfo<SocketAddr>`,
/// which the sign-in throttle counts by).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    stop: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let open = Arc::new(Semaphore::new(limits.connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_wait);
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            () = &mut stop => break,
            permit = open.clone().acquire_owned() => {
                let permit = permit.expect("the semaphore is never closed");
                tokio::select! {
                    () = &mut stop => break,
                    accepted = listener.accept() => accepted.map(|a| (a, permit)),
                }
            }
        };
        let ((stream, client), permit) = match accepted {
            Ok(accepted) => accepted,
            // Out of descriptors or a connection reset before accept: the
            // listener itself is fine, so keep serving.
            Err(err) => {
                tracing::debug!("accept: {err}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let service =
            router
                .clone()
                .map_request(move |mut request: axum::http::Request<Incoming>| {
                    request
                        .extensions_mut()
                        .insert(ConnectInfo::<SocketAddr>(client));
                    request
                });
        let connection =
            builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!("connection from {client}: {err}");
            }
            drop(permit);
        });
    }
    drop(listener);
    let _ = tokio::time::timeout(limits.shutdown_wait, graceful.shutdown()).await;
    Ok(())
}
