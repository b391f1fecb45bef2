//! The script book against the registry of controls: every command has
//! its script and every script its command; each header lists the keys,
//! arguments, refusals and events the registry gives; the protocol's
//! constants reach the Lua only as the book writes them in.

use super::*;
use echomq_protocol::arg::SHARED;
use echomq_protocol::control::JobKey;
use std::collections::BTreeSet;

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

/// The header line starting `-- <label>:` with its continuation lines
/// (`--` followed by more spaces), as one string.
fn header_line(body: &str, label: &str) -> String {
    let mut lines = body.lines().skip_while(|line| !line.starts_with(label));
    let mut out = lines
        .next()
        .unwrap_or_else(|| panic!("no {label} line"))
        .trim_start_matches(label)
        .to_string();
    for line in lines {
        match line.strip_prefix("--   ") {
            Some(more) => {
                out.push(' ');
                out.push_str(more.trim());
            }
            None => break,
        }
    }
    out
}

/// Text with every parenthesised part removed.
fn outside_parentheses(text: &str) -> String {
    let mut depth = 0;
    text.chars()
        .filter(|c| {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => return depth == 0,
            }
            false
        })
        .collect()
}

fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|word| !word.is_empty())
}

fn commands() -> impl Iterator<Item = (Transition, Form, &'static echomq_protocol::Command)> {
    Transition::ALL.iter().flat_map(|t| {
        t.control()
            .commands()
            .map(move |(form, command)| (*t, form, command))
    })
}

#[test]
fn every_command_of_the_registry_has_its_script_file() {
    for (transition, form, command) in commands() {
        assert!(
            script_file(command.script).is_some(),
            "{}: scripts/{}.lua is missing",
            command.native,
            command.script
        );
        assert_eq!(SCRIPTS.get(transition, form).name, command.script);
    }
}

#[test]
fn every_script_file_serves_a_command_of_the_registry() {
    let served: BTreeSet<&str> = commands().map(|(_, _, c)| c.script).collect();
    let files: BTreeSet<&str> = SCRIPT_FILES.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        files, served,
        "a script file no control of the registry names, or the reverse"
    );
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
fn every_header_names_the_arguments_of_the_registry() {
    for (_, form, command) in commands() {
        let body = script_file(command.script).unwrap();
        let listed: Vec<String> = body
            .lines()
            .filter_map(|line| line.strip_prefix("-- ARGV["))
            .filter_map(|rest| {
                let (index, text) = rest.split_once("] ")?;
                index.parse::<usize>().ok()?;
                words(text).next().map(str::to_string)
            })
            .collect();
        let args: Vec<&str> = command.args.iter().map(|a| a.name).collect();
        match form {
            Form::Single => {
                // A single form's head (FLOW.WAIT's id and token, before
                // its groups) comes first.
                let head = command.head.iter().map(|a| a.name);
                let all: Vec<&str> = head.chain(args.iter().copied()).collect();
                assert_eq!(listed, all, "ARGV lines of {}.lua", command.script)
            }
            Form::Bulk => {
                // A bulk form's head (fixed arguments before its groups)
                // has its ARGV[n] lines, as a single form's arguments do.
                let head: Vec<&str> = command.head.iter().map(|a| a.name).collect();
                assert_eq!(listed, head, "ARGV lines of {}.lua", command.script);
                let line = header_line(body, "-- ARGV:");
                let (_, group) = line.split_once("job:").expect("ARGV: … one per job: a, b");
                let group = outside_parentheses(group);
                let listed: Vec<&str> = group.split(',').map(str::trim).collect();
                assert_eq!(listed, args, "ARGV group of {}.lua", command.script);
                let tail = body
                    .lines()
                    .find_map(|line| line.strip_prefix("-- Tail: "))
                    .map(|line| {
                        words(&outside_parentheses(line))
                            .map(str::to_string)
                            .collect::<Vec<_>>()
                    });
                let wanted = command.tail.map(|tail| {
                    let mut words = vec![tail.word.to_string()];
                    words.extend(tail.args.iter().map(|arg| arg.name.to_string()));
                    words
                });
                assert_eq!(tail, wanted, "Tail line of {}.lua", command.script);
            }
        }
    }
}

