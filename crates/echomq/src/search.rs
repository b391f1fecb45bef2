//! [`Jobs::search`]: the jobs of one state whose id starts with a prefix,
//! or whose payload or error holds a text — found by a bounded walk of the
//! state's keys with a cursor (`ZSCAN` of the state set; for pending,
//! `LRANGE` pages of `fifo` first), never by a full scan in one call.
//!
//! Each call to the server touches at most about [`SEARCH_BATCH`] entries:
//! one `ZSCAN … COUNT` of the state set or one `LRANGE` of `fifo` (which,
//! continuing a walk, reads back up to [`SEARCH_BATCH`] entries more to
//! find its place), then (for a payload or error search) one pipeline of
//! `HGET`s of those entries' field, then one `GET` per match. A search
//! goes on until it has the matches it wants, has walked its budget of
//! entries, or the walk is done; the cursor it returns continues it.
//!
//! # The cursor of a pending walk
//!
//! The pending state is two keys on a queue without groups (see "The
//! fifo" in `docs/protocol.md`): the list `fifo`, claimed first, and the
//! sorted set `pending`. A walk of it reads `fifo` from its head by index,
//! then walks `pending` with `ZSCAN`, in one `u64` cursor (a walk of any
//! other state is a `ZSCAN` of its set, and its cursor Valkey's):
//!
//! - `0`: the start, `fifo`'s head;
//! - the top bit set: in `fifo`, at the index in the low 36 bits, where
//!   the walk stopped before the job whose id's fingerprint is the 27 bits
//!   above them (its **mark**);
//! - all bits set: `fifo` is done, the walk of `pending` begins;
//! - any other value: a `ZSCAN` cursor of `pending` (Valkey's cursors index
//!   a set's hash table: far below 2^63).
//!
//! The mark keeps the walk's place when jobs ahead of it leave `fifo`
//! between two calls (claims pop its head; a bulk verb acts on the jobs a
//! search found): jobs join `fifo` only at its tail, so the marked job is
//! at its index or nearer the head. A step reads back from [`SEARCH_BATCH`]
//! places before the index and goes on from the first job that bears the
//! mark; when none does (the marked job left `fifo`, or moved farther), it
//! starts over from the head. So a job that stays in `fifo` is never
//! skipped, and is met twice only when the walk starts over.

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
    /// Where to continue: pass it to the next search of the same state; 0
    /// when the walk of the state is done.
    pub cursor: u64,
    /// Entries of the state walked by this call (for an id prefix, the
    /// server filters a state set, so each `ZSCAN` step counts the entries
    /// it was asked to walk, or those it returned where more).
    pub scanned: u64,
}

/// The top bit of a cursor in `fifo` (see the module's docs).
const IN_FIFO: u64 = 1 << 63;
/// The low bits of a cursor in `fifo` that hold the index.
const INDEX_BITS: u32 = 36;
/// The index of a cursor in `fifo`.
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;
/// The mark of a cursor in `fifo`, shifted down: the 27 bits between the
/// index and the top bit.
const MARK_MASK: u64 = (1 << (63 - INDEX_BITS)) - 1;
/// The cursor of a pending walk done with `fifo`: `pending`'s `ZSCAN`
/// begins.
const FIFO_DONE: u64 = u64::MAX;

/// Where a walk stands: what a cursor says (see the module's docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// In `fifo` at `index`, before the job whose id's fingerprint is
    /// `mark` (`None` at the start, the head).
    Fifo { index: u64, mark: Option<u64> },
    /// In the state set (for pending, `pending`) at this `ZSCAN` cursor.
    Scan(u64),
    /// The walk is done.
    Done,
}

impl Walk {
    /// Where a search of `state` from `cursor` stands.
    fn from_cursor(state: JobState, cursor: u64) -> Walk {
        match cursor {
            _ if state != JobState::Pending => Walk::Scan(cursor),
            0 => Walk::Fifo {
                index: 0,
                mark: None,
            },
            FIFO_DONE => Walk::Scan(0),
            _ if cursor & IN_FIFO != 0 => Walk::Fifo {
                index: cursor & INDEX_MASK,
                mark: Some((cursor >> INDEX_BITS) & MARK_MASK),
            },
            _ => Walk::Scan(cursor),
        }
    }

