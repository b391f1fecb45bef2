//! `emq token new`: a fresh token for a tokens file (`--tokens FILE`,
//! docs/http.md "Tokens and roles"). The token goes to stderr, once; stdout
//! is exactly the `[[token]]` entry to append (`>> tokens.toml`), which
//! holds only the token's SHA-256. Needs no server.

use super::{out, out_json};
use crate::cli::{Global, TokenCommand, TokenNewArgs};
use crate::error::CliError;
use echomq_dashboard::grant::Grant;
use echomq_dashboard::tokens::{Tokens, entry_toml, new_token, sha256_hex};
use serde::Serialize;

/// `emq token new --json`.
#[derive(Debug, Serialize)]
struct NewToken<'a> {
    name: &'a str,
    role: &'static str,
    queues: &'a [String],
    token: &'a str,
    sha256: &'a str,
    /// The entry to append to the tokens file.
    toml: &'a str,
}

/// `emq token …`.
pub(crate) async fn run(command: &TokenCommand, global: &Global) -> Result<(), CliError> {
    match command {
        TokenCommand::New(args) => new(args, global),
    }
}

fn new(args: &TokenNewArgs, global: &Global) -> Result<(), CliError> {
    let name = args.name.trim();
    if name.is_empty() {
        return Err(CliError::usage(
            "--name: empty; a token's name is what the log shows",
        ));
    }
    if let Some(empty) = args.queues.iter().find(|q| q.trim().is_empty()) {
        return Err(CliError::usage(format!(
            "--queue {empty:?}: empty; name a queue or a glob"
        )));
    }
    let grant = Grant {
        name: name.to_string(),
        role: args.role,
        queues: args.queues.clone(),
    };
    let token = new_token();
    let sha256 = sha256_hex(&token);
    let entry = entry_toml(&grant, &sha256);
    // What a server will read back: the entry parses to this grant.
    let read = Tokens::parse(&entry)
        .map_err(|err| CliError::usage(format!("the entry would not read back: {err}")))?;
    debug_assert_eq!(read.grant_for(&token).as_ref(), Some(&grant));
    if global.json {
        return out_json(&NewToken {
            name,
            role: args.role.name(),
            queues: &args.queues,
            token: &token,
            sha256: &sha256,
            toml: &entry,
        });
    }
    eprintln!("token for {name:?} (shown once; the tokens file keeps only its SHA-256):\n{token}");
    out(&entry)
}
