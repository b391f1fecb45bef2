//! [`Jobs::search`]: the jobs of one state whose id starts with a prefix,
//! or whose payload or error holds a text — found by a bounded walk of the
//! state set (`ZSCAN` with a cursor), never by a full scan in one call.
//!
//! Each call to the server touches at most about [`SEARCH_BATCH`] entries:
//! one `ZSCAN … COUNT` of the state set, then (for a payload or error
//! search) one pipeline of `HGET`s of those entries' field, then one `GET`
//! per match. A search goes on until it has the matches it wants, has
//! walked its budget of entries, or the walk is done; the cursor it
//! returns continues it.

use crate::error::{Error, Result};
use crate::job::JobRecord;
use crate::jobs::Jobs;
use echomq_protocol::{JobId, JobState, field};

/// The most entries of a state set one call of a search asks the server
/// for (the `COUNT` of each `ZSCAN`, and so the length of each pipeline
/// of field reads): each call stays short (well under 10 ms) however
/// large the set.
pub const SEARCH_BATCH: u64 = 256;

/// What a search matches ([`Jobs::search`]). Every text is matched as
/// bytes, case-sensitive; an empty text is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobMatch {
    /// Every job of the state: a walk of the whole set with a cursor (what
    /// a bulk verb on "everything" uses).
    All,
    /// Jobs whose id starts with this text (matched on the server:
    /// `ZSCAN MATCH <prefix>*`, the prefix's glob characters escaped).
    IdPrefix(String),
    /// Jobs whose payload (its JSON text) contains this text.
    Payload(String),
    /// Jobs whose last error contains this text.
    Error(String),
}

impl JobMatch {
    /// The text matched; empty for [`JobMatch::All`].
    pub fn text(&self) -> &str {
        match self {
            JobMatch::All => "",
            JobMatch::IdPrefix(text) | JobMatch::Payload(text) | JobMatch::Error(text) => text,
        }
    }

    /// The argument's name in an [`Error::BadArgument`].
    fn name(&self) -> &'static str {
        match self {
            JobMatch::All => "match",
            JobMatch::IdPrefix(_) => "id prefix",
            JobMatch::Payload(_) => "payload text",
            JobMatch::Error(_) => "error text",
        }
    }

    /// The job hash field a payload or error search reads.
    fn field(&self) -> Option<&'static str> {
        match self {
            JobMatch::All | JobMatch::IdPrefix(_) => None,
            JobMatch::Payload(_) => Some(field::PAYLOAD),
            JobMatch::Error(_) => Some(field::ERROR),
        }
    }
}

/// One page of a search ([`Jobs::search`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SearchPage {
    /// The matches found, in the order the walk met them.
    pub jobs: Vec<JobRecord>,
    /// Where to continue: pass it to the next search; 0 when the walk of
    /// the state set is done.
    pub cursor: u64,
    /// Entries of the state set walked by this call (for an id prefix, the
    /// server filters, so each step counts the entries it was asked to
    /// walk, or those it returned where more).
    pub scanned: u64,
}

/// `text` with the glob characters of `MATCH` escaped.
fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 1);
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\' | '^') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl<T> Jobs<T> {
    /// Searches the jobs in `state` for `matching`, from `cursor` (0 to
    /// start): walks the state set [`SEARCH_BATCH`] entries per step until
    /// `want` matches are found, `budget` entries were walked, or the walk
    /// is done (the returned cursor is then 0). Continue with the returned
    /// cursor to see the rest; a walk continued to its end meets every job
    /// that stayed in the set throughout at least once (Valkey's `SCAN`
    /// guarantee), and each once while the set does not grow past a
    /// rehash.
    ///
    /// The last step's matches are all returned, so a page may hold up to
    /// one step's matches more than `want`. Payload and error texts are
    /// matched case-sensitively, as bytes, on the client; an id prefix on
    /// the server. An empty text, a `want` or a `budget` of 0 is
    /// [`Error::BadArgument`] naming it. Works on a cluster: every key of a
    /// queue is in one hash slot.
    pub async fn search(
        &self,
        state: JobState,
        matching: &JobMatch,
        cursor: u64,
        want: usize,
        budget: u64,
    ) -> Result<SearchPage> {
        if matching != &JobMatch::All && matching.text().is_empty() {
            return Err(Error::BadArgument {
                name: matching.name(),
                reason: "empty: give the text to search for".into(),
            });
        }
        if want == 0 {
            return Err(Error::BadArgument {
                name: "want",
                reason: "0: a search wants at least one match".into(),
            });
        }
        if budget == 0 {
            return Err(Error::BadArgument {
                name: "budget",
                reason: "0: a search walks at least one entry".into(),
            });
        }
        let queue = &self.queue;
        let set = queue.keys().state_set(state);
        let pattern = match matching {
            JobMatch::IdPrefix(prefix) => Some(format!("{}*", glob_escape(prefix))),
            _ => None,
        };
        let mut page = SearchPage {
            jobs: Vec::new(),
            cursor,
            scanned: 0,
        };
        loop {
            let count = SEARCH_BATCH.min(budget - page.scanned).max(1);
            let mut zscan = redis::cmd("ZSCAN");
            zscan.arg(&set).arg(page.cursor);
            if let Some(pattern) = &pattern {
                zscan.arg("MATCH").arg(pattern);
            }
            zscan.arg("COUNT").arg(count);
            let (next, entries): (u64, Vec<String>) = queue.query(&zscan).await?;
            // Members and scores alternate.
            let ids: Vec<String> = entries.into_iter().step_by(2).collect();
            let walked = ids.len() as u64;
            page.scanned += if pattern.is_some() {
                walked.max(count)
            } else {
                walked
            };
            page.cursor = next;
            let found = self.matches(ids, matching).await?;
            page.jobs.extend(found);
            if page.cursor == 0 || page.jobs.len() >= want || page.scanned >= budget {
                return Ok(page);
            }
        }
    }

    /// The records of the jobs among `ids` that match (a job gone since
    /// the walk met it is skipped).
    async fn matches(&self, ids: Vec<String>, matching: &JobMatch) -> Result<Vec<JobRecord>> {
        let ids: Vec<JobId> = ids
            .into_iter()
            .map(JobId::new)
            .collect::<std::result::Result<_, _>>()?;
        let ids = match matching.field() {
            None => ids,
            Some(_) if ids.is_empty() => ids,
            Some(name) => {
                let mut pipe = redis::pipe();
                for id in &ids {
                    pipe.cmd("HGET").arg(self.queue.keys().job(id)).arg(name);
                }
                let values: Vec<Option<Vec<u8>>> = self.queue.query_pipe(&pipe).await?;
                let needle = matching.text().as_bytes();
                ids.into_iter()
                    .zip(values)
                    .filter(|(_, value)| value.as_deref().is_some_and(|v| contains(v, needle)))
                    .map(|(id, _)| id)
                    .collect()
            }
        };
        self.records(&ids).await
    }
}

/// Whether `needle` (not empty) occurs in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_characters_are_escaped() {
        assert_eq!(glob_escape("a*b?c[d]e\\f^"), "a\\*b\\?c\\[d\\]e\\\\f\\^");
        assert_eq!(glob_escape("job-1"), "job-1");
    }

    #[test]
    fn contains_finds_a_substring() {
        assert!(contains(b"{\"to\":\"ada\"}", b"ada"));
        assert!(!contains(b"Ada", b"ada"));
        assert!(!contains(b"ad", b"ada"));
    }
}
