//! The README's scheduling lines and the `--at` examples `emq` prints
//! work as written on any day: the instants they show are in the future,
//! and the README's reschedule moves the job it enqueued.

use crate::common::{self, assert_ok, emq, job, run_on, servers};
use std::time::{SystemTime, UNIX_EPOCH};

/// The README's `emq …` line that starts with `prefix` and has `--at`,
/// as its words after `emq`.
fn readme_line(prefix: &str) -> Vec<String> {
    common::readme::emq_line(prefix, "--at").args
}

/// Host clock, unix ms.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Unix ms of an RFC 3339 instant.
fn instant_ms(text: &str) -> u64 {
    chrono::DateTime::parse_from_rfc3339(text)
        .unwrap_or_else(|err| panic!("{text:?} is not RFC 3339: {err}"))
        .timestamp_millis() as u64
}

/// The value after `--at` in `words`.
fn at_of(words: &[String]) -> &str {
    let at = words.iter().position(|word| word == "--at").unwrap();
    &words[at + 1]
}

/// Every word of `text` that reads like an RFC 3339 instant (a year, then
/// a `T`), stripped of surrounding punctuation.
fn instants_in(text: &str) -> Vec<&str> {
    text.split(|ch: char| ch.is_whitespace() || "()[],;`\"".contains(ch))
        .filter(|word| {
            word.len() > 10
                && word.as_bytes()[..4].iter().all(u8::is_ascii_digit)
                && word.contains('T')
        })
        .collect()
}

#[test]
fn the_readme_reschedule_moves_the_job_the_readme_enqueued_on_both_wires() {
    let enqueue = readme_line("emq enqueue ");
    let reschedule = readme_line("emq reschedule ");
    let (first, second) = (instant_ms(at_of(&enqueue)), instant_ms(at_of(&reschedule)));
    let id = &reschedule[2];
    let queue = &reschedule[1];
    for (server, wire) in servers() {
        let args: Vec<&str> = enqueue.iter().map(String::as_str).collect();
        let run = run_on(&server, wire, &args);
        assert_ok(&run);
        let before = job(&server, queue, id);
        assert_eq!(before["state"], "scheduled", "{wire}: {before}");
        assert_eq!(before["run_at"], first, "{wire}: {before}");

        let args: Vec<&str> = reschedule.iter().map(String::as_str).collect();
        let run = run_on(&server, wire, &args);
        assert_ok(&run);
        let after = job(&server, queue, id);
        assert_eq!(after["state"], "scheduled", "{wire}: {after}");
        assert_eq!(after["run_at"], second, "{wire}: {after}");
    }
    assert_ne!(first, second, "the README's reschedule must move the job");
}

#[test]
fn the_at_examples_in_help_are_in_the_future() {
    for command in ["enqueue", "reschedule"] {
        let run = emq(&[command, "--help"]);
        assert_ok(&run);
        // The option's paragraph: its `--at <…>` line to the next blank line.
        let at: Vec<&str> = run
            .stdout
            .lines()
            .skip_while(|line| !line.trim_start().starts_with("--at <"))
            .take_while(|line| !line.trim().is_empty())
            .collect();
        assert!(
            !at.is_empty(),
            "no --at in {command} --help:\n{}",
            run.stdout
        );
        let at = at.join("\n");
        let examples = instants_in(&at);
        assert!(
            !examples.is_empty(),
            "{command} --help's --at shows no instant: {at}"
        );
        for example in examples {
            assert!(
                instant_ms(example) > now_ms(),
                "{command} --help: {example} has passed"
            );
        }
    }
}

#[test]
fn the_at_parse_error_examples_are_in_the_future() {
    let run = emq(&["enqueue", "q", "{}", "--at", "tomorrow"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let examples = instants_in(
        run.stderr
            .split("expected")
            .nth(1)
            .unwrap_or_else(|| panic!("the --at parse error shows no example: {}", run.stderr)),
    );
    assert_eq!(examples.len(), 2, "{}", run.stderr);
    for example in examples {
        assert!(
            instant_ms(example) > now_ms(),
            "{example} has passed: {}",
            run.stderr
        );
    }
}
