//! Bad input never hurts the server: tens of thousands of malformed
//! argument lists against every command `EMQ.VERSION` lists, each answered
//! with an error reply, none writing a byte (the whole keyspace's
//! `DEBUG DIGEST` is the same before and after each batch), the server
//! answering `PING` between batches and at the end.
//!
//! Each list is malformed by construction (tests/module/common/grammar.rs): a
//! missing argument, a non-number, a sign, a float, a number past 2^53-1 or
//! past i64/u64, an empty string, a bad id (whitespace, braces, control
//! characters, 257+ bytes), an unknown option or one without its value,
//! two options that exclude each other, or no base key at all; on a queue
//! whose jobs are in every state, on a queue whose every key holds the
//! wrong type, on absent and odd base keys. Arguments are checked before any key is read, so these
//! answer `BADARG`/`SYNTAX` whatever the keyspace holds. Well-formed
//! commands on a queue whose every key holds the wrong type must be
//! refused too, and any command on a base key that breaks the rule
//! `<prefix>:{<queue>}` answers `BADARG queue`, well-formed or not.
//!
//! A second part sends well-formed commands to a queue with one or two keys
//! of the wrong type, one at a time: a refused command must leave the
//! keyspace as it was (no half transition). `EMQ_FUZZ_SEED` replays a run,
//! `EMQ_FUZZ_CASES` sets the number of malformed lists (default 24000).

use crate::common::grammar::{self, Call, Defect, Grammar, break_call, valid_call};
use crate::common::resp::{RawConn, Reply};
use crate::common::{self, binary, count};
use echomq_protocol::QueueKey;
use echomq_server::{ServerConfig, ServerProcess};
use echomq_testkit::module_path;
use fastrand::Rng;
use std::collections::BTreeMap;
use std::sync::LazyLock;
use std::time::Instant;

/// The queue with jobs in every state.
const FULL: &str = "emq:{fz}";
/// The queue whose every key holds the wrong type.
const POISONED: &str = "emq:{px}";
/// Ids of FULL's jobs (a1–a6 claimed, finished and pending; s1, s2
/// scheduled) and of POISONED's (string job keys).
const FULL_IDS: [&[u8]; 9] = [
    b"a1", b"a2", b"a3", b"a4", b"a5", b"a6", b"s1", b"s2", b"zz",
];
const POISONED_IDS: [&[u8]; 3] = [b"p1", b"p2", b"p3"];
/// Base keys other than the two queues'.
const ODD_BASES: [&[u8]; 6] = [b"emq:{none}", b"", b"x", b"emq:{a b}", b"{", b"emq:{\xff}"];

/// Malformed lists per pipeline.
const BATCH: usize = 500;

/// One server with the module and `DEBUG` enabled, in its own directory.
struct Server {
    process: ServerProcess,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("emq-bad-input-")
            .tempdir()
            .unwrap();
        let config = ServerConfig {
            dir: dir.path().to_path_buf(),
            port: 0,
            appendonly: false,
            modules: vec![module_path()],
            preload: None,
            extra_args: vec!["--enable-debug-command".into(), "yes".into()],
        };
        let process = ServerProcess::spawn(&binary(), &config)
            .unwrap_or_else(|e| panic!("starting the server: {e}"));
        Self { process, _dir: dir }
    }
}

fn cmd(args: &[&[u8]]) -> redis::Cmd {
    let mut cmd = redis::cmd(std::str::from_utf8(args[0]).unwrap());
    for arg in &args[1..] {
        cmd.arg(*arg);
    }
    cmd
}

fn digest(conn: &mut RawConn) -> Reply {
    conn.call(&cmd(&[b"DEBUG", b"DIGEST"]))
}

/// What a case must answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// `BADARG …` or `SYNTAX …`.
    Malformed,
    /// The server's arity error.
    Arity,
    /// `BADARG queue`: a base key that breaks the rule, whatever follows.
    BadBase,
    /// Any error (a well-formed command on keys of the wrong type).
    Refused,
}

/// One case: what is sent and what must come back.
struct Case {
    cmd: redis::Cmd,
    shown: String,
    expect: Expect,
    command: &'static str,
}

