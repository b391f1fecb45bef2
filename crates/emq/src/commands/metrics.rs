//! `emq metrics [--listen ADDR]`: the Prometheus text format of every queue
//! under the prefix (`echomq::prometheus`), printed once or served at
//! `/metrics` and read from the server on each scrape.

use super::stop::StopSignal;
use super::{connect, out, serving};
use crate::cli::{Global, MetricsArgs};
use crate::error::CliError;
use axum::Router;
use echomq::{Connector, prometheus};

pub(crate) async fn run(args: &MetricsArgs, global: &Global) -> Result<(), CliError> {
    let url = global.url_or_default();
    let connector = connect(&url, global).await?;
    let Some(addr) = args.listen else {
        return out(&prometheus::render(&connector).await?);
    };
    let mut stop = StopSignal::register()?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|err| CliError::cannot_listen(addr, &err))?;
    serving(
        &format!("http://{}/metrics", listener.local_addr()?),
        global,
    )?;
    echomq_dashboard::serve(
        listener,
        router(connector),
        echomq_dashboard::ConnectionLimits::default(),
        async move { stop.recv().await },
    )
    .await?;
    Ok(())
}

/// `GET /metrics`: the text format of every queue under the connector's
/// prefix, read on each request (the dashboard's own handler).
pub(crate) fn router(connector: Connector) -> Router {
    echomq_dashboard::metrics_router(connector)
}
