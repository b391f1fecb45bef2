//! Argument checks, exactly those of `scripts/include/arguments.lua` (and
//! the group and trace checks of `groups.lua`): every one runs before any
//! key is read, and answers `BADARG <name>` or `SYNTAX`.

use echomq_protocol::arg::MAX_INT;
use echomq_protocol::name::is_job_id;
use echomq_protocol::{JobState, Keyspace};
use valkey_module::{ValkeyError, ValkeyString};

/// A refusal: an error reply whose first word is its code.
pub(crate) fn refuse(message: impl Into<String>) -> ValkeyError {
    ValkeyError::String(message.into())
}

/// The message of Valkey's own WRONGTYPE error.
pub(crate) const WRONGTYPE: &str =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

/// Refuses a group that breaks the group rule (`group_arg`): `BADARG name`.
pub(crate) fn group_rule(value: Option<&[u8]>, name: &str) -> Result<Vec<u8>, ValkeyError> {
    match value {
        Some(group) if echomq_protocol::name::is_group(group) => Ok(group.to_vec()),
        _ => Err(refuse(format!("BADARG {name}"))),
    }
}

/// The state a stored `state` word names (none for a word of no state).
pub(crate) fn job_state(word: &[u8]) -> Option<JobState> {
    std::str::from_utf8(word).ok()?.parse().ok()
}

/// `BADSTATE <state>`: the job is in a state the command does not take.
pub(crate) fn bad_state(state: &[u8]) -> ValkeyError {
    refuse(format!("BADSTATE {}", reply_text(state)))
}

/// Stored or given bytes inside an error reply, exactly as a script's error
/// carries them: up to the first NUL (the server takes a script's error as
/// a C string), each byte as itself. The reply writer sends every char
/// below 256 as that one byte, so a byte → char map keeps any bytes intact.
pub(crate) fn reply_text(bytes: &[u8]) -> String {
    bytes
        .iter()
        .take_while(|byte| **byte != 0)
        .map(|byte| char::from(*byte))
        .collect()
}

fn badarg(name: &str) -> ValkeyError {
    refuse(format!("BADARG {name}"))
}

/// The arguments after the command name: `base`, then the script's ARGV.
pub(crate) struct Args {
    base: Vec<u8>,
    argv: Vec<Vec<u8>>,
}

impl Args {
    /// Splits `EMQ.X base argv…`; a command without its base key is an
    /// arity error (the base is the command's key, never optional). The
    /// base is checked first, as the scripts' epilogue does: one that is
    /// not `<prefix>:{<queue>}` by the queue-name rule answers
    /// `BADARG queue` whatever the other arguments are.
    pub(crate) fn new(args: Vec<ValkeyString>) -> Result<Self, ValkeyError> {
        let mut args = args.into_iter().skip(1);
        let base = args.next().ok_or(ValkeyError::WrongArity)?;
        if !Keyspace::is_base(base.as_slice()) {
            return Err(badarg("queue"));
        }
        Ok(Self {
            base: base.as_slice().to_vec(),
            argv: args.map(|arg| arg.as_slice().to_vec()).collect(),
        })
    }

    /// The base key, `<prefix>:{q}`.
    pub(crate) fn base(&self) -> &[u8] {
        &self.base
    }

    /// ARGV[n], 1-based like the scripts.
    pub(crate) fn get(&self, n: usize) -> Option<&[u8]> {
        n.checked_sub(1)
            .and_then(|i| self.argv.get(i))
            .map(Vec::as_slice)
    }

    /// How many ARGV there are.
    pub(crate) fn len(&self) -> usize {
        self.argv.len()
    }

    /// A base-10 integer in [min, MAX_INT] (`int_arg`).
    pub(crate) fn int(&self, n: usize, name: &str, min: u64) -> Result<u64, ValkeyError> {
        int_arg(self.get(n), name, min, MAX_INT)
    }

    /// A base-10 integer in [min, max] (`int_arg`).
    pub(crate) fn int_in(
        &self,
        n: usize,
        name: &str,
        min: u64,
        max: u64,
    ) -> Result<u64, ValkeyError> {
        int_arg(self.get(n), name, min, max)
    }

    /// A job id: 1-256 bytes, no whitespace, braces or control
    /// characters; `*` only when `allow_generate` (`id_arg`).
    pub(crate) fn id(&self, n: usize, allow_generate: bool) -> Result<Vec<u8>, ValkeyError> {
        match self.get(n) {
            Some(id) if is_job_id(id) && (allow_generate || id != b"*") => Ok(id.to_vec()),
            _ => Err(badarg("id")),
        }
    }

