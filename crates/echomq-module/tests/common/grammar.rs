//! The argument grammar of every `EMQ.*` command (PROTOCOL.md, "Commands"),
//! a structured call, and the defects that make a call malformed by
//! construction: each defect alone makes the call answer `BADARG` or
//! `SYNTAX`, whatever the keyspace holds.

use fastrand::Rng;

/// 2^53 - 1, the largest number an argument may carry.
pub const MAX_INT: u64 = 9_007_199_254_740_991;

/// What an argument or option value takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A job id; `*` allowed when `star`.
    Id { star: bool },
    /// Any bytes (payload, error, worker, line…): only a missing one is bad.
    Text,
    /// A base-10 integer in [min, max].
    Int { min: u64, max: u64 },
    /// An absolute run-at, or `+ms`.
    RunAt,
}

const fn int(min: u64) -> Kind {
    Kind::Int { min, max: MAX_INT }
}

const ID: Kind = Kind::Id { star: false };
const NEW_ID: Kind = Kind::Id { star: true };

/// One option: its word, and the kind of its value (`None`: a flag).
#[derive(Debug, Clone, Copy)]
pub struct Opt {
    pub word: &'static str,
    pub value: Option<Kind>,
}

const fn opt(word: &'static str, value: Kind) -> Opt {
    Opt {
        word,
        value: Some(value),
    }
}

const fn flag(word: &'static str) -> Opt {
    Opt { word, value: None }
}

/// One command's arguments after its base key.
#[derive(Debug)]
pub struct Grammar {
    /// `EMQ.ENQUEUE`, …
    pub command: &'static str,
    /// The wire-4 script (file name without `.lua`); `None` for a command
    /// without one (`EMQ.VERSION`).
    pub script: Option<&'static str>,
    /// The fixed arguments, all required, in order.
    pub pos: &'static [(&'static str, Kind)],
    /// The options that may follow them.
    pub opts: &'static [Opt],
    /// Options of which at most one may be given.
    pub exclusive: &'static [&'static str],
    /// The fixed arguments are one job's group, repeated (a bulk command:
    /// one group or more, no options).
    pub group: bool,
    /// Whether PROTOCOL.md lists the command (the bulk forms are extras).
    pub listed: bool,
}

const PRIORITY: Opt = opt("PRIORITY", Kind::Int { min: 0, max: 255 });
const ATTEMPTS: Opt = opt("ATTEMPTS", int(1));

