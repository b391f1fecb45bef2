//! The spellings issue 39 renamed still parse, as hidden aliases: scripts
//! written against the old names keep working, and `--help` shows only the
//! new ones.

use super::{Cli, Command};
use clap::{CommandFactory, Parser};

fn parse(args: &[&str]) -> Command {
    Cli::try_parse_from([&["emq"], args].concat())
        .unwrap_or_else(|err| panic!("{args:?} does not parse: {err}"))
        .command
}

/// The long help of `emq <subcommand>` (the whole tree for `None`).
fn help(subcommand: Option<&str>) -> String {
    let mut cli = Cli::command();
    match subcommand {
        None => cli.render_long_help().to_string(),
        Some(name) => cli
            .find_subcommand_mut(name)
            .unwrap_or_else(|| panic!("no subcommand {name}"))
            .render_long_help()
            .to_string(),
    }
}

#[test]
fn emq_concurrency_is_still_the_concurrency_cap_but_not_shown() {
    let old = parse(&["concurrency", "q", "3"]);
    let new = parse(&["concurrency-cap", "q", "3"]);
    for command in [old, new] {
        assert!(
            matches!(command, Command::ConcurrencyCap(ref args) if args.max == Some(3)),
            "{command:?}"
        );
    }
    assert!(help(None).contains("concurrency-cap"));
    assert!(!help(None).contains("  concurrency "), "{}", help(None));
}

#[test]
fn group_concurrency_flags_are_still_the_cap_flags_but_not_shown() {
    for flag in ["--concurrency", "--concurrency-cap"] {
        let command = parse(&["group", "q", "g", flag, "2"]);
        assert!(
            matches!(command, Command::Group(ref args) if args.concurrency_cap == Some(2)),
            "{flag}: {command:?}"
        );
    }
    for flag in ["--no-concurrency", "--no-concurrency-cap"] {
        let command = parse(&["group", "q", "g", flag]);
        assert!(
            matches!(command, Command::Group(ref args) if args.no_concurrency_cap),
            "{flag}: {command:?}"
        );
    }
    let shown = help(Some("group"));
    assert!(shown.contains("--concurrency-cap <N>"), "{shown}");
    assert!(!shown.contains("--concurrency <N>"), "{shown}");
    assert!(!shown.contains("--no-concurrency\n"), "{shown}");
}

#[test]
fn emq_limit_is_still_the_rate_limit_but_not_shown() {
    for name in ["limit", "rate-limit"] {
        let command = parse(&[name, "q", "--max", "5", "--per", "1s"]);
        assert!(
            matches!(command, Command::RateLimit(ref args) if args.max == Some(5)),
            "{name}: {command:?}"
        );
    }
    assert!(help(None).contains("rate-limit"));
    assert!(!help(None).contains("  limit "), "{}", help(None));
}

#[test]
fn group_no_limit_is_still_no_rate_limit_but_not_shown() {
    for flag in ["--no-limit", "--no-rate-limit"] {
        let command = parse(&["group", "q", "g", flag]);
        assert!(
            matches!(command, Command::Group(ref args) if args.no_rate_limit),
            "{flag}: {command:?}"
        );
    }
    let shown = help(Some("group"));
    assert!(shown.contains("--no-rate-limit"), "{shown}");
    assert!(!shown.contains("--no-limit"), "{shown}");
}

#[test]
fn repeat_add_limit_is_still_times_but_not_shown() {
    for flag in ["--limit", "--times"] {
        let command = parse(&["repeat", "add", "q", "k", "{}", "--every", "1m", flag, "4"]);
        assert!(
            matches!(command, Command::Repeat(super::RepeatCommand::Add(ref args)) if args.times == Some(4)),
            "{flag}: {command:?}"
        );
    }
    let mut cli = Cli::command();
    let add = cli
        .find_subcommand_mut("repeat")
        .and_then(|repeat| repeat.find_subcommand_mut("add"))
        .expect("emq repeat add");
    let shown = add.render_long_help().to_string();
    assert!(shown.contains("--times"), "{shown}");
    assert!(!shown.contains("--limit"), "{shown}");
}