#[test]
fn every_header_refuses_what_the_registry_says() {
    const CODES: [&str; 9] = [
        "CONFLICT",
        "NOTACTIVE",
        "NOJOB",
        "BADSTATE",
        "NOTPAUSED",
        "TIMELIMIT",
        "SYNTAX",
        "WRONGTYPE",
        "BADARG",
    ];
    for (_, form, command) in commands() {
        let body = script_file(command.script).unwrap();
        let line = outside_parentheses(&header_line(body, "-- Errors:"));
        let mut listed: BTreeSet<String> = BTreeSet::new();
        for item in line.split(',') {
            let mut item_words = words(item);
            match item_words.next() {
                Some("BADARG") => {
                    let names = item.trim().trim_start_matches("BADARG").trim();
                    for name in names.split('|') {
                        listed.insert(format!("BADARG {}", name.trim()));
                    }
                }
                Some(code) if CODES.contains(&code) => {
                    listed.insert(code.to_string());
                }
                other => panic!("{}.lua: unknown refusal {other:?}", command.script),
            }
        }
        let wanted: BTreeSet<String> = command
            .refusals(form)
            .into_iter()
            .map(|(code, _)| code)
            .collect();
        assert_eq!(listed, wanted, "Errors line of {}.lua", command.script);
    }
}

#[test]
fn every_header_writes_the_events_of_the_registry() {
    for (transition, _, command) in commands() {
        let body = script_file(command.script).unwrap();
        let line = outside_parentheses(&header_line(body, "-- Events:"));
        let known: BTreeSet<&str> = Transition::ALL
            .iter()
            .flat_map(|t| t.control().events.iter().copied())
            .collect();
        let listed: BTreeSet<&str> = words(&line).filter(|w| known.contains(w)).collect();
        let wanted: BTreeSet<&str> = transition.control().events.iter().copied().collect();
        assert_eq!(listed, wanted, "Events line of {}.lua", command.script);
    }
}

#[test]
fn the_job_keys_and_channel_of_the_registry_are_what_the_script_touches() {
    for (transition, form, _) in commands() {
        let control = transition.control();
        let source = script_source(transition, form);
        let touches = |what: &str| source.contains(what);
        assert_eq!(
            control.job_keys.contains(&JobKey::Hash),
            touches("job_key("),
            "{transition}: the job hash"
        );
        assert_eq!(
            control.job_keys.contains(&JobKey::Logs),
            touches("logs_key("),
            "{transition}: the job's logs"
        );
        assert_eq!(
            control.job_keys.contains(&JobKey::Metrics),
            touches("record_metrics(") || touches("metrics_windows_kept("),
            "{transition}: the metrics keys"
        );
        assert_eq!(
            control.publishes_cancel,
            touches("':cancel'"),
            "{transition}: the cancel channel"
        );
        assert_eq!(
            control.publishes_outcome,
            touches("publish_outcome(") || touches("publish_removed("),
            "{transition}: the outcome channel"
        );
        assert_eq!(
            control.publishes_outcome,
            source.contains("\n-- Outcome: "),
            "{transition}: the header's Outcome line"
        );
    }
}

#[test]
fn scripts_build_job_keys_as_the_keyspace_does() {
    use echomq_protocol::keyspace::{JOB_INFIX, LOGS_INFIX};
    assert!(PRELUDE.contains(&format!("job_prefix = (base or '') .. '{JOB_INFIX}'")));
    assert!(PRELUDE.contains("return job_prefix .. id"));
    assert!(PRELUDE.contains(&format!("base .. '{LOGS_INFIX}' .. id")));
    let metrics = echomq_protocol::metrics::METRICS_INFIX;
    assert!(PRELUDE.contains(&format!("base .. '{metrics}' .. tail")));
}

#[test]
fn a_script_carries_only_the_helpers_it_uses() {
    let get = script_source(Transition::Get, Form::Single);
    assert!(get.contains("local function id_arg"));
    assert!(get.contains("local function job_key"));
    assert!(!get.contains("local function enqueue_jobs"));
    assert!(!get.contains("local function trim_finished"));
    // Reached through complete_jobs, not named by the body itself.
    let complete = script_source(Transition::Complete, Form::Single);
    assert!(complete.contains("local function trim_finished"));
}

