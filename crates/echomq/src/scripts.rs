//! Wire 4: the Lua scripts, one per transition, run as the functions of
//! one library (`FUNCTION LOAD` once, then `FCALL`; see `library.rs`), or
//! where a server will not take the library, loaded once and run by
//! `EVALSHA` (reloaded with `EVAL` on `NOSCRIPT`).
//!
//! Each script is the helpers of the prelude it uses (directly or through
//! another helper, in the prelude's order), then its body, then
//! `scripts/include/epilogue.lua`, which runs the body's `main` under
//! `pcall`, once it has checked the base key (`BADARG queue` for one that
//! is not `<prefix>:{<queue>}` by the queue-name rule, before any other
//! argument). Only the helpers a script uses are sent: every helper defined
//! costs a closure on every run, and on Valkey 9 that is measurable. A script
//! gets the base key and the queue's fixed keys it touches as `KEYS` (the
//! registry of controls lists them; a test checks each script's header
//! against it) and builds job keys from the base inside. A body never
//! indexes `KEYS`: it names each fixed key `<key>_key` (`pending_key`), and
//! the book puts a generated `local pending_key = KEYS[n]` before the body
//! for each name it uses, `n` the key's place in the control's `keys`.
//!
//! The book holds one script per command of the registry
//! (`echomq_protocol::Transition::control`), read from the files of
//! `scripts/` that `build.rs` embeds. The protocol's shared constants
//! reach the Lua as literals: where code names one (`MAX_PRIORITY`), the
//! book writes its value (see `literals.rs`), as it does for the prelude's
//! own constants of one literal (`local MS_PER_S = 1000`); the metrics
//! histogram's bounds, a table, as the generated block
//! `local METRICS_BOUNDS = {…}`.

use echomq_protocol::metrics;
use echomq_protocol::{Form, Keyspace, QueueKey, Transition};
use redis::Cmd;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

/// `(name, source)` of each named file of `scripts/include/` (`.lua`).
macro_rules! include_files {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../scripts/include/", $name, ".lua")))),*]
    };
}

/// The files of `scripts/include/` that make the prelude, one concern
/// each, joined in this order (a blank line between two): a helper uses
/// only helpers defined above it, in its own file or an earlier one, as
/// Lua's `local` needs. A new include file goes here, after every file
/// whose helpers it uses; a test refuses one left out.
#[rustfmt::skip]
const PRELUDE_FILES: &[(&str, &str)] = include_files![
    "arguments",
    "keys",
    "settings",
    "outcome_channel",
    "events",
    "outbox",
    "retention",
    "pending",
    "groups",
    "promote",
    "lifo",
    "tokens",
    "dedup",
    "job_fields",
    "deadlines",
    "metrics",
    "job_hash",
    "enqueue",
    "flow_jobs",
    "flow_own_edges",
    "decide",
    "complete",
    "round_robin",
    "claim_reads",
    "claim",
];

/// The prelude: the files of `PRELUDE_FILES` joined in order.
static PRELUDE: LazyLock<String> = LazyLock::new(|| {
    let files: Vec<&str> = PRELUDE_FILES
        .iter()
        .map(|(_, lua)| lua.trim_end())
        .collect();
    files.join("\n\n")
});
const EPILOGUE: &str = include_str!("../scripts/include/epilogue.lua");

/// One Lua script: its body, the fixed keys it takes, its SHA1, and its
/// function in the library.
pub(crate) struct LuaScript {
    /// File name without `.lua`.
    pub name: &'static str,
    /// The fixed keys passed as KEYS, in order.
    pub keys: &'static [QueueKey],
    /// The script file as written (header and body).
    pub body: &'static str,
    /// The generated `local <key>_key, … = KEYS[n], …` line of the fixed
    /// keys the body and epilogue name (see `key_locals`).
    key_locals: String,
    /// Whether it only reads (its command is `readonly`): its function is
    /// flagged `no-writes`.
    pub readonly: bool,
    source: String,
    sha: String,
    /// Its function's name in the library: `emq_<name>_<library tag>`.
    pub function: String,
}

impl std::fmt::Debug for LuaScript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.lua", self.name)
    }
}

impl LuaScript {
    fn new(
        name: &'static str,
        keys: &'static [QueueKey],
        body: &'static str,
        readonly: bool,
    ) -> Self {
        let code = format!("{body}\n{EPILOGUE}");
        let used = helpers_used_by(&code);
        let key_locals = key_locals(keys, &code);
        let source = with_constant_literals(&format!("{used}\n{key_locals}{body}\n{EPILOGUE}"));
        let sha = redis::Script::new(&source).get_hash().to_string();
        Self {
            name,
            keys,
            body,
            key_locals,
            readonly,
            source,
            sha,
            function: String::new(),
        }
    }

