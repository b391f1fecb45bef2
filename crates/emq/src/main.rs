//! `emq`: the EchoMQ operator CLI. See the library crate for the commands.

use emq::error::CliError;
use std::ffi::OsString;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    let json = emq::cli::json_requested(&args);
    let cli = match emq::cli::parse_from(args) {
        Ok(cli) => cli,
        Err(err) => return parse_failure(&err, json),
    };
    let json = cli.global.json;
    emq::init_logging();
    match emq::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => report(&err, json),
    }
}

/// A line that did not parse: help and the version as clap prints them;
/// an error as clap prints it, or under `--json` as one JSON line.
fn parse_failure(err: &clap::Error, json: bool) -> ExitCode {
    if json && err.use_stderr() {
        return report(&CliError::from(err), true);
    }
    let _ = err.print();
    ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(emq::error::EXIT_USAGE))
}

/// Prints `err` on stderr, `emq: <cause>` or its JSON line; its exit code.
fn report(err: &CliError, json: bool) -> ExitCode {
    if json {
        eprintln!("{}", err.to_json());
    } else {
        // An error may quote a job's id or text: shown, not obeyed.
        eprintln!("emq: {}", emq::terminal::escape(&err.message));
    }
    ExitCode::from(err.code)
}
