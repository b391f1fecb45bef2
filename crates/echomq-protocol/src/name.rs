//! Queue names and job ids.
//!
//! Queue names are 1–128 bytes of `[A-Za-z0-9_.:-]`. Job ids are 1–256 bytes
//! with no whitespace, no braces (braces would break the queue's hash tag)
//! and no control characters (an id holding ESC would reach an operator's
//! terminal). Both are checked before any key is built, so a bad name never
//! reaches the server.

use std::fmt;

/// Longest accepted queue name, in bytes.
pub const MAX_QUEUE_NAME: usize = 128;
/// Longest accepted job id, in bytes.
pub const MAX_JOB_ID: usize = 256;
/// Longest accepted group, in bytes.
pub const MAX_GROUP: usize = 128;
/// Longest accepted repeat key, in bytes: an occurrence id
/// `repeat:<key>:<run_at_ms>` (a run-at of at most 16 digits) then follows
/// the job-id rule.
pub const MAX_REPEAT_KEY: usize =
    MAX_JOB_ID - "repeat::".len() - crate::arg::MAX_INT_DIGITS as usize;

/// Why a queue name or job id was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The queue name was empty.
    #[error("queue name is empty")]
    EmptyQueue,
    /// The queue name was longer than [`MAX_QUEUE_NAME`] bytes.
    #[error("queue name is {len} bytes long; at most {MAX_QUEUE_NAME} are allowed")]
    QueueTooLong {
        /// Length of the refused name.
        len: usize,
    },
    /// The queue name held a byte outside `[A-Za-z0-9_.:-]`.
    #[error("queue name {name:?} holds {found:?}; only A-Z a-z 0-9 _ . : - are allowed")]
    QueueCharacter {
        /// The refused name.
        name: String,
        /// The first character that is not allowed.
        found: char,
    },
    /// The job id was empty.
    #[error("job id is empty")]
    EmptyJob,
    /// The job id was longer than [`MAX_JOB_ID`] bytes.
    #[error("job id is {len} bytes long; at most {MAX_JOB_ID} are allowed")]
    JobTooLong {
        /// Length of the refused id.
        len: usize,
    },
    /// The key prefix was not a valid name.
    #[error("key prefix refused: {reason}")]
    Prefix {
        /// What was wrong with it.
        reason: String,
    },
    /// The group was empty, longer than [`MAX_GROUP`] bytes, or held
    /// whitespace, a brace or a control character.
    #[error(
        "group {group:?} refused: 1–{MAX_GROUP} bytes, no whitespace, braces or control characters"
    )]
    Group {
        /// The refused group.
        group: String,
    },
    /// The job id held whitespace, a brace or a control character.
    #[error(
        "job id {id:?} holds {found:?}; whitespace, braces and control characters are not allowed"
    )]
    JobCharacter {
        /// The refused id.
        id: String,
        /// The first character that is not allowed.
        found: char,
    },
}

/// A validated queue name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueName(String);

impl QueueName {
    /// Validates `name` as a queue name.
    ///
    /// ```
    /// use echomq_protocol::QueueName;
    /// assert!(QueueName::new("emails.high-priority").is_ok());
    /// assert!(QueueName::new("bad name").is_err());
    /// ```
    pub fn new(name: impl Into<String>) -> Result<Self, NameError> {
        let name = name.into();
        if name.is_empty() {
            return Err(NameError::EmptyQueue);
        }
        if name.len() > MAX_QUEUE_NAME {
            return Err(NameError::QueueTooLong { len: name.len() });
        }
        let allowed = |c: char| u8::try_from(c).is_ok_and(queue_name_byte);
        if let Some(found) = name.chars().find(|c| !allowed(*c)) {
            return Err(NameError::QueueCharacter { name, found });
        }
        Ok(Self(name))
    }

    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for QueueName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `name` follows the queue-name rule, 1–[`MAX_QUEUE_NAME`] bytes
/// of `[A-Za-z0-9_.:-]`: [`QueueName::new`]'s check, on bytes given to a
/// server-side command.
pub fn is_queue_name(name: &[u8]) -> bool {
    (1..=MAX_QUEUE_NAME).contains(&name.len()) && name.iter().all(|b| queue_name_byte(*b))
}

/// A byte of `[A-Za-z0-9_.:-]`.
fn queue_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-')
}

/// A validated job id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobId(String);

impl JobId {
    /// The id that asks the server to generate one from the queue's counter.
    pub const GENERATE: &'static str = "*";