    /// A deduplication key: the job-id rule, and not `*` (`key_arg`).
    pub(crate) fn key(&self, n: usize, name: &str) -> Result<Vec<u8>, ValkeyError> {
        key_arg(self.get(n), name)
    }

    /// A repeat key: the job-id rule with at most `MAX_REPEAT_KEY` bytes,
    /// and no `:` (`repeat_key_arg`).
    pub(crate) fn repeat_key(&self, n: usize) -> Result<Vec<u8>, ValkeyError> {
        match self.get(n) {
            Some(key) if echomq_protocol::name::is_repeat_key(key) => Ok(key.to_vec()),
            _ => Err(badarg("key")),
        }
    }

    /// An absolute run-at in unix ms, or `+ms` relative to the server clock
    /// (`run_at_arg`); checked before the clock is read.
    pub(crate) fn run_at(&self, n: usize) -> Result<RunAt, ValkeyError> {
        match self.get(n) {
            Some([b'+', delay @ ..]) => int_arg(Some(delay), "run_at", 0, MAX_INT).map(RunAt::In),
            value => int_arg(value, "run_at", 0, MAX_INT).map(RunAt::At),
        }
    }

    /// Refuses any ARGV past the first `fixed` (a command without options).
    pub(crate) fn no_options(&self, fixed: usize) -> Result<(), ValkeyError> {
        match self.get(fixed + 1) {
            Some(extra) => Err(refuse(format!(
                "SYNTAX unknown option {}",
                reply_text(extra)
            ))),
            None => Ok(()),
        }
    }

    /// A flow id or a ref: the job-id rule with at most `max` bytes
    /// (`flow_jobs.name_arg`), refused as `BADARG name`.
    pub(crate) fn name(&self, n: usize, name: &str, max: usize) -> Result<Vec<u8>, ValkeyError> {
        match self.get(n) {
            Some(value) if echomq_protocol::name::is_name(value, max) => Ok(value.to_vec()),
            _ => Err(badarg(name)),
        }
    }

    /// A list argument (`after`, `before`; `flow_jobs.edges_arg`): its
    /// `<queue> <id>` pairs as the fields of an edge hash, none of them
    /// `own` (the job itself); refused as `BADARG name`.
    pub(crate) fn edges(
        &self,
        n: usize,
        name: &str,
        own: &[u8],
    ) -> Result<Vec<Vec<u8>>, ValkeyError> {
        let pairs = self
            .get(n)
            .and_then(echomq_protocol::name::edges)
            .ok_or_else(|| badarg(name))?;
        let fields: Vec<Vec<u8>> = pairs
            .into_iter()
            .map(|(queue, id)| [queue, b" ", id].concat())
            .collect();
        if fields.iter().any(|field| field == own) {
            return Err(badarg(name));
        }
        Ok(fields)
    }

    /// One of `words`, exactly (`flow_jobs.policy_arg`), refused as
    /// `BADARG name`.
    pub(crate) fn word(
        &self,
        n: usize,
        name: &str,
        words: &[&str],
    ) -> Result<Vec<u8>, ValkeyError> {
        word_arg(self.get(n), name, words)
    }

    /// A required non-option argument (`text_arg`).
    pub(crate) fn text(&self, n: usize, name: &str) -> Result<Vec<u8>, ValkeyError> {
        text_arg(self.get(n), name)
    }

