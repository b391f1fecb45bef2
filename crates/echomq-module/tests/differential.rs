//! Both wires are one protocol: the same seeded random walk of thousands of
//! transitions runs through the Lua scripts (wire 4) on one server and
//! through the module's `EMQ.*` commands (wire 6) on another, and every
//! reply, every key with its whole content, and every id published on the
//! cancel channels must be the same, timestamps and stream ids aside
//! (docs/protocol.md: "identical up to timestamps and stream ids").
//!
//! The walk (tests/common/walk.rs) draws every verb (and the bulk forms the
//! module serves), on jobs in the states it takes and on wrong ones (stale
//! tokens, absent ids, wrong states, malformed arguments, keys of the wrong
//! type). Wire 4 is driven without the client (the script files run by
//! `EVALSHA`) and both wires are read byte for byte, so a reply that differs
//! in one byte shows. `EMQ_DIFF_SEED` replays a walk, `EMQ_DIFF_STEPS` sets
//! its length (default 4000). No mismatch is tolerated: the ones this walk
//! found (error replies quoting non-ASCII bytes, times past 2^53, extra
//! arguments to GET/COUNTS, job keys of the wrong type met after a first
//! write) were fixed on both wires.

mod common;

use common::grammar::{GRAMMARS, quote};
use common::resp::{RawConn, Reply};
use common::walk::{self, QUEUES, Step, Walker};
use common::{Clock, assert_same_dump, binary, dump, host_ms, server_ms, wait_for_clock};
use echomq_testkit::{TestServer, module_path};
use redis::aio::MultiplexedConnection;
use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

/// Steps between two whole-keyspace comparisons.
const CHECK_EVERY: usize = 500;
/// Steps shown before a failing one.
const HISTORY: usize = 12;

/// Wire 4 without the client's dispatch: each script as the client sends
/// it (`echomq::script_source`), loaded once, run by `EVALSHA` with the
/// keys the registry lists.
struct Scripts {
    by_command: HashMap<&'static str, (String, Vec<String>)>,
}

impl Scripts {
    async fn load(conn: &mut MultiplexedConnection) -> Self {
        let mut by_command = HashMap::new();
        for g in GRAMMARS.iter() {
            let Some((transition, form)) = g.control else {
                continue;
            };
            let keys: Vec<String> = transition
                .control()
                .keys
                .iter()
                .map(|key| key.name().to_string())
                .collect();
            let sha: String = redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(echomq::script_source(transition, form))
                .query_async(conn)
                .await
                .unwrap_or_else(|e| panic!("SCRIPT LOAD of {}: {e}", g.command));
            by_command.insert(g.command, (sha, keys));
        }
        Self { by_command }
    }

    /// `EVALSHA sha numkeys keys… argv…` for `call`.
    fn command(&self, call: &common::grammar::Call) -> redis::Cmd {
        let (sha, keys) = &self.by_command[call.command];
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(sha).arg(keys.len());
        for key in keys {
            if key == "base" {
                cmd.arg(call.base.as_slice());
            } else {
                cmd.arg([call.base.as_slice(), b":", key.as_bytes()].concat());
            }
        }
        for arg in call.argv() {
            cmd.arg(arg);
        }
        cmd
    }
}

/// A connection subscribed (`SSUBSCRIBE`) to every queue's cancel
/// channel; read once the walk is over.
struct Subscriber(RawConn);

impl Subscriber {
    fn open(port: u16) -> Self {
        let mut conn = RawConn::open(port);
        for base in QUEUES {
            let mut cmd = redis::cmd("SSUBSCRIBE");
            cmd.arg(format!("{base}:cancel"));
            let reply = conn.call(&cmd);
            assert!(
                matches!(&reply, Reply::Array(Some(items)) if items.len() == 3),
                "SSUBSCRIBE: {reply:?}"
            );
        }
        Self(conn)
    }

    /// Every `channel id` published, in order, until `sentinel` arrives.
    fn until(&mut self, sentinel: &[u8]) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let Reply::Array(Some(items)) = self.0.read() else {
                continue;
            };
            if let [
                Reply::Bulk(Some(kind)),
                Reply::Bulk(Some(channel)),
                Reply::Bulk(Some(id)),
            ] = items.as_slice()
                && kind == b"smessage"
            {
                if id == sentinel {
                    return seen;
                }
                seen.push(format!("{} {}", quote(channel), quote(id)));
            }
        }
    }
}

