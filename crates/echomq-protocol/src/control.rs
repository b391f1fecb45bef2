//! The shape of a row of the registry of controls (the rows themselves are
//! in [`transition`](crate::transition)): what a control touches, the
//! arguments its commands take, what they answer and refuse, the events it
//! writes, and its two implementations — a Lua script (wire 4) and a
//! native command (wire 6).
//!
//! Everything that lists the controls derives from the registry or is
//! checked against it by a test: the client's script book, the module's
//! registration table, the tests' lists of commands and their argument
//! grammar, the command tables of `docs/protocol.md`, and `emq controls`.

use crate::keyspace::QueueKey;

/// Which part of the control plane a control belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// Enqueue, claim, complete, fail: the path every job takes.
    Spine,
    /// Scheduling, promotion, delays: controls over time.
    Time,
    /// Leases, cancellation, the stalled sweep: the worker in hand.
    InHand,
    /// Pause, resume, drain, obliterate, counts: the whole queue.
    Queue,
    /// Reads and edits of one job's row.
    Job,
    /// Deduplication, rate limits, global concurrency: flow control.
    Flow,
    /// Fair groups: one group's cap, rate limit, pause and counts.
    Group,
    /// Flows: jobs that wait for other jobs, their edges and hand-offs.
    Dependencies,
}

impl Scope {
    /// Every scope, in the order the map shows them.
    pub const ALL: [Scope; 8] = [
        Scope::Spine,
        Scope::Time,
        Scope::InHand,
        Scope::Queue,
        Scope::Job,
        Scope::Flow,
        Scope::Group,
        Scope::Dependencies,
    ];

    /// The scope's machine name (`spine`, `time`, `in_hand`, `queue`, `job`,
    /// `flow`, `group`, `dependencies`).
    pub fn name(self) -> &'static str {
        match self {
            Scope::Spine => "spine",
            Scope::Time => "time",
            Scope::InHand => "in_hand",
            Scope::Queue => "queue",
            Scope::Job => "job",
            Scope::Flow => "flow",
            Scope::Group => "group",
            Scope::Dependencies => "dependencies",
        }
    }

    /// The scope as a heading (`the spine`, `over time`, …).
    pub fn title(self) -> &'static str {
        match self {
            Scope::Spine => "the spine",
            Scope::Time => "over time",
            Scope::InHand => "over the worker in hand",
            Scope::Queue => "over the whole queue",
            Scope::Job => "over one job",
            Scope::Flow => "flow control",
            Scope::Group => "over a group",
            Scope::Dependencies => "over dependencies",
        }
    }
}

/// What an argument or an option's value takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A job id (1–256 bytes, no whitespace, braces or control
    /// characters); `*` (a generated id) only where `generate`.
    Id {
        /// Whether `*` is accepted.
        generate: bool,
    },
    /// Any bytes (a payload, an error text, a worker name): only a missing
    /// one is refused.
    Text,
    /// A base-10 integer in `[min, max]`.
    Int {
        /// Smallest accepted value.
        min: u64,
        /// Largest accepted value.
        max: u64,
    },
    /// A run-at: an absolute unix time in ms, or `+ms` from the server's
    /// clock.
    RunAt,
    /// A deduplication key: the job-id rule (1–256 bytes, no whitespace,
    /// braces or control characters), and not `*`.
    Key,
    /// A group: the job-id rule with at most 128 bytes (1–128 bytes, no
    /// whitespace, braces or control characters).
    Group,
    /// A repeat key: the job-id rule with at most
    /// [`MAX_REPEAT_KEY`](crate::name::MAX_REPEAT_KEY) bytes, and no `:`.
    RepeatKey,
    /// A W3C traceparent (see [`crate::trace`]): refused as `BADARG
    /// traceparent` whatever the option's word.
    TraceParent,
    /// Delays in ms, each an integer ≥ 0: every argument after the option's
    /// word, at least one (so the option comes last).
    Delays,
    /// A name by the job-id rule with at most `max` bytes (1–`max` bytes,
    /// no whitespace, braces or control characters): a flow id, a ref.
    Name {
        /// Most bytes.
        max: usize,
    },
    /// A list of jobs (`after`, `before`): `<queue> <id>` pairs joined by
    /// single spaces, empty for none; each queue by the queue-name rule,
    /// each id by the job-id rule (not `*`), no pair twice, at most
    /// [`FLOW_EDGES_MAX`](crate::arg::FLOW_EDGES_MAX) pairs.
    Edges,
    /// One of a few words, exactly as written (lower case).
    Word(&'static [&'static str]),
    /// A queue name (1–128 bytes of `[A-Za-z0-9_.:-]`), as a job of
    /// another queue is named in a flow's edges.
    Queue,
    /// Job ids (the job-id rule, not `*`): every argument after the
    /// option's word, at least one (so the option comes last); refused as
    /// `BADARG <the option's word>`.
    Ids,
    /// A resolution text (docs/protocol.md, "The resolution text"): what
    /// a dependency's decision sends its dependents; see
    /// [`resolution_outcome`](crate::name::resolution_outcome).
    Resolution,
}

