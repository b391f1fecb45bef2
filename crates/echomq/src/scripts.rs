//! Wire 4: the Lua scripts, one per transition, loaded once and run by
//! `EVALSHA` (reloaded with `EVAL` on `NOSCRIPT`).
//!
//! Each script is the helpers of `scripts/include/prelude.lua` it uses
//! (directly or through another helper, in file order), then its body, then
//! `scripts/include/epilogue.lua`, which runs the body's `main` under
//! `pcall`, once it has checked the base key (`BADARG queue` for one that
//! is not `<prefix>:{<queue>}` by the queue-name rule, before any other
//! argument). Only the helpers a script uses are sent: every helper defined
//! costs a closure on every run, and on Valkey 9 that is measurable. A script
//! gets the base key and the queue's fixed keys it touches as `KEYS` (the
//! list below, checked against each script's header by a test) and builds
//! job keys from the base inside.

use echomq_protocol::{Keyspace, QueueKey, Transition};
use redis::Cmd;
use std::sync::LazyLock;

use QueueKey::*;

const PRELUDE: &str = include_str!("../scripts/include/prelude.lua");
const EPILOGUE: &str = include_str!("../scripts/include/epilogue.lua");

/// One Lua script: its body, the fixed keys it takes, and its SHA1.
pub(crate) struct LuaScript {
    /// File name without `.lua`.
    pub name: &'static str,
    /// The fixed keys passed as KEYS, in order.
    pub keys: &'static [QueueKey],
    /// The script file as written (header and body).
    #[cfg_attr(not(test), allow(dead_code))]
    pub body: &'static str,
    source: String,
    sha: String,
}

impl std::fmt::Debug for LuaScript {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.lua", self.name)
    }
}

impl LuaScript {
    /// The module command that is this script's twin on wire 6:
    /// `enqueue_bulk` → `EMQ.ENQUEUE.BULK`.
    pub fn native_command(&self) -> String {
        format!("EMQ.{}", self.name.to_ascii_uppercase().replace('_', "."))
    }

    fn new(name: &'static str, keys: &'static [QueueKey], body: &'static str) -> Self {
        let source = format!("{}\n{body}\n{EPILOGUE}", helpers_used_by(body));
        let sha = redis::Script::new(&source).get_hash().to_string();
        Self {
            name,
            keys,
            body,
            source,
            sha,
        }
    }

    /// `EVALSHA sha numkeys keys… args…`.
    pub fn evalsha(&self, keys: &Keyspace, args: &[Vec<u8>]) -> Cmd {
        self.invocation("EVALSHA", &self.sha, keys, args)
    }

    /// `EVAL source numkeys keys… args…`: loads the script into the cache.
    pub fn eval(&self, keys: &Keyspace, args: &[Vec<u8>]) -> Cmd {
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

fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| !word.is_empty())
}