    /// The cursor that goes on from here. `Scan(0)` is only ever a pending
    /// walk's (a step of any other state's ends at `Done` or further on).
    fn cursor(self) -> u64 {
        match self {
            Walk::Done | Walk::Fifo { mark: None, .. } => 0,
            Walk::Scan(0) => FIFO_DONE,
            Walk::Scan(at) => at,
            Walk::Fifo {
                index,
                mark: Some(mark),
            } => IN_FIFO | (mark << INDEX_BITS) | index.min(INDEX_MASK - 1),
        }
    }
}

/// One step of a walk: the ids it met, how many entries it counts as
/// walked, and where the walk goes on.
struct Step {
    /// The ids met, in the walk's order.
    ids: Vec<String>,
    /// The entries the step counts against the budget.
    walked: u64,
    /// Where the walk goes on.
    next: Walk,
}

/// The mark of `id` in a cursor in `fifo`: 27 bits of its FNV-1a hash,
/// the same in every process, so a cursor outlives the client that made
/// it.
fn fingerprint(id: &str) -> u64 {
    let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash ^ (hash >> 32)) & MARK_MASK
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
    /// start): walks the state's keys [`SEARCH_BATCH`] entries per step
    /// until `want` matches are found, `budget` entries were walked, or
    /// the walk is done (the returned cursor is then 0). Continue with the
    /// returned cursor to see the rest; a walk continued to its end meets
    /// every job that stayed in the state throughout at least once
    /// (Valkey's `SCAN` guarantee; for pending's `fifo`, its mark: see the
    /// module's docs), and each once while the set does not grow past a
    /// rehash and no marked job leaves `fifo` between two calls.
    ///
    /// The last step's matches are all returned, so a page may hold up to
    /// one step's matches more than `want`. Payload and error texts are
    /// matched case-sensitively, as bytes, on the client; an id prefix on
    /// the server (in `fifo`, on the client). An empty text, a `want` or a
    /// `budget` of 0 is [`Error::BadArgument`] naming it. Works on a
    /// cluster: every key of a queue is in one hash slot.
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
        let set = self.queue.keys().state_set(state);
        let pattern = match matching {
            JobMatch::IdPrefix(prefix) => Some(format!("{}*", glob_escape(prefix))),
            _ => None,
        };
        let mut walk = Walk::from_cursor(state, cursor);
        let mut page = SearchPage {
            jobs: Vec::new(),
            cursor,
            scanned: 0,
        };
        loop {
            let count = SEARCH_BATCH.min(budget - page.scanned).max(1);
            let step = match walk {
                Walk::Fifo { index, mark } => self.fifo_step(index, mark, count).await?,
                Walk::Scan(at) => self.scan_step(&set, at, count, pattern.as_deref()).await?,
                Walk::Done => break,
            };
            page.scanned += step.walked;
            walk = step.next;
            let found = self.matches(step.ids, matching).await?;
            page.jobs.extend(found);
            if walk == Walk::Done || page.jobs.len() >= want || page.scanned >= budget {
                break;
            }
        }
        page.cursor = walk.cursor();
        Ok(page)
    }

    /// One `ZSCAN` step of `set` from `at`, of `count` entries, filtered
    /// by `pattern` on the server. With a pattern the step counts the
    /// entries it asked for, or those it returned where more.
    async fn scan_step(
        &self,
        set: &str,
        at: u64,
        count: u64,
        pattern: Option<&str>,
    ) -> Result<Step> {
        let mut zscan = redis::cmd("ZSCAN");
        zscan.arg(set).arg(at);
        if let Some(pattern) = pattern {
            zscan.arg("MATCH").arg(pattern);
        }
        zscan.arg("COUNT").arg(count);
        let (next, entries): (u64, Vec<String>) = self.queue.query(&zscan).await?;
        // Members and scores alternate.
        let ids: Vec<String> = entries.into_iter().step_by(2).collect();
        let walked = ids.len() as u64;
        Ok(Step {
            walked: if pattern.is_some() {
                walked.max(count)
            } else {
                walked
            },
            ids,
            next: if next == 0 {
                Walk::Done
            } else {
                Walk::Scan(next)
            },
        })
    }

    /// One step of `fifo` from `index`, before the job marked `mark`
    /// (`None`: the head): up to `count` ids from the marked job (or from
    /// the head, when no job within [`SEARCH_BATCH`] places before the
    /// index bears the mark), in one `LRANGE` (two when it starts over).
    /// The walk goes on at the job after them, marked, or in `pending`
    /// when `fifo` had no more.
    async fn fifo_step(&self, index: u64, mark: Option<u64>, count: u64) -> Result<Step> {
        let from = match mark {
            Some(_) => index.saturating_sub(SEARCH_BATCH),
            None => index,
        };
        let mut ids = self.fifo_range(from, index + count).await?;
        let mut at = from;
        if let Some(mark) = mark {
            // The marked job can only have moved toward the head.
            let within = (index - from + 1) as usize;
            match ids
                .iter()
                .take(within)
                .position(|id| fingerprint(id) == mark)
            {
                Some(found) => {
                    ids.drain(..found);
                    at += found as u64;
                }
                None => {
                    at = 0;
                    if from > 0 {
                        ids = self.fifo_range(0, count).await?;
                    }
                }
            }
        }
        let next = match ids.get(count as usize) {
            Some(id) => Walk::Fifo {
                index: at + count,
                mark: Some(fingerprint(id)),
            },
            None => Walk::Scan(0),
        };
        ids.truncate(count as usize);
        Ok(Step {
            walked: ids.len() as u64,
            ids,
            next,
        })
    }

    /// The ids of `fifo` from index `first` to `last` (inclusive).
    async fn fifo_range(&self, first: u64, last: u64) -> Result<Vec<String>> {
        self.queue
            .query(
                redis::cmd("LRANGE")
                    .arg(self.queue.keys().fifo())
                    .arg(first)
                    .arg(last),
            )
            .await
    }

    /// The records of the jobs among `ids` that match (a job gone since
    /// the walk met it is skipped).
    async fn matches(&self, ids: Vec<String>, matching: &JobMatch) -> Result<Vec<JobRecord>> {
        let ids: Vec<JobId> = ids
            .into_iter()
            .map(JobId::new)
            .collect::<std::result::Result<_, _>>()?;
        let ids = match (matching, matching.field()) {
            (JobMatch::IdPrefix(prefix), _) => ids
                .into_iter()
                .filter(|id| id.as_str().starts_with(prefix.as_str()))
                .collect(),
            (_, None) => ids,
            (_, Some(_)) if ids.is_empty() => ids,
            (_, Some(name)) => {
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
    fn a_pending_cursor_says_where_the_walk_stands() {
        let pending = JobState::Pending;
        let start = Walk::Fifo {
            index: 0,
            mark: None,
        };
        assert_eq!(Walk::from_cursor(pending, 0), start);
        assert_eq!(start.cursor(), 0);
        let mark = fingerprint("job-7");
        assert!(mark <= MARK_MASK);
        let within = Walk::Fifo {
            index: 300,
            mark: Some(mark),
        };
        let cursor = within.cursor();
        assert_ne!(cursor, 0);
        assert_ne!(cursor, FIFO_DONE);
        assert_eq!(Walk::from_cursor(pending, cursor), within);
        assert_eq!(Walk::Scan(0).cursor(), FIFO_DONE);
        assert_eq!(Walk::from_cursor(pending, FIFO_DONE), Walk::Scan(0));
        assert_eq!(Walk::from_cursor(pending, 12), Walk::Scan(12));
        assert_eq!(Walk::Done.cursor(), 0);
        // Every other state's cursor is Valkey's, as it is.
        assert_eq!(
            Walk::from_cursor(JobState::Dead, cursor),
            Walk::Scan(cursor)
        );
        assert_eq!(Walk::from_cursor(JobState::Dead, 0), Walk::Scan(0));
    }

    #[test]
    fn an_index_too_large_for_the_cursor_never_reads_as_done() {
        let far = Walk::Fifo {
            index: u64::MAX,
            mark: Some(MARK_MASK),
        };
        assert_ne!(far.cursor(), FIFO_DONE);
        assert!(matches!(
            Walk::from_cursor(JobState::Pending, far.cursor()),
            Walk::Fifo { .. }
        ));
    }

    #[test]
    fn fingerprints_are_stable_and_tell_ids_apart() {
        // FNV-1a of the empty id is its offset basis, folded.
        let basis = 0xcbf2_9ce4_8422_2325_u64;
        assert_eq!(fingerprint(""), (basis ^ (basis >> 32)) & MARK_MASK);
        assert_eq!(fingerprint("j1"), fingerprint("j1"));
        assert_ne!(fingerprint("j1"), fingerprint("j2"));
    }

    #[test]
    fn contains_finds_a_substring() {
        assert!(contains(b"{\"to\":\"ada\"}", b"ada"));
        assert!(!contains(b"Ada", b"ada"));
        assert!(!contains(b"ad", b"ada"));
    }
}
