//! The argument grammar of every `EMQ.*` command (the registry of controls),
//! a structured call, and the defects that make a call malformed by
//! construction: each defect alone makes the call answer `BADARG` or
//! `SYNTAX`, whatever the keyspace holds.

use echomq_protocol::control::{Arg, Form, Kind, Opt};
use echomq_protocol::{Command, Transition};
use fastrand::Rng;
use std::sync::LazyLock;

/// 2^53 - 1, the largest number an argument may carry.
pub(crate) const MAX_INT: u64 = echomq_protocol::arg::MAX_INT;

/// One command's arguments after its base key: the registry's grammar of
/// a command of a control (`EMQ.VERSION` aside, which takes no key).
#[derive(Debug)]
pub(crate) struct Grammar {
    /// `EMQ.ENQUEUE`, …
    pub command: &'static str,
    /// The control and form whose command this is (its wire-4 script is
    /// `echomq::script_source` of them); `None` for `EMQ.VERSION`.
    pub control: Option<(Transition, Form)>,
    /// A bulk form's fixed arguments before its groups (its head).
    pub head: &'static [Arg],
    /// The fixed arguments, all required, in order (a bulk form's group).
    pub pos: &'static [Arg],
    /// The options that may follow them.
    pub opts: &'static [Opt],
    /// Groups of options: of each, at most one may be given.
    pub exclusive: &'static [&'static [&'static str]],
    /// Options given only with another: (option, the option it needs).
    pub requires: &'static [(&'static str, &'static str)],
    /// Options that come only as a pair: (word, its partner listed before).
    pub together: &'static [(&'static str, &'static str)],
    /// The fixed arguments are one job's group, repeated (a bulk command:
    /// one group or more, no options).
    pub group: bool,
}

impl Grammar {
    fn of(transition: Transition, form: Form, command: &'static Command) -> Self {
        Self {
            command: command.native,
            control: Some((transition, form)),
            head: command.head,
            pos: command.args,
            opts: command.options,
            exclusive: command.exclusive,
            requires: command.requires,
            together: command.together,
            group: form == Form::Bulk || command.groups.is_some(),
        }
    }

    /// Whether the command takes a base key (every one but `EMQ.VERSION`).
    pub(crate) fn keyed(&self) -> bool {
        self.control.is_some()
    }
}

/// Every command: `EMQ.VERSION` first, then every command of the registry
/// of controls.
pub(crate) static GRAMMARS: LazyLock<Vec<Grammar>> = LazyLock::new(|| {
    let mut grammars = vec![Grammar {
        command: "EMQ.VERSION",
        control: None,
        head: &[],
        pos: &[],
        opts: &[],
        exclusive: &[],
        requires: &[],
        together: &[],
        group: false,
    }];
    for transition in Transition::ALL {
        for (form, command) in transition.control().commands() {
            grammars.push(Grammar::of(*transition, form, command));
        }
    }
    grammars
});

/// The grammar of `command` (upper case), if it is one of the registry's.
pub(crate) fn grammar(command: &str) -> Option<&'static Grammar> {
    GRAMMARS.iter().find(|g| g.command == command)
}

/// One command as sent: its base key, fixed arguments, options (word and
/// value, in order) and a dangling tail (an option word left without its
/// value, always last).
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub command: &'static str,
    pub base: Vec<u8>,
    pub pos: Vec<Vec<u8>>,
    pub opts: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    pub tail: Vec<Vec<u8>>,
}

impl Call {
    pub(crate) fn new(command: &'static str, base: &str) -> Self {
        Self {
            command,
            base: base.as_bytes().to_vec(),
            pos: Vec::new(),
            opts: Vec::new(),
            tail: Vec::new(),
        }
    }

    pub(crate) fn arg(mut self, arg: impl AsRef<[u8]>) -> Self {
        self.pos.push(arg.as_ref().to_vec());
        self
    }

    pub(crate) fn opt(mut self, word: &str, value: impl AsRef<[u8]>) -> Self {
        self.opts
            .push((word.as_bytes().to_vec(), Some(value.as_ref().to_vec())));
        self
    }