/// Every command of PROTOCOL.md, `EMQ.VERSION` first.
pub const GRAMMARS: &[Grammar] = &[
    Grammar {
        command: "EMQ.VERSION",
        script: None,
        pos: &[],
        opts: &[],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.ENQUEUE",
        script: Some("enqueue"),
        pos: &[("id", NEW_ID), ("payload", Kind::Text)],
        opts: &[PRIORITY, ATTEMPTS],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.SCHEDULE",
        script: Some("schedule"),
        pos: &[
            ("id", NEW_ID),
            ("payload", Kind::Text),
            ("run_at", Kind::RunAt),
        ],
        opts: &[PRIORITY, ATTEMPTS, opt("REPEAT", Kind::Text)],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.CLAIM",
        script: Some("claim"),
        pos: &[("worker", Kind::Text), ("lease_ms", int(1))],
        opts: &[opt("COUNT", int(1))],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.COMPLETE",
        script: Some("complete"),
        pos: &[("id", ID), ("token", int(0))],
        opts: &[opt("RESULT", Kind::Text)],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.FAIL",
        script: Some("fail"),
        pos: &[("id", ID), ("token", int(0)), ("error", Kind::Text)],
        opts: &[opt("RETRY_IN", int(0)), flag("DEAD"), flag("CANCELLED")],
        exclusive: &["RETRY_IN", "DEAD", "CANCELLED"],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.GET",
        script: Some("get"),
        pos: &[("id", ID)],
        opts: &[],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.COUNTS",
        script: Some("counts"),
        pos: &[],
        opts: &[],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.PROMOTE",
        script: Some("promote"),
        pos: &[],
        opts: &[opt("LIMIT", int(1))],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.DELAY",
        script: Some("delay"),
        pos: &[("id", ID), ("token", int(0)), ("ms", int(0))],
        opts: &[],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.RESCHEDULE",
        script: Some("reschedule"),
        pos: &[("id", ID), ("run_at", int(0))],
        opts: &[],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.CANCEL",
        script: Some("cancel"),
        pos: &[("id", ID)],
        opts: &[],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.EXTEND",
        script: Some("extend"),
        pos: &[("id", ID), ("token", int(0)), ("ms", int(1))],
        opts: &[],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.STALLED.CHECK",
        script: Some("stalled_check"),
        pos: &[("max_stalls", int(0))],
        opts: &[opt("LIMIT", int(1))],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.REQUEUE",
        script: Some("requeue"),
        pos: &[("id", ID)],
        opts: &[],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.PAUSE",
        script: Some("pause"),
        pos: &[],
        opts: &[],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.RESUME",
        script: Some("resume"),
        pos: &[],
        opts: &[],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.DRAIN",
        script: Some("drain"),
        pos: &[],
        opts: &[flag("SCHEDULED"), opt("COUNT", int(1))],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.OBLITERATE",
        script: Some("obliterate"),
        pos: &[],
        opts: &[flag("FORCE"), opt("COUNT", int(1))],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.UPDATE",
        script: Some("update"),
        pos: &[("id", ID), ("payload", Kind::Text)],
        opts: &[],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.PROGRESS",
        script: Some("progress"),
        pos: &[("id", ID), ("token", int(0)), ("value", Kind::Text)],
        opts: &[],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.LOG",
        script: Some("log"),
        pos: &[("id", ID), ("line", Kind::Text)],
        opts: &[opt("KEEP", int(1))],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.REMOVE",
        script: Some("remove"),
        pos: &[("id", ID)],
        opts: &[flag("FORCE")],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.REPROCESS",
        script: Some("reprocess"),
        pos: &[("id", ID)],
        opts: &[],
        exclusive: &[],
        group: false,
        listed: true,
    },
    Grammar {
        command: "EMQ.ENQUEUE.BULK",
        script: Some("enqueue_bulk"),
        pos: &[
            ("id", NEW_ID),
            ("payload", Kind::Text),
            ("priority", Kind::Int { min: 0, max: 255 }),
            ("attempts", int(1)),
        ],
        opts: &[],
        exclusive: &[],
        group: true,
        listed: false,
    },
    Grammar {
        command: "EMQ.SCHEDULE.BULK",
        script: Some("schedule_bulk"),
        pos: &[
            ("id", NEW_ID),
            ("payload", Kind::Text),
            ("run_at", Kind::RunAt),
            ("priority", Kind::Int { min: 0, max: 255 }),
            ("attempts", int(1)),
        ],
        opts: &[],
        exclusive: &[],
        group: true,
        listed: false,
    },
    Grammar {
        command: "EMQ.COMPLETE.BULK",
        script: Some("complete_bulk"),
        pos: &[("id", ID), ("token", int(0)), ("result", Kind::Text)],
        opts: &[],
        exclusive: &[],
        group: true,
        listed: false,
    },
];

/// The grammar of `command` (upper case), if it is one of PROTOCOL.md's.
pub fn grammar(command: &str) -> Option<&'static Grammar> {
    GRAMMARS.iter().find(|g| g.command == command)
}

/// One command as sent: its base key, fixed arguments, options (word and
/// value, in order) and a dangling tail (an option word left without its
/// value, always last).
#[derive(Debug, Clone)]
pub struct Call {
    pub command: &'static str,
    pub base: Vec<u8>,
    pub pos: Vec<Vec<u8>>,
    pub opts: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    pub tail: Vec<Vec<u8>>,
}

impl Call {
    pub fn new(command: &'static str, base: &str) -> Self {
        Self {
            command,
            base: base.as_bytes().to_vec(),
            pos: Vec::new(),
            opts: Vec::new(),
            tail: Vec::new(),
        }
    }

    pub fn arg(mut self, arg: impl AsRef<[u8]>) -> Self {
        self.pos.push(arg.as_ref().to_vec());
        self
    }

