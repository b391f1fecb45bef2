//! Reading a tokens file: TOML into grants and hashes, every mistake
//! refused with the line and the field it is on ([`TokensError`]).

use crate::grant::{AccessRole, Grant};
use serde::Deserialize;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;

/// Why a tokens file was refused: where (the file, the line) and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.words())]
pub struct TokensError {
    /// The file, when it was read from one.
    pub file: Option<String>,
    /// The line (from 1), when the mistake is on one.
    pub line: Option<usize>,
    /// What is wrong, naming the field.
    pub message: String,
}

impl TokensError {
    fn at(text: &str, span: Range<usize>, message: String) -> Self {
        Self {
            file: None,
            line: Some(line_of(text, span.start)),
            message,
        }
    }

    fn whole(message: String) -> Self {
        Self {
            file: None,
            line: None,
            message,
        }
    }

    pub(super) fn unreadable(path: &Path, err: &std::io::Error) -> Self {
        Self::whole(err.to_string()).in_file(path)
    }

    pub(super) fn in_file(mut self, path: &Path) -> Self {
        self.file = Some(path.display().to_string());
        self
    }

    fn words(&self) -> String {
        let file = self.file.as_deref().unwrap_or("the tokens file");
        match self.line {
            Some(line) => format!("{file}, line {line}: {}", self.message),
            None => format!("{file}: {}", self.message),
        }
    }
}

/// The line (from 1) of byte `at` of `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(default)]
    token: Vec<Spanned<RawToken>>,
}

/// One `[[token]]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToken {
    name: Spanned<String>,
    sha256: Spanned<String>,
    role: Spanned<String>,
    queues: Spanned<Vec<Spanned<String>>>,
}

/// The file's grants and hashes, in its order.
pub(super) fn parse(text: &str) -> Result<Vec<(Grant, [u8; 32])>, TokensError> {
    let raw: Raw = toml::from_str(text).map_err(|err| {
        let message = err.message().trim().to_string();
        match err.span() {
            Some(span) => TokensError::at(text, span, message),
            None => TokensError::whole(message),
        }
    })?;
    if raw.token.is_empty() {
        return Err(TokensError::whole(
            "no [[token]]: the file names no token, so no request could be served".into(),
        ));
    }
    let mut read: Vec<(Grant, [u8; 32], usize, usize)> = Vec::with_capacity(raw.token.len());
    for token in raw.token {
        let token = token.into_inner();
        let (name_line, hash_line) = (
            line_of(text, token.name.span().start),
            line_of(text, token.sha256.span().start),
        );
        let (grant, sha256) = entry(text, token)?;
        if let Some((_, _, line, _)) = read.iter().find(|(g, ..)| g.name == grant.name) {
            return Err(TokensError {
                file: None,
                line: Some(name_line),
                message: format!(
                    "name {:?}: given twice (line {line} too); each token's name is its own",
                    grant.name
                ),
            });
        }
        if let Some((g, _, _, line)) = read.iter().find(|(_, h, ..)| *h == sha256) {
            return Err(TokensError {
                file: None,
                line: Some(hash_line),
                message: format!(
                    "sha256: the same hash as token {:?} (line {line}); each token is its own",
                    g.name
                ),
            });
        }
        read.push((grant, sha256, name_line, hash_line));
    }
    Ok(read.into_iter().map(|(g, h, ..)| (g, h)).collect())
}

/// One token's grant and hash, each field checked.
fn entry(text: &str, token: RawToken) -> Result<(Grant, [u8; 32]), TokensError> {
    let wrong = |span: Range<usize>, message: String| TokensError::at(text, span, message);
    let name = token.name.get_ref().trim();
    if name.is_empty() {
        return Err(wrong(token.name.span(), "name: empty".into()));
    }
    let sha256 = parse_hex(token.sha256.get_ref())
        .map_err(|why| wrong(token.sha256.span(), format!("sha256: {why}")))?;
    let role = AccessRole::from_name(token.role.get_ref()).ok_or_else(|| {
        wrong(
            token.role.span(),
            format!(
                "role {:?}: expected reader, producer, worker or operator",
                token.role.get_ref()
            ),
        )
    })?;
    let queues_span = token.queues.span();
    let mut queues = Vec::new();
    for queue in token.queues.into_inner() {
        if queue.get_ref().is_empty() {
            return Err(wrong(queue.span(), "queues: an empty name".into()));
        }
        queues.push(queue.into_inner());
    }
    if queues.is_empty() {
        return Err(wrong(
            queues_span,
            "queues: empty; name the queues or globs it may touch ([\"*\"] for all)".into(),
        ));
    }
    let grant = Grant {
        name: name.to_string(),
        role,
        queues,
    };
    Ok((grant, sha256))
}

/// 64 hex digits (either case) as 32 bytes; why not otherwise.
fn parse_hex(text: &str) -> Result<[u8; 32], String> {
    if let Some(bad) = text.chars().find(|c| !c.is_ascii_hexdigit()) {
        return Err(format!(
            "{bad:?} is not a hex digit (the hex SHA-256 of the token, as `emq token new` prints)"
        ));
    }
    if text.len() != 64 {
        return Err(format!(
            "{} hex digits; a SHA-256 is 64 (the hex SHA-256 of the token, not the token)",
            text.len()
        ));
    }
    let mut bytes = [0u8; 32];
    for (n, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * n..2 * n + 2], 16).map_err(|err| format!("{err}"))?;
    }
    Ok(bytes)
}