/// One side of the comparison.
struct Side {
    /// For the walk's commands, byte-exact.
    raw: RawConn,
    /// For reads: the walk's view, dumps.
    conn: MultiplexedConnection,
    clock: Clock,
}

impl Side {
    async fn new(server: &TestServer) -> Self {
        let mut conn = server.connection().await;
        let clock = Clock::new(server_ms(&mut conn).await);
        Self {
            raw: RawConn::open(server.port()),
            conn,
            clock,
        }
    }

    async fn check_invariant(&mut self, wire: &str, context: &str) {
        for base in QUEUES {
            if let Err(problems) = common::check_invariant(&mut self.conn, base).await {
                panic!("{context}: the state invariant broke on {wire} for {base}:\n{problems}");
            }
        }
    }
}

#[derive(Default)]
struct Tally {
    ok: usize,
    refused: BTreeMap<String, usize>,
}

#[tokio::test]
async fn both_wires_walk_the_same_keyspace() {
    let seed = common::seed("EMQ_DIFF_SEED");
    let steps = common::count("EMQ_DIFF_STEPS", 4000);
    let started = Instant::now();
    let script_server = TestServer::with_config(binary(), false, Vec::new());
    let native_server = TestServer::with_config(binary(), false, vec![module_path()]);
    let mut script = Side::new(&script_server).await;
    let mut native = Side::new(&native_server).await;
    let scripts = Scripts::load(&mut script.conn).await;

    // Every command of the registry must be served: the walk draws them all.
    let (_, served): (String, Vec<String>) = redis::cmd("EMQ.VERSION")
        .query_async(&mut native.conn)
        .await
        .unwrap();
    let commands: Vec<&'static str> = GRAMMARS
        .iter()
        .filter(|g| g.keyed())
        .map(|g| g.command)
        .collect();
    let missing: Vec<&&str> = commands
        .iter()
        .filter(|command| !served.iter().any(|s| s == *command))
        .collect();
    assert!(
        missing.is_empty(),
        "the module does not serve {missing:?}: the walk covers every command of the registry"
    );
    let undrawn: Vec<&&str> = commands.iter().filter(|c| !walk::draws(c)).collect();
    assert!(
        undrawn.is_empty(),
        "the walk never draws {undrawn:?}: give each a weight and a generator in tests/common/walk.rs"
    );
    let mut script_sub = Subscriber::open(script_server.port());
    let mut native_sub = Subscriber::open(native_server.port());

    let mut walker = Walker::new(seed, commands.clone());
    let mut history: Vec<String> = Vec::new();
    let mut tally: BTreeMap<String, Tally> = BTreeMap::new();
    for step in Walker::setup() {
        let (a, b) = run(&scripts, &mut script, &mut native, &step);
        record(seed, 0, &step, &a, &b, &mut history, &mut tally);
    }
    let (mut last_end, mut settle_until) = (0, 0);
    for n in 1..=steps {
        // Each step starts in a new ms, after short leases and delays ran out.
        wait_for_clock(settle_until.max(last_end + 1));
        let next = walker.plan(&mut script.conn).await;
        let (a, b) = run(&scripts, &mut script, &mut native, &next.step);
        last_end = host_ms();
        settle_until = last_end + next.settle_ms;
        record(seed, n, &next.step, &a, &b, &mut history, &mut tally);
        if n % CHECK_EVERY == 0 || n == steps {
            // Keys corrupted for a while are restored before the invariant check.
            for step in walker.restore_all(&mut script.conn).await {
                let (a, b) = run(&scripts, &mut script, &mut native, &step);
                record(seed, n, &step, &a, &b, &mut history, &mut tally);
            }
            compare(seed, n, &mut script, &mut native).await;
        }
    }

    // Every id published on a cancel channel, in order, on both.
    for side in [&mut script, &mut native] {
        let _: i64 = redis::cmd("SPUBLISH")
            .arg(format!("{}:cancel", QUEUES[0]))
            .arg("end-of-walk")
            .query_async(&mut side.conn)
            .await
            .unwrap();
    }
    let published = script_sub.until(b"end-of-walk");
    let native_published = native_sub.until(b"end-of-walk");
    if published != native_published {
        let first = published
            .iter()
            .zip(&native_published)
            .position(|(a, b)| a != b)
            .unwrap_or(published.len().min(native_published.len()));
        panic!(
            "seed {seed}: the cancel channels differ ({} ids on wire 4, {} on wire 6); first difference at #{first}: wire 4 {:?}, wire 6 {:?}",
            published.len(),
            native_published.len(),
            published.get(first),
            native_published.get(first)
        );
    }

    eprintln!(
        "{steps} steps in {:.1}s, {} ids published on the cancel channels",
        started.elapsed().as_secs_f64(),
        published.len()
    );
    for (verb, t) in &tally {
        let refused: Vec<String> = t.refused.iter().map(|(k, v)| format!("{k} {v}")).collect();
        eprintln!("  {verb:32} ok {:5}  refused: {}", t.ok, refused.join(", "));
    }
    // The walk is only worth its steps if every verb also went through.
    for command in &commands {
        let ok = tally.get(*command).map_or(0, |t| t.ok);
        assert!(
            ok > 0,
            "seed {seed}: {command} never succeeded in {steps} steps"
        );
    }
}