    pub fn opt(mut self, word: &str, value: impl AsRef<[u8]>) -> Self {
        self.opts
            .push((word.as_bytes().to_vec(), Some(value.as_ref().to_vec())));
        self
    }

    pub fn flag(mut self, word: &str) -> Self {
        self.opts.push((word.as_bytes().to_vec(), None));
        self
    }

    /// The arguments after the base key, flat.
    pub fn argv(&self) -> Vec<Vec<u8>> {
        let mut out = self.pos.clone();
        for (word, value) in &self.opts {
            out.push(word.clone());
            out.extend(value.iter().cloned());
        }
        out.extend(self.tail.iter().cloned());
        out
    }

    /// The native command, `EMQ.X base argv…`.
    pub fn native(&self) -> redis::Cmd {
        let mut cmd = redis::cmd(self.command);
        cmd.arg(self.base.as_slice());
        for arg in self.argv() {
            cmd.arg(arg);
        }
        cmd
    }

    /// `EMQ.X base argv…`, quoted for a failure message.
    pub fn show(&self) -> String {
        let mut out = format!("{} {}", self.command, quote(&self.base));
        for arg in self.argv() {
            out.push(' ');
            out.push_str(&quote(&arg));
        }
        out
    }
}

/// Bytes as a readable, unambiguous string: printable ASCII as is (quoted
/// when empty or holding a space or quote), everything else `\xNN`.
pub fn quote(bytes: &[u8]) -> String {
    let out = escape(bytes);
    if bytes.is_empty() || bytes.contains(&b' ') || bytes.contains(&b'"') {
        format!("\"{out}\"")
    } else {
        out
    }
}