    /// Parses the options from ARGV[first] on (`options`): `spec` gives, for
    /// an upper-case option word, whether it takes a value; `check` checks
    /// a value. Later occurrences of an option win.
    pub(crate) fn options(
        &self,
        first: usize,
        spec: &[(&'static str, Opt)],
    ) -> Result<Options, ValkeyError> {
        let mut found = Options::default();
        let mut i = first;
        while i <= self.len() {
            let raw = self.get(i).unwrap_or_default();
            let word = raw.to_ascii_uppercase();
            let Some((name, kind)) = spec.iter().find(|(name, _)| name.as_bytes() == word) else {
                return Err(refuse(format!("SYNTAX unknown option {}", reply_text(raw))));
            };
            let value = match kind {
                Opt::Flag => {
                    i += 1;
                    OptValue::Flag
                }
                Opt::Int { arg, min, max } => {
                    let n = int_arg(self.get(i + 1), arg, *min, *max)?;
                    i += 2;
                    OptValue::Int(n)
                }
                Opt::Text { arg } => {
                    let text = text_arg(self.get(i + 1), arg)?;
                    i += 2;
                    OptValue::Text(text)
                }
                Opt::Key { arg } => {
                    let key = key_arg(self.get(i + 1), arg)?;
                    i += 2;
                    OptValue::Text(key)
                }
                Opt::Group { arg } => {
                    let group = group_rule(self.get(i + 1), arg)?;
                    i += 2;
                    OptValue::Text(group)
                }
                Opt::Delays { arg } => {
                    // Every argument after the word, at least one: the last option.
                    let values: Vec<Option<&[u8]>> = (i + 1..=self.len().max(i + 1))
                        .map(|n| self.get(n))
                        .collect();
                    let mut delays = Vec::with_capacity(values.len());
                    for value in values {
                        delays.push(int_arg(value, arg, 0, MAX_INT)?);
                    }
                    i = self.len() + 1;
                    OptValue::Delays(delays)
                }
                Opt::RunAt { arg } => {
                    let value = match self.get(i + 1) {
                        Some([b'+', delay @ ..]) => {
                            RunAt::In(int_arg(Some(delay), arg, 0, MAX_INT)?)
                        }
                        value => RunAt::At(int_arg(value, arg, 0, MAX_INT)?),
                    };
                    i += 2;
                    OptValue::RunAt(value)
                }
                Opt::Word { arg, words } => {
                    let word = word_arg(self.get(i + 1), arg, words)?;
                    i += 2;
                    OptValue::Text(word)
                }
                Opt::Ids { arg } => {
                    // Every argument after the word, at least one: the last option.
                    let ids: Vec<Vec<u8>> = (i + 1..=self.len())
                        .filter_map(|n| self.get(n))
                        .map(<[u8]>::to_vec)
                        .collect();
                    if ids.is_empty() || ids.iter().any(|id| !is_job_id(id) || id == b"*") {
                        return Err(badarg(arg));
                    }
                    i = self.len() + 1;
                    OptValue::Ids(ids)
                }
                Opt::Trace => {
                    let value = self.get(i + 1).unwrap_or_default();
                    if echomq_protocol::trace::check_traceparent(value).is_err() {
                        return Err(badarg(echomq_protocol::trace::BADARG));
                    }
                    i += 2;
                    OptValue::Text(value.to_vec())
                }
            };
            found.values.retain(|(seen, _)| seen != name);
            found.values.push((name, value));
        }
        Ok(found)
    }
}

/// A run-at argument: absolute, or relative to the server clock.
#[derive(Clone, Copy)]
pub(crate) enum RunAt {
    /// Unix ms as given.
    At(u64),
    /// `+ms`: this many ms after now.
    In(u64),
}

impl RunAt {
    /// The run-at in unix ms, given the clock.
    pub(crate) fn at(self, now: u64) -> u64 {
        match self {
            RunAt::At(at) => at,
            RunAt::In(delay) => crate::server::clock::after(now, delay),
        }
    }
}

/// What an option takes.
/// `PRIORITY p` (0–255), the option ENQUEUE and SCHEDULE share.
pub(crate) const PRIORITY: (&str, Opt) = (
    "PRIORITY",
    Opt::Int {
        arg: "priority",
        min: 0,
        max: echomq_protocol::arg::MAX_PRIORITY as u64,
    },
);

/// `GROUP g`, the option ENQUEUE and SCHEDULE share.
pub(crate) const GROUP: (&str, Opt) = ("GROUP", Opt::Group { arg: "group" });

/// `TRACE tp` (a W3C traceparent), the option ENQUEUE and SCHEDULE share.
pub(crate) const TRACE: (&str, Opt) = ("TRACE", Opt::Trace);

/// `WAITED`, the flag ENQUEUE and SCHEDULE share: the caller will wait for
/// the job's outcome, so a created job is marked waited for with it.
pub(crate) const WAITED: (&str, Opt) = ("WAITED", Opt::Flag);

/// `ATTEMPTS n` (≥ 1), the option ENQUEUE and SCHEDULE share.
pub(crate) const ATTEMPTS: (&str, Opt) = ("ATTEMPTS", Opt::int("attempts", 1));

pub(crate) enum Opt {
    /// No value.
    Flag,
    /// An integer in [min, max], refused as `BADARG arg`.
    Int {
        arg: &'static str,
        min: u64,
        max: u64,
    },
    /// Any bytes, refused as `BADARG arg` when missing.
    Text { arg: &'static str },
    /// A deduplication key, refused as `BADARG arg` unless it follows the
    /// job-id rule and is not `*`.
    Key { arg: &'static str },
    /// A group, refused as `BADARG arg` unless it follows the group rule.
    Group { arg: &'static str },
    /// A W3C traceparent (`trace_arg`), refused as `BADARG traceparent`
    /// unless it follows the rule of `echomq_protocol::trace`.
    Trace,
    /// Every argument after the word, at least one, each an integer ≥ 0
    /// (`delays_arg`), refused as `BADARG arg`: the last option.
    Delays { arg: &'static str },
    /// A run-at (`run_at_arg`), refused as `BADARG arg`.
    RunAt { arg: &'static str },
    /// One of `words`, exactly, refused as `BADARG arg`.
    Word {
        arg: &'static str,
        words: &'static [&'static str],
    },
    /// Every argument after the word, at least one, each a job id (not
    /// `*`), refused as `BADARG arg`: the last option.
    Ids { arg: &'static str },
}

impl Opt {
    /// An integer option in [min, MAX_INT].
    pub(crate) const fn int(arg: &'static str, min: u64) -> Self {
        Opt::Int {
            arg,
            min,
            max: MAX_INT,
        }
    }
}

enum OptValue {
    Flag,
    Int(u64),
    Text(Vec<u8>),
    Delays(Vec<u64>),
    RunAt(RunAt),
    Ids(Vec<Vec<u8>>),
}

/// The options found.
#[derive(Default)]
pub(crate) struct Options {
    values: Vec<(&'static str, OptValue)>,
}

impl Options {
    fn value(&self, name: &str) -> Option<&OptValue> {
        self.values
            .iter()
            .find(|(seen, _)| *seen == name)
            .map(|(_, value)| value)
    }

    /// Whether the option was given.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.value(name).is_some()
    }

    /// An integer option's value.
    pub(crate) fn int(&self, name: &str) -> Option<u64> {
        match self.value(name) {
            Some(OptValue::Int(n)) => Some(*n),
            _ => None,
        }
    }

    /// A list option's values (`Opt::Delays`).
    pub(crate) fn delays(&self, name: &str) -> Option<&[u64]> {
        match self.value(name) {
            Some(OptValue::Delays(delays)) => Some(delays),
            _ => None,
        }
    }

    /// A run-at option's value (`Opt::RunAt`).
    pub(crate) fn run_at(&self, name: &str) -> Option<RunAt> {
        match self.value(name) {
            Some(OptValue::RunAt(run_at)) => Some(*run_at),
            _ => None,
        }
    }

    /// An id list option's values (`Opt::Ids`).
    pub(crate) fn ids(&self, name: &str) -> Option<&[Vec<u8>]> {
        match self.value(name) {
            Some(OptValue::Ids(ids)) => Some(ids),
            _ => None,
        }
    }

    /// A text option's value.
    pub(crate) fn text(&self, name: &str) -> Option<&[u8]> {
        match self.value(name) {
            Some(OptValue::Text(text)) => Some(text),
            _ => None,
        }
    }
}

fn key_arg(value: Option<&[u8]>, name: &str) -> Result<Vec<u8>, ValkeyError> {
    match value {
        Some(key) if is_job_id(key) && key != b"*" => Ok(key.to_vec()),
        _ => Err(badarg(name)),
    }
}

fn int_arg(value: Option<&[u8]>, name: &str, min: u64, max: u64) -> Result<u64, ValkeyError> {
    let value = value.unwrap_or_default();
    if value.is_empty() || value.len() > 16 || !value.iter().all(u8::is_ascii_digit) {
        return Err(badarg(name));
    }
    let n = value.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    if n > max || n < min {
        return Err(badarg(name));
    }
    Ok(n)
}

fn word_arg(value: Option<&[u8]>, name: &str, words: &[&str]) -> Result<Vec<u8>, ValkeyError> {
    match value {
        Some(word) if words.iter().any(|w| w.as_bytes() == word) => Ok(word.to_vec()),
        _ => Err(badarg(name)),
    }
}

fn text_arg(value: Option<&[u8]>, name: &str) -> Result<Vec<u8>, ValkeyError> {
    value.map(<[u8]>::to_vec).ok_or_else(|| badarg(name))
}

/// Checks the `given` ARGV of a bulk command: groups of `width`, at
/// least one.
pub(crate) fn bulk_groups(given: usize, width: usize) -> Result<usize, ValkeyError> {
    if given == 0 || !given.is_multiple_of(width) {
        return Err(refuse("BADARG jobs"));
    }
    Ok(given / width)
}

/// Whether a bulk enqueue's ARGV end with `WAITED` (any case), and how
/// many ARGV its groups of `width` take: one word after whole groups is
/// never a group, so a last word other than `WAITED` there is a short
/// group (`BADARG jobs`), as `enqueue_bulk.lua` reads it.
pub(crate) fn waited_tail(args: &Args, width: usize) -> (bool, usize) {
    let n = args.len();
    let waited = n % width == 1
        && args
            .get(n)
            .is_some_and(|word| word.eq_ignore_ascii_case(b"WAITED"));
    (waited, n - usize::from(waited))
}