#[test]
fn every_prelude_block_defines_something_once() {
    let mut names: Vec<String> = constant_blocks()
        .into_iter()
        .chain(prelude_helpers())
        .flat_map(|h| h.defines)
        .collect();
    let all = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), all, "a helper or constant is defined twice");
    assert!(names.contains(&"enqueue_jobs".to_string()));
}

#[test]
fn the_epilogue_checks_the_base_key_by_the_queue_name_rule() {
    let name = "[A-Za-z0-9_%.:%-]+";
    assert!(EPILOGUE.contains(&format!("'^({name}):{{({name})}}$'")));
    assert!(EPILOGUE.contains("#base_prefix > MAX_QUEUE_NAME or #base_queue > MAX_QUEUE_NAME"));
    assert!(EPILOGUE.contains("return {err = 'BADARG queue'}"));
    // Every script is sent the epilogue with the constant's value.
    let most = echomq_protocol::name::MAX_QUEUE_NAME;
    let check = format!("#base_prefix > {most} or #base_queue > {most}");
    for script in SCRIPTS.all() {
        assert!(script.source.contains(&check), "{}", script.name);
    }
}

#[test]
fn the_base_key_comes_first() {
    for script in SCRIPTS.all() {
        assert_eq!(
            script.keys.first(),
            Some(&QueueKey::Base),
            "{}",
            script.name
        );
    }
}

