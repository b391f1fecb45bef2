//! The arguments of `emq token`.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand};
use echomq_dashboard::grant::AccessRole;

/// `emq token`.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Make a token: prints the token once (on stderr) and the `[[token]]`
    /// entry to append to a tokens file (on stdout), which keeps only its
    /// SHA-256. With --json, both as one object.
    New(TokenNewArgs),
}

/// `emq token new`.
#[derive(Debug, Args)]
pub struct TokenNewArgs {
    /// Its name: what the log shows for its requests.
    #[arg(long, value_name = "NAME")]
    pub name: String,
    /// What it may do with its queues.
    #[arg(long, value_name = "ROLE", value_parser = role_parser())]
    pub role: AccessRole,
    /// A queue it may touch, a name or a glob (`reports-*`, `*` for all);
    /// repeat for more.
    #[arg(long = "queue", value_name = "Q", required = true)]
    pub queues: Vec<String>,
}

/// The roles by their names in a tokens file.
fn role_parser() -> impl TypedValueParser<Value = AccessRole> {
    PossibleValuesParser::new(AccessRole::ALL.map(AccessRole::name))
        .map(|name| AccessRole::from_name(&name).expect("a possible value is a role's name"))
}
