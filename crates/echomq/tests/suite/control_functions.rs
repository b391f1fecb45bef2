//! The registry of controls names the library functions that send each
//! control (`Queue::enqueue`, `Jobs::cancel`, …): each must be a public
//! method of that type in this crate's source, so a rename or removal
//! fails here rather than leaving `emq controls` pointing at nothing.

use echomq::Transition;
use std::collections::BTreeSet;
use std::path::Path;

/// Every `pub fn` / `pub async fn` of an `impl` block in `src/`, as
/// `Type::method`.
fn public_methods() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                methods_in(&std::fs::read_to_string(&path).unwrap(), &mut found);
            }
        }
    }
    found
}

fn methods_in(source: &str, found: &mut BTreeSet<String>) {
    let mut current: Option<String> = None;
    for line in source.lines() {
        if line.starts_with("impl") {
            current = impl_type(line);
        } else if line.starts_with('}') {
            current = None;
        } else if let Some(ty) = &current {
            let method = line
                .strip_prefix("    pub async fn ")
                .or_else(|| line.strip_prefix("    pub fn "));
            if let Some(rest) = method {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                found.insert(format!("{ty}::{name}"));
            }
        }
    }
}

/// The type an `impl` line is for: `impl<T: Serialize> Queue<T> {` →
/// `Queue`; `impl Display for Event {` → `Event`.
fn impl_type(line: &str) -> Option<String> {
    let mut rest = line.strip_prefix("impl")?;
    if rest.starts_with('<') {
        let mut depth = 0;
        let end = rest.char_indices().find_map(|(i, c)| {
            match c {
                '<' => depth += 1,
                '>' => depth -= 1,
                _ => {}
            }
            (depth == 0).then_some(i)
        })?;
        rest = &rest[end + 1..];
    }
    let rest = rest.split(" for ").last()?;
    let name: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

#[test]
fn every_library_function_of_the_registry_exists() {
    let methods = public_methods();
    assert!(
        methods.contains("Queue::enqueue"),
        "the scan found {methods:?}"
    );
    for transition in Transition::ALL {
        for function in transition.control().functions {
            assert!(
                methods.contains(*function),
                "the registry says {function} sends {transition}, but src/ has no public {function}"
            );
        }
    }
}

#[test]
fn impl_lines_name_their_type() {
    assert_eq!(
        impl_type("impl<T: Serialize> Queue<T> {").as_deref(),
        Some("Queue")
    );
    assert_eq!(
        impl_type("impl fmt::Display for Event {").as_deref(),
        Some("Event")
    );
    assert_eq!(impl_type("impl Worker<T> {").as_deref(), Some("Worker"));
}