    /// Validates `id` as a job id.
    ///
    /// ```
    /// use echomq_protocol::JobId;
    /// assert!(JobId::new("order-42").is_ok());
    /// assert!(JobId::new("has space").is_err());
    /// ```
    pub fn new(id: impl Into<String>) -> Result<Self, NameError> {
        let id = id.into();
        if id.is_empty() {
            return Err(NameError::EmptyJob);
        }
        if id.len() > MAX_JOB_ID {
            return Err(NameError::JobTooLong { len: id.len() });
        }
        if let Some(found) = id
            .chars()
            .find(|c| c.is_whitespace() || c.is_ascii_control() || matches!(c, '{' | '}'))
        {
            return Err(NameError::JobCharacter { id, found });
        }
        Ok(Self(id))
    }

    /// The id as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A validated group: the job-id rule, 1–[`MAX_GROUP`] bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupName(String);

impl GroupName {
    /// Validates `group`.
    ///
    /// ```
    /// use echomq_protocol::GroupName;
    /// assert!(GroupName::new("tenant-42").is_ok());
    /// assert!(GroupName::new("{}").is_err());
    /// assert!(GroupName::new("a".repeat(129)).is_err());
    /// ```
    pub fn new(group: impl Into<String>) -> Result<Self, NameError> {
        let group = group.into();
        if is_group(group.as_bytes()) {
            Ok(Self(group))
        } else {
            Err(NameError::Group { group })
        }
    }

