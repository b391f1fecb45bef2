//! `emq`: the EchoMQ operator CLI. See the library crate for the commands.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = emq::cli::Cli::parse();
    emq::init_logging();
    match emq::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            // An error may quote a job's id or text: shown, not obeyed.
            eprintln!("emq: {}", emq::terminal::escape(&err.message));
            ExitCode::from(err.code)
        }
    }
}
