use super::*;

const WEB: &str = "web-token";
const OPS: &str = "ops-token";

fn file() -> String {
    format!(
        "# the tokens\n{}\n{}",
        entry_toml(
            &Grant {
                name: "web".into(),
                role: AccessRole::Producer,
                queues: vec!["emails".into(), "reports-*".into()],
            },
            &sha256_hex(WEB)
        ),
        entry_toml(
            &Grant {
                name: "ops".into(),
                role: AccessRole::Operator,
                queues: vec!["*".into()],
            },
            &sha256_hex(OPS)
        )
    )
}

/// The error `text` is refused with.
#[track_caller]
fn refused(text: &str) -> TokensError {
    Tokens::parse(text).expect_err("refused")
}

/// A file of one token with `line` in place of the line starting with
/// `field`.
fn one_with(field: &str, line: &str) -> String {
    let block = entry_toml(
        &Grant {
            name: "web".into(),
            role: AccessRole::Reader,
            queues: vec!["q".into()],
        },
        &sha256_hex(WEB),
    );
    block
        .lines()
        .map(|l| if l.starts_with(field) { line } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_file_written_by_entry_toml_reads_back() {
    let tokens = Tokens::parse(&file()).unwrap();
    assert_eq!(tokens.len(), 2);
    let web = tokens.grant_for(WEB).unwrap();
    assert_eq!(web.name, "web");
    assert_eq!(web.role, AccessRole::Producer);
    assert_eq!(web.queues, ["emails", "reports-*"]);
    assert_eq!(tokens.grant_for(OPS).unwrap().name, "ops");
    let names: Vec<&str> = tokens.grants().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["web", "ops"]);
}

#[test]
fn a_token_not_in_the_file_has_no_grant() {
    let tokens = Tokens::parse(&file()).unwrap();
    for wrong in ["", "web", "web-token ", "WEB-TOKEN", &sha256_hex(WEB)] {
        assert_eq!(tokens.grant_for(wrong), None, "{wrong:?}");
    }
}

#[test]
fn the_lookup_compares_every_hash_and_finds_the_last_as_the_first() {
    // The match is found wherever it stands; which one is found depends
    // only on the hash, never on an early exit.
    let many: String = (0..50)
        .map(|n| {
            entry_toml(
                &Grant {
                    name: format!("t{n}"),
                    role: AccessRole::Reader,
                    queues: vec!["*".into()],
                },
                &sha256_hex(&format!("token-{n}")),
            )
        })
        .collect();
    let tokens = Tokens::parse(&many).unwrap();
    for n in [0, 1, 25, 49] {
        assert_eq!(
            tokens.grant_for(&format!("token-{n}")).unwrap().name,
            format!("t{n}")
        );
    }
    assert_eq!(tokens.grant_for("token-50"), None);
}

#[test]
fn hashes_are_the_hex_sha256_of_the_token() {
    // The SHA-256 of "test", as docs/http.md's example shows it.
    assert_eq!(
        sha256_hex("test"),
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    );
    let upper = one_with(
        "sha256",
        &format!("sha256 = \"{}\"", sha256_hex(WEB).to_uppercase()),
    );
    assert!(Tokens::parse(&upper).unwrap().grant_for(WEB).is_some());
}

#[test]
fn single_grants_an_operator_of_every_queue_named_token() {
    let grant = Tokens::single("s3cret").grant_for("s3cret").unwrap();
    assert_eq!(grant.name, "token");
    assert_eq!(grant.role, AccessRole::Operator);
    assert!(grant.may_see("any"));
    assert_eq!(Tokens::single("s3cret").grant_for("s3cre"), None);
}

#[test]
fn new_tokens_are_fresh_and_long() {
    let (a, b) = (new_token(), new_token());
    assert_ne!(a, b);
    assert_eq!(a.len(), 2 * TOKEN_BYTES);
}

#[test]
fn a_hash_that_is_not_hex_is_refused_naming_its_line() {
    let err = refused(&one_with("sha256", "sha256 = \"not-hex\""));
    assert_eq!(err.line, Some(3), "{err}");
    assert!(err.to_string().contains("line 3: sha256"), "{err}");
    assert!(err.message.contains("not a hex digit"), "{err}");
}

#[test]
fn a_hash_of_the_wrong_length_is_refused() {
    let err = refused(&one_with("sha256", "sha256 = \"abcd\""));
    assert_eq!(err.line, Some(3), "{err}");
    assert!(
        err.message.contains("4 hex digits; a SHA-256 is 64"),
        "{err}"
    );
}

#[test]
fn an_unknown_role_is_refused() {
    let err = refused(&one_with("role", "role = \"admin\""));
    assert_eq!(err.line, Some(4), "{err}");
    assert!(err.message.contains("role \"admin\""), "{err}");
    assert!(err.message.contains("reader, producer, worker or operator"));
}

#[test]
fn empty_queues_are_refused() {
    let err = refused(&one_with("queues", "queues = []"));
    assert_eq!(err.line, Some(5), "{err}");
    assert!(err.message.starts_with("queues: empty"), "{err}");
    let err = refused(&one_with("queues", "queues = [\"q\", \"\"]"));
    assert!(err.message.contains("an empty name"), "{err}");
}

#[test]
fn a_name_given_twice_is_refused() {
    let again = file()
        .replace(&sha256_hex(WEB), &sha256_hex("a"))
        .replace(&sha256_hex(OPS), &sha256_hex("b"));
    let text = format!("{}\n{again}", file());
    let err = refused(&text);
    assert!(err.message.contains("name \"web\": given twice"), "{err}");
    assert!(err.line.unwrap() > 10, "{err}");
}

#[test]
fn a_hash_given_twice_is_refused() {
    let text = file().replace(&sha256_hex(OPS), &sha256_hex(WEB));
    let err = refused(&text);
    assert!(
        err.message.contains("the same hash as token \"web\""),
        "{err}"
    );
    assert_eq!(err.line, Some(10), "{err}");
}

#[test]
fn an_unknown_key_is_refused() {
    let err = refused(&one_with("role", "role = \"reader\"\nexpires = 3"));
    assert!(err.message.contains("expires"), "{err}");
    assert_eq!(err.line, Some(5), "{err}");
    let err = refused(&format!("tokens = 1\n{}", file()));
    assert!(err.message.contains("tokens"), "{err}");
    assert_eq!(err.line, Some(1), "{err}");
}

#[test]
fn a_missing_field_is_refused() {
    let text = one_with("role", "");
    let err = refused(&text);
    assert!(err.message.contains("role"), "{err}");
    assert!(err.line.is_some(), "{err}");
}

#[test]
fn a_file_that_is_not_toml_or_names_no_token_is_refused() {
    let err = refused("[[token]\nname = 1");
    assert_eq!(err.line, Some(1), "{err}");
    let err = refused("# nothing yet\n");
    assert!(err.message.contains("no [[token]]"), "{err}");
    assert_eq!(err.line, None);
}

#[test]
fn an_unreadable_file_names_itself() {
    let err = Tokens::load(Path::new("/nonexistent/tokens.toml")).unwrap_err();
    assert!(
        err.to_string().starts_with("/nonexistent/tokens.toml: "),
        "{err}"
    );
}

#[test]
fn a_request_s_grant_is_anonymous_without_tokens_and_its_token_s_with() {
    let tokens = Tokens::parse(&file()).unwrap();
    assert_eq!(
        request_grant(None, false, None),
        Some(Grant::anonymous(false))
    );
    assert_eq!(
        request_grant(None, true, Some("x")),
        Some(Grant::anonymous(true))
    );
    assert_eq!(
        request_grant(Some(&tokens), false, Some(OPS)).unwrap().name,
        "ops"
    );
    assert_eq!(request_grant(Some(&tokens), false, Some("x")), None);
    assert_eq!(request_grant(Some(&tokens), false, None), None);
}
