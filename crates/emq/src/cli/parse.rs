//! How a command line is read, beyond what the derive says: the
//! connection options kept out of the help of commands that need no
//! server, the usage line of a usage error, and whether `--json` was asked
//! for (so a usage error can be JSON too).

use super::{CONNECTION_HEADING, Cli, Global};
use clap::builder::Resettable;
use clap::error::{ContextKind, ContextValue};
use clap::{Args, FromArgMatches};
use std::ffi::OsString;

/// Parses `args` (the program name first). A usage error's usage line is
/// the command's own (`emq stats [OPTIONS] <queue>`), as `--help` shows it:
/// clap would list every option that was given, from the command line or
/// the environment (`EMQ_URL` set: `emq stats --url <URL> <queue>`), as if
/// it were required.
pub fn parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let mut command = super::command();
    let matches = command
        .try_get_matches_from_mut(args)
        .map_err(generic_usage)?;
    Cli::from_arg_matches(&matches).map_err(|err| generic_usage(err.format(&mut command)))
}

/// Whether `--json` is among `args` (before a `--`): what decides, when
/// the line does not parse, whether its error is printed as JSON.
pub fn json_requested(args: &[OsString]) -> bool {
    args.iter()
        .skip(1)
        .take_while(|arg| arg.as_os_str() != "--")
        .any(|arg| arg.as_os_str() == "--json")
}

/// `err` with its usage line replaced by the generic one of the command
/// it names.
fn generic_usage(mut err: clap::Error) -> clap::Error {
    let Some(ContextValue::StyledStr(usage)) = err.get(ContextKind::Usage) else {
        return err;
    };
    let text = usage.to_string();
    let words: Vec<&str> = text
        .trim()
        .trim_start_matches("Usage:")
        .split_whitespace()
        .skip(1) // the program's name
        .collect();
    let mut command = super::command();
    command.build();
    let mut path = Vec::new();
    let mut at = &command;
    for word in words {
        let Some(sub) = at.find_subcommand(word) else {
            break;
        };
        path.push(word);
        at = sub;
    }
    let mut found = &mut command;
    for word in path {
        found = found
            .find_subcommand_mut(word)
            .expect("a subcommand found above");
    }
    let generic = found.render_usage();
    err.insert(ContextKind::Usage, ContextValue::StyledStr(generic));
    err
}

/// For a command that needs no server (`controls`, `acl`): the connection
/// options (`--url`, `--tls-*`, `--sentinel*`, `--primary-password`) are
/// still accepted, so one set of flags works with every command, but left
/// out of its help and read from no variable. An option of the command's
/// own with a global option's id keeps clap from propagating that one.
pub(super) fn without_connection_help(command: clap::Command) -> clap::Command {
    let globals = Global::augment_args(clap::Command::new("global"));
    let hidden = globals
        .get_arguments()
        .filter(|arg| arg.get_help_heading() == Some(CONNECTION_HEADING))
        .map(|arg| {
            arg.clone()
                .global(false)
                .hide(true)
                .env(None)
                .requires(Resettable::Reset)
                .conflicts_with(Resettable::Reset)
        })
        .collect::<Vec<_>>();
    command.args(hidden)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn json_is_requested_by_the_flag_before_a_double_dash() {
        assert!(json_requested(&os(&["emq", "stats", "--json"])));
        assert!(json_requested(&os(&["emq", "--json", "stats"])));
        assert!(!json_requested(&os(&["emq", "stats", "q"])));
        assert!(!json_requested(&os(&[
            "emq", "log", "q", "id", "--", "--json"
        ])));
        assert!(!json_requested(&os(&["--json"])));
    }

    #[test]
    fn a_usage_error_shows_the_commands_own_usage() {
        let err = parse_from(["emq", "stats", "--url", "redis://x"]).unwrap_err();
        let text = err.render().to_string();
        assert!(
            text.contains("Usage: emq stats [OPTIONS] <queue>"),
            "{text}"
        );
        let err = parse_from(["emq", "repeat", "add", "q", "--url", "u"]).unwrap_err();
        let text = err.render().to_string();
        assert!(
            text.contains("Usage: emq repeat add [OPTIONS] <--every <duration>|--cron <expr>> <queue> <key> <json>"),
            "{text}"
        );
    }

    #[test]
    fn a_serverless_command_takes_the_connection_options_unlisted() {
        let cli = parse_from(["emq", "controls", "--url", "redis://x"]).unwrap();
        assert_eq!(cli.global.url.as_deref(), Some("redis://x"));
        let cli = parse_from(["emq", "acl", "worker", "--sentinel", "a,b"]).unwrap();
        assert_eq!(cli.global.sentinel, ["a", "b"]);
    }
}
