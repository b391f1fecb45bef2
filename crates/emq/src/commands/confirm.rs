//! The question a destructive verb over many jobs asks first (`obliterate`,
//! `retry --all`, `clean`): `[y/N]` on stderr, the answer read from stdin.
//! Without `--yes`, a stdin that is not a terminal is refused at once,
//! before connecting: a script must say `--yes`, never pipe an answer in
//! by accident.

use crate::error::CliError;
use std::io::{BufRead, IsTerminal, Write};

/// Refuses (exit 2) to `what` without `--yes` when stdin is not a
/// terminal; `what` completes "refusing to …".
pub(crate) fn yes_or_terminal(yes: bool, what: &str) -> Result<(), CliError> {
    if yes || std::io::stdin().is_terminal() {
        return Ok(());
    }
    Err(CliError::usage(format!(
        "refusing to {what} without --yes when stdin is not a terminal"
    )))
}

/// Asks `question` (then ` [y/N] `) on stderr, reads one line of stdin:
/// `y` or `yes` agrees.
pub(crate) async fn ask(question: &str) -> Result<bool, CliError> {
    let question = format!("{question} [y/N] ");
    tokio::task::spawn_blocking(move || {
        let mut stderr = std::io::stderr().lock();
        stderr.write_all(question.as_bytes())?;
        stderr.flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        let answer = answer.trim().to_ascii_lowercase();
        Ok(answer == "y" || answer == "yes")
    })
    .await
    .map_err(|err| CliError::usage(format!("reading the answer: {err}")))?
}
