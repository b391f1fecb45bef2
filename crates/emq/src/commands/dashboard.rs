//! `emq serve` (and its synonym `emq dashboard`): the dashboard, the HTTP
//! API and /metrics (`echomq_dashboard`, one router) served until Ctrl-C.
//! Which tokens it takes ([`tokens`]), whether it may listen where it was
//! told without one ([`check_exposure`]) and what it says of it
//! ([`say_who_is_served`]) are its own functions.

use super::stop::StopSignal;
use super::{connect, serving};
use crate::cli::{DashboardArgs, Global};
use crate::error::CliError;
use echomq_dashboard::Dashboard;
use echomq_dashboard::tokens::Tokens;
use std::net::SocketAddr;

pub(crate) async fn run(args: &DashboardArgs, global: &Global) -> Result<(), CliError> {
    let tokens = tokens(args)?;
    check_exposure(args, tokens.as_ref())?;
    let url = global.url_or_default();
    let connector = connect(&url, global).await?;
    let usage = |err: &dyn std::fmt::Display| CliError::usage(err.to_string());
    let mut dashboard = Dashboard::new(connector)
        .read_only(args.read_only)
        .live_viewers(args.live_viewers)
        .pages(!args.no_dashboard)
        .max_body(args.max_body)
        .body_wait(args.body_timeout)
        .base_path(args.base_path.as_str())
        .map_err(|err| usage(&err))?;
    if let Some(tokens) = &tokens {
        dashboard = dashboard.tokens(tokens.clone());
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
    say_who_is_served(args, addr, tokens.as_ref());
    let limits = echomq_dashboard::ConnectionLimits {
        connections: args.max_connections,
        header_wait: args.header_timeout,
        ..echomq_dashboard::ConnectionLimits::default()
    };
    let router = dashboard.listening_on(addr).router();
    echomq_dashboard::serve(listener, router, limits, async move { stop.recv().await }).await?;
    Ok(())
}

/// The tokens the server accepts: the tokens file's (`--tokens`), or the
/// one token (`--token`, `--token-file`) as an operator of every queue;
/// `None` without either. A tokens file with a mistake is refused,
/// naming the line and the field.
pub(crate) fn tokens(args: &DashboardArgs) -> Result<Option<Tokens>, CliError> {
    if let Some(file) = &args.tokens {
        let tokens =
            Tokens::load(file).map_err(|err| CliError::usage(format!("--tokens {err}")))?;
        return Ok(Some(tokens));
    }
    Ok(token(args)?.map(|token| Tokens::single(&token)))
}

/// Refuses a non-loopback `--listen` without any token, unless
/// `--insecure` (checked before anything connects or listens).
pub(crate) fn check_exposure(
    args: &DashboardArgs,
    tokens: Option<&Tokens>,
) -> Result<(), CliError> {
    if tokens.is_some() || args.listen.ip().is_loopback() || args.insecure {
        return Ok(());
    }
    Err(CliError::usage(format!(
        "refusing to serve {} without a token: it is not a loopback address, so anyone \
         who can reach it would act on every queue; give --tokens FILE (or --token, \
         --token-file), or --insecure to serve it anyway",
        args.listen
    )))
}

/// On stderr: that the server serves without tokens, and to whom; which
/// hosts it serves on an unspecified address.
pub(crate) fn say_who_is_served(args: &DashboardArgs, addr: SocketAddr, tokens: Option<&Tokens>) {
    let anyone = if args.read_only {
        "a reader"
    } else {
        "an operator"
    };
    match tokens {
        Some(_) => {}
        None if addr.ip().is_loopback() => eprintln!(
            "note: serving without tokens, on loopback only: every request acts as {anyone} \
             of every queue (--tokens FILE to require tokens)"
        ),
        None => eprintln!(
            "warning: serving {addr}, a non-loopback address, without a token (--insecure): \
             anyone who can reach it acts as {anyone} of every queue (--tokens FILE)"
        ),
    }
    if addr.ip().is_unspecified() && args.allow_host.is_empty() && args.base_url.is_none() {
        eprintln!(
            "note: only requests for 127.0.0.1, localhost or [::1] on port {} are served; \
             name the hosts clients use with --allow-host NAME (or --base-url URL)",
            addr.port()
        );
    }
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