/// Bytes with everything but printable ASCII and space as `\xNN`, whole.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::new();
    for &b in bytes {
        match b {
            b'"' | b'\\' => out.push_str(&format!("\\{}", b as char)),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

/// Values no integer argument takes: non-numbers, signs, floats, spaces,
/// other digits, and numbers above 2^53 - 1 up to past i64/u64.
const BAD_NUMBERS: &[&str] = &[
    "",
    "-1",
    "-0",
    "+1",
    "1.5",
    "1.0",
    "1e3",
    " 1",
    "1 ",
    "0x10",
    "abc",
    "NaN",
    "inf",
    "١",
    "\u{ff11}",
    "1\0",
    "9007199254740992",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "-9223372036854775809",
    "00000000000000001",
];

/// Values no `+ms` run-at takes (a plain bad number is bad too).
const BAD_RELATIVE: &[&str] = &[
    "+",
    "++1",
    "+-1",
    "+ 1",
    "+1.5",
    "+1e3",
    "+9007199254740992",
    "+18446744073709551616",
];

/// A value `kind` refuses; `None` for text, which takes any bytes.
pub fn bad_value(rng: &mut Rng, kind: Kind) -> Option<Vec<u8>> {
    match kind {
        Kind::Text => None,
        Kind::Int { min, max } => {
            let mut choices: Vec<Vec<u8>> =
                BAD_NUMBERS.iter().map(|s| s.as_bytes().to_vec()).collect();
            if min > 0 {
                choices.push(b"0".to_vec());
                choices.push((min - 1).to_string().into_bytes());
            }
            if max < MAX_INT {
                choices.push((max + 1).to_string().into_bytes());
                choices.push(b"65536".to_vec());
            }
            Some(choices[rng.usize(..choices.len())].clone())
        }
        Kind::RunAt => {
            let plain = &BAD_NUMBERS[rng.usize(..BAD_NUMBERS.len())];
            let relative = BAD_RELATIVE[rng.usize(..BAD_RELATIVE.len())];
            // "+1" is a good run-at: draw a plain bad number other than it.
            Some(if rng.bool() || *plain == "+1" {
                relative.as_bytes().to_vec()
            } else {
                plain.as_bytes().to_vec()
            })
        }
        Kind::Id { star } => {
            let long = "x".repeat(257 + rng.usize(..60));
            let mut choices: Vec<Vec<u8>> = [
                "", " ", "a b", "a\tb", "a\nb", "a\rb", "a\x0bb", "a\x0cb", "{", "}", "{x}",
                "job{1", "1}", " lead", "trail ",
            ]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
            choices.push(long.into_bytes());
            choices.push(vec![b'y'; 300]);
            if !star {
                choices.push(b"*".to_vec());
            }
            Some(choices[rng.usize(..choices.len())].clone())
        }
    }
}

/// Bytes a queue name or prefix may hold.
const NAME_BYTES: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-";

/// A queue name or prefix of `min` to `min + 7` bytes ending with a letter
/// (so it never ends with the `:` that separates the prefix from the brace).
fn name_of(rng: &mut Rng, min: usize) -> Vec<u8> {
    let len = min + rng.usize(..8);
    let mut name: Vec<u8> = (1..len)
        .map(|_| NAME_BYTES[rng.usize(..NAME_BYTES.len())])
        .collect();
    name.push(b'q');
    name
}

/// A base key that breaks the rule `<prefix>:{<queue>}` (prefix and queue
/// each 1–128 bytes of `[A-Za-z0-9_.:-]`), one way drawn from `rng`: a
/// byte outside the rule in the queue or the prefix, an empty or 129+ byte
/// queue or prefix, a brace or the colon missing, text after the brace.
pub fn bad_base(rng: &mut Rng) -> Vec<u8> {
    let prefix = name_of(rng, 1);
    let queue = name_of(rng, 1);
    let long = name_of(rng, 129);
    let bad_byte = b" \t\n{}/\0\xff"[rng.usize(..8)];
    let base = |prefix: &[u8], queue: &[u8]| [prefix, b":{", queue, b"}"].concat();
    let with_bad_byte = |rng: &mut Rng, name: &[u8]| {
        let mut name = name.to_vec();
        name.insert(rng.usize(..=name.len()), bad_byte);
        name
    };
    match rng.u32(..10) {
        0 => base(&prefix, &with_bad_byte(rng, &queue)),
        1 => base(&with_bad_byte(rng, &prefix), &queue),
        2 => base(&prefix, b""),
        3 => base(b"", &queue),
        4 => base(&prefix, &long),
        5 => base(&long, &queue),
        6 => [&prefix[..], b":", &queue].concat(),
        7 => [&prefix[..], b"{", &queue, b"}"].concat(),
        8 => [&prefix[..], b":{", &queue].concat(),
        _ => [base(&prefix, &queue), b":pending".to_vec()].concat(),
    }
}

/// Words no command takes as an option (each checked against the
/// command's own options before use).
const UNKNOWN_WORDS: &[&str] = &[
    "COLOUR",
    "PRIORITYX",
    "PRIORIT",
    "COUNTS",
    "-",
    "",
    " ",
    "FORCE ",
    "\0",
    "--count",
    "KEEP=3",
    "FORCE",
    "SCHEDULED",
    "DEAD",
    "CANCELLED",
    "RETRY_IN",
    "LIMIT",
    "COUNT",
    "KEEP",
    "RESULT",
    "REPEAT",
    "ATTEMPTS",
    "PRIORITY",
    "WITHSCORES",
    "1",
    "0",
    "x",
    "ñ",
];

/// An option word `g` does not know.
fn unknown_word(rng: &mut Rng, g: &Grammar) -> Vec<u8> {
    loop {
        let word = UNKNOWN_WORDS[rng.usize(..UNKNOWN_WORDS.len())];
        let upper = word.to_ascii_uppercase();
        if !g.opts.iter().any(|o| o.word == upper) {
            return word.as_bytes().to_vec();
        }
    }
}

/// A defect, each enough alone to make a call malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Defect {
    /// Fixed arguments missing from the end (no option follows).
    Truncate,
    /// A fixed argument with a bad value.
    BadArg,
    /// An option with a bad value.
    BadOptValue,
    /// An option word left without its value, last.
    MissingValue,
    /// A word no option of the command is, at an option boundary.
    Unknown,
    /// Two options that exclude each other.
    Exclusive,
}

/// Applies 1–3 defects to the well-formed `call` of grammar `g`. Returns
/// the defects applied (never none).
pub fn break_call(rng: &mut Rng, g: &Grammar, call: &mut Call) -> Vec<Defect> {
    if g.group {
        return break_group(rng, g, call);
    }
    let mut applied = Vec::new();
    let wanted = 1 + rng.usize(..3);
    let mut truncate = false;
    for _ in 0..wanted * 4 {
        if applied.len() == wanted {
            break;
        }
        let defect = match rng.usize(..6) {
            0 => Defect::Truncate,
            1 => Defect::BadArg,
            2 => Defect::BadOptValue,
            3 => Defect::MissingValue,
            4 => Defect::Unknown,
            _ => Defect::Exclusive,
        };
        let done = match defect {
            Defect::Truncate if truncate || g.pos.is_empty() => false,
            Defect::Truncate => {
                truncate = true;
                true
            }
            Defect::BadArg => {
                let bad: Vec<usize> = (0..g.pos.len().min(call.pos.len()))
                    .filter(|&i| g.pos[i].1 != Kind::Text)
                    .collect();
                match bad.get(rng.usize(..bad.len().max(1))) {
                    Some(&i) => {
                        call.pos[i] = bad_value(rng, g.pos[i].1).expect("not text");
                        true
                    }
                    None => false,
                }
            }
            Defect::BadOptValue => {
                let bad: Vec<(usize, Kind)> = call
                    .opts
                    .iter()
                    .enumerate()
                    .filter_map(|(i, (word, value))| {
                        let upper = String::from_utf8_lossy(word).to_ascii_uppercase();
                        let spec = g.opts.iter().find(|o| o.word == upper)?;
                        match (spec.value, value) {
                            (Some(kind), Some(_)) if kind != Kind::Text => Some((i, kind)),
                            _ => None,
                        }
                    })
                    .collect();
                match bad.get(rng.usize(..bad.len().max(1))) {
                    Some(&(i, kind)) => {
                        call.opts[i].1 = bad_value(rng, kind);
                        true
                    }
                    None => false,
                }
            }
            Defect::MissingValue => {
                let valued: Vec<&Opt> = g.opts.iter().filter(|o| o.value.is_some()).collect();
                match valued.get(rng.usize(..valued.len().max(1))) {
                    Some(o) if call.tail.is_empty() => {
                        call.tail.push(case(rng, o.word));
                        true
                    }
                    _ => false,
                }
            }
            Defect::Unknown => {
                let at = rng.usize(..=call.opts.len());
                call.opts.insert(at, (unknown_word(rng, g), None));
                true
            }
            Defect::Exclusive => {
                if g.exclusive.len() < 2 {
                    false
                } else {
                    let first: Vec<&&str> = g.exclusive.iter().filter(|_| rng.bool()).collect();
                    for word in first.into_iter().chain(g.exclusive) {
                        if call.opts.iter().filter(|(w, _)| is_exclusive(g, w)).count() >= 2 {
                            break;
                        }
                        if call
                            .opts
                            .iter()
                            .any(|(w, _)| w.eq_ignore_ascii_case(word.as_bytes()))
                        {
                            continue;
                        }
                        let spec = g.opts.iter().find(|o| o.word == *word).expect("listed");
                        let value = spec.value.map(|_| b"1000".to_vec());
                        let at = rng.usize(..=call.opts.len());
                        call.opts.insert(at, (case(rng, word), value));
                    }
                    true
                }
            }
        };
        if done {
            applied.push(defect);
        }
    }
    if truncate {
        // Drop every option, and at least the last fixed argument.
        let keep = rng.usize(..g.pos.len().min(call.pos.len()).max(1));
        call.pos.truncate(keep);
        call.opts.clear();
        call.tail.clear();
        applied.retain(|d| *d != Defect::Truncate);
        applied.push(Defect::Truncate);
    }
    if applied.is_empty() {
        call.opts.push((unknown_word(rng, g), None));
        applied.push(Defect::Unknown);
    }
    applied
}

/// [`break_call`] for a bulk command: a bad value in one group and/or an
/// argument count that is not a whole number of groups (none at all, a
/// group cut short, words past the last group).
fn break_group(rng: &mut Rng, g: &Grammar, call: &mut Call) -> Vec<Defect> {
    let width = g.pos.len();
    let mut applied = Vec::new();
    let typed: Vec<usize> = (0..call.pos.len())
        .filter(|i| g.pos[i % width].1 != Kind::Text)
        .collect();
    if rng.bool() && !typed.is_empty() {
        let i = typed[rng.usize(..typed.len())];
        call.pos[i] = bad_value(rng, g.pos[i % width].1).expect("not text");
        applied.push(Defect::BadArg);
    }
    if applied.is_empty() || rng.bool() {
        match rng.u32(..3) {
            0 => call.pos.clear(),
            1 => {
                let cut = 1 + rng.usize(..width - 1);
                let keep = call.pos.len().saturating_sub(cut);
                call.pos.truncate(keep);
                if call.pos.is_empty() || call.pos.len().is_multiple_of(width) {
                    call.pos.clear();
                }
            }
            _ => {
                for _ in 0..1 + rng.usize(..width - 1) {
                    call.pos.push(unknown_word(rng, g));
                }
            }
        }
        applied.push(Defect::Truncate);
    }
    applied
}

fn is_exclusive(g: &Grammar, word: &[u8]) -> bool {
    g.exclusive
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w.as_bytes()))
}