impl Kind {
    /// What the kind accepts, for people (`an integer ≥ 1`, `a job id`, …).
    pub fn describe(self) -> String {
        match self {
            Kind::Id { generate: true } => "a job id, or * for a generated one".into(),
            Kind::Id { generate: false } => "a job id".into(),
            Kind::Text => "any bytes".into(),
            Kind::Int { min, max } if max == crate::arg::MAX_INT => format!("an integer ≥ {min}"),
            Kind::Int { min, max } => format!("an integer {min}–{max}"),
            Kind::RunAt => "a run-at: unix ms, or +ms from the server's clock".into(),
            Kind::Key => {
                "a key: 1–256 bytes, no whitespace, braces or control characters, not *".into()
            }
            Kind::Group => "a group: 1–128 bytes, no whitespace, braces or control characters".into(),
            Kind::RepeatKey => format!(
                "a repeat key: 1–{} bytes, no ':', whitespace, braces or control characters",
                crate::name::MAX_REPEAT_KEY
            ),
            Kind::Delays => {
                "integers ≥ 0, one or more: every argument after the word".into()
            }
            Kind::Queue => "a queue name: 1–128 bytes of [A-Za-z0-9_.:-]".into(),
            Kind::Ids => "job ids, one or more: every argument after the word".into(),
            Kind::TraceParent => {
                "a W3C traceparent: 00-<32 hex>-<16 hex>-<2 hex>, lowercase, version not ff, ids not all zeros".into()
            }
            Kind::Name { max } => {
                format!("1–{max} bytes, no whitespace, braces or control characters")
            }
            Kind::Edges => format!(
                "<queue> <id> pairs joined by single spaces, empty for none: no pair twice, not the job itself, at most {}",
                crate::arg::FLOW_EDGES_MAX
            ),
            Kind::Word(words) => format!("one of {}", words.join(", ")),
            Kind::Resolution => "a resolution text: completed <ref> <size> <result>, dead <ref> <failures> <error>, cancelled <ref> or removed <ref>".into(),
        }
    }
}

/// A fixed argument: its name (the one `BADARG` names) and what it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arg {
    /// The name, as `BADARG <name>` and the docs write it.
    pub name: &'static str,
    /// What it takes.
    pub kind: Kind,
}

/// An option: a word (case-insensitive on the wire), and a value unless it
/// is a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opt {
    /// The option word, upper case.
    pub word: &'static str,
    /// The value's placeholder in a synopsis (`n` in `COUNT n`) and what it
    /// takes; `None` for a flag.
    pub value: Option<(&'static str, Kind)>,
}

impl Opt {
    /// The name a bad or missing value is refused with: `BADARG count`
    /// (the word, lower case), or `BADARG traceparent` for a trace context
    /// (`TRACE tp`: it names what it carries).
    pub fn badarg(&self) -> String {
        match self.value {
            Some((_, Kind::TraceParent)) => crate::trace::BADARG.into(),
            _ => self.word.to_ascii_lowercase(),
        }
    }
}

/// A refusal particular to a command (the argument refusals, `SYNTAX` and
/// `WRONGTYPE` are implied by its grammar: see [`Command::refusals`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refuses {
    /// The error code, the reply's first word (`NOTACTIVE`, `BADSTATE`, …).
    pub code: &'static str,
    /// When it is answered.
    pub when: &'static str,
}

/// A clause that may close a bulk form's groups: a word, then fixed
/// arguments (`CLAIM worker lease_ms n`). Its width is never a whole
/// number of groups, so the argument count tells it from one more group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tail {
    /// The word that opens it, upper case (case-insensitive on the wire).
    pub word: &'static str,
    /// Its arguments after the word, all required, in order.
    pub args: &'static [Arg],
    /// What it does, in words.
    pub effect: &'static str,
}

impl Tail {
    /// How many arguments it takes, the word included.
    pub fn width(&self) -> usize {
        1 + self.args.len()
    }

    /// The clause as written: `CLAIM worker lease_ms count`, `WAITED`.
    pub fn synopsis(&self) -> String {
        let words: Vec<&str> = std::iter::once(self.word)
            .chain(self.args.iter().map(|arg| arg.name))
            .collect();
        words.join(" ")
    }
}

