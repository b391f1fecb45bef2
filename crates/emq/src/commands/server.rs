//! `emq server`: the embedded Valkey in the foreground, AOF on, until
//! Ctrl-C (or SIGTERM).

use super::stop::StopSignal;
use super::{out, out_json};
use crate::cli::{DEFAULT_PORT, DEFAULT_URL, Global, ServerArgs};
use crate::embedded::Embedded;
use crate::error::{CliError, ErrorCode};
use echomq_server::ServerKind;
use serde_json::json;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often the foreground loop checks that the server still listens.
const LIVENESS_EVERY: Duration = Duration::from_secs(1);

pub(crate) async fn run(args: &ServerArgs, global: &Global) -> Result<(), CliError> {
    let dir = args.dir.clone();
    let port = args.port;
    if port != 0 && port_taken(port) {
        return Err(port_taken_error(port));
    }
    let mut embedded = tokio::task::spawn_blocking(move || Embedded::start_in(&dir, port))
        .await
        .map_err(|err| CliError::usage(format!("starting the server: {err}")))?
        .map_err(|err| match err {
            // Taken between the check and the server's own bind.
            err if port != 0 && err.message.contains("Address already in use") => {
                port_taken_error(port)
            }
            err => err,
        })?;
    let url = embedded.url();
    let shown = shown_dir(&args.dir);
    // Registered once, before the banner: whoever reads it may signal at
    // once, and a signal between two turns of the loop is not lost.
    let mut stop = StopSignal::register()?;
    if global.json {
        out_json(&json!({
            "url": url,
            "dir": embedded.process().dir().display().to_string(),
            "aof": true,
            "pid": embedded.process().pid(),
            "server": {
                "kind": embedded.binary().kind.name(),
                "path": embedded.binary().path.display().to_string(),
                "version": embedded.version(),
            },
            "module": embedded.module().map(|path| path.display().to_string()),
            "preload": embedded.preload().map(|path| path.display().to_string()),
        }))?;
    } else {
        let wires = match embedded.module() {
            Some(_) => "wire 4 and wire 6: the EchoMQ module is loaded",
            None => "wire 4; build the module (cargo build --release -p echomq-module) for wire 6",
        };
        let malloc = match embedded.preload() {
            Some(library) => format!("; jemalloc preloaded from {}", library.display()),
            None => String::new(),
        };
        let fallback = match embedded.binary().kind {
            ServerKind::Valkey => "",
            ServerKind::Redis => {
                "; no valkey-server was found: set EMQ_VALKEY_SERVER to one to use Valkey"
            }
        };
        let use_it = if url == DEFAULT_URL {
            "the default: other commands use it without this".to_string()
        } else {
            format!("for the other commands (or --url {url}); they default to {DEFAULT_URL}")
        };
        out(&format!(
            "EchoMQ server listening on {url} (data in {shown}, AOF on; {wires}{malloc}). Ctrl-C to stop.\n\
             server: {}{fallback}\n\
             export EMQ_URL={url}   # {use_it}\n",
            embedded.describe()
        ))?;
    }
    let port = embedded.process().port();
    loop {
        tokio::select! {
            () = stop.recv() => break,
            () = tokio::time::sleep(LIVENESS_EVERY) => {
                if !listening(port).await {
                    let status = tokio::task::spawn_blocking(move || embedded.process().wait())
                        .await
                        .map_err(|err| CliError::usage(format!("waiting for the server: {err}")))??;
                    if status.success() {
                        eprintln!("the server on {url} was shut down from outside");
                        return Ok(());
                    }
                    return Err(CliError::usage(format!("the server on {url} exited on its own ({status})")));
                }
            }
        }
    }
    eprintln!("stopping the server (SHUTDOWN SAVE)…");
    tokio::task::spawn_blocking(move || embedded.process().shutdown(true))
        .await
        .map_err(|err| CliError::usage(format!("stopping the server: {err}")))??;
    if !global.json {
        out(&format!("EchoMQ server stopped (data kept in {shown}).\n"))?;
    }
    Ok(())
}

/// Whether 127.0.0.1:`port` cannot be bound: another process listens there.
fn port_taken(port: u16) -> bool {
    matches!(
        TcpListener::bind((Ipv4Addr::LOCALHOST, port)),
        Err(err) if err.kind() == std::io::ErrorKind::AddrInUse
    )
}

/// The refusal when `port` is taken: what to do instead.
fn port_taken_error(port: u16) -> CliError {
    let running = if port == DEFAULT_PORT {
        format!(
            " (a server already running? then use it: other commands connect to \
             {DEFAULT_URL} by default)"
        )
    } else {
        String::new()
    };
    CliError::new(
        ErrorCode::Listen,
        format!(
            "cannot listen on 127.0.0.1:{port}: the port is already in use{running}; \
             pass --port 0 for a free port, or another --port"
        ),
    )
}

/// Whether something accepts connections on 127.0.0.1:`port`.
async fn listening(port: u16) -> bool {
    tokio::task::spawn_blocking(move || {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
    })
    .await
    .unwrap_or(true)
}

/// A relative directory shown as `./dir`.
fn shown_dir(dir: &Path) -> String {
    if dir.is_absolute() || dir.starts_with(".") || dir.starts_with("..") {
        dir.display().to_string()
    } else {
        PathBuf::from(".").join(dir).display().to_string()
    }
}
