//! The README's command lines, as a test reads them.

/// The README, as built into the test.
pub(crate) const README: &str = include_str!("../../../../README.md");

/// One `emq …` line of a README code block.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    /// The line as written.
    pub text: String,
    /// Its words after `emq` (single quotes honoured, comment dropped).
    pub args: Vec<String>,
    /// Its comment, without the `#`.
    pub comment: String,
}

impl Line {
    /// Whether the line holds `flag` as a word.
    pub(crate) fn has(&self, flag: &str) -> bool {
        self.args.iter().any(|arg| arg == flag)
    }

    /// The exit code its comment promises: `exits N` in the comment, else 0.
    pub(crate) fn expected_exit(&self) -> i32 {
        self.comment
            .split("exits ")
            .nth(1)
            .and_then(|rest| rest.split(|ch: char| !ch.is_ascii_digit()).next())
            .and_then(|code| code.parse().ok())
            .unwrap_or(0)
    }
}

/// Every `emq …` line of the README's `sh` code blocks, in order.
pub(crate) fn emq_lines() -> Vec<Line> {
    let mut lines = Vec::new();
    let mut in_sh = false;
    for text in README.lines() {
        if text.starts_with("```") {
            in_sh = !in_sh && text == "```sh";
            continue;
        }
        if in_sh && text.starts_with("emq ") {
            lines.push(parse(text));
        }
    }
    lines
}

/// The README's `emq …` line that starts with `prefix` and holds `word`.
pub(crate) fn emq_line(prefix: &str, word: &str) -> Line {
    emq_lines()
        .into_iter()
        .find(|line| line.text.starts_with(prefix) && line.has(word))
        .unwrap_or_else(|| panic!("README.md has no line `{prefix} … {word} …`"))
}

fn parse(text: &str) -> Line {
    let (code, comment) = match text.split_once("  #") {
        Some((code, comment)) => (code, comment.trim()),
        None => (text, ""),
    };
    let words = shell_words(code);
    assert_eq!(words[0], "emq", "{text}");
    Line {
        text: text.to_string(),
        args: words[1..].to_vec(),
        comment: comment.to_string(),
    }
}

/// Splits a command line into words: whitespace separates, single quotes
/// keep what they enclose (all the README's lines need).
pub(crate) fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quoted = false;
    for ch in line.chars() {
        match ch {
            '\'' => {
                quoted = !quoted;
                word.get_or_insert_with(String::new);
            }
            ch if ch.is_whitespace() && !quoted => words.extend(word.take()),
            ch => word.get_or_insert_with(String::new).push(ch),
        }
    }
    assert!(!quoted, "unclosed quote in {line:?}");
    words.extend(word);
    words
}