/// The single form of a control, or its bulk form (many jobs per call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Form {
    /// One job, or no job, per call.
    Single,
    /// Many jobs per call, each as the single form would treat it.
    Bulk,
}

/// One command of a control: its wire-4 script and wire-6 command (the
/// same transition), its arguments after the base key, its reply and
/// refusals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Command {
    /// The native command (wire 6), `EMQ.CLAIM`.
    pub native: &'static str,
    /// The Lua script (wire 4), the file name without `.lua`.
    pub script: &'static str,
    /// A bulk form's fixed arguments before its groups, all required, in
    /// order (`FLOW.ADD.BULK`'s `flow`); empty for most.
    pub head: &'static [Arg],
    /// The fixed arguments after the base key (and the head), all
    /// required, in order; for a bulk form, one job's group, repeated.
    pub args: &'static [Arg],
    /// The options that may follow the fixed arguments.
    pub options: &'static [Opt],
    /// A bulk form's closing clause, after its groups, if it takes one.
    pub tail: Option<Tail>,
    /// For a single form whose fixed arguments are one group, repeated
    /// (one or more: `FLOW.ACK base id queue dependent [id queue
    /// dependent …]`), the name it is refused `BADARG` with unless its
    /// arguments are whole groups; such a form takes no option.
    pub groups: Option<&'static str>,
    /// Groups of option words: of each group at most one may be given
    /// (the words of one group need the same option, if any, and are
    /// shown as one `[A v | B v]` where they sit in the synopsis).
    pub exclusive: &'static [&'static [&'static str]],
    /// Options given only with another: (option, the option it needs).
    /// The option without the other is refused `SYNTAX <option> needs
    /// <other>`; the synopsis shows it inside the other's brackets
    /// (`[DEDUP key [DEDUP_FOR ms]]`).
    pub requires: &'static [(&'static str, &'static str)],
    /// Options that come only as a pair, as (word, its partner listed
    /// before it): `(PER, MAX)`. Either without the other is refused
    /// `BADARG <the missing one>` (its value is missing); the synopsis
    /// shows them as one option (`[MAX n PER ms | OFF]`), which counts as
    /// the first in its `exclusive` group.
    pub together: &'static [(&'static str, &'static str)],
    /// The reply, in words.
    pub reply: &'static str,
    /// Refusals particular to this command.
    pub refuses: &'static [Refuses],
    /// The module's command flags (`write deny-oom`, `readonly fast`, …).
    pub flags: &'static str,
}

impl Command {
    /// The command as written in the docs: `EMQ.CLAIM base worker lease_ms
    /// [COUNT n]`; a bulk form's group is shown once, then repeated
    /// (`[id token result …]`).
    pub fn synopsis(&self, form: Form) -> String {
        let mut out = format!("{} base", self.native);
        for arg in self.head {
            out.push(' ');
            out.push_str(arg.name);
        }
        let group: Vec<&str> = self.args.iter().map(|arg| arg.name).collect();
        for name in &group {
            out.push(' ');
            out.push_str(name);
        }
        if form == Form::Bulk || self.groups.is_some() {
            out.push_str(&format!(" [{} …]", group.join(" ")));
        }
        if let Some(tail) = &self.tail {
            out.push_str(&format!(" [{}]", tail.synopsis()));
        }
        out.push_str(&self.options_needing(None));
        out
    }