impl Case {
    fn of(call: &Call, expect: Expect, defects: Vec<Defect>) -> Self {
        let cmd = if call.command == "EMQ.VERSION" {
            // The one command without a base key: its "base" is an argument.
            let mut cmd = redis::cmd(call.command);
            if !call.base.is_empty() || !call.argv().is_empty() {
                cmd.arg(call.base.as_slice());
            }
            for arg in call.argv() {
                cmd.arg(arg);
            }
            cmd
        } else {
            call.native()
        };
        // A malformed call shows what was broken in it.
        let shown = if defects.is_empty() {
            call.show()
        } else {
            format!("{} (broken: {defects:?})", call.show())
        };
        Self {
            cmd,
            shown,
            expect,
            command: call.command,
        }
    }

    /// Whether `reply` is what the case must answer.
    fn answered(&self, reply: &Reply) -> bool {
        let Reply::Error(line) = reply else {
            return false;
        };
        match self.expect {
            Expect::Malformed => line.starts_with(b"BADARG ") || line.starts_with(b"SYNTAX "),
            Expect::Arity => line.starts_with(b"ERR wrong number of arguments"),
            Expect::BadBase => line == b"BADARG queue",
            Expect::Refused => true,
        }
    }
}

/// The keys of `base` set to the wrong type: each fixed key, and `ids`'
/// job hashes (strings) and logs (hashes).
fn poison(base: &str, keys: &[&str], ids: &[&[u8]]) -> Vec<redis::Cmd> {
    let mut cmds = Vec::new();
    for key in keys {
        let full = format!("{base}:{key}");
        cmds.push(cmd(&[b"DEL", full.as_bytes()]));
        cmds.push(match *key {
            // A string key gets a hash, a hash or a zset or a stream a string.
            "id" | "seq" => cmd(&[b"HSET", full.as_bytes(), b"f", b"v"]),
            "signal" => cmd(&[b"RPUSH", full.as_bytes(), b"wake"]),
            _ => cmd(&[b"SET", full.as_bytes(), b"wrong"]),
        });
    }
    for id in ids {
        let job = [base.as_bytes(), b":job:", id].concat();
        let logs = [base.as_bytes(), b":logs:", id].concat();
        cmds.push(cmd(&[b"DEL", &job, &logs]));
        cmds.push(cmd(&[b"SET", &job, b"not a hash"]));
        cmds.push(cmd(&[b"HSET", &logs, b"not", b"a list"]));
    }
    cmds
}

/// Every fixed key of a queue (the registry's, base aside), then the
/// lanes and hashes of the groups the grammar draws (`g0`…`g3`).
static FIXED_KEYS: LazyLock<Vec<String>> = LazyLock::new(|| {
    QueueKey::ALL[1..]
        .iter()
        .map(|key| key.name().to_string())
        .chain((0..4).flat_map(|g| [format!("glane:g{g}"), format!("group:g{g}")]))
        .collect()
});

