//! The CLI's top level, through the real binary: the layout of `--help`
//! (headings, usage lines, variables, commands that need no server).

mod common;

use common::{Run, emq, emq_with_env};

/// A URL where nothing listens.
const NOWHERE: &str = "redis://127.0.0.1:1";

/// The lines of `text` from the one that is `heading` to the next blank
/// line before another heading (a section of clap's help).
fn section<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    let mut lines = text.lines().skip_while(|line| *line != heading);
    assert!(lines.next().is_some(), "no {heading:?} in:\n{text}");
    lines
        .take_while(|line| line.is_empty() || line.starts_with(' '))
        .collect()
}

#[test]
fn help_puts_global_and_connection_options_under_their_own_headings() {
    for args in [
        &["--help"][..],
        &["-h"][..],
        &["stats", "--help"][..],
        &["stats", "-h"][..],
    ] {
        let help = emq(args).stdout;
        let own = section(&help, "Options:").join("\n");
        for flag in [
            "--url",
            "--json",
            "--prefix",
            "--wire",
            "--tls-cert",
            "--sentinel",
        ] {
            assert!(
                !own.contains(flag),
                "{args:?}: {flag} among Options:\n{help}"
            );
        }
        let global = section(&help, "Global options:").join("\n");
        for flag in ["--json", "--prefix", "--wire"] {
            assert!(global.contains(flag), "{args:?}: {flag}:\n{help}");
        }
        let connection = section(&help, "Connection options:").join("\n");
        for flag in [
            "--url",
            "--tls-ca-cert",
            "--sentinel-service",
            "--primary-password",
        ] {
            assert!(connection.contains(flag), "{args:?}: {flag}:\n{help}");
        }
    }
}

#[test]
fn a_usage_line_never_shows_url_as_required() {
    let usage = |run: &Run| {
        assert_eq!(run.code, 2, "{}", run.stderr);
        run.stderr
            .lines()
            .find(|line| line.starts_with("Usage:"))
            .unwrap_or_else(|| panic!("no usage line: {}", run.stderr))
            .to_string()
    };
    // EMQ_URL set, --url given after the command, or both with another
    // flag: the usage line is the command's own, as its help shows it.
    let from_env = emq_with_env(&["stats"], &[("EMQ_URL", NOWHERE)]);
    assert_eq!(usage(&from_env), "Usage: emq stats [OPTIONS] <queue>");
    let given = emq(&["stats", "--url", NOWHERE]);
    assert_eq!(usage(&given), "Usage: emq stats [OPTIONS] <queue>");
    let both = emq_with_env(
        &["reschedule", "q", "id", "--wire", "native"],
        &[("EMQ_URL", NOWHERE)],
    );
    assert_eq!(
        usage(&both),
        "Usage: emq reschedule [OPTIONS] <--at <RFC 3339>|--in <duration>> <queue> <id>"
    );
    let help = emq(&["stats", "--help"]).stdout;
    assert!(
        help.contains("Usage: emq stats [OPTIONS] <queue>\n"),
        "{help}"
    );
}

#[test]
fn help_never_shows_an_empty_variable() {
    // No variable set (the runner clears EMQ_URL; these are cleared too).
    let unset = [
        "EMQ_TLS_CA_CERT",
        "EMQ_TLS_CERT",
        "EMQ_TLS_KEY",
        "EMQ_SENTINEL",
        "EMQ_SENTINEL_SERVICE",
        "EMQ_PRIMARY_PASSWORD",
        "EMQ_DASHBOARD_TOKEN",
    ];
    for args in [
        &["stats", "--help"][..],
        &["--help"][..],
        &["dashboard", "--help"][..],
    ] {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_emq"));
        command.args(args).env_remove("EMQ_URL");
        for name in unset {
            command.env_remove(name);
        }
        let out = command.output().expect("run emq");
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains("[env: EMQ_TLS_CA_CERT]") || args == ["dashboard", "--help"]);
        assert!(!help.contains("=]"), "{args:?}:\n{help}");
    }
}

#[test]
fn controls_and_acl_help_list_no_connection_options() {
    for args in [
        &["controls", "--help"][..],
        &["controls", "-h"][..],
        &["acl", "--help"][..],
        &["help", "acl"][..],
    ] {
        let run = emq(args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        for absent in [
            "--url",
            "--tls-",
            "--sentinel",
            "--primary-password",
            "Connection options",
            "EMQ_",
        ] {
            assert!(
                !run.stdout.contains(absent),
                "{args:?}: {absent}:\n{}",
                run.stdout
            );
        }
        assert!(run.stdout.contains("--prefix"), "{args:?}:\n{}", run.stdout);
    }
    // Still accepted, so one set of flags works with every command.
    let run = emq(&["controls", "claim", "--url", NOWHERE, "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let run = emq(&["--url", NOWHERE, "acl", "worker", "--queue", "q"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("ACL SETUSER tenant"),
        "{}",
        run.stdout
    );
}
