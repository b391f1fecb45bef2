//! `docs/protocol.md`'s command tables against the registry of controls:
//! every command has its row, under its control's scope, written as the
//! registry's synopsis, and every row is a command of the registry.

use echomq_protocol::{Scope, Transition};

const DOC: &str = include_str!("../../../docs/protocol.md");

/// One row of a command table: the `###` heading above it and the
/// synopsis in its first cell (markdown's `\|` read as `|`).
struct Row {
    heading: String,
    synopsis: String,
}

fn rows() -> Vec<Row> {
    let mut heading = String::new();
    let mut rows = Vec::new();
    for line in DOC.lines() {
        if let Some(title) = line.strip_prefix("### ") {
            heading = title.trim().to_string();
        } else if let Some(rest) = line.strip_prefix("| `EMQ.") {
            let cell = rest.split("` |").next().expect("a first cell");
            rows.push(Row {
                heading: heading.clone(),
                synopsis: format!("EMQ.{}", cell.replace("\\|", "|")),
            });
        }
    }
    rows
}

fn commands() -> Vec<(Scope, String)> {
    Transition::ALL
        .iter()
        .flat_map(|t| {
            let scope = t.control().scope;
            t.control()
                .commands()
                .map(move |(form, command)| (scope, command.synopsis(form)))
        })
        .collect()
}

#[test]
fn every_command_of_the_registry_has_its_row_under_its_scope() {
    let rows = rows();
    for (scope, synopsis) in commands() {
        let row = rows.iter().find(|row| row.synopsis == synopsis);
        let Some(row) = row else {
            panic!("docs/protocol.md has no row `{synopsis}`");
        };
        assert!(
            row.heading.eq_ignore_ascii_case(scope.title()),
            "`{synopsis}` sits under ### {} instead of ### {}",
            row.heading,
            scope.title()
        );
    }
}

/// The module's commands that are no control: its version, and the two
/// commands a writing call replicates as (no client may send them).
const OUTSIDE_THE_REGISTRY: [&str; 3] = ["EMQ.VERSION", "EMQ.REPLAY", "EMQ.REPLAY.ORDER"];

#[test]
fn every_row_of_the_command_tables_is_a_command_of_the_registry() {
    let commands: Vec<String> = commands().into_iter().map(|(_, s)| s).collect();
    for row in rows() {
        let name = row.synopsis.split_whitespace().next().unwrap_or("");
        if OUTSIDE_THE_REGISTRY.contains(&name) {
            continue;
        }
        assert!(
            commands.contains(&row.synopsis),
            "docs/protocol.md's row `{}` is no command of the registry (or its synopsis differs)",
            row.synopsis
        );
    }
}

/// The paragraph of docs/protocol.md's Durability section that starts
/// with `start`, up to the blank line that ends it.
fn paragraph(start: &str) -> String {
    let at = DOC
        .find(start)
        .unwrap_or_else(|| panic!("docs/protocol.md says no `{start}`"));
    DOC[at..].split("\n\n").next().unwrap_or("").to_string()
}

#[test]
fn the_writes_that_do_not_wait_are_the_registry_s_writes_that_are_not_durable() {
    let text = paragraph("**Which controls wait.**");
    let named: std::collections::BTreeSet<&str> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|word| word.chars().all(|c| c.is_ascii_uppercase() || c == '.'))
        .collect();
    let mut waiting = std::collections::BTreeSet::new();
    let mut not_waiting = std::collections::BTreeSet::new();
    for t in Transition::ALL {
        let control = t.control();
        let writes = control.command.flags.split(' ').any(|flag| flag == "write");
        assert!(
            writes || !control.durable,
            "{} waits for durability but writes nothing",
            control.verb
        );
        if control.durable {
            waiting.insert(control.verb);
        } else if writes {
            not_waiting.insert(control.verb);
        }
    }
    let said_waiting: std::collections::BTreeSet<&str> =
        named.difference(&not_waiting).copied().collect();
    assert!(
        not_waiting.is_subset(&named),
        "docs/protocol.md does not name every write that does not wait: {not_waiting:?}"
    );
    assert!(
        said_waiting.is_subset(&waiting),
        "docs/protocol.md names as waiting what the registry does not make durable: {:?}",
        said_waiting.difference(&waiting).collect::<Vec<_>>()
    );
}