/// A fresh keyspace: FULL with jobs in every state, POISONED all wrong, and
/// `broken` (a few keys of FULL, or none) set to the wrong type.
fn fixture(conn: &mut RawConn, served: &[&str], broken: &[&str], broken_ids: &[&[u8]]) {
    let serves = |name: &str| served.contains(&name);
    let mut cmds = vec![cmd(&[b"FLUSHALL"])];
    let full = FULL.as_bytes();
    for (n, id) in FULL_IDS[..6].iter().enumerate() {
        let priority = (n % 3).to_string();
        cmds.push(cmd(&[
            b"EMQ.ENQUEUE",
            full,
            id,
            b"{}",
            b"PRIORITY",
            priority.as_bytes(),
        ]));
    }
    cmds.push(cmd(&[b"EMQ.SCHEDULE", full, b"s1", b"{}", b"+600000"]));
    cmds.push(cmd(&[b"EMQ.SCHEDULE", full, b"s2", b"{}", b"+1200000"]));
    // a1, a4 (priority 0) and a2 (1) claimed; then a1 completed with its
    // token, a2 dead, a3 cancelled: a4 active, a5 and a6 pending.
    cmds.push(cmd(&[b"EMQ.CLAIM", full, b"w", b"3600000", b"COUNT", b"3"]));
    let replies = conn.pipeline(&cmds);
    for (reply, sent) in replies.iter().zip(&cmds) {
        assert!(!reply.is_error(), "fixture: {sent:?} answered {reply:?}");
    }
    let token = claimed_tokens(replies.last().expect("the claim's reply"));
    let (a1, a2) = (&token[&b"a1"[..]], &token[&b"a2"[..]]);
    let mut cmds = vec![
        cmd(&[b"EMQ.COMPLETE", full, b"a1", a1, b"RESULT", b"r"]),
        cmd(&[b"EMQ.FAIL", full, b"a2", a2, b"boom", b"DEAD"]),
        cmd(&[b"EMQ.CANCEL", full, b"a3"]),
    ];
    // a5 claimed under a 1 ms lease (stalled once the fixture is built),
    // then s2 made due: STALLED.CHECK and a promotion have jobs to walk.
    cmds.push(cmd(&[b"EMQ.CLAIM", full, b"w", b"1", b"COUNT", b"1"]));
    cmds.push(cmd(&[b"EMQ.RESCHEDULE", full, b"s2", b"1000"]));
    if serves("EMQ.LOG") {
        cmds.push(cmd(&[b"EMQ.LOG", full, b"a5", b"a line"]));
    } else {
        cmds.push(cmd(&[
            b"RPUSH",
            format!("{FULL}:logs:a5").as_bytes(),
            b"a line",
        ]));
    }
    cmds.push(cmd(&[
        b"HSET",
        format!("{FULL}:repeat").as_bytes(),
        b"k",
        b"v",
    ]));
    let fixed: Vec<&str> = FIXED_KEYS.iter().map(String::as_str).collect();
    cmds.extend(poison(POISONED, &fixed, &POISONED_IDS));
    cmds.extend(poison(FULL, broken, broken_ids));
    for (reply, sent) in conn.pipeline(&cmds).iter().zip(&cmds) {
        assert!(!reply.is_error(), "fixture: {sent:?} answered {reply:?}");
    }
    // a5's 1 ms lease is over.
    common::wait_for_clock(common::host_ms() + 2);
}

