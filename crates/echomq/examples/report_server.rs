//! Serving an HTTP request from a job's result (docs/outcomes.md): `GET
//! /report?month=2026-11` enqueues the month's report on the queue
//! `reports`, waits for the job's outcome and answers with it (200 its
//! result, 502 dead, 410 cancelled or removed, 504 still running), while
//! a worker in the same process produces the reports.
//!
//! ```sh
//! EMQ_URL=redis://127.0.0.1:6379 cargo run -p echomq --example report_server
//! curl -i 'http://127.0.0.1:PORT/report?month=2026-11'   # 200, the report
//! curl -i 'http://127.0.0.1:PORT/report?month=2019-12'   # 502, before the shop opened
//! ```
//!
//! `HTTP_LISTEN` (default `127.0.0.1:0`, a free port; printed) must be a
//! loopback address. The core is `examples/report_server/`, which the
//! suite runs (`tests/suite/report_server.rs`).

#[path = "report_server/mod.rs"]
mod server;

use echomq::Connector;
use std::net::SocketAddr;
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    match serve().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("report_server: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Serves until Ctrl-C.
async fn serve() -> anyhow::Result<()> {
    let url = std::env::var("EMQ_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let mut settings = server::Settings::default();
    if let Ok(listen) = std::env::var("HTTP_LISTEN") {
        settings.listen = listen
            .parse::<SocketAddr>()
            .map_err(|err| anyhow::anyhow!("HTTP_LISTEN={listen:?}: {err}; say 127.0.0.1:8080"))?;
    }
    let emq = Connector::connect(&url).await?;
    let running = server::start(&emq, settings).await?;
    println!("serving http://{}/report?month=2026-11", running.addr);
    tokio::signal::ctrl_c().await?;
    running.stop().await;
    Ok(())
}
