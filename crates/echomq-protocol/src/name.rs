//! Queue names and job ids.
//!
//! Queue names are 1–128 bytes of `[A-Za-z0-9_.:-]`. Job ids are 1–256 bytes
//! with no whitespace and no braces (braces would break the queue's hash tag).
//! Both are checked before any key is built, so a bad name never reaches the
//! server.

use std::fmt;

/// Longest accepted queue name, in bytes.
pub const MAX_QUEUE_NAME: usize = 128;
/// Longest accepted job id, in bytes.
pub const MAX_JOB_ID: usize = 256;
/// Longest accepted group, in bytes.
pub const MAX_GROUP: usize = 128;

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
    /// whitespace or a brace.
    #[error("group {group:?} refused: 1–{MAX_GROUP} bytes, no whitespace or braces")]
    Group {
        /// The refused group.
        group: String,
    },
    /// The job id held whitespace or a brace.
    #[error("job id {id:?} holds {found:?}; whitespace and braces are not allowed")]
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
            .find(|c| c.is_whitespace() || matches!(c, '{' | '}'))
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

/// Whether `group` follows the group rule (1–128 bytes, none of them
/// whitespace as Lua's `%s` knows it — space, \t, \n, \v, \f, \r — or a
/// brace), on bytes given to a server-side command.
pub fn is_group(group: &[u8]) -> bool {
    (1..=MAX_GROUP).contains(&group.len())
        && !group
            .iter()
            .any(|b| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b'{' | b'}'))
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
        fn any_brace_or_space_is_refused(prefix in "[a-z]{0,8}", bad in "[ {}\t]", suffix in "[a-z]{0,8}") {
            let candidate = format!("{prefix}{bad}{suffix}");
            prop_assert!(JobId::new(candidate.clone()).is_err());
            prop_assert!(QueueName::new(candidate).is_err());
        }
    }
}