/// Lua code with its comments removed (`--` to the end of the line, where
/// not inside a string: the scripts' strings hold no `--`).
fn code_of(lua: &str) -> String {
    lua.lines()
        .map(|line| line.split("--").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every Lua file, by name, with the prelude's files.
fn lua_files() -> Vec<(String, &'static str)> {
    let mut files: Vec<(String, &'static str)> = SCRIPT_FILES
        .iter()
        .map(|(name, lua)| (name.to_string(), *lua))
        .collect();
    for (name, lua) in PRELUDE_FILES {
        files.push((format!("include/{name}"), lua));
    }
    files.push(("include/epilogue".to_string(), EPILOGUE));
    files
}

/// The longest a Lua file may be: past it, a concern wants its own file.
const MOST_LINES_IN_A_LUA_FILE: usize = 400;

#[test]
fn no_lua_file_is_longer_than_the_most_lines() {
    for (file, lua) in lua_files() {
        let lines = lua.lines().count();
        assert!(
            lines <= MOST_LINES_IN_A_LUA_FILE,
            "{file}.lua has {lines} lines: split it by concern"
        );
    }
}

#[test]
fn every_include_file_is_in_the_prelude_list() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/include");
    let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("scripts/include")
        .filter_map(|entry| {
            let name = entry.expect("a directory entry").file_name();
            name.to_str()?.strip_suffix(".lua").map(str::to_string)
        })
        .filter(|name| name != "epilogue")
        .collect();
    let listed: BTreeSet<String> = PRELUDE_FILES
        .iter()
        .map(|(name, _)| name.to_string())
        .collect();
    assert_eq!(
        on_disk, listed,
        "an include file PRELUDE_FILES does not list, or the reverse"
    );
}

/// Lua code with its quoted strings emptied (`'…'` and `"…"`; the
/// scripts' strings hold no escaped quote).
fn without_strings(code: &str) -> String {
    let mut quote = None;
    code.chars()
        .filter(|&c| match quote {
            Some(open) => {
                if c == open {
                    quote = None;
                }
                false
            }
            None => {
                if c == '\'' || c == '"' {
                    quote = Some(c);
                }
                true
            }
        })
        .collect()
}

#[test]
fn every_helper_uses_only_helpers_defined_above_it() {
    // A Lua `local` is seen only below its definition: a helper that named
    // one defined further down the prelude's files would read a global.
    let helpers: Vec<Helper> = constant_blocks()
        .into_iter()
        .chain(prelude_helpers())
        .collect();
    let mut defined_at: HashMap<&str, usize> = HashMap::new();
    for (index, helper) in helpers.iter().enumerate() {
        for name in &helper.defines {
            defined_at.insert(name, index);
        }
    }
    for (index, helper) in helpers.iter().enumerate() {
        let code = without_strings(&code_of(&helper.text));
        for word in words(&code) {
            if let Some(&at) = defined_at.get(word) {
                assert!(
                    at <= index,
                    "{:?} uses {word}, defined below it: list its file earlier in PRELUDE_FILES",
                    helper.defines
                );
            }
        }
    }
}

#[test]
fn the_lua_defines_no_protocol_constant_of_its_own() {
    for (file, lua) in lua_files() {
        for (name, _) in SHARED {
            assert!(
                !code_of(lua).contains(&format!("local {name} ")),
                "{file}.lua defines {name}: it comes from arg.rs"
            );
        }
    }
}

#[test]
fn every_protocol_constant_the_lua_uses_equals_arg_rs() {
    // What each script is sent: arg.rs's value written where the script's
    // code named a constant, and no name or `local` of one left.
    for script in SCRIPTS.all() {
        let sent = without_strings(&code_of(&script.source));
        for (name, value) in SHARED {
            assert!(
                !words(&sent).any(|w| w == *name),
                "{} still names {name}",
                script.name
            );
            assert!(
                !script.source.contains(&format!("local {name} ")),
                "{} defines {name}",
                script.name
            );
            for line in script.body.lines() {
                let code = line.split("--").next().unwrap_or("");
                if words(&without_strings(code)).any(|w| w == *name) {
                    let written = line.replace(name, &value.to_string());
                    assert!(
                        script.source.contains(&written),
                        "{}: `{line}` is not sent as `{written}`",
                        script.name
                    );
                }
            }
        }
    }
    // And every constant is used somewhere: a constant no script reads
    // belongs in arg.rs only if the module uses it.
    let all: String = lua_files().iter().map(|(_, lua)| code_of(lua)).collect();
    for name in [
        "MAX_INT",
        "PENDING_BAND",
        "DEFAULT_MAX_ATTEMPTS",
        "PROMOTE_PER_CLAIM",
    ] {
        assert!(words(&all).any(|w| w == name), "{name} unused");
    }
}

#[test]
fn a_shared_constant_reaches_a_script_as_its_literal() {
    // enqueue.lua bounds the priority by MAX_PRIORITY: the script sent
    // holds the same line with 255, and no `local MAX_PRIORITY`.
    let enqueue = SCRIPTS.get(Transition::Enqueue, Form::Single);
    let line = enqueue
        .body
        .lines()
        .find(|line| line.contains("0, MAX_PRIORITY)"))
        .expect("enqueue.lua bounds the priority by MAX_PRIORITY");
    let max_priority = echomq_protocol::arg::MAX_PRIORITY;
    let written = line.replace("MAX_PRIORITY", &max_priority.to_string());
    assert!(written.contains(", 0, 255)"), "{written}");
    assert!(enqueue.source.contains(&written), "{}", enqueue.source);
    assert!(!enqueue.source.contains("MAX_PRIORITY"));
    assert!(!library::LIBRARY.source.contains("local MAX_PRIORITY"));
}

#[test]
fn a_constant_in_a_string_or_a_comment_is_left_as_it_is() {
    let literals = HashMap::from([
        ("LIMIT".to_string(), "64".to_string()),
        ("BIG".to_string(), "9007199254740991".to_string()),
    ]);
    let lua = "-- LIMIT in a comment\n\
               --[[ LIMIT in a long comment ]] local a = LIMIT\n\
               --[==[ LIMIT ]] LIMIT ]==] local b = {LIMIT = LIMIT}\n\
               local c = 'LIMIT' .. \"it's LIMIT\" .. 'a \\' LIMIT' .. [[LIMIT]] .. [=[ ]] LIMIT ]=]\n\
               local d = t.LIMIT + t:LIMIT() + LIMIT_2 + xLIMIT + 1e5 + BIG..'x' .. BIG * -LIMIT\n";
    let expected = "-- LIMIT in a comment\n\
               --[[ LIMIT in a long comment ]] local a = 64\n\
               --[==[ LIMIT ]] LIMIT ]==] local b = {LIMIT = 64}\n\
               local c = 'LIMIT' .. \"it's LIMIT\" .. 'a \\' LIMIT' .. [[LIMIT]] .. [=[ ]] LIMIT ]=]\n\
               local d = t.LIMIT + t:LIMIT() + LIMIT_2 + xLIMIT + 1e5 + 9007199254740991 ..'x' .. 9007199254740991 * -64\n";
    assert_eq!(literals::with_literals(lua, &literals), expected);
}

#[test]
fn the_prelude_constants_of_one_literal_reach_the_scripts_as_literals() {
    // Its own constants cost the library no local either: `UNGROUPED` is
    // written as '{}', `MS_PER_S` as 1000; a block of more, or of state
    // (`local base`), stays a local.
    let constants: HashMap<String, String> = prelude_helpers()
        .iter()
        .filter_map(literal_constant)
        .collect();
    for (name, literal) in [("MS_PER_S", "1000"), ("UNGROUPED", "'{}'")] {
        assert_eq!(constants.get(name).map(String::as_str), Some(literal));
    }
    assert!(!constants.contains_key("base"));
    assert!(!constants.contains_key("METRICS_OUTCOMES"));
    let library = &library::LIBRARY.source;
    for name in constants.keys() {
        for source in SCRIPTS
            .all()
            .map(|s| s.source.as_str())
            .chain([library.as_str()])
        {
            let code = without_strings(&code_of(source));
            assert!(!words(&code).any(|w| w == name), "{name} is still named");
        }
    }
    let claim = script_source(Transition::Claim, Form::Single);
    assert!(claim.contains("lane ~= '{}' then"));
}

/// The Lua's own constants, which are not the protocol's: the clock's unit,
/// the size of the argument chunks of a long `redis.call`, where the
/// rate limit's fields start in the settings' `HMGET`, and the server's
/// default longest listpack member.
const LUA_LOCAL_CONSTANTS: [&str; 5] = [
    "MS_PER_S",
    "UNPACK_CHUNK",
    "METRICS_FIELDS_AT",
    "LIMIT_FIELDS_AT",
    "LISTPACK_VALUE_MAX",
];

#[test]
fn no_number_of_arg_rs_is_copied_into_the_lua() {
    // Numbers of 10 and more appear only as the definition of a Lua-local
    // constant (`local MS_PER_S = 1000`); the protocol's come generated.
    for (file, lua) in lua_files() {
        for line in code_of(lua).lines() {
            // Indices of KEYS and ARGV are positions, not quantities.
            let line = &strip_indices(line);
            let local_constant = line.starts_with("local ")
                && words(line)
                    .nth(1)
                    .is_some_and(|w| LUA_LOCAL_CONSTANTS.contains(&w));
            for word in words(line) {
                let big = word.parse::<u64>().is_ok_and(|n| n >= 10);
                assert!(
                    !big || local_constant,
                    "{file}.lua: the number {word} in `{}`: name it (arg.rs's SHARED, or a Lua-local constant)",
                    line.trim()
                );
            }
        }
    }
}

/// `line` with every `KEYS[n]` and `ARGV[n]` index taken out.
fn strip_indices(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find("KEYS[").or_else(|| rest.find("ARGV[")) {
        let (before, after) = rest.split_at(at + 5);
        out.push_str(before);
        rest = after.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

#[test]
fn no_script_indexes_keys() {
    // A body names its fixed keys (`pending_key`); the book generates the
    // `KEYS[n]` of each from the registry. The include files take keys as
    // arguments (`k.pending`), the epilogue `base_key`.
    for (file, lua) in lua_files() {
        assert!(
            !code_of(lua).contains("KEYS["),
            "{file}.lua indexes KEYS: name the key (`<key>_key`, from the registry)"
        );
    }
}

/// The names the book may generate for a fixed key: `<key>_key` of every
/// key of the registry.
fn key_local_names() -> BTreeSet<String> {
    QueueKey::ALL.into_iter().map(key_local).collect()
}

#[test]
fn a_body_names_only_the_keys_its_control_passes() {
    let known = key_local_names();
    for script in SCRIPTS.all() {
        let given: BTreeSet<String> = script.keys.iter().copied().map(key_local).collect();
        let code = code_of(&format!("{}\n{EPILOGUE}", script.body));
        for word in words(&code).filter(|word| known.contains(*word)) {
            assert!(
                given.contains(word),
                "{}.lua names {word}: its control's keys in the registry do not list it",
                script.name
            );
        }
    }
}

#[test]
fn no_helper_reads_a_key_local() {
    // A helper defined above every script would read a global: it takes
    // the keys it needs as arguments.
    let known = key_local_names();
    for helper in prelude_helpers() {
        let code = without_strings(&code_of(&helper.text));
        for word in words(&code) {
            assert!(
                !known.contains(word),
                "{:?} reads {word}: pass it the key",
                helper.defines
            );
        }
    }
}

#[test]
fn every_key_local_is_generated_from_the_registry_and_only_if_named() {
    // GET names only the base key; ENQUEUE the ones its `k` lists, from
    // their places in the registry's list (dedup at 9, schedule at 5).
    let get = script_source(Transition::Get, Form::Single);
    assert!(get.contains("\nlocal base_key = KEYS[1]\n"));
    assert!(!get.contains("meta_key"));
    let enqueue = SCRIPTS.get(Transition::Enqueue, Form::Single);
    let keys = Transition::Enqueue.control().keys;
    assert_eq!(keys[4], QueueKey::Schedule);
    assert_eq!(keys[8], QueueKey::Dedup);
    assert!(
        enqueue
            .key_locals
            .starts_with("local base_key, id_key, seq_key, pending_key, schedule_key,")
    );
    assert!(
        enqueue
            .key_locals
            .contains("= KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5],")
    );
    assert!(enqueue.source.contains(&enqueue.key_locals));
    assert!(
        LIBRARY
            .source
            .contains(&format!("KEYS, ARGV = keys, args\n{}", enqueue.key_locals))
    );
    // Each script gets one line, with a local for each key it names.
    for script in SCRIPTS.all() {
        let code = format!("{}\n{EPILOGUE}", script.body);
        for (index, key) in script.keys.iter().enumerate() {
            let name = key_local(*key);
            let named = words(&code).any(|word| word == name);
            let generated = script
                .key_locals
                .trim_start_matches("local ")
                .split(" = ")
                .next()
                .unwrap_or("")
                .split(", ")
                .position(|local| local == name);
            assert_eq!(named, generated.is_some(), "{} and {name}", script.name);
            if let Some(at) = generated {
                let values: Vec<&str> = script
                    .key_locals
                    .trim_end()
                    .split(" = ")
                    .nth(1)
                    .unwrap()
                    .split(", ")
                    .collect();
                assert_eq!(
                    values[at],
                    format!("KEYS[{}]", index + 1),
                    "{} and {name}",
                    script.name
                );
            }
        }
    }
}

#[test]
fn no_helper_is_named_as_a_key_local() {
    let known = key_local_names();
    for helper in prelude_helpers() {
        for name in &helper.defines {
            assert!(
                !known.contains(name),
                "the helper {name} shadows a key's local"
            );
        }
    }
}

/// Lua 5.1's `LUAI_MAXVARS`: the most locals one function, the library's
/// top level included, may hold.
const LUA_MOST_LOCALS: usize = 200;

/// The locals of the library's top level: each `local` line before the
/// first function's registration, a name each.
fn library_top_level_locals() -> usize {
    let source = &library::LIBRARY.source;
    let top = &source[..source.find("redis.register_function").unwrap()];
    top.lines()
        .filter_map(|line| line.strip_prefix("local "))
        .map(|rest| match rest.strip_prefix("function ") {
            Some(_) => 1,
            None => rest.split('=').next().unwrap().split(',').count(),
        })
        .sum()
}

#[test]
fn the_library_top_level_holds_no_more_locals_than_lua_allows() {
    // Past the limit `FUNCTION LOAD` refuses the library ("too many local
    // variables") and every client falls back to `EVALSHA`, slower and
    // silent: each constant and helper of the prelude is one local.
    let locals = library_top_level_locals();
    assert!(
        locals <= LUA_MOST_LOCALS,
        "the library's top level holds {locals} locals, over Lua 5.1's {LUA_MOST_LOCALS}: \
         fold helpers, or a concern's helpers into one table"
    );
}

/// The locals the library's top level keeps free for helpers to come.
const LOCALS_HEADROOM: usize = 40;

#[test]
fn the_library_top_level_leaves_room_for_more_helpers() {
    // The shared constants are literals, not locals, so the helpers of the
    // features to come have room under Lua's limit.
    let locals = library_top_level_locals();
    assert!(
        locals + LOCALS_HEADROOM <= LUA_MOST_LOCALS,
        "the library's top level holds {locals} locals: fewer than {LOCALS_HEADROOM} \
         of Lua 5.1's {LUA_MOST_LOCALS} are left"
    );
}