    /// The option this one needs (`requires`), if any.
    pub fn needs(&self, word: &str) -> Option<&'static str> {
        self.requires
            .iter()
            .find(|(option, _)| *option == word)
            .map(|(_, needed)| *needed)
    }

    /// The option listed before `options[at]` that `word` comes with
    /// (`together`), if any: `word` is shown with it, and counts as it
    /// among the exclusive ones.
    pub fn partner(&self, word: &str, at: usize) -> Option<&'static str> {
        self.options[..at]
            .iter()
            .map(|opt| opt.word)
            .find(|earlier| self.together.contains(&(word, *earlier)))
    }

    /// The synopsis of the options that need `needed` (`None`: those that
    /// need none), each `[WORD v]` followed by the options that need it
    /// in turn, then each exclusive group as one `[A v | B]`.
    fn options_needing(&self, needed: Option<&str>) -> String {
        let shown = |opt: &Opt| match opt.value {
            Some((placeholder, _)) => format!("{} {placeholder}", opt.word),
            None => opt.word.to_string(),
        };
        let mut out = String::new();
        let mut exclusive: Vec<(&[&str], Vec<String>)> = Vec::new();
        for (at, opt) in self.options.iter().enumerate() {
            if self.needs(opt.word) != needed || self.partner(opt.word, at).is_some() {
                continue;
            }
            let mut pair = shown(opt);
            for later in &self.options[at + 1..] {
                if self.together.contains(&(later.word, opt.word)) {
                    pair = format!("{pair} {}", shown(later));
                }
            }
            if let Some(group) = self.exclusive_group(opt.word) {
                match exclusive.iter_mut().find(|(shown, _)| *shown == group) {
                    Some((_, pairs)) => pairs.push(pair),
                    None => exclusive.push((group, vec![pair])),
                }
            } else {
                let inner = self.options_needing(Some(opt.word));
                out.push_str(&format!(" [{pair}{inner}]"));
            }
        }
        for (_, pairs) in exclusive {
            out.push_str(&format!(" [{}]", pairs.join(" | ")));
        }
        out
    }

    /// The exclusive group `word` belongs to, if any.
    pub fn exclusive_group(&self, word: &str) -> Option<&'static [&'static str]> {
        self.exclusive
            .iter()
            .copied()
            .find(|group| group.contains(&word))
    }

    /// Every refusal the command can answer, as (code and detail, when):
    /// its own, then `BADARG` naming each argument that can be bad (the
    /// base key's `queue`, `jobs` for a bulk form's argument count), then
    /// `SYNTAX` where options may follow, then `WRONGTYPE`.
    pub fn refusals(&self, form: Form) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = self
            .refuses
            .iter()
            .map(|r| (r.code.to_string(), r.when.to_string()))
            .collect();
        out.push((
            "BADARG queue".into(),
            "the base key is not <prefix>:{<queue>} with valid names".into(),
        ));
        if form == Form::Bulk {
            let closing = self
                .tail
                .map_or(String::new(), |tail| match tail.args.len() {
                    0 => format!(" (then, optionally, {})", tail.word),
                    n => format!(" (then, optionally, {} and its {n} arguments)", tail.word),
                });
            out.push((
                "BADARG jobs".into(),
                format!(
                    "no arguments, or not whole groups of {}{closing}",
                    self.args.len()
                ),
            ));
        }
        if let Some(name) = self.groups {
            out.push((
                format!("BADARG {name}"),
                format!("no arguments, or not whole groups of {}", self.args.len()),
            ));
        }
        for arg in self.head.iter().chain(self.args) {
            match (form, arg.kind) {
                // A bulk form's text can't be missing: a short group is `jobs`.
                (Form::Bulk, Kind::Text) => {}
                (_, Kind::Text) => out.push((format!("BADARG {}", arg.name), "missing".into())),
                (_, kind) => out.push((
                    format!("BADARG {}", arg.name),
                    format!("missing, or not {}", kind.describe()),
                )),
            }
        }
        // A tail's text can't be missing either: a short tail is `jobs`.
        if let Some(tail) = &self.tail {
            for arg in tail.args.iter().filter(|arg| arg.kind != Kind::Text) {
                out.push((
                    format!("BADARG {}", arg.name),
                    format!("after {}, not {}", tail.word, arg.kind.describe()),
                ));
            }
        }
        for opt in self.options {
            if let Some((_, kind)) = opt.value {
                let mut when = match kind {
                    Kind::Text => format!("{} without a value", opt.word),
                    kind => format!("{} without a value, or not {}", opt.word, kind.describe()),
                };
                // A pair's member is missing when the other comes alone.
                for (word, partner) in self.together {
                    if *partner == opt.word {
                        when.push_str(&format!(", or missing with {word}"));
                    } else if *word == opt.word {
                        when.push_str(&format!(", or missing with {partner}"));
                    }
                }
                out.push((format!("BADARG {}", opt.badarg()), when));
            }
        }
        if form == Form::Single && self.groups.is_none() {
            out.push((
                "SYNTAX".into(),
                if self.requires.is_empty() {
                    "an unknown option, a repeated exclusive one, or a word past the arguments"
                } else {
                    "an unknown option, a repeated exclusive one, an option without the one it needs, or a word past the arguments"
                }
                .into(),
            ));
        }
        out.push((
            "WRONGTYPE".into(),
            "a key the command touches holds another type; nothing is written".into(),
        ));
        out
    }
}

