//! `emq`: the EchoMQ operator CLI. See the library crate for the commands.

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match emq::cli::parse_from(std::env::args_os()) {
        Ok(cli) => cli,
        Err(err) => {
            // Help and the version on stdout, an error on stderr.
            let _ = err.print();
            return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(emq::error::EXIT_USAGE));
        }
    };
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
