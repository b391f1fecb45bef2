//! Both wires are one protocol: the same seeded random walk of thousands of
//! transitions runs through the Lua scripts (wire 4) on one server and
//! through the module's `EMQ.*` commands (wire 6) on another, and every
//! reply, every key with its whole content, and every message published on
//! the cancel and outcome channels must be the same, timestamps and stream ids aside
//! (docs/protocol.md: "identical up to timestamps and stream ids").
//!
//! The walk (tests/module/common/walk.rs) draws every verb (and the bulk forms the
//! module serves), on jobs in the states it takes and on wrong ones (stale
//! tokens, absent ids, wrong states, malformed arguments, keys of the wrong
//! type). Wire 4 is driven without the client (the script files run by
//! `EVALSHA`) and both wires are read byte for byte, so a reply that differs
//! in one byte shows. `EMQ_DIFF_SEED` replays a walk, `EMQ_DIFF_STEPS` sets
//! its length (default 4000). No mismatch is tolerated: the ones this walk
//! found (error replies quoting non-ASCII bytes, times past 2^53, extra
//! arguments to GET/COUNTS, job keys of the wrong type met after a first
//! write) were fixed on both wires.

use crate::common::grammar::{GRAMMARS, quote};
use crate::common::resp::{RawConn, Reply};
use crate::common::walk::{self, QUEUES, Step, Walker};
use crate::common::{
    self, Clock, assert_same_dump, binary, dump, host_ms, server_ms, wait_for_clock,
};
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

/// A connection subscribed (`SSUBSCRIBE`) to every queue's cancel and
/// outcome channels; read once the walk is over.
struct Subscriber(RawConn);

impl Subscriber {
    fn open(port: u16) -> Self {
        let mut conn = RawConn::open(port);
        for base in QUEUES {
            for channel in ["cancel", "outcome"] {
                let mut cmd = redis::cmd("SSUBSCRIBE");
                cmd.arg(format!("{base}:{channel}"));
                let reply = conn.call(&cmd);
                assert!(
                    matches!(&reply, Reply::Array(Some(items)) if items.len() == 3),
                    "SSUBSCRIBE: {reply:?}"
                );
            }
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
        "the walk never draws {undrawn:?}: give each a weight and a generator in tests/module/common/walk.rs"
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

    // Every message published on a cancel or outcome channel, in order, on
    // both.
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
            "seed {seed}: the cancel and outcome channels differ ({} messages on wire 4, {} on wire 6); first difference at #{first}: wire 4 {:?}, wire 6 {:?}",
            published.len(),
            native_published.len(),
            published.get(first),
            native_published.get(first)
        );
    }

