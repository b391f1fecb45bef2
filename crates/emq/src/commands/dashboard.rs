//! `emq serve` (and its synonym `emq dashboard`): the dashboard, the HTTP
//! API and /metrics (`echomq_dashboard`, one router) served until Ctrl-C.

use super::stop::StopSignal;
use super::{connect, serving};
use crate::cli::{DashboardArgs, Global};
use crate::error::CliError;
use echomq_dashboard::Dashboard;

pub(crate) async fn run(args: &DashboardArgs, global: &Global) -> Result<(), CliError> {
    let token = token(args)?;
    let url = global.url_or_default();
    let connector = connect(&url, global).await?;
    let usage = |err: &dyn std::fmt::Display| CliError::usage(err.to_string());
    let mut dashboard = Dashboard::new(connector)
        .read_only(args.read_only)
        .live_viewers(args.live_viewers)
        .pages(!args.no_dashboard)
        .max_body(args.max_body)
        .base_path(args.base_path.as_str())
        .map_err(|err| usage(&err))?;
    if let Some(token) = &token {
        dashboard = dashboard.token(token.as_str());
    }
    for host in &args.allow_host {
        dashboard = dashboard.allow_host(host).map_err(|err| usage(&err))?;
    }
    if let Some(url) = &args.base_url {
        dashboard = dashboard.base_url(url).map_err(|err| usage(&err))?;
    }
    let mut stop = StopSignal::register()?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|err| CliError::cannot_listen(args.listen, &err))?;
    let addr = listener.local_addr()?;
    serving(&format!("http://{addr}{}", args.base_path), global)?;
    if !addr.ip().is_loopback() && token.is_none() {
        eprintln!(
            "warning: serving the dashboard on {addr}, a non-loopback address, without a token: \
             anyone who can reach it can act on every queue (--token, --token-file or --read-only)"
        );
    }
    if addr.ip().is_unspecified() && args.allow_host.is_empty() && args.base_url.is_none() {
        eprintln!(
            "note: only requests for 127.0.0.1, localhost or [::1] on port {} are served; \
             name the hosts clients use with --allow-host NAME (or --base-url URL)",
            addr.port()
        );
    }
    let limits = echomq_dashboard::ConnectionLimits {
        connections: args.max_connections,
        ..echomq_dashboard::ConnectionLimits::default()
    };
    let router = dashboard.listening_on(addr).router();
    echomq_dashboard::serve(listener, router, limits, async move { stop.recv().await }).await?;
    Ok(())
}

/// The token given, or read from the token file's first line; an empty
/// one is refused.
fn token(args: &DashboardArgs) -> Result<Option<String>, CliError> {
    let token = match (&args.token, &args.token_file) {
        (Some(token), _) => token.clone(),
        (None, Some(file)) => std::fs::read_to_string(file)
            .map_err(|err| CliError::usage(format!("--token-file {}: {err}", file.display())))?
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string(),
        (None, None) => return Ok(None),
    };
    if token.is_empty() {
        return Err(CliError::usage("the dashboard's token is empty"));
    }
    Ok(Some(token))
}