    pub(crate) fn flag(mut self, word: &str) -> Self {
        self.opts.push((word.as_bytes().to_vec(), None));
        self
    }

    /// The arguments after the base key, flat.
    pub(crate) fn argv(&self) -> Vec<Vec<u8>> {
        let mut out = self.pos.clone();
        for (word, value) in &self.opts {
            out.push(word.clone());
            out.extend(value.iter().cloned());
        }
        out.extend(self.tail.iter().cloned());
        out
    }

    /// The native command, `EMQ.X base argv…`.
    pub(crate) fn native(&self) -> redis::Cmd {
        let mut cmd = redis::cmd(self.command);
        cmd.arg(self.base.as_slice());
        for arg in self.argv() {
            cmd.arg(arg);
        }
        cmd
    }

    /// `EMQ.X base argv…`, quoted for a failure message.
    pub(crate) fn show(&self) -> String {
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
pub(crate) fn quote(bytes: &[u8]) -> String {
    let out = escape(bytes);
    if bytes.is_empty() || bytes.contains(&b' ') || bytes.contains(&b'"') {
        format!("\"{out}\"")
    } else {
        out
    }
}

/// Bytes with everything but printable ASCII and space as `\xNN`, whole.
pub(crate) fn escape(bytes: &[u8]) -> String {
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

/// Well-formed W3C traceparents: sampled, not sampled, a later version.
pub(crate) const TRACEPARENTS: &[&str] = &[
    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
    "cc-0000000000000000000000000000000a-0000000000000001-ff",
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
pub(crate) fn bad_value(rng: &mut Rng, kind: Kind) -> Option<Vec<u8>> {
    match kind {
        Kind::Text => None,
        // A list's bad value is one bad delay (the list is that one value).
        Kind::Delays => bad_value(
            rng,
            Kind::Int {
                min: 0,
                max: MAX_INT,
            },
        ),
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
        Kind::Key => bad_value(rng, Kind::Id { generate: false }),
        Kind::RepeatKey => {
            if rng.u32(..3) == 0 {
                let choices = ["a:b", ":", "r:0"];
                Some(if rng.bool() {
                    "k".repeat(echomq_protocol::name::MAX_REPEAT_KEY + 1)
                        .into_bytes()
                } else {
                    choices[rng.usize(..choices.len())].as_bytes().to_vec()
                })
            } else {
                // The job-id rule's refusals ('*' aside: a repeat key may be '*').
                bad_value(rng, Kind::Id { generate: true })
            }
        }
        Kind::TraceParent => {
            let good = TRACEPARENTS[0];
            let choices = [
                String::new(),
                "00".into(),
                good.to_uppercase(),
                good.replacen("00", "ff", 1),
                good.replacen("00", "0", 1),
                format!("{good}-01"),
                good.replace('-', "_"),
                good.replace("4bf92f3577b34da6a3ce929d0e0e4736", &"0".repeat(32)),
                good.replace("00f067aa0ba902b7", &"0".repeat(16)),
                good.replace("00f067aa0ba902b7", "00f067aa0ba902bz"),
                format!(" {good}"),
            ];
            Some(choices[rng.usize(..choices.len())].clone().into_bytes())
        }
        // A list's bad value is one bad id (the list is that one value).
        Kind::Ids => bad_value(rng, Kind::Id { generate: false }),
        Kind::Queue => {
            let choices = ["", " ", "a b", "{q}", "q}", "q\0", "ñ", "q/x", "q\x1b"];
            Some(if rng.u32(..4) == 0 {
                "q".repeat(129).into_bytes()
            } else {
                choices[rng.usize(..choices.len())].as_bytes().to_vec()
            })
        }
        Kind::Group => {
            let choices = [
                "", " ", "a b", "a\x0bb", "{}", "{x}", "g}", "g\x1b", "g\0", "g\x7f",
            ];
            Some(if rng.u32(..4) == 0 {
                "g".repeat(129).into_bytes()
            } else {
                choices[rng.usize(..choices.len())].as_bytes().to_vec()
            })
        }
        Kind::Name { max } => {
            if rng.u32(..3) == 0 {
                Some("n".repeat(max + 1 + rng.usize(..3)).into_bytes())
            } else {
                bad_value(rng, Kind::Id { generate: true })
            }
        }
        Kind::Resolution => {
            let choices = [
                "".to_string(),
                "wait".into(),
                "completed".into(),
                "completed a 3 ok".into(),
                "completed a 0".into(),
                "completed a x y".into(),
                "completed a 9007199254740992 ".into(),
                "completed a 70000 x".into(),
                "dead a".into(),
                "dead a 1".into(),
                format!("dead a 1 {}", "e".repeat(4097)),
                "cancelled a b".into(),
                "cancelled".into(),
                "removed {x}".into(),
                "removed  a".into(),
                "Removed a".into(),
                format!("removed {}", "r".repeat(129)),
                "gone a".into(),
            ];
            Some(choices[rng.usize(..choices.len())].clone().into_bytes())
        }
        Kind::Word(words) => {
            let choices = [
                "", " ", "x", "FAIL", "Ignore", "fail ", " cancel", "cancel\0",
            ];
            let choice = choices[rng.usize(..choices.len())];
            assert!(!words.contains(&choice));
            Some(choice.as_bytes().to_vec())
        }
        Kind::Edges => {
            let choices = [
                "q".to_string(),
                "q a b".into(),
                " q a".into(),
                "q a ".into(),
                "q  a".into(),
                "q\ta".into(),
                "q *".into(),
                "q a q a".into(),
                "q{x} a".into(),
                "q a{".into(),
                "q/x a".into(),
                format!("{} a", "q".repeat(129)),
                format!("q {}", "i".repeat(257)),
                "q a\0".into(),
            ];
            Some(choices[rng.usize(..choices.len())].clone().into_bytes())
        }
        Kind::Id { generate: star } => {
            let long = "x".repeat(257 + rng.usize(..60));
            let mut choices: Vec<Vec<u8>> = [
                "", " ", "a b", "a\tb", "a\nb", "a\rb", "a\x0bb", "a\x0cb", "{", "}", "{x}",
                "job{1", "1}", " lead", "trail ", "a\x1b[2J", "a\0b", "\0", "a\x7f", "a\x01",
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
pub(crate) fn bad_base(rng: &mut Rng) -> Vec<u8> {
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
    "BLOCKED",
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
    "DEDUP",
    "DEBOUNCE",
    "MAX",
    "PER",
    "OFF",
    "RATE_LIMITED",
    "1",
    "0",
    "x",
    "ñ",
];

/// An option word `g` does not know. Not a number where `g` has a list
/// of delays (`RETRY_IN ms [ms …]`): after the list, a number is one
/// more delay, not an unknown word.
fn unknown_word(rng: &mut Rng, g: &Grammar) -> Vec<u8> {
    // After a list of ids (`JOBS id [id …]`), a word that is an id is one
    // more id: the unknown word breaks the job-id rule (SYNTAX before the
    // list, BADARG within it).
    if g.opts
        .iter()
        .any(|o| matches!(o.value, Some((_, Kind::Ids))))
    {
        let words: [&[u8]; 3] = [b"{nope}", b"no pe", b"x}"];
        return words[rng.usize(..words.len())].to_vec();
    }
    let listed = g
        .opts
        .iter()
        .any(|o| matches!(o.value, Some((_, Kind::Delays))));
    loop {
        let word = UNKNOWN_WORDS[rng.usize(..UNKNOWN_WORDS.len())];
        let upper = word.to_ascii_uppercase();
        let number = !word.is_empty() && word.bytes().all(|b| b.is_ascii_digit());
        if !g.opts.iter().any(|o| o.word == upper) && (!listed || !number) {
            return word.as_bytes().to_vec();
        }
    }
}

/// A defect, each enough alone to make a call malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Defect {
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
    /// An option without the one it needs.
    Orphan,
}

/// Applies 1–3 defects to the well-formed `call` of grammar `g`. Returns
/// the defects applied (never none).
pub(crate) fn break_call(rng: &mut Rng, g: &Grammar, call: &mut Call) -> Vec<Defect> {
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
        let defect = match rng.usize(..7) {
            0 => Defect::Truncate,
            1 => Defect::BadArg,
            2 => Defect::BadOptValue,
            3 => Defect::MissingValue,
            4 => Defect::Unknown,
            5 => Defect::Orphan,
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
                    .filter(|&i| g.pos[i].kind != Kind::Text)
                    .collect();
                match bad.get(rng.usize(..bad.len().max(1))) {
                    Some(&i) => {
                        call.pos[i] = bad_value(rng, g.pos[i].kind).expect("not text");
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
                            (Some((_, kind)), Some(_)) if kind != Kind::Text => Some((i, kind)),
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
                // After a list of ids, an option word is one more id.
                let listing = call.opts.iter().any(|(word, _)| {
                    g.opts.iter().any(|o| {
                        word.eq_ignore_ascii_case(o.word.as_bytes())
                            && matches!(o.value, Some((_, Kind::Ids)))
                    })
                });
                match valued.get(rng.usize(..valued.len().max(1))) {
                    Some(o) if call.tail.is_empty() && !listing => {
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
            Defect::Orphan => match g
                .requires
                .iter()
                .chain(g.together)
                .nth(rng.usize(..(g.requires.len() + g.together.len()).max(1)))
            {
                Some((option, needed)) => {
                    call.opts
                        .retain(|(w, _)| !w.eq_ignore_ascii_case(needed.as_bytes()));
                    if !call
                        .opts
                        .iter()
                        .any(|(w, _)| w.eq_ignore_ascii_case(option.as_bytes()))
                    {
                        let at = rng.usize(..=call.opts.len());
                        call.opts
                            .insert(at, (case(rng, option), Some(b"1000".to_vec())));
                    }
                    true
                }
                None => false,
            },
            Defect::Exclusive => {
                let groups: Vec<&[&str]> = g
                    .exclusive
                    .iter()
                    .copied()
                    .filter(|group| group.len() >= 2)
                    .collect();
                if groups.is_empty() {
                    false
                } else {
                    let group = groups[rng.usize(..groups.len())];
                    let first: Vec<&&str> = group.iter().filter(|_| rng.bool()).collect();
                    for word in first.into_iter().chain(group) {
                        if call.opts.iter().filter(|(w, _)| in_group(group, w)).count() >= 2 {
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
/// group cut short, words past the last group; for groups of one word,
/// only none at all).
fn break_group(rng: &mut Rng, g: &Grammar, call: &mut Call) -> Vec<Defect> {
    // A head (fixed arguments before the groups) stays in front.
    let head = g.head.len();
    let width = g.pos.len();
    let kind_at = |i: usize| match i.checked_sub(head) {
        None => g.head[i].kind,
        Some(at) => g.pos[at % width].kind,
    };
    let mut applied = Vec::new();
    let typed: Vec<usize> = (0..call.pos.len())
        .filter(|&i| kind_at(i) != Kind::Text)
        .collect();
    if rng.bool() && !typed.is_empty() {
        let i = typed[rng.usize(..typed.len())];
        call.pos[i] = bad_value(rng, kind_at(i)).expect("not text");
        applied.push(Defect::BadArg);
    }
    if applied.is_empty() || rng.bool() {
        // A group of one word cannot be cut short, and words past the
        // last group are more groups: only none at all breaks its count.
        let count_defects = if width == 1 { 1 } else { 3 };
        match rng.u32(..count_defects) {
            0 => call.pos.truncate(head),
            1 => {
                let cut = 1 + rng.usize(..width - 1);
                let keep = call.pos.len().saturating_sub(cut);
                call.pos.truncate(keep);
                if call.pos.len() <= head || (call.pos.len() - head).is_multiple_of(width) {
                    call.pos.truncate(head);
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

fn in_group(group: &[&str], word: &[u8]) -> bool {
    group
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w.as_bytes()))
}

/// An option word in upper, lower or mixed case (option words are
/// case-insensitive).
pub(crate) fn case(rng: &mut Rng, word: &str) -> Vec<u8> {
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
/// most one of each exclusive group, an option that needs another only with
/// it, and the two options of a pair together: `MAX n PER ms`).
pub(crate) fn valid_call(rng: &mut Rng, g: &'static Grammar, base: &[u8], ids: &[&[u8]]) -> Call {
    let mut call = Call {
        command: g.command,
        base: base.to_vec(),
        pos: Vec::new(),
        opts: Vec::new(),
        tail: Vec::new(),
    };
    for arg in g.head {
        call.pos.push(valid_value(rng, arg.kind, ids));
    }
    let groups = if g.group { 1 + rng.usize(..4) } else { 1 };
    for _ in 0..groups {
        for arg in g.pos {
            let value = match arg.name {
                "token" => rng.u64(..4).to_string().into_bytes(),
                _ => valid_value(rng, arg.kind, ids),
            };
            call.pos.push(value);
        }
    }
    let mut exclusive_taken: Vec<&[&str]> = Vec::new();
    for (at, o) in g.opts.iter().enumerate() {
        // A pair's second option is drawn with its first, never alone.
        let companion = g.opts[..at]
            .iter()
            .any(|earlier| g.together.contains(&(o.word, earlier.word)));
        if companion || rng.u32(..5) >= 2 {
            continue;
        }
        if let Some(group) = g.exclusive.iter().find(|group| group.contains(&o.word)) {
            if exclusive_taken.contains(group) {
                continue;
            }
            exclusive_taken.push(group);
        }
        for with in std::iter::once(o).chain(
            g.opts[at + 1..]
                .iter()
                .filter(|later| g.together.contains(&(later.word, o.word))),
        ) {
            let value = with.value.map(|(_, kind)| valid_value(rng, kind, ids));
            call.opts.push((case(rng, with.word), value));
        }
    }
    let given = |call: &Call, word: &str| {
        call.opts
            .iter()
            .any(|(w, _)| w.eq_ignore_ascii_case(word.as_bytes()))
    };
    for (option, needed) in g.requires {
        if given(&call, option) && !given(&call, needed) {
            let spec = g
                .opts
                .iter()
                .find(|o| o.word == *needed)
                .expect("an option");
            let value = spec.value.map(|(_, kind)| valid_value(rng, kind, ids));
            call.opts.insert(0, (case(rng, needed), value));
        }
    }
    call
}

fn valid_value(rng: &mut Rng, kind: Kind, ids: &[&[u8]]) -> Vec<u8> {
    match kind {
        // One delay: the option is the last, so a list of one.
        Kind::Delays => [0u64, 1000, 600_000][rng.usize(..3)]
            .to_string()
            .into_bytes(),
        Kind::Id { generate: star } => {
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
        Kind::Key => format!("key{}", rng.u32(..3)).into_bytes(),
        // One id: the option is the last, so a list of one.
        Kind::Ids => valid_value(rng, Kind::Id { generate: false }, ids),
        Kind::Queue => format!("q{}", rng.u32(..3)).into_bytes(),
        Kind::RepeatKey => format!("r{}", rng.u32(..3)).into_bytes(),
        Kind::Group => format!("g{}", rng.u32(..4)).into_bytes(),
        Kind::Name { .. } => format!("n{}", rng.u32(..3)).into_bytes(),
        Kind::Word(words) => words[rng.usize(..words.len())].as_bytes().to_vec(),
        Kind::Resolution => {
            let choices = [
                "completed - 0 ",
                "completed a 2 ok",
                "completed big 70000 ",
                "dead a 1 boom: it broke",
                "dead - 0 ",
                "cancelled a",
                "removed -",
            ];
            choices[rng.usize(..choices.len())].as_bytes().to_vec()
        }
        // Jobs of other queues than any the tests use: never the job itself.
        Kind::Edges => match rng.u32(..3) {
            0 => Vec::new(),
            1 => format!("elsewhere e{}", rng.u32(..3)).into_bytes(),
            _ => b"elsewhere e1 far.q e2".to_vec(),
        },
        Kind::TraceParent => TRACEPARENTS[rng.usize(..TRACEPARENTS.len())]
            .as_bytes()
            .to_vec(),
        Kind::RunAt => match rng.u32(..4) {
            0 => b"+0".to_vec(),
            1 => b"+600000".to_vec(),
            2 => b"1000".to_vec(),
            _ => b"4102444800000".to_vec(),
        },
    }
}
