//! Each command's `--help` ends with its examples: the README's `emq …`
//! lines for that command, so help shows only lines the README's test
//! runs (`tests/readme.rs`) and cannot drift from them.

use clap::CommandFactory;

/// The README, whose `sh` blocks hold the examples.
const README: &str = include_str!("../../../../README.md");

/// The command line's parser, every command's help ending with its
/// examples.
pub fn command() -> clap::Command {
    with_examples(super::Cli::command(), &[])
}

/// `command` (at `path` below `emq`) and its subcommands, each with the
/// README lines that run it as its help's last section.
fn with_examples(mut command: clap::Command, path: &[&str]) -> clap::Command {
    let names: Vec<String> = command
        .get_subcommands()
        .map(|sub| sub.get_name().to_string())
        .collect();
    for name in names {
        let below = [path, &[name.as_str()]].concat();
        command = command.mut_subcommand(&name, |sub| with_examples(sub, &below));
    }
    let examples = examples_of(path);
    if path.is_empty() || examples.is_empty() {
        return command;
    }
    command.after_help(format!("Examples:\n{}", examples.join("\n")))
}

/// The README's `emq …` lines whose words start with `path`, each as
/// `  emq …  # comment`.
fn examples_of(path: &[&str]) -> Vec<String> {
    let mut in_sh = false;
    let mut found = Vec::new();
    for line in README.lines() {
        if line.starts_with("```") {
            in_sh = !in_sh && line == "```sh";
            continue;
        }
        let Some(rest) = line.strip_prefix("emq ").filter(|_| in_sh) else {
            continue;
        };
        let (code, comment) = match rest.split_once("  #") {
            Some((code, comment)) => (code.trim_end(), Some(comment.trim())),
            None => (rest.trim_end(), None),
        };
        if !code
            .split_whitespace()
            .take(path.len())
            .eq(path.iter().copied())
        {
            continue;
        }
        found.push(match comment {
            Some(comment) => format!("  emq {code}  # {comment}"),
            None => format!("  emq {code}"),
        });
    }
    found
}
