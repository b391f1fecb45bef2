//! `emq controls`: the control map from the registry of controls, as text,
//! as JSON, one control in full, and as the README's table.

use crate::common::{assert_ok, emq};
use echomq::Transition;
use serde_json::Value;

const README: &str = include_str!("../../../../README.md");
/// The README's controls table sits between these lines.
const BEGIN: &str = "<!-- emq controls --markdown -->";
const END: &str = "<!-- end of emq controls --markdown -->";

#[test]
fn controls_json_is_one_object_per_control_of_the_registry() {
    let run = emq(&["controls", "--json"]);
    assert_ok(&run);
    let Value::Array(rows) = run.json() else {
        panic!("not an array: {}", run.stdout)
    };
    assert_eq!(rows.len(), Transition::ALL.len());
    for (row, transition) in rows.iter().zip(Transition::ALL) {
        for key in [
            "name", "scope", "function", "keys", "effect", "script", "native",
        ] {
            assert!(row.get(key).is_some(), "{key} missing from {row}");
        }
        let control = transition.control();
        assert_eq!(row["name"], transition.name());
        assert_eq!(row["scope"], control.scope.name());
        assert_eq!(row["function"], control.functions[0]);
        assert_eq!(row["effect"], control.effect);
        assert_eq!(row["script"], format!("{}.lua", control.command.script));
        assert_eq!(row["native"], control.command.native);
        let keys: Vec<&str> = row["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        for key in control.keys.iter().filter(|k| k.name() != "base") {
            assert!(
                keys.contains(&format!("emq:{{q}}:{}", key.name()).as_str()),
                "{row}"
            );
        }
    }
}

#[test]
fn the_map_has_a_row_for_every_control_with_its_script_and_command() {
    let run = emq(&["controls"]);
    assert_ok(&run);
    for transition in Transition::ALL {
        let control = transition.control();
        let script = format!("{}.lua", control.command.script);
        // The row's first line: its name, then its script (a wrapped line
        // of another row's keys may start with a key of the same name, as
        // `dedup_owner` does).
        let row = run
            .stdout
            .lines()
            .map(|line| line.split_whitespace().collect::<Vec<_>>())
            .find(|words| {
                words.first() == Some(&transition.name()) && words.contains(&script.as_str())
            })
            .unwrap_or_else(|| panic!("no row {} in:\n{}", transition.name(), run.stdout));
        assert!(row.contains(&control.functions[0]), "{row:?}");
        assert!(row.contains(&control.command.native), "{row:?}");
    }
    for heading in [
        "THE SPINE",
        "OVER TIME",
        "OVER THE WORKER IN HAND",
        "OVER ONE JOB",
        "FLOW CONTROL",
    ] {
        assert!(run.stdout.contains(heading), "{heading}");
    }
}

#[test]
fn controls_claim_shows_its_keys_native_command_and_refusals() {
    let run = emq(&["controls", "claim"]);
    assert_ok(&run);
    for needle in [
        "emq:{q}:pending",
        "emq:{q}:active",
        "emq:{q}:job:<id>",
        "EMQ.CLAIM base worker lease_ms [COUNT n]",
        "claim.lua",
        "Queue::claim",
        "BADARG lease_ms",
        "promoted, expired, claimed",
        "emq:{q}:deadlines",
    ] {
        assert!(
            run.stdout.contains(needle),
            "{needle:?} in:\n{}",
            run.stdout
        );
    }
    // Its prefix is the global one.
    let run = emq(&["controls", "EMQ.CLAIM", "--prefix", "tenant"]);
    assert_ok(&run);
    assert!(run.stdout.contains("tenant:{q}:pending"), "{}", run.stdout);
}

#[test]
fn controls_of_one_control_as_json_lists_its_commands() {
    let run = emq(&["controls", "complete", "--json"]);
    assert_ok(&run);
    let detail = run.json();
    assert_eq!(detail["native"], "EMQ.COMPLETE");
    let commands = detail["commands"].as_array().unwrap();
    let natives: Vec<&str> = commands
        .iter()
        .map(|c| c["native"].as_str().unwrap())
        .collect();
    assert_eq!(natives, ["EMQ.COMPLETE", "EMQ.COMPLETE.BULK"]);
    let codes: Vec<&str> = commands[0]["refusals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"NOTACTIVE"), "{codes:?}");
}

#[test]
fn an_unknown_control_is_a_usage_error_that_lists_the_names() {
    let run = emq(&["controls", "clam"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("\"clam\""), "{}", run.stderr);
    assert!(run.stderr.contains("stalled_check"), "{}", run.stderr);
    assert_eq!(run.stdout, "");
}

#[test]
fn the_readme_table_of_controls_is_what_emq_controls_markdown_prints() {
    let run = emq(&["controls", "--markdown"]);
    assert_ok(&run);
    let start = README
        .find(BEGIN)
        .expect("the README's controls table marker")
        + BEGIN.len();
    let end = README.find(END).expect("the README's end marker");
    assert_eq!(
        README[start..end].trim(),
        run.stdout.trim(),
        "README.md's controls table differs from the registry: paste `emq controls --markdown` between its markers"
    );
}