/// A key of one job (or one group, or one metrics window) a control
/// touches, besides the queue's fixed keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobKey {
    /// `<base>:job:<id>`, the job hash.
    Hash,
    /// `<base>:logs:<id>`, the job's log lines.
    Logs,
    /// `<base>:glane:<group>`, a group's lane (its pending jobs).
    Lane,
    /// `<base>:group:<group>`, a group's `active` count and settings.
    Group,
    /// `<base>:metrics:total` and the metrics windows
    /// `<base>:metrics:<resolution>:<start>` (docs/protocol.md "Metrics").
    Metrics,
    /// `<base>:deps:<id>`, the job's dependencies (docs/protocol.md "Flows").
    Deps,
    /// `<base>:dependents:<id>`, the job's dependents.
    Dependents,
    /// `<base>:resolution:<id>`, the job's resolution in the outbox.
    Resolution,
}

impl JobKey {
    /// The key after the base, with `<id>` for the job id.
    pub fn pattern(self) -> String {
        match self {
            JobKey::Hash => format!("{}<id>", crate::keyspace::JOB_INFIX),
            JobKey::Logs => format!("{}<id>", crate::keyspace::LOGS_INFIX),
            JobKey::Lane => format!("{}<group>", crate::keyspace::LANE_INFIX),
            JobKey::Group => format!("{}<group>", crate::keyspace::GROUP_INFIX),
            JobKey::Metrics => format!("{}<window>", crate::metrics::METRICS_INFIX),
            JobKey::Deps => format!("{}<id>", crate::keyspace::DEPS_INFIX),
            JobKey::Dependents => format!("{}<id>", crate::keyspace::DEPENDENTS_INFIX),
            JobKey::Resolution => format!("{}<id>", crate::keyspace::RESOLUTION_INFIX),
        }
    }
}

/// One row of the registry: everything a reader, a test or a tool needs
/// to know of one control.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Control {
    /// The verb as the protocol writes it (`STALLED.CHECK`).
    pub verb: &'static str,
    /// Where it belongs.
    pub scope: Scope,
    /// The library functions that send it, `Type::method`.
    pub functions: &'static [&'static str],
    /// The queue's fixed keys it touches, the base first: the `KEYS` its
    /// script takes, in order.
    pub keys: &'static [QueueKey],
    /// The keys of one job it touches.
    pub job_keys: &'static [JobKey],
    /// Whether it publishes on the queue's cancel channel.
    pub publishes_cancel: bool,
    /// Whether it publishes on the queue's outcome channel: it decides a
    /// job's outcome (completed, dead, cancelled) or deletes an unfinished
    /// job, and publishes `<id> <outcome>` for a job someone waits for
    /// (docs/protocol.md, "Outcome waits").
    pub publishes_outcome: bool,
    /// Whether its reply is an acknowledgement a caller relies on: at a
    /// durability level above memory, the client waits for the write to
    /// reach that level before it answers (docs/protocol.md, Durability).
    /// `false` for reads, and for the writes the queue makes again by
    /// itself, that only show how a job goes, or that a waiter makes again
    /// (`OUTCOME`'s mark).
    pub durable: bool,
    /// What it does, in one line.
    pub effect: &'static str,
    /// The single form.
    pub command: Command,
    /// The bulk form, where one exists.
    pub bulk: Option<Command>,
    /// The events it appends to the queue's stream, by `event` name.
    pub events: &'static [&'static str],
}

impl Control {
    /// The command of `form`; `None` for a bulk form the control lacks.
    pub fn form(&self, form: Form) -> Option<&Command> {
        match form {
            Form::Single => Some(&self.command),
            Form::Bulk => self.bulk.as_ref(),
        }
    }

    /// The control's commands: the single form, then the bulk form.
    pub fn commands(&self) -> impl Iterator<Item = (Form, &Command)> {
        std::iter::once((Form::Single, &self.command))
            .chain(self.bulk.as_ref().map(|bulk| (Form::Bulk, bulk)))
    }
}

/// Declares [`Transition`](crate::Transition) and its registry from one
/// list of rows: each row is a variant (with its doc) and its [`Control`].
/// The enum, [`Transition::ALL`](crate::Transition::ALL) and
/// [`Transition::control`](crate::Transition::control) come from the same
/// rows, so a control can't exist without its row.
macro_rules! registry {
    ($($(#[$doc:meta])* $name:ident => $row:expr),* $(,)?) => {
        /// A control of the protocol: one verb, one Lua script on wire 4
        /// and one `EMQ.*` command on wire 6 (and a bulk form of each for
        /// some). Its row of the registry is [`Transition::control`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Transition {
            $($(#[$doc])* $name),*
        }

        impl Transition {
            /// Every control, in the registry's order.
            pub const ALL: &'static [Transition] = &[$(Transition::$name),*];

            /// This control's row of the registry.
            pub fn control(self) -> &'static Control {
                match self {
                    $(Transition::$name => {
                        static ROW: Control = $row;
                        &ROW
                    })*
                }
            }
        }
    };
}
pub(crate) use registry;