    let outcomes = published.iter().filter(|m| m.contains(":outcome")).count();
    assert!(
        outcomes > 0 || steps < 1000,
        "seed {seed}: {steps} steps published no outcome: the walk must decide jobs someone waits for"
    );
    eprintln!(
        "{steps} steps in {:.1}s, {} messages published on the cancel channels, {outcomes} on the outcome channels",
        started.elapsed().as_secs_f64(),
        published.iter().filter(|m| m.contains(":cancel")).count(),
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
        Step::Call { call, .. } => {
            let on_script = walk::resolve_tokens(call, |key| held_token(&mut script.raw, key));
            let on_native = walk::resolve_tokens(call, |key| held_token(&mut native.raw, key));
            (scripts.command(&on_script), on_native.native())
        }
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

/// The token the job at `key` holds on one server (`claimed_at` × 1000 +
/// `claims` mod 1000: docs/protocol.md, Fencing), else 0.
fn held_token(raw: &mut RawConn, key: &[u8]) -> u64 {
    let fields = raw.call(redis::cmd("HMGET").arg(key).arg("claims").arg("claimed_at"));
    let Reply::Array(Some(fields)) = fields else {
        return 0;
    };
    let numbers: Vec<Option<i64>> = fields
        .into_iter()
        .map(|field| match field {
            Reply::Bulk(Some(text)) => std::str::from_utf8(&text).ok()?.parse().ok(),
            _ => None,
        })
        .collect();
    match numbers[..] {
        [Some(claims), Some(claimed_at)] => {
            u64::try_from(echomq_protocol::arg::job_token(claims, claimed_at)).unwrap_or(0)
        }
        _ => 0,
    }
}

/// Durations a reply counts down on the server clock — CLAIM's trailing
/// `wait_ms` (also in COMPLETE.BULK's CLAIM tail), LIMIT's (and GROUP.LIMIT's) `reset_ms` and `hold_ms` — differ by the ms between
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
    // CLAIM's reply, its wait_ms blurred.
    let claim = |reply: Reply| match reply {
        Reply::Array(Some(mut items)) => {
            if let Some(Reply::Int(n)) = items.last() {
                let n = *n;
                *items.last_mut().expect("a last item") = blur(n);
            }
            Reply::Array(Some(items))
        }
        other => other,
    };
    match (verb, reply) {
        ("EMQ.CLAIM", reply) => claim(reply),
        // The CLAIM tail's part: the reply's last item, after the words.
        ("EMQ.COMPLETE.BULK", Reply::Array(Some(mut items))) => {
            if let Some(last) = items.pop() {
                items.push(claim(last));
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

/// A job enqueued with `TRACE` leaves the same hash, the same `traced`
/// mark and the same claim reply (the traceparent sixth) on both wires; a
/// job without one, claimed in the same batch, answers five elements; a
/// queue without the mark reads no traceparent, even one written by hand.
#[tokio::test]
async fn a_traced_job_leaves_the_same_hash_and_claim_reply_on_both_wires() {
    use crate::common::grammar::{Call, TRACEPARENTS};
    let script_server = TestServer::with_config(binary(), false, Vec::new());
    let native_server = TestServer::with_config(binary(), false, vec![module_path()]);
    let mut script = Side::new(&script_server).await;
    let mut native = Side::new(&native_server).await;
    let scripts = Scripts::load(&mut script.conn).await;
    let (traced, plain) = (QUEUES[0], QUEUES[2]);
    let tp = TRACEPARENTS[0];
    let call = |call: Call| Step::Call {
        call,
        malformed: false,
    };
    let raw = |argv: &[&str]| Step::Raw {
        argv: argv.iter().map(|a| a.as_bytes().to_vec()).collect(),
        why: "a traceparent written by hand",
    };
    let steps = [
        // Refused: nothing written, the same refusal.
        call(
            Call::new("EMQ.ENQUEUE", traced)
                .arg("bad")
                .arg("p")
                .opt("TRACE", tp.to_uppercase()),
        ),
        call(
            Call::new("EMQ.ENQUEUE", traced)
                .arg("a")
                .arg("p")
                .opt("TRACE", tp),
        ),
        call(
            Call::new("EMQ.SCHEDULE", traced)
                .arg("b")
                .arg("p")
                .arg("+0")
                .opt("trace", TRACEPARENTS[1]),
        ),
        call(
            Call::new("EMQ.SCHEDULE", traced)
                .arg("later")
                .arg("p")
                .arg("+600000")
                .opt("TRACE", tp),
        ),
        call(Call::new("EMQ.ENQUEUE", traced).arg("c").arg("p")),
        call(
            Call::new("EMQ.CLAIM", traced)
                .arg("w")
                .arg("60000")
                .opt("COUNT", "3"),
        ),
        call(Call::new("EMQ.GET", traced).arg("a")),
        call(Call::new("EMQ.GET", traced).arg("later")),
        // An existing id with a trace changes nothing.
        call(
            Call::new("EMQ.ENQUEUE", traced)
                .arg("c")
                .arg("p")
                .opt("TRACE", tp),
        ),
        // A queue never traced: a hand-written traceparent is not read.
        call(Call::new("EMQ.ENQUEUE", plain).arg("d").arg("p")),
        raw(&["HSET", &format!("{plain}:job:d"), "traceparent", tp]),
        call(Call::new("EMQ.CLAIM", plain).arg("w").arg("60000")),
    ];
    let mut replies = Vec::new();
    for step in &steps {
        let (a, b) = run(&scripts, &mut script, &mut native, step);
        assert_eq!(a, b, "the wires answer `{}` differently", step.show());
        replies.push(a);
    }
    assert!(
        replies[0].starts_with("-BADARG traceparent"),
        "{}",
        replies[0]
    );
    assert_eq!(
        replies[5],
        format!(
            "[[a, #K0, p, #0, #3, {tp}], [b, #K0, p, #0, #3, {}], [c, #K0, p, #0, #3]]",
            TRACEPARENTS[1]
        ),
        "the traceparent is a claimed entry's sixth element, for a job that has one"
    );
    assert!(
        replies[6].contains(tp),
        "GET lists the traceparent: {}",
        replies[6]
    );
    assert_eq!(
        replies[11], "[[d, #K0, p, #0, #3]]",
        "an untraced queue read a traceparent"
    );
    compare(0, steps.len(), &mut script, &mut native).await;
    let mark: Option<String> = redis::cmd("HGET")
        .arg(format!("{traced}:meta"))
        .arg("traced")
        .query_async(&mut script.conn)
        .await
        .unwrap();
    assert_eq!(mark.as_deref(), Some("1"));
}