/// Each claimed job's token, by id, from a CLAIM's reply.
fn claimed_tokens(reply: &Reply) -> std::collections::HashMap<Vec<u8>, Vec<u8>> {
    let Reply::Array(Some(entries)) = reply else {
        panic!("a claim's reply: {reply:?}");
    };
    entries
        .iter()
        .filter_map(|entry| match entry {
            Reply::Array(Some(fields)) => match &fields[..2] {
                [Reply::Bulk(Some(id)), Reply::Int(token)] => {
                    Some((id.clone(), token.to_string().into_bytes()))
                }
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// The served commands, as `EMQ.VERSION` lists them, with their grammars.
fn served(conn: &mut RawConn) -> Vec<&'static Grammar> {
    let Reply::Array(Some(parts)) = conn.call(&redis::cmd("EMQ.VERSION")) else {
        panic!("EMQ.VERSION did not answer an array");
    };
    let Some(Reply::Array(Some(names))) = parts.get(1) else {
        panic!("EMQ.VERSION: no list of names: {parts:?}");
    };
    names
        .iter()
        .map(|name| {
            let Reply::Bulk(Some(name)) = name else {
                panic!("EMQ.VERSION: a name that is not a string: {name:?}");
            };
            let name = String::from_utf8_lossy(name).to_ascii_uppercase();
            grammar::grammar(&name).unwrap_or_else(|| {
                panic!("{name} has no grammar: describe its arguments in tests/module/common/grammar.rs")
            })
        })
        .collect()
}

/// A malformed case of `g`: its kind drawn from the seed.
fn malformed_case(rng: &mut Rng, g: &'static Grammar) -> Case {
    let keyless = !g.keyed();
    let roll = rng.u32(..100);
    if roll < 8 && !keyless {
        // No base key at all.
        return Case {
            cmd: redis::cmd(g.command),
            shown: g.command.to_string(),
            expect: Expect::Arity,
            command: g.command,
        };
    }
    if roll < 20 && !keyless {
        // Well-formed, on the queue whose every key holds the wrong type.
        let call = valid_call(rng, g, POISONED.as_bytes(), &POISONED_IDS);
        return Case::of(&call, Expect::Refused, Vec::new());
    }
    if roll < 30 && !keyless {
        // A base key that breaks the rule: checked first, so the rest,
        // well-formed or broken, does not matter.
        let base = grammar::bad_base(rng);
        let mut call = valid_call(rng, g, &base, &FULL_IDS);
        let defects = if rng.bool() {
            break_call(rng, g, &mut call)
        } else {
            Vec::new()
        };
        return Case::of(&call, Expect::BadBase, defects);
    }
    let base: &[u8] = match rng.u32(..20) {
        0..12 => FULL.as_bytes(),
        12..17 => POISONED.as_bytes(),
        _ => ODD_BASES[rng.usize(..ODD_BASES.len())],
    };
    let ids: &[&[u8]] = if base == POISONED.as_bytes() {
        &POISONED_IDS
    } else {
        &FULL_IDS
    };
    let mut call = valid_call(rng, g, base, ids);
    if keyless {
        call.base.clear();
    }
    let defects = break_call(rng, g, &mut call);
    Case::of(&call, Expect::Malformed, defects)
}

#[test]
fn malformed_arguments_are_refused_and_write_nothing() {
    let seed = common::seed("EMQ_FUZZ_SEED");
    let cases = count("EMQ_FUZZ_CASES", 24_000);
    let mut rng = Rng::with_seed(seed);
    let started = Instant::now();
    let server = Server::start();
    let mut conn = RawConn::open(server.process.port());
    let grammars = served(&mut conn);
    let names: Vec<&str> = grammars.iter().map(|g| g.command).collect();
    fixture(&mut conn, &names, &[], &[]);
    let before = digest(&mut conn);
    assert!(
        matches!(before, Reply::Status(_)),
        "DEBUG DIGEST: {before:?}"
    );

    let mut tally: BTreeMap<(&str, String), usize> = BTreeMap::new();
    let mut sent = 0;
    while sent < cases {
        let batch: Vec<Case> = (0..BATCH.min(cases - sent))
            .map(|_| {
                let g = grammars[rng.usize(..grammars.len())];
                malformed_case(&mut rng, g)
            })
            .collect();
        sent += batch.len();
        let mut cmds: Vec<redis::Cmd> = batch.iter().map(|case| case.cmd.clone()).collect();
        cmds.push(redis::cmd("PING"));
        cmds.push(cmd(&[b"DEBUG", b"DIGEST"]));
        let mut replies = conn.pipeline(&cmds);
        let after = replies.pop().unwrap();
        let pong = replies.pop().unwrap();
        for (case, reply) in batch.iter().zip(&replies) {
            assert!(
                case.answered(reply),
                "seed {seed}: {} must answer {:?}, answered {}",
                case.shown,
                case.expect,
                show(reply)
            );
            *tally
                .entry((case.command, reply.code().unwrap_or_default()))
                .or_default() += 1;
        }
        assert_eq!(pong, Reply::Status(b"PONG".to_vec()), "seed {seed}: PING");
        if after != before {
            let culprit = find_writer(&mut conn, &names, &batch);
            panic!("seed {seed}: a refused command wrote to the keyspace: {culprit}");
        }
    }
    assert_eq!(
        conn.call(&redis::cmd("PING")),
        Reply::Status(b"PONG".to_vec())
    );
    eprintln!(
        "{sent} malformed lists over {} commands in {:.1}s; error codes per command:",
        grammars.len(),
        started.elapsed().as_secs_f64()
    );
    print_tally(&tally);
}

#[test]
fn a_refused_command_on_keys_of_the_wrong_type_leaves_no_half_transition() {
    let seed = common::seed("EMQ_FUZZ_SEED");
    let cases = count("EMQ_FUZZ_CASES", 24_000) / 6;
    let mut rng = Rng::with_seed(seed ^ 0x5eed);
    let started = Instant::now();
    let server = Server::start();
    let mut conn = RawConn::open(server.process.port());
    let grammars: Vec<&'static Grammar> = served(&mut conn)
        .into_iter()
        .filter(|g| g.keyed())
        .collect();
    let names: Vec<&str> = grammars.iter().map(|g| g.command).collect();
    let mut tally: BTreeMap<(&str, String), usize> = BTreeMap::new();
    let mut done = 0;
    let mut broken: Vec<&str> = Vec::new();
    let mut broken_ids: Vec<&[u8]> = Vec::new();
    let mut before = Reply::Bulk(None);
    while done < cases {
        if done % 150 == 0 {
            // A fresh queue with one or two keys of the wrong type.
            broken.clear();
            broken_ids.clear();
            for _ in 0..1 + rng.usize(..2) {
                if rng.u32(..3) == 0 {
                    broken_ids.push(FULL_IDS[rng.usize(..8)]);
                } else {
                    broken.push(FIXED_KEYS[rng.usize(..FIXED_KEYS.len())].as_str());
                }
            }
            fixture(&mut conn, &names, &broken, &broken_ids);
            before = digest(&mut conn);
        }
        done += 1;
        let g = grammars[rng.usize(..grammars.len())];
        let mut call = valid_call(&mut rng, g, FULL.as_bytes(), &FULL_IDS);
        let malformed = rng.u32(..10) == 0;
        let defects = if malformed {
            break_call(&mut rng, g, &mut call)
        } else {
            Vec::new()
        };
        let case = Case::of(&call, Expect::Malformed, defects);
        let mut replies = conn.pipeline(&[call.native(), cmd(&[b"DEBUG", b"DIGEST"])]);
        let after = replies.pop().unwrap();
        let reply = replies.pop().unwrap();
        let context = || {
            format!(
                "seed {seed}: {} (keys of the wrong type: {broken:?}, jobs {:?})",
                call.show(),
                broken_ids
                    .iter()
                    .map(|id| grammar::quote(id))
                    .collect::<Vec<_>>()
            )
        };
        if malformed {
            assert!(
                case.answered(&reply),
                "{} must answer BADARG or SYNTAX, answered {}",
                context(),
                show(&reply)
            );
        }
        if reply.is_error() {
            assert_eq!(
                after,
                before,
                "{}: refused ({}) but wrote to the keyspace",
                context(),
                show(&reply)
            );
        }
        before = after;
        *tally
            .entry((g.command, reply.code().unwrap_or_else(|| "ok".into())))
            .or_default() += 1;
    }
    assert_eq!(
        conn.call(&redis::cmd("PING")),
        Reply::Status(b"PONG".to_vec())
    );
    eprintln!(
        "{done} commands on keys of the wrong type in {:.1}s; outcomes per command:",
        started.elapsed().as_secs_f64()
    );
    print_tally(&tally);
}

/// Replays a batch that changed the keyspace one command at a time on a
/// fresh fixture; names the first command that wrote.
fn find_writer(conn: &mut RawConn, names: &[&str], batch: &[Case]) -> String {
    fixture(conn, names, &[], &[]);
    let mut before = digest(conn);
    for case in batch {
        let mut replies = conn.pipeline(&[case.cmd.clone(), cmd(&[b"DEBUG", b"DIGEST"])]);
        let after = replies.pop().unwrap();
        if after != before {
            return format!("{} answered {}", case.shown, show(&replies[0]));
        }
        before = after;
    }
    "no single command of the batch writes when replayed alone".into()
}

fn show(reply: &Reply) -> String {
    match reply {
        Reply::Error(line) => format!("-{}", grammar::escape(line)),
        Reply::Status(line) => format!("+{}", grammar::escape(line)),
        other => format!("{other:?}"),
    }
}

fn print_tally(tally: &BTreeMap<(&str, String), usize>) {
    let mut by_command: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for ((command, code), n) in tally {
        by_command
            .entry(command)
            .or_default()
            .push(format!("{code} {n}"));
    }
    for (command, codes) in by_command {
        eprintln!("  {command:20} {}", codes.join(", "));
    }
}
