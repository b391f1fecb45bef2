//! Wire 4: the Lua scripts, one per transition, loaded once and run by
//! `EVALSHA` (reloaded with `EVAL` on `NOSCRIPT`).
//!
//! Each script is `scripts/include/prelude.lua`, then its body wrapped as
//! `local function main()`, then `scripts/include/epilogue.lua`. A script
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
    fn new(name: &'static str, keys: &'static [QueueKey], body: &'static str) -> Self {
        let source = format!("{PRELUDE}\n{body}\n{EPILOGUE}");
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
    enqueue_bulk: script!("enqueue_bulk", [Base, Id, Seq, Pending, Meta, Events, Signal]),
    claim: script!(
        "claim",
        [Base, Seq, Schedule, Pending, Active, Meta, Events, Signal]
    ),
    complete: script!("complete", [Base, Active, Completed, Meta, Events]),
    complete_bulk: script!("complete_bulk", [Base, Active, Completed, Meta, Events]),
    fail: script!(
        "fail",
        [Base, Seq, Schedule, Pending, Active, Dead, Cancelled, Meta, Events, Signal]
    ),
    get: script!("get", [Base]),
    counts: script!(
        "counts",
        [Base, Schedule, Pending, Active, Completed, Dead, Cancelled, Meta]
    ),
});

impl ScriptBook {
    /// The script of a transition, or `None` when wire 4 has none yet.
    pub fn for_transition(&self, transition: Transition) -> Option<&LuaScript> {
        Some(match transition {
            Transition::Enqueue => &self.enqueue,
            Transition::Claim => &self.claim,
            Transition::Complete => &self.complete,
            Transition::Fail => &self.fail,
            Transition::Get => &self.get,
            Transition::Counts => &self.counts,
            _ => return None,
        })
    }

    /// Every script, for the header check.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn all(&self) -> [&LuaScript; 8] {
        [
            &self.enqueue,
            &self.enqueue_bulk,
            &self.claim,
            &self.complete,
            &self.complete_bulk,
            &self.fail,
            &self.get,
            &self.counts,
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
                assert!(script.body.contains(part), "{}.lua lacks {part}", script.name);
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
    fn the_base_key_comes_first() {
        for script in SCRIPTS.all() {
            assert_eq!(script.keys.first(), Some(&Base), "{}", script.name);
        }
    }
}