    /// `FCALL function numkeys keys… args…`.
    pub(crate) fn fcall(&self, keys: &Keyspace, args: &[Vec<u8>]) -> Cmd {
        self.invocation("FCALL", &self.function, keys, args)
    }

    /// `SCRIPT LOAD source`.
    pub(crate) fn load(&self) -> Cmd {
        let mut cmd = redis::cmd("SCRIPT");
        cmd.arg("LOAD").arg(&self.source);
        cmd
    }

    /// `EVALSHA sha numkeys keys… args…`.
    pub(crate) fn evalsha(&self, keys: &Keyspace, args: &[Vec<u8>]) -> Cmd {
        self.invocation("EVALSHA", &self.sha, keys, args)
    }

    /// `EVAL source numkeys keys… args…`: loads the script into the cache.
    pub(crate) fn eval(&self, keys: &Keyspace, args: &[Vec<u8>]) -> Cmd {
        self.invocation("EVAL", &self.source, keys, args)
    }

    fn invocation(&self, verb: &str, script: &str, keys: &Keyspace, args: &[Vec<u8>]) -> Cmd {
        let mut cmd = redis::cmd(verb);
        cmd.arg(script).arg(self.keys.len());
        for key in self.keys {
            cmd.arg(keys.key(*key));
        }
        for arg in args {
            cmd.arg(arg.as_slice());
        }
        cmd
    }
}

/// The name a script uses for the fixed key `key` of its call:
/// `<name>_key` (`pending_key`, `dedup_owner_key`), from the key's name in
/// the registry.
pub(crate) fn key_local(key: QueueKey) -> String {
    format!("{}_key", key.name())
}

/// The line that names the fixed keys of a call, `local pending_key,
/// meta_key = KEYS[4], KEYS[6]`, from `keys` (the control's list in the
/// registry, in the order they are passed): only the keys `code` names
/// (each local is a step on every run); empty when it names none.
fn key_locals(keys: &[QueueKey], code: &str) -> String {
    let named: HashSet<&str> = identifiers(code).collect();
    let (names, values): (Vec<String>, Vec<String>) = keys
        .iter()
        .enumerate()
        .map(|(index, key)| (key_local(*key), format!("KEYS[{}]", index + 1)))
        .filter(|(name, _)| named.contains(name.as_str()))
        .unzip();
    if names.is_empty() {
        return String::new();
    }
    format!("local {} = {}\n", names.join(", "), values.join(", "))
}

/// One top-level definition block of the prelude: its text and the names
/// it defines (`local NAME` / `local function NAME` at column 0).
struct Helper {
    text: String,
    defines: Vec<String>,
}

/// Splits the prelude into definition blocks: a block starts at a column-0
/// comment or `local` after a blank line; blocks that define nothing (the
/// file's header comment) are dropped.
fn prelude_helpers() -> Vec<Helper> {
    let mut blocks: Vec<Vec<&str>> = Vec::new();
    let mut previous_blank = true;
    for line in PRELUDE.lines() {
        let starts = line.starts_with("--") || line.starts_with("local ");
        if starts && previous_blank {
            blocks.push(Vec::new());
        }
        if let Some(block) = blocks.last_mut() {
            block.push(line);
        }
        previous_blank = line.trim().is_empty();
    }
    blocks
        .into_iter()
        .map(|lines| {
            let defines = lines
                .iter()
                .filter_map(|line| {
                    line.strip_prefix("local function ")
                        .or_else(|| line.strip_prefix("local "))
                })
                .filter_map(|rest| identifiers(rest).next())
                .map(str::to_string)
                .collect();
            Helper {
                text: lines.join("\n"),
                defines,
            }
        })
        .filter(|helper| !helper.defines.is_empty())
        .collect()
}

/// The name and literal of a prelude block that only names one literal,
/// `local NAME = 1000` or `local NAME = '{}'`, its name in capitals (its
/// comment lines aside): the book writes the literal where code names it
/// (see `literals.rs`), so it costs the library no local.
fn literal_constant(helper: &Helper) -> Option<(String, String)> {
    let mut code = helper
        .text
        .lines()
        .filter(|line| !line.starts_with("--") && !line.trim().is_empty());
    let (name, value) = code.next()?.strip_prefix("local ")?.split_once(" = ")?;
    let constant = name
        .bytes()
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    let number = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
    let quoted = value.len() >= 2
        && value.starts_with('\'')
        && value.ends_with('\'')
        && !value[1..value.len() - 1].contains(['\'', '\\']);
    (code.next().is_none() && constant && (number || quoted))
        .then(|| (name.to_string(), value.to_string()))
}

fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| !word.is_empty())
}

