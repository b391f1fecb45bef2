//! `emq`: the EchoMQ operator CLI. See the library crate for the commands.

use clap::FromArgMatches;
use std::process::ExitCode;

fn main() -> ExitCode {
    let matches = emq::cli::command().get_matches();
    let cli = emq::cli::Cli::from_arg_matches(&matches).unwrap_or_else(|err| err.exit());
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