/// An option word in upper, lower or mixed case (option words are
/// case-insensitive).
pub fn case(rng: &mut Rng, word: &str) -> Vec<u8> {
    match rng.usize(..6) {
        0 => word.to_ascii_lowercase().into_bytes(),
        1 => word
            .bytes()
            .enumerate()
            .map(|(i, b)| {
                if i % 2 == 0 {
                    b.to_ascii_lowercase()
                } else {
                    b
                }
            })
            .collect(),
        _ => word.as_bytes().to_vec(),
    }
}

/// A well-formed call of `g` on `base`: ids drawn from `ids` (or `*` where
/// allowed), small tokens, long leases and delays, each option maybe (at
/// most one of an exclusive group).
pub fn valid_call(rng: &mut Rng, g: &'static Grammar, base: &[u8], ids: &[&[u8]]) -> Call {
    let mut call = Call {
        command: g.command,
        base: base.to_vec(),
        pos: Vec::new(),
        opts: Vec::new(),
        tail: Vec::new(),
    };
    let groups = if g.group { 1 + rng.usize(..4) } else { 1 };
    for _ in 0..groups {
        for (name, kind) in g.pos {
            let value = match (name, kind) {
                (&"token", _) => rng.u64(..4).to_string().into_bytes(),
                (_, kind) => valid_value(rng, *kind, ids),
            };
            call.pos.push(value);
        }
    }
    let mut exclusive_taken = false;
    for o in g.opts {
        if rng.u32(..5) >= 2 {
            continue;
        }
        if g.exclusive.contains(&o.word) {
            if exclusive_taken {
                continue;
            }
            exclusive_taken = true;
        }
        let value = o.value.map(|kind| valid_value(rng, kind, ids));
        call.opts.push((case(rng, o.word), value));
    }
    call
}

fn valid_value(rng: &mut Rng, kind: Kind, ids: &[&[u8]]) -> Vec<u8> {
    match kind {
        Kind::Id { star } => {
            if (star && rng.u32(..3) == 0) || ids.is_empty() {
                b"*".to_vec()
            } else {
                ids[rng.usize(..ids.len())].to_vec()
            }
        }
        Kind::Text => match rng.u32(..6) {
            0 => Vec::new(),
            1 => vec![0, 0xff, b' '],
            _ => format!("v{}", rng.u32(..100)).into_bytes(),
        },
        Kind::Int { min, max } => {
            let choices = [min, min + 1, 5, 1000, 600_000, 3_600_000, max];
            let fitting: Vec<u64> = choices
                .into_iter()
                .filter(|n| (min..=max).contains(n))
                .collect();
            fitting[rng.usize(..fitting.len())].to_string().into_bytes()
        }
        Kind::RunAt => match rng.u32(..4) {
            0 => b"+0".to_vec(),
            1 => b"+600000".to_vec(),
            2 => b"1000".to_vec(),
            _ => b"4102444800000".to_vec(),
        },
    }
}
