//! `emq`, the EchoMQ operator CLI, as a library: the command line
//! ([`cli`]), the commands behind it, and the measurements of `emq bench`
//! ([`mod@bench`]), which `benches/lifecycle.rs` reuses.
//!
//! Exit codes of the binary: `0` done; `1` a refused transition, a
//! missing job, or a queue `emq queues` could not read (a key of the wrong
//! type; the others are listed); `2` a usage or connection error. The
//! cause is printed as one line `emq: <cause>`, or under `--json` as one
//! line `{"error":{"code":…,"message":…}}` ([`error::ErrorCode`]).

// Doc comments of `cli` are clap's help text, written for a terminal:
// `<prefix>:{q}` there is a placeholder, not an HTML tag.
#![allow(rustdoc::invalid_html_tags)]

pub mod bench;
pub mod cli;
mod commands;
pub mod embedded;
pub mod error;
pub mod info;
mod logging;
pub mod table;
pub mod terminal;
pub mod time;

use cli::{Cli, Command, RuntimeArg};
use error::CliError;

/// Runs a parsed command line to the end on a tokio runtime of its own
/// (single-threaded unless `emq bench --runtime multi-thread`).
pub fn run(cli: Cli) -> Result<(), CliError> {
    let flavor = match &cli.command {
        Command::Bench(args) => args.runtime,
        _ => RuntimeArg::CurrentThread,
    };
    let runtime = flavor
        .build()
        .map_err(|err| CliError::usage(format!("starting the tokio runtime: {err}")))?;
    runtime.block_on(commands::run(cli))
}

/// Logs (`tracing`) to stderr: warnings and errors as plain lines in the
/// CLI's format (`warning: … (queue=mail)`), or with `RUST_LOG` set,
/// tracing's own format filtered as it says.
pub fn init_logging() {
    logging::init();
}