/// The constants and prelude blocks, and the blocks that define each name,
/// split once per process.
#[allow(clippy::type_complexity)]
static HELPERS: LazyLock<(Vec<Helper>, HashMap<String, Vec<usize>>)> = LazyLock::new(|| {
    let mut helpers = constant_blocks();
    helpers.extend(
        prelude_helpers()
            .into_iter()
            .filter(|helper| literal_constant(helper).is_none()),
    );
    let mut defined_in: HashMap<String, Vec<usize>> = HashMap::new();
    for (index, helper) in helpers.iter().enumerate() {
        for name in &helper.defines {
            defined_in.entry(name.clone()).or_default().push(index);
        }
    }
    (helpers, defined_in)
});

/// The constants and prelude blocks `body` uses, directly or through other
/// blocks: the constants first, then the prelude's blocks in its order.
fn helpers_used_by(body: &str) -> String {
    let (helpers, defined_in) = &*HELPERS;
    let mut needed = vec![false; helpers.len()];
    let mut seen: HashSet<&str> = HashSet::new();
    let mut queue: Vec<&str> = identifiers(body).collect();
    while let Some(word) = queue.pop() {
        if !seen.insert(word) {
            continue;
        }
        for &index in defined_in.get(word).into_iter().flatten() {
            if !needed[index] {
                needed[index] = true;
                queue.extend(identifiers(&helpers[index].text));
            }
        }
    }
    helpers
        .iter()
        .zip(needed)
        .filter(|(_, needed)| *needed)
        .map(|(helper, _)| helper.text.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

include!(concat!(env!("OUT_DIR"), "/script_files.rs"));

/// The generated constant blocks, before the prelude's: the metrics
/// histogram's bounds as the table `METRICS_BOUNDS`. (The shared constants
/// are numbers, written in as literals: see `literals.rs`.)
fn constant_blocks() -> Vec<Helper> {
    let bounds: Vec<String> = metrics::BOUNDS_MS.iter().map(u64::to_string).collect();
    vec![Helper {
        text: format!("local METRICS_BOUNDS = {{{}}}", bounds.join(", ")),
        defines: vec!["METRICS_BOUNDS".to_string()],
    }]
}

/// The source of the script file `name` (without `.lua`).
fn script_file(name: &str) -> Option<&'static str> {
    SCRIPT_FILES
        .iter()
        .find(|(file, _)| *file == name)
        .map(|(_, body)| *body)
}

/// Every script of wire 4: one per command of the registry of controls
/// (each control's single form, and its bulk form where it has one).
pub(crate) struct ScriptBook {
    scripts: HashMap<(Transition, Form), LuaScript>,
    /// What names this build's library and its functions: the first 16 hex
    /// digits of the SHA1 of every script's source, so two builds that
    /// differ in any script load two libraries side by side.
    tag: String,
}

/// The scripts, built once per process from the registry and the files.
pub(crate) static SCRIPTS: LazyLock<ScriptBook> = LazyLock::new(|| {
    let mut scripts = HashMap::new();
    for transition in Transition::ALL {
        let control = transition.control();
        for (form, command) in control.commands() {
            let body = script_file(command.script).unwrap_or_else(|| {
                panic!(
                    "{} has no script: scripts/{}.lua is missing",
                    command.native, command.script
                )
            });
            let readonly = command.flags.split(' ').any(|flag| flag == "readonly");
            let script = LuaScript::new(command.script, control.keys, body, readonly);
            scripts.insert((*transition, form), script);
        }
    }
    let mut sources: Vec<&str> = scripts.values().map(|s| s.source.as_str()).collect();
    sources.sort_unstable();
    let digest = redis::Script::new(&sources.concat()).get_hash().to_string();
    let tag = digest[..16].to_string();
    for script in scripts.values_mut() {
        script.function = format!("emq_{}_{tag}", script.name);
    }
    ScriptBook { scripts, tag }
});

impl ScriptBook {
    /// The script of a transition's form: every command of the registry
    /// has one (the book is built from it).
    pub(crate) fn get(&self, transition: Transition, form: Form) -> &LuaScript {
        self.scripts.get(&(transition, form)).unwrap_or_else(|| {
            panic!("{transition} has no {form:?} form in the registry of controls")
        })
    }

    /// Every script.
    pub(crate) fn all(&self) -> impl Iterator<Item = &LuaScript> {
        self.scripts.values()
    }
}

/// The Lua source wire 4 sends for a command of the registry (helpers,
/// constants, body, epilogue), for tools and tests that run the scripts
/// without the client.
pub fn script_source(transition: Transition, form: Form) -> &'static str {
    &SCRIPTS.get(transition, form).source
}

mod library;
pub(crate) use library::LIBRARY;
mod literals;
use literals::with_constant_literals;

#[cfg(test)]
mod tests;
