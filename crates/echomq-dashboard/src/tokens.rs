//! The tokens file (docs/http.md, "Tokens and roles"): who may call, as
//! [`Grant`]s, each behind a token stored as its SHA-256 (never the token
//! itself). [`Tokens::grant_for`] hashes the token a request presents and
//! compares it with every stored hash in constant time; the dashboard's
//! sign-in and the API ask it the same question.
//!
//! ```toml
//! [[token]]
//! name = "web-app"
//! sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
//! role = "producer"                  # reader | producer | worker | operator
//! queues = ["emails", "reports-*"]   # names or globs; ["*"] for all
//! ```
//!
//! A file is refused whole, naming the line and the field, for any
//! mistake: a key it does not know, a field missing, a hash that is not 64
//! hex digits, a role no role has, no queues, a name or a hash given twice.

mod file;

use crate::grant::{AccessRole, Grant};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;

pub use file::TokensError;

/// Random bytes in a token `emq token new` makes.
pub const TOKEN_BYTES: usize = 32;

/// One token: the grant it carries and the SHA-256 of the token.
#[derive(Debug, Clone)]
struct Entry {
    grant: Grant,
    sha256: [u8; 32],
}

/// The tokens a server accepts, each with its grant. Cheap to clone (the
/// dashboard and the API share one).
#[derive(Debug, Clone)]
pub struct Tokens {
    entries: Arc<[Entry]>,
}

impl Tokens {
    /// The tokens of a tokens file's text; refused whole, naming the line
    /// and the field, for any mistake.
    pub fn parse(text: &str) -> Result<Self, TokensError> {
        let entries = file::parse(text)?
            .into_iter()
            .map(|(grant, sha256)| Entry { grant, sha256 })
            .collect();
        Ok(Self { entries })
    }

    /// The tokens of the file at `path` (its errors name the file).
    pub fn load(path: &Path) -> Result<Self, TokensError> {
        let text =
            std::fs::read_to_string(path).map_err(|err| TokensError::unreadable(path, &err))?;
        Self::parse(&text).map_err(|err| err.in_file(path))
    }

    /// One token, `token`, granting an operator of every queue named
    /// `token` (what `--token` means).
    pub fn single(token: &str) -> Self {
        let grant = Grant {
            name: "token".into(),
            role: AccessRole::Operator,
            queues: vec!["*".into()],
        };
        Self {
            entries: Arc::new([Entry {
                grant,
                sha256: digest(token),
            }]),
        }
    }

    /// The grant of the token `bearer`, if it is one of these: its SHA-256
    /// compared with every stored hash, all of them, in time that does not
    /// depend on which (if any) matches or where they differ.
    pub fn grant_for(&self, bearer: &str) -> Option<Grant> {
        let given = digest(bearer);
        // One more than the index of the match; 0 for none. Hashes are
        // unique (the file refuses a repeat), so at most one matches.
        let mut found = 0usize;
        for (n, entry) in self.entries.iter().enumerate() {
            let differ = entry
                .sha256
                .iter()
                .zip(&given)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            // 0 when equal, else all ones: no branch on the secret.
            let mask = usize::from(std::hint::black_box(differ) == 0).wrapping_neg();
            found |= (n + 1) & mask;
        }
        found.checked_sub(1).map(|n| self.entries[n].grant.clone())
    }

    /// The tokens' grants, in file order.
    pub fn grants(&self) -> impl Iterator<Item = &Grant> {
        self.entries.iter().map(|entry| &entry.grant)
    }

    /// How many tokens there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none (a file always has one).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The grant of a request that presents `bearer` (the token of its
/// `Authorization: Bearer`, if any) to a server with `tokens`: without
/// tokens, every request's ([`Grant::anonymous`]: an operator of every
/// queue, a reader when `read_only`); with tokens, the grant of the token
/// presented, and `None` (401) for none or a wrong one. What the
/// dashboard's requests and the API's resolve to alike.
pub fn request_grant(
    tokens: Option<&Tokens>,
    read_only: bool,
    bearer: Option<&str>,
) -> Option<Grant> {
    match tokens {
        None => Some(Grant::anonymous(read_only)),
        Some(tokens) => bearer.and_then(|bearer| tokens.grant_for(bearer)),
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The hex SHA-256 of `token`: what a tokens file stores.
pub fn sha256_hex(token: &str) -> String {
    hex(&digest(token))
}

/// A fresh token: [`TOKEN_BYTES`] random bytes from the operating system,
/// hex-encoded.
pub fn new_token() -> String {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).expect("the operating system's random source");
    hex(&bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `[[token]]` block of a tokens file for `grant` behind the token
/// whose SHA-256 is `sha256` (hex): what `emq token new` prints.
pub fn entry_toml(grant: &Grant, sha256: &str) -> String {
    let quoted = |text: &str| serde_json::Value::from(text).to_string();
    let queues: Vec<String> = grant.queues.iter().map(|q| quoted(q)).collect();
    format!(
        "[[token]]\nname = {}\nsha256 = {}\nrole = {}\nqueues = [{}]\n",
        quoted(&grant.name),
        quoted(sha256),
        quoted(grant.role.name()),
        queues.join(", ")
    )
}

#[cfg(test)]
mod tests;