/// The prelude blocks `body` uses, directly or through other blocks, in
/// prelude order.
fn helpers_used_by(body: &str) -> String {
    let helpers = prelude_helpers();
    let mut needed = vec![false; helpers.len()];
    let mut queue: Vec<String> = identifiers(body).map(str::to_string).collect();
    while let Some(word) = queue.pop() {
        for (index, helper) in helpers.iter().enumerate() {
            if !needed[index] && helper.defines.contains(&word) {
                needed[index] = true;
                queue.extend(identifiers(&helper.text).map(str::to_string));
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

/// Every script of wire 4.
pub(crate) struct ScriptBook {
    pub enqueue: LuaScript,
    pub enqueue_bulk: LuaScript,
    pub claim: LuaScript,
    pub complete: LuaScript,
    pub complete_bulk: LuaScript,
    pub fail: LuaScript,
    pub get: LuaScript,
    pub counts: LuaScript,
    pub schedule: LuaScript,
    pub schedule_bulk: LuaScript,
    pub promote: LuaScript,
    pub delay: LuaScript,
    pub reschedule: LuaScript,
    pub remove: LuaScript,
    pub cancel: LuaScript,
    pub extend: LuaScript,
    pub stalled_check: LuaScript,
    pub requeue: LuaScript,
    pub pause: LuaScript,
    pub resume: LuaScript,
    pub drain: LuaScript,
    pub obliterate: LuaScript,
    pub update: LuaScript,
    pub progress: LuaScript,
    pub log: LuaScript,
    pub reprocess: LuaScript,
}

macro_rules! script {
    ($name:literal, [$($key:ident),* $(,)?]) => {
        LuaScript::new(
            $name,
            &[$($key),*],
            include_str!(concat!("../scripts/", $name, ".lua")),
        )
    };
}

/// The scripts, built once per process.
pub(crate) static SCRIPTS: LazyLock<ScriptBook> = LazyLock::new(|| ScriptBook {
    enqueue: script!("enqueue", [Base, Id, Seq, Pending, Meta, Events, Signal]),
    enqueue_bulk: script!(
        "enqueue_bulk",
        [Base, Id, Seq, Pending, Meta, Events, Signal]
    ),
    claim: script!(
        "claim",
        [Base, Seq, Schedule, Pending, Active, Meta, Events, Signal]
    ),
    complete: script!("complete", [Base, Active, Completed, Meta, Events]),
    complete_bulk: script!("complete_bulk", [Base, Active, Completed, Meta, Events]),
    fail: script!(
        "fail",
        [
            Base, Seq, Schedule, Pending, Active, Dead, Cancelled, Meta, Events, Signal
        ]
    ),
    get: script!("get", [Base]),
    schedule: script!(
        "schedule",
        [Base, Id, Seq, Pending, Schedule, Meta, Events, Signal]
    ),
    schedule_bulk: script!(
        "schedule_bulk",
        [Base, Id, Seq, Pending, Schedule, Meta, Events, Signal]
    ),
    promote: script!(
        "promote",
        [Base, Seq, Schedule, Pending, Meta, Events, Signal]
    ),
    delay: script!("delay", [Base, Schedule, Active, Meta, Events, Signal]),
    reschedule: script!("reschedule", [Base, Schedule, Meta, Events, Signal]),
    cancel: script!("cancel", [Base, Schedule, Pending, Cancelled, Meta, Events]),
    extend: script!("extend", [Base, Active]),
    stalled_check: script!(
        "stalled_check",
        [
            Base, Seq, Pending, Active, Dead, Cancelled, Meta, Events, Signal
        ]
    ),
    requeue: script!(
        "requeue",
        [Base, Seq, Schedule, Pending, Active, Meta, Events, Signal]
    ),
    pause: script!("pause", [Base, Meta, Events]),
    resume: script!("resume", [Base, Meta, Events, Signal]),
    drain: script!("drain", [Base, Pending, Schedule, Meta, Events]),
    obliterate: script!(
        "obliterate",
        [
            Base, Id, Seq, Schedule, Pending, Active, Completed, Dead, Cancelled, Meta, Events,
            Signal, Repeat
        ]
    ),
    update: script!("update", [Base, Meta, Events]),
    progress: script!("progress", [Base, Meta, Events]),
    log: script!("log", [Base]),
    reprocess: script!(
        "reprocess",
        [
            Base, Seq, Pending, Completed, Dead, Cancelled, Meta, Events, Signal
        ]
    ),
    remove: script!(
        "remove",
        [
            Base, Schedule, Pending, Active, Completed, Dead, Cancelled, Meta, Events
        ]
    ),
    counts: script!(
        "counts",
        [
            Base, Schedule, Pending, Active, Completed, Dead, Cancelled, Meta
        ]
    ),
});

impl ScriptBook {
    /// The script of a transition: every transition has one.
    pub fn for_transition(&self, transition: Transition) -> &LuaScript {
        match transition {
            Transition::Enqueue => &self.enqueue,
            Transition::Claim => &self.claim,
            Transition::Complete => &self.complete,
            Transition::Fail => &self.fail,
            Transition::Get => &self.get,
            Transition::Counts => &self.counts,
            Transition::Schedule => &self.schedule,
            Transition::Promote => &self.promote,
            Transition::Delay => &self.delay,
            Transition::Reschedule => &self.reschedule,
            Transition::Remove => &self.remove,
            Transition::Cancel => &self.cancel,
            Transition::Extend => &self.extend,
            Transition::StalledCheck => &self.stalled_check,
            Transition::Requeue => &self.requeue,
            Transition::Pause => &self.pause,
            Transition::Resume => &self.resume,
            Transition::Drain => &self.drain,
            Transition::Obliterate => &self.obliterate,
            Transition::Update => &self.update,
            Transition::Progress => &self.progress,
            Transition::Log => &self.log,
            Transition::Reprocess => &self.reprocess,
        }
    }

    /// Every script, for the header check.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn all(&self) -> [&LuaScript; 26] {
        [
            &self.enqueue,
            &self.enqueue_bulk,
            &self.claim,
            &self.complete,
            &self.complete_bulk,
            &self.fail,
            &self.get,
            &self.counts,
            &self.schedule,
            &self.schedule_bulk,
            &self.promote,
            &self.delay,
            &self.reschedule,
            &self.remove,
            &self.cancel,
            &self.extend,
            &self.stalled_check,
            &self.requeue,
            &self.pause,
            &self.resume,
            &self.drain,
            &self.obliterate,
            &self.update,
            &self.progress,
            &self.log,
            &self.reprocess,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `-- KEYS[n] name` lines of a script's header.
    fn header_keys(body: &str) -> Vec<(usize, String)> {
        body.lines()
            .filter_map(|line| line.strip_prefix("-- KEYS["))
            .map(|rest| {
                let (index, name) = rest.split_once("] ").expect("KEYS line shape");
                (index.parse().unwrap(), name.trim().to_string())
            })
            .collect()
    }

    #[test]
    fn every_header_lists_exactly_the_keys_passed() {
        for script in SCRIPTS.all() {
            let listed = header_keys(script.body);
            let passed: Vec<(usize, String)> = script
                .keys
                .iter()
                .enumerate()
                .map(|(i, key)| (i + 1, key.name().to_string()))
                .collect();
            assert_eq!(listed, passed, "header of {}.lua", script.name);
        }
    }

    #[test]
    fn every_header_names_argv_replies_and_events() {
        for script in SCRIPTS.all() {
            for part in ["-- Reply:", "-- Events:", "-- Errors:"] {
                assert!(
                    script.body.contains(part),
                    "{}.lua lacks {part}",
                    script.name
                );
            }
        }
    }

    #[test]
    fn scripts_build_job_keys_as_the_keyspace_does() {
        use echomq_protocol::keyspace::{JOB_INFIX, LOGS_INFIX};
        assert!(PRELUDE.contains(&format!("base .. '{JOB_INFIX}' .. id")));
        assert!(PRELUDE.contains(&format!("base .. '{LOGS_INFIX}' .. id")));
    }

    #[test]
    fn a_script_carries_only_the_helpers_it_uses() {
        let get = &SCRIPTS.get.source;
        assert!(get.contains("local function id_arg"));
        assert!(get.contains("local function job_key"));
        assert!(!get.contains("local function enqueue_jobs"));
        assert!(!get.contains("local function trim_finished"));
        // Reached through complete_jobs, not named by the body itself.
        assert!(
            SCRIPTS
                .complete
                .source
                .contains("local function trim_finished")
        );
    }

    #[test]
    fn every_prelude_block_defines_something_once() {
        let mut names: Vec<String> = prelude_helpers()
            .into_iter()
            .flat_map(|h| h.defines)
            .collect();
        let all = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all, "a helper name is defined twice");
        assert!(names.contains(&"enqueue_jobs".to_string()));
    }

    #[test]
    fn the_epilogue_checks_the_base_key_by_the_queue_name_rule() {
        use echomq_protocol::name::MAX_QUEUE_NAME;
        let name = "[A-Za-z0-9_%.:%-]+";
        assert!(EPILOGUE.contains(&format!("'^({name}):{{({name})}}$'")));
        assert!(EPILOGUE.contains(&format!(
            "#base_prefix > {MAX_QUEUE_NAME} or #base_queue > {MAX_QUEUE_NAME}"
        )));
        assert!(EPILOGUE.contains("return {err = 'BADARG queue'}"));
    }

    #[test]
    fn the_base_key_comes_first() {
        for script in SCRIPTS.all() {
            assert_eq!(script.keys.first(), Some(&Base), "{}", script.name);
        }
    }
}