/// Runs one step on both servers at once; the replies as text.
fn run(scripts: &Scripts, script: &mut Side, native: &mut Side, step: &Step) -> (String, String) {
    let (on_script, on_native) = match step {
        Step::Call { call, .. } => (scripts.command(call), call.native()),
        Step::Raw { .. } => (step.raw().unwrap(), step.raw().unwrap()),
    };
    script.raw.send(&[on_script]);
    native.raw.send(&[on_native]);
    let (a, b) = (script.raw.read(), native.raw.read());
    let verb = match step {
        Step::Call { call, .. } => call.command,
        Step::Raw { .. } => "",
    };
    (
        script.clock.raw(&blur_durations(verb, a)),
        native.clock.raw(&blur_durations(verb, b)),
    )
}

/// Durations a reply counts down on the server clock — CLAIM's trailing
/// `wait_ms`, LIMIT's (and GROUP.LIMIT's) `reset_ms` and `hold_ms` — differ by the ms between
/// the two servers' reads: each reads as `0`, or `D` when positive (what
/// they are exactly is the conformance suites' to check).
fn blur_durations(verb: &str, reply: Reply) -> Reply {
    let blur = |n: i64| {
        if n > 0 {
            Reply::Bulk(Some(b"D".to_vec()))
        } else {
            Reply::Int(n)
        }
    };
    match (verb, reply) {
        ("EMQ.CLAIM", Reply::Array(Some(mut items))) => {
            if let Some(Reply::Int(n)) = items.last() {
                let n = *n;
                *items.last_mut().expect("a last item") = blur(n);
            }
            Reply::Array(Some(items))
        }
        ("EMQ.LIMIT" | "EMQ.GROUP.LIMIT", Reply::Array(Some(mut items))) => {
            for i in 1..items.len() {
                let counts_down = matches!(&items[i - 1],
                    Reply::Bulk(Some(name)) if name == b"reset_ms" || name == b"hold_ms");
                if let (true, Reply::Int(n)) = (counts_down, &items[i]) {
                    let n = *n;
                    items[i] = blur(n);
                }
            }
            Reply::Array(Some(items))
        }
        (_, reply) => reply,
    }
}

fn record(
    seed: u64,
    n: usize,
    step: &Step,
    script: &str,
    native: &str,
    history: &mut Vec<String>,
    tally: &mut BTreeMap<String, Tally>,
) {
    if script != native {
        panic!(
            "seed {seed}, step {n}: the wires answer differently\n  {}\n  wire 4: {script}\n  wire 6: {native}\nsteps before it:\n{}",
            step.show(),
            history.join("\n")
        );
    }
    let entry = tally.entry(step.verb()).or_default();
    match script.strip_prefix('-') {
        Some(error) => {
            let code = error.split_whitespace().next().unwrap_or("").to_string();
            *entry.refused.entry(code).or_default() += 1;
        }
        None => entry.ok += 1,
    }
    let line: String = format!("  {n:5} {} → {script}", step.show())
        .chars()
        .take(400)
        .collect();
    history.push(line);
    if history.len() > HISTORY {
        history.remove(0);
    }
}

async fn compare(seed: u64, n: usize, script: &mut Side, native: &mut Side) {
    let context = format!("seed {seed}, after step {n}");
    let a = dump(&mut script.conn, &script.clock).await;
    let b = dump(&mut native.conn, &native.clock).await;
    assert_same_dump(&a, &b, &context);
    script.check_invariant("wire 4", &context).await;
    native.check_invariant("wire 6", &context).await;
}