    /// The group as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for GroupName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `id` follows the job-id rule, 1–[`MAX_JOB_ID`] bytes none of
/// which [`refused_in_id`]: [`JobId::new`]'s check (but for Unicode
/// whitespace beyond ASCII, which only the client refuses), on bytes given
/// to a server-side command. `*` passes: whether it may ask for a
/// generated id is the command's to say.
pub fn is_job_id(id: &[u8]) -> bool {
    (1..=MAX_JOB_ID).contains(&id.len()) && !id.iter().any(|b| refused_in_id(*b))
}

/// Whether `group` follows the group rule, the job-id rule with at most
/// [`MAX_GROUP`] bytes, on bytes given to a server-side command.
pub fn is_group(group: &[u8]) -> bool {
    group.len() <= MAX_GROUP && is_job_id(group)
}

/// Whether `name` follows the job-id rule with at most `max` bytes (a flow
/// id: [`MAX_FLOW_ID`](crate::arg::MAX_FLOW_ID); a ref:
/// [`MAX_REF`](crate::arg::MAX_REF)), on bytes given to a server-side
/// command.
pub fn is_name(name: &[u8], max: usize) -> bool {
    name.len() <= max && is_job_id(name)
}

/// The `(queue, id)` pairs of a list argument (`after`, `before`):
/// `<queue> <id>` pairs joined by single spaces, empty for none; each
/// queue by the queue-name rule, each id by the job-id rule and not `*`,
/// no pair twice, at most [`FLOW_EDGES_MAX`](crate::arg::FLOW_EDGES_MAX)
/// pairs. `None` for a list that breaks the rule.
///
/// ```
/// use echomq_protocol::name::edges;
/// assert_eq!(edges(b"").unwrap().len(), 0);
/// assert_eq!(edges(b"images fetch mail a:1").unwrap().len(), 2);
/// assert!(edges(b"images").is_none());
/// assert!(edges(b"images a images a").is_none());
/// assert!(edges(b"images  a").is_none());
/// assert!(edges(b"images *").is_none());
/// ```
pub fn edges(list: &[u8]) -> Option<Vec<(&[u8], &[u8])>> {
    if list.is_empty() {
        return Some(Vec::new());
    }
    let words: Vec<&[u8]> = list.split(|b| *b == b' ').collect();
    if !words.len().is_multiple_of(2) || words.len() / 2 > crate::arg::FLOW_EDGES_MAX as usize {
        return None;
    }
    let mut seen = std::collections::HashSet::with_capacity(words.len() / 2);
    let mut pairs = Vec::with_capacity(words.len() / 2);
    for pair in words.chunks(2) {
        let (queue, id) = (pair[0], pair[1]);
        if !is_queue_name(queue) || !is_job_id(id) || id == b"*" || !seen.insert((queue, id)) {
            return None;
        }
        pairs.push((queue, id));
    }
    Some(pairs)
}

/// The outcome word of a resolution text (docs/protocol.md, "The
/// resolution text"), `None` for anything else: `completed <ref> <size>
/// <result>` (the result exactly `<size>` bytes when `<size>` is at most
/// [`FLOW_RESULT_MAX`](crate::arg::FLOW_RESULT_MAX), empty otherwise),
/// `dead <ref> <failures> <error>` (the error at most
/// [`FLOW_ERROR_MAX`](crate::arg::FLOW_ERROR_MAX) bytes), `cancelled
/// <ref>` or `removed <ref>`; a ref by the job-id rule with at most
/// [`MAX_REF`](crate::arg::MAX_REF) bytes (`-` for none), a number by
/// digits alone, at most [`MAX_INT`](crate::arg::MAX_INT). The scripts'
/// twin is `resolution_arg` of `flow_resolve.lua`.
///
/// ```
/// use echomq_protocol::name::resolution_outcome;
/// assert_eq!(resolution_outcome(b"completed fetch 2 ok"), Some(&b"completed"[..]));
/// assert_eq!(resolution_outcome(b"completed - 0 "), Some(&b"completed"[..]));
/// assert_eq!(resolution_outcome(b"dead a 3 boom: it broke"), Some(&b"dead"[..]));
/// assert_eq!(resolution_outcome(b"removed -"), Some(&b"removed"[..]));
/// assert!(resolution_outcome(b"completed a 3 ok").is_none());
/// assert!(resolution_outcome(b"cancelled a b").is_none());
/// assert!(resolution_outcome(b"wait").is_none());
/// ```
pub fn resolution_outcome(text: &[u8]) -> Option<&[u8]> {
    use crate::arg::{FLOW_ERROR_MAX, FLOW_RESULT_MAX, MAX_INT, MAX_INT_DIGITS, MAX_REF};
    let number = |digits: &[u8]| -> Option<u64> {
        let ok = (1..=MAX_INT_DIGITS as usize).contains(&digits.len())
            && digits.iter().all(u8::is_ascii_digit);
        let n = std::str::from_utf8(digits).ok()?.parse::<u64>().ok()?;
        (ok && n <= MAX_INT).then_some(n)
    };
    let mut parts = text.splitn(4, |b| *b == b' ');
    let word = parts.next()?;
    let reference = parts.next()?;
    if !is_name(reference, MAX_REF) {
        return None;
    }
    let (count, rest) = (parts.next(), parts.next());
    let whole = match word {
        b"cancelled" | b"removed" => count.is_none(),
        b"completed" => match (count.and_then(number), rest) {
            (Some(size), Some(result)) if size <= FLOW_RESULT_MAX => result.len() as u64 == size,
            (Some(_), Some(result)) => result.is_empty(),
            _ => false,
        },
        b"dead" => match (count.and_then(number), rest) {
            (Some(_), Some(error)) => error.len() as u64 <= FLOW_ERROR_MAX,
            _ => false,
        },
        _ => false,
    };
    whole.then_some(word)
}

/// Whether `key` follows the repeat-key rule, the job-id rule with at most
/// [`MAX_REPEAT_KEY`] bytes and no `:` (an occurrence id names one key),
/// on bytes given to a server-side command.
///
/// ```
/// use echomq_protocol::name::is_repeat_key;
/// assert!(is_repeat_key(b"nightly-report"));
/// assert!(!is_repeat_key(b"a:b"));
/// assert!(!is_repeat_key(&[b'k'; 233]));
/// ```
pub fn is_repeat_key(key: &[u8]) -> bool {
    key.len() <= MAX_REPEAT_KEY && !key.contains(&b':') && is_job_id(key)
}

/// A byte the job-id rule refuses: whitespace as Lua's `%s` knows it
/// (space, \t, \n, \v, \f, \r), a brace, or a control character as its
/// `%c` knows it (0x00–0x1F, 0x7F). The scripts test `[%s{}%c]`.
pub fn refused_in_id(b: u8) -> bool {
    matches!(b, b' ' | b'{' | b'}') || b.is_ascii_control()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn queue_name_limits() {
        assert_eq!(QueueName::new(""), Err(NameError::EmptyQueue));
        assert!(QueueName::new("a".repeat(128)).is_ok());
        assert_eq!(
            QueueName::new("a".repeat(129)),
            Err(NameError::QueueTooLong { len: 129 })
        );
        for bad in ["a b", "a{b", "a}b", "ä", "a/b", "a\n"] {
            assert!(
                matches!(QueueName::new(bad), Err(NameError::QueueCharacter { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn job_id_limits() {
        assert_eq!(JobId::new(""), Err(NameError::EmptyJob));
        assert!(JobId::new("x".repeat(256)).is_ok());
        assert_eq!(
            JobId::new("x".repeat(257)),
            Err(NameError::JobTooLong { len: 257 })
        );
        for bad in ["a b", "a\tb", "{a}", "a}", "\u{a0}"] {
            assert!(
                matches!(JobId::new(bad), Err(NameError::JobCharacter { .. })),
                "{bad:?}"
            );
        }
        assert!(JobId::new("repeat:nightly:1700000000000").is_ok());
    }

    #[test]
    fn a_job_id_with_a_control_character_is_refused() {
        for (bad, found) in [
            ("a\u{1b}[2J", '\u{1b}'),
            ("a\0b", '\0'),
            ("a\u{7f}", '\u{7f}'),
        ] {
            assert_eq!(
                JobId::new(bad),
                Err(NameError::JobCharacter {
                    id: bad.into(),
                    found
                }),
                "{bad:?}"
            );
            assert!(!is_job_id(bad.as_bytes()), "{bad:?}");
        }
        let err = JobId::new("a\u{1b}b").unwrap_err().to_string();
        assert_eq!(
            err,
            "job id \"a\\u{1b}b\" holds '\\u{1b}'; whitespace, braces and control characters are not allowed"
        );
        // UTF-8 passes, C1 controls included: two bytes each, none of them
        // a byte the servers' %c knows (the CLI shows them escaped).
        for good in ["ñ", "a\u{9b}b", "repeat:k:1"] {
            assert!(JobId::new(good).is_ok(), "{good:?}");
            assert!(is_job_id(good.as_bytes()), "{good:?}");
        }
    }

    #[test]
    fn a_group_with_a_control_character_is_refused() {
        for bad in ["g\u{1b}", "\0", "g\u{7f}", "g\u{1}h"] {
            assert_eq!(
                GroupName::new(bad),
                Err(NameError::Group { group: bad.into() }),
                "{bad:?}"
            );
        }
        let err = GroupName::new("g\u{1b}").unwrap_err().to_string();
        assert!(
            !err.contains('\u{1b}'),
            "the message quotes it escaped: {err}"
        );
        assert!(err.contains("control characters"), "{err}");
    }

    #[test]
    fn refused_bytes_are_lua_space_braces_and_control() {
        let refused: Vec<u8> = (0..=255).filter(|b| refused_in_id(*b)).collect();
        let mut want: Vec<u8> = (0x00..=0x1f).collect();
        want.extend([b' ', b'{', b'}', 0x7f]);
        want.sort_unstable();
        assert_eq!(refused, want);
    }

    #[test]
    fn errors_name_what_was_wrong() {
        let err = QueueName::new("bad name").unwrap_err().to_string();
        assert!(err.contains("\"bad name\"") && err.contains("' '"), "{err}");
    }

    proptest! {
        #[test]
        fn valid_queue_names_round_trip(name in "[A-Za-z0-9_.:-]{1,128}") {
            let parsed = QueueName::new(name.clone()).unwrap();
            prop_assert_eq!(parsed.as_str(), name.as_str());
        }

        #[test]
        fn the_byte_check_agrees_with_queue_name(name in "\\PC{0,130}") {
            prop_assert_eq!(is_queue_name(name.as_bytes()), QueueName::new(name).is_ok());
        }

        #[test]
        fn the_byte_check_agrees_with_job_id_on_ascii(id in "[\\x00-\\x7f]{0,258}") {
            prop_assert_eq!(is_job_id(id.as_bytes()), JobId::new(id).is_ok());
        }

        #[test]
        fn the_group_check_is_the_job_id_check_up_to_128_bytes(group in "[\\x00-\\x7f]{0,130}") {
            prop_assert_eq!(
                is_group(group.as_bytes()),
                group.len() <= MAX_GROUP && JobId::new(group).is_ok()
            );
        }

        #[test]
        fn any_brace_or_space_is_refused(prefix in "[a-z]{0,8}", bad in "[ {}\t]", suffix in "[a-z]{0,8}") {
            let candidate = format!("{prefix}{bad}{suffix}");
            prop_assert!(JobId::new(candidate.clone()).is_err());
            prop_assert!(QueueName::new(candidate).is_err());
        }
    }
}
