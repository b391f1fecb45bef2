//! What the module's property tests share: the command grammars, the random
//! walk, replies rendered as comparable text, and dumps of a whole keyspace.
#![allow(dead_code)]

pub(crate) mod grammar;
pub(crate) mod resp;
pub(crate) mod walk;

use echomq_server::ServerBinary;
use echomq_testkit::{TestServer, Wait, module_path, wait_for};
use grammar::quote;
use redis::Value;
use redis::aio::MultiplexedConnection;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The server binary the suite runs: `$EMQ_VALKEY_SERVER`, Valkey on the
/// PATH or fetched by `scripts/valkey`, else `redis-server`.
pub(crate) fn binary() -> ServerBinary {
    ServerBinary::locate().unwrap_or_else(|e| panic!("no server binary: {e}"))
}

/// The seed of a property test: `$<var>` when set, else a fresh one.
/// Printed either way, so a failure can be replayed.
pub(crate) fn seed(var: &str) -> u64 {
    let seed = match std::env::var(var) {
        Ok(text) => text
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{var}={text:?} is not a u64")),
        Err(_) => fastrand::u64(..),
    };
    eprintln!("seed {seed} (replay with {var}={seed})");
    seed
}

/// A count from `$<var>`, else `default`.
pub(crate) fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(default)
}

/// The host clock in unix ms (the same clock the servers read on this
/// machine).
pub(crate) fn host_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Waits, checking every ms, until the host clock reads at least `until`
/// ms; panics after 5 s (a clock that does not move is a failure).
pub(crate) fn wait_for_clock(until: u64) {
    Wait::new(
        &format!("the clock to reach {until}"),
        Duration::from_secs(5),
    )
    .every(Duration::from_millis(1))
    .until(|| host_ms() >= until);
}

/// The server's clock in ms (`TIME`).
pub(crate) async fn server_ms(conn: &mut MultiplexedConnection) -> u64 {
    let (secs, micros): (u64, u64) = redis::cmd("TIME").query_async(conn).await.unwrap();
    secs * 1000 + micros / 1000
}

/// Sends one command and returns its reply, an error reply as
/// [`Value::ServerError`] (so replies compare whatever they are).
pub(crate) async fn send(conn: &mut MultiplexedConnection, cmd: &redis::Cmd) -> Value {
    let mut pipe = redis::pipe();
    pipe.ignore_errors().add_command(cmd.clone());
    let mut replies: Vec<Value> = pipe
        .query_async(conn)
        .await
        .unwrap_or_else(|e| panic!("sending {cmd:?}: {e}"));
    replies.pop().expect("one reply")
}

/// Sends many commands in one pipeline; one reply each, errors as values.
pub(crate) async fn send_all(conn: &mut MultiplexedConnection, cmds: &[redis::Cmd]) -> Vec<Value> {
    if cmds.is_empty() {
        return Vec::new();
    }
    let mut pipe = redis::pipe();
    pipe.ignore_errors();
    for cmd in cmds {
        pipe.add_command(cmd.clone());
    }
    pipe.query_async(conn)
        .await
        .unwrap_or_else(|e| panic!("sending a pipeline of {}: {e}", cmds.len()))
}

/// Timestamps rendered so two servers that ran the same commands a few ms
/// apart read the same: a number within 30 days after `origin` (a minute
/// before the server's clock at the start) becomes `T<n>`, n its distance
/// from `origin` in 10-minute steps, and one as far after `origin + 2^53-1`
/// (a relative delay of the largest argument) becomes `M<n>`, marked
/// [`INEXACT`] when the integer is not a double's value; a fencing token
/// (a claim's clock × 1000, docs/protocol.md) in the first window × 1000
/// becomes `K<n>`, n as for `T<n>` (a pending score of priority 102 can
/// fall there too: it reads alike on both wires, coarsely). Every other
/// number stays as it is: counters, tokens, priorities, scores of pending
/// (priority·2^44 + seq, far outside both windows) and host-given run-ats.
/// The steps keep what matters: a job delayed by 10 minutes reads `T1`,
/// one by an hour `T6`, one created now `T0`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    origin: f64,
}

/// Marks a number past 2^53 that no double holds (see [`Clock`]).
pub(crate) const INEXACT: &str = "~not-a-double";

const WINDOW_MS: f64 = 30.0 * 24.0 * 3600.0 * 1000.0;
const STEP_MS: f64 = 600_000.0;

impl Clock {
    /// A clock whose now is `server_ms`.
    pub(crate) fn new(server_ms: u64) -> Self {
        Self {
            origin: (server_ms - 60_000) as f64,
        }
    }

    /// A clock that normalises nothing: every number reads as it is.
    pub(crate) fn exact() -> Self {
        Self { origin: f64::NAN }
    }

    /// A number's text, normalised; any other text as it is (quoted).
    pub(crate) fn text(&self, bytes: &[u8]) -> String {
        match std::str::from_utf8(bytes).ok().and_then(|s| self.number(s)) {
            Some(n) => n,
            None => quote(bytes),
        }
    }

    fn number(&self, text: &str) -> Option<String> {
        let numeric = !text.is_empty()
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
            && text.bytes().next().is_some_and(|b| b.is_ascii_digit());
        if !numeric {
            return None;
        }
        let value: f64 = text.parse().ok()?;
        let late = self.origin + grammar::MAX_INT as f64;
        let tokens = self.origin * 1000.0;
        Some(if (self.origin..self.origin + WINDOW_MS).contains(&value) {
            format!("T{}", ((value - self.origin) / STEP_MS).floor())
        } else if (tokens..tokens + WINDOW_MS * 1000.0).contains(&value) {
            // A fencing token: a claim's clock × 1000 (or just above).
            format!("K{}", ((value / 1000.0 - self.origin) / STEP_MS).floor())
        } else if (late..late + WINDOW_MS).contains(&value) {
            // Past 2^53 not every integer is a double: one that is not was
            // computed exactly, where a double (a score, Lua) could not hold it.
            let exact = text.parse::<u64>().map_or(true, |n| (n as f64) as u64 == n);
            let inexact = if exact { "" } else { INEXACT };
            format!("M{}{inexact}", ((value - late) / STEP_MS).floor())
        } else {
            text.to_string()
        })
    }

    /// A byte-exact reply as comparable text: as [`Clock::reply`], error
    /// lines quoted byte for byte.
    pub(crate) fn raw(&self, reply: &resp::Reply) -> String {
        use resp::Reply;
        match reply {
            Reply::Status(line) => self.text(line),
            Reply::Error(line) => format!("-{}", grammar::escape(line)),
            Reply::Int(n) => format!("#{}", self.text(n.to_string().as_bytes())),
            Reply::Bulk(None) => "nil".into(),
            Reply::Bulk(Some(bytes)) => self.text(bytes),
            Reply::Array(None) => "nil-array".into(),
            Reply::Array(Some(items)) => format!(
                "[{}]",
                items
                    .iter()
                    .map(|item| self.raw(item))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// A reply as comparable text. Simple and bulk strings read the same
    /// (`docs/protocol.md` allows either for words and ids); integers stay apart.
    pub(crate) fn reply(&self, value: &Value) -> String {
        match value {
            Value::Nil => "nil".into(),
            Value::Int(n) => format!("#{}", self.text(n.to_string().as_bytes())),
            Value::BulkString(bytes) => self.text(bytes),
            Value::SimpleString(text) => self.text(text.as_bytes()),
            Value::Okay => "OK".into(),
            Value::Array(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(|item| self.reply(item))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Value::ServerError(err) => {
                format!("-{} {}", err.code(), err.details().unwrap_or_default())
            }
            other => format!("{other:?}"),
        }
    }
}

/// The error text of an error reply, `None` for any other reply.
pub(crate) fn error_text(value: &Value) -> Option<String> {
    match value {
        Value::ServerError(err) => Some(
            format!("{} {}", err.code(), err.details().unwrap_or_default())
                .trim()
                .to_string(),
        ),
        _ => None,
    }
}

/// Every key of the server with its type and whole content, one line per
/// key, sorted by key, timestamps through `clock`: strings, hashes (fields
/// sorted), lists, sets (sorted), sorted sets (in order, with scores) and
/// streams (entries in order, ids hidden: they are the clock's).
///
/// A queue's metrics keys (docs/protocol.md "Metrics") read as one line per
/// queue and kind (`total`, `fine`, `coarse`): the outcome counts summed
/// over the windows and each histogram's number of samples. Which window a
/// call wrote, and the ms its samples measured, are the clock's.
pub(crate) async fn dump(conn: &mut MultiplexedConnection, clock: &Clock) -> Vec<String> {
    let mut keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg("*").query_async(conn).await.unwrap();
    keys.sort();
    let (metrics, mut keys): (Vec<Vec<u8>>, Vec<Vec<u8>>) = keys
        .into_iter()
        .partition(|key| metrics_kind(key).is_some());
    let mut lines = metrics_lines(conn, &metrics).await;
    lines.extend(dump_keys(conn, clock, &mut keys).await);
    lines.sort();
    lines
}

/// `<base>:metrics:total` or `:fine`/`:coarse` for a metrics key.
fn metrics_kind(key: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(key).ok()?;
    let at = text.find("}:metrics:")? + 1;
    let rest = &text[at + ":metrics:".len()..];
    let kind = rest.split(':').next()?;
    Some(format!("{}:metrics:{kind}", &text[..at]))
}

/// The metrics keys as one line per queue and kind (see [`dump`]).
async fn metrics_lines(conn: &mut MultiplexedConnection, keys: &[Vec<u8>]) -> Vec<String> {
    let mut sums: std::collections::BTreeMap<String, std::collections::BTreeMap<String, i64>> =
        Default::default();
    for key in keys {
        let fields: Vec<(String, i64)> = redis::cmd("HGETALL")
            .arg(key.as_slice())
            .query_async(conn)
            .await
            .unwrap();
        let line = sums.entry(metrics_kind(key).unwrap()).or_default();
        for (field, value) in fields {
            let name = match field.as_bytes()[0] {
                b'w' | b'r' if field.ends_with('s') => continue,
                b'w' => "wait_samples".to_string(),
                b'r' => "run_samples".to_string(),
                _ => field,
            };
            *line.entry(name).or_default() += value;
        }
    }
    sums.into_iter()
        .map(|(kind, fields)| {
            let fields: Vec<String> = fields.iter().map(|(f, n)| format!("{f}={n}")).collect();
            format!("{} metrics: {}", quote(kind.as_bytes()), fields.join(" "))
        })
        .collect()
}

async fn dump_keys(
    conn: &mut MultiplexedConnection,
    clock: &Clock,
    keys: &mut [Vec<u8>],
) -> Vec<String> {
    let keys = &*keys;
    let types: Vec<Value> = send_all(
        conn,
        &keys
            .iter()
            .map(|key| {
                let mut cmd = redis::cmd("TYPE");
                cmd.arg(key.as_slice());
                cmd
            })
            .collect::<Vec<_>>(),
    )
    .await;
    let types: Vec<String> = types
        .iter()
        .map(|t| match t {
            Value::SimpleString(s) => s.clone(),
            Value::Okay => "OK".into(),
            other => format!("{other:?}"),
        })
        .collect();
    let reads: Vec<redis::Cmd> = keys
        .iter()
        .zip(&types)
        .map(|(key, kind)| {
            let mut cmd = match kind.as_str() {
                "string" => redis::cmd("GET"),
                "hash" => redis::cmd("HGETALL"),
                "list" => {
                    let mut cmd = redis::cmd("LRANGE");
                    cmd.arg(key.as_slice()).arg(0).arg(-1);
                    return cmd;
                }
                "set" => redis::cmd("SMEMBERS"),
                "zset" => {
                    let mut cmd = redis::cmd("ZRANGE");
                    cmd.arg(key.as_slice()).arg(0).arg(-1).arg("WITHSCORES");
                    return cmd;
                }
                "stream" => {
                    let mut cmd = redis::cmd("XRANGE");
                    cmd.arg(key.as_slice()).arg("-").arg("+");
                    return cmd;
                }
                _ => redis::cmd("PTTL"),
            };
            cmd.arg(key.as_slice());
            cmd
        })
        .collect();
    let values = send_all(conn, &reads).await;
    let ttls = send_all(
        conn,
        &keys
            .iter()
            .map(|key| {
                let mut cmd = redis::cmd("PTTL");
                cmd.arg(key.as_slice());
                cmd
            })
            .collect::<Vec<_>>(),
    )
    .await;
    keys.iter()
        .zip(types)
        .zip(values)
        .zip(ttls)
        .map(|(((key, kind), value), ttl)| {
            let content = match (kind.as_str(), value) {
                ("hash", Value::Array(items)) => {
                    let mut pairs: Vec<String> = items
                        .chunks(2)
                        .map(|pair| format!("{}={}", clock.reply(&pair[0]), clock.reply(&pair[1])))
                        .collect();
                    pairs.sort();
                    pairs.join(" ")
                }
                ("set", Value::Array(items)) => {
                    let mut members: Vec<String> = items.iter().map(|m| clock.reply(m)).collect();
                    members.sort();
                    members.join(" ")
                }
                ("zset", Value::Array(items)) => items
                    .chunks(2)
                    .map(|pair| format!("{}@{}", clock.reply(&pair[0]), clock.reply(&pair[1])))
                    .collect::<Vec<_>>()
                    .join(" "),
                ("stream", Value::Array(entries)) => entries
                    .iter()
                    .map(|entry| match entry {
                        Value::Array(parts) if parts.len() == 2 => {
                            format!("<id>{}", clock.reply(&parts[1]))
                        }
                        other => format!("{other:?}"),
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
                (_, value) => clock.reply(&value),
            };
            let ttl = match ttl {
                Value::Int(-1) => String::new(),
                _ => " (expires)".to_string(),
            };
            format!("{} {kind}{ttl}: {content}", quote(key))
        })
        .collect()
}

/// Panics, naming the first line where two dumps differ, unless they are equal.
pub(crate) fn assert_same_dump(script: &[String], native: &[String], context: &str) {
    if script == native {
        return;
    }
    let first = script
        .iter()
        .zip(native)
        .position(|(a, b)| a != b)
        .unwrap_or(script.len().min(native.len()));
    // Where in the first differing line: the text around the first
    // differing character.
    let (line_a, line_b) = (
        script.get(first).map_or("", String::as_str),
        native.get(first).map_or("", String::as_str),
    );
    let at = line_a
        .chars()
        .zip(line_b.chars())
        .position(|(x, y)| x != y)
        .unwrap_or(line_a.chars().count().min(line_b.chars().count()));
    let around = |line: &str| -> String {
        let from = at.saturating_sub(120);
        let text: String = line.chars().skip(from).take(240).collect();
        format!("{}{text}", if from > 0 { "…" } else { "" })
    };
    let key = |line: &str| line.split(' ').next().unwrap_or("").to_string();
    panic!(
        "{context}: the keyspaces differ ({} keys on wire 4, {} on wire 6); first difference in key #{first} (wire 4 {}, wire 6 {}) at character {at}:\n  wire 4: {}\n  wire 6: {}",
        script.len(),
        native.len(),
        key(line_a),
        key(line_b),
        around(line_a),
        around(line_b)
    );
}

/// The state invariant of `docs/protocol.md` for the queue at `base`, on bytes
/// (ids need not be UTF-8): a job's `state` names the one state set that
/// holds its id, and no job hash or log list is left outside every set; the
/// deduplication keys as [`dedup_problems`] checks them.
pub(crate) async fn check_invariant(
    conn: &mut MultiplexedConnection,
    base: &str,
) -> Result<(), String> {
    use std::collections::BTreeMap;
    let mut member_of: BTreeMap<Vec<u8>, Vec<&str>> = BTreeMap::new();
    // The walk's view leaves the blocked set out (its jobs wait for flows'
    // dependencies the walk never ends); the invariant counts it.
    for (set, state) in walk::SETS.iter().chain(["blocked"].iter()).zip([
        "scheduled",
        "pending",
        "active",
        "completed",
        "dead",
        "cancelled",
        "blocked",
    ]) {
        let ids: Vec<Vec<u8>> = redis::cmd("ZRANGE")
            .arg(format!("{base}:{set}"))
            .arg(0)
            .arg(-1)
            .query_async(conn)
            .await
            .map_err(|e| format!("ZRANGE {set}: {e}"))?;
        for id in ids {
            member_of.entry(id).or_default().push(state);
        }
    }
    // The pending set is two keys: `fifo` holds the rest of it
    // (docs/protocol.md, "The fifo").
    let fifo: Vec<Vec<u8>> = redis::cmd("LRANGE")
        .arg(format!("{base}:fifo"))
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await
        .map_err(|e| format!("LRANGE fifo: {e}"))?;
    for id in fifo {
        member_of.entry(id).or_default().push("pending");
    }
    let mut problems = Vec::new();
    for (id, states) in &member_of {
        let key = [base.as_bytes(), b":job:", id].concat();
        let found: Option<Vec<u8>> = redis::cmd("HGET")
            .arg(&key)
            .arg("state")
            .query_async(conn)
            .await
            .map_err(|e| format!("HGET {}: {e}", quote(&key)))?;
        if states.len() > 1 {
            problems.push(format!("{} is in several sets: {states:?}", quote(id)));
        }
        match found {
            None => problems.push(format!("{} is in {states:?} without a hash", quote(id))),
            Some(state) if state != states[0].as_bytes() => problems.push(format!(
                "{} says {} but is in {}",
                quote(id),
                quote(&state),
                states[0]
            )),
            Some(_) => {}
        }
    }
    for infix in [":job:", ":logs:"] {
        let prefix = format!("{base}{infix}");
        let keys: Vec<Vec<u8>> = redis::cmd("KEYS")
            .arg(format!(
                "{}*",
                prefix.replace('{', "\\{").replace('}', "\\}")
            ))
            .query_async(conn)
            .await
            .map_err(|e| format!("KEYS: {e}"))?;
        for key in keys {
            if !member_of.contains_key(&key[prefix.len()..]) {
                problems.push(format!("{} belongs to no job in a state set", quote(&key)));
            }
        }
    }
    problems.extend(dedup_problems(conn, base).await?);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// The deduplication keys of the queue at `base` against the invariant of
/// `docs/protocol.md` ("Deduplication"), on bytes: every member of the
/// dedup set (a throttle key) has its owner, whose job, if it still carries
/// the key, is in `throttle` mode; an owner outside the set (a simple or
/// debounce key) names a job that exists, carries it, is in `simple` or
/// `debounce` mode and unfinished (`simple`: scheduled, pending, active or
/// blocked; `debounce`: scheduled or pending).
/// Members scored ≤ now are expired entries not yet removed (allowed).
pub(crate) async fn dedup_problems(
    conn: &mut MultiplexedConnection,
    base: &str,
) -> Result<Vec<String>, String> {
    let scored: Vec<(Vec<u8>, f64)> = redis::cmd("ZRANGE")
        .arg(format!("{base}:dedup"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(conn)
        .await
        .map_err(|e| format!("ZRANGE dedup: {e}"))?;
    let owners: std::collections::HashMap<Vec<u8>, Vec<u8>> = redis::cmd("HGETALL")
        .arg(format!("{base}:dedup_owner"))
        .query_async(conn)
        .await
        .map_err(|e| format!("HGETALL dedup_owner: {e}"))?;
    let mut problems = Vec::new();
    for (key, _) in &scored {
        if !owners.contains_key(key) {
            problems.push(format!("throttle key {} has no owner", quote(key)));
        }
    }
    for (key, owner) in &owners {
        let job = [base.as_bytes(), b":job:", owner].concat();
        let fields: Vec<Option<Vec<u8>>> = redis::cmd("HMGET")
            .arg(&job)
            .arg(&["state", "dedup", "dedup_mode"])
            .query_async(conn)
            .await
            .map_err(|e| format!("HMGET {}: {e}", quote(&job)))?;
        let [state, carried, mode]: [Option<Vec<u8>>; 3] =
            fields.try_into().map_err(|_| "HMGET: not three fields")?;
        let show = |v: &Option<Vec<u8>>| v.as_deref().map_or("nil".into(), quote);
        if scored.iter().any(|(member, _)| member == key) {
            if carried.as_ref() == Some(key) && mode.as_deref() != Some(b"throttle") {
                problems.push(format!(
                    "dedup key {} is in the dedup set but its holder {} is in mode {}",
                    quote(key),
                    quote(owner),
                    show(&mode)
                ));
            }
            continue;
        }
        if mode.as_deref() == Some(b"simple") {
            problems.push(format!(
                "job {} stores the dedup mode simple, which a key without a mode means",
                quote(owner)
            ));
        }
        let waits = matches!(state.as_deref(), Some(b"scheduled" | b"pending"));
        // A job with a key and no mode is in simple mode.
        let fits = match (carried.is_some(), mode.as_deref()) {
            // Unfinished: waiting, in hand, or blocked by FLOW.WAIT.
            (true, None) => waits || matches!(state.as_deref(), Some(b"active" | b"blocked")),
            (_, Some(b"debounce")) => waits,
            _ => false,
        };
        if carried.as_ref() != Some(key) || !fits {
            problems.push(format!(
                "dedup key {} is held until released by {}, which is {} in mode {} carrying {}",
                quote(key),
                quote(owner),
                show(&state),
                show(&mode),
                show(&carried)
            ));
        }
    }
    Ok(problems)
}

/// Every AOF file under `dir`, concatenated, as text.
pub(crate) fn aof_text(dir: &std::path::Path) -> String {
    let mut aof = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.to_string_lossy().contains(".aof") {
                aof.extend(std::fs::read(path).unwrap());
            }
        }
    }
    String::from_utf8_lossy(&aof).into_owned()
}

/// A primary and its replica, both with the module, the replica in sync.
pub(crate) async fn primary_and_replica(binary: fn() -> ServerBinary) -> (TestServer, TestServer) {
    let primary = TestServer::with_config(binary(), false, vec![module_path()]);
    let replica = TestServer::with_config(binary(), false, vec![module_path()]);
    let mut r = replica.connection().await;
    let _: () = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(primary.port())
        .query_async(&mut r)
        .await
        .unwrap();
    wait_for("the replica to sync", Duration::from_secs(20), || {
        let mut r = r.clone();
        async move {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut r)
                .await
                .unwrap();
            if info.contains("master_link_status:up") {
                Ok(())
            } else {
                Err(info)
            }
        }
    })
    .await;
    (primary, replica)
}

/// Every key of `pattern` with its content, sorted by key: a hash's
/// fields sorted (the order a hashtable lists them in is each server
/// process's own), a list, a zset and a stream in their order.
pub(crate) async fn keyspace(c: &mut MultiplexedConnection, pattern: &str) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg(pattern)
        .query_async(c)
        .await
        .unwrap();
    keys.sort();
    let mut out = Vec::new();
    for key in keys {
        let kind: String = redis::cmd("TYPE").arg(&key).query_async(c).await.unwrap();
        let value = match kind.as_str() {
            "hash" => {
                let mut pairs: Vec<(String, String)> = redis::cmd("HGETALL")
                    .arg(&key)
                    .query_async(c)
                    .await
                    .unwrap();
                pairs.sort();
                format!("{pairs:?}")
            }
            "zset" => {
                let members: Vec<(String, String)> = redis::cmd("ZRANGE")
                    .arg(&key)
                    .arg(0)
                    .arg(-1)
                    .arg("WITHSCORES")
                    .query_async(c)
                    .await
                    .unwrap();
                format!("{members:?}")
            }
            "list" => {
                let items: Vec<String> = redis::cmd("LRANGE")
                    .arg(&key)
                    .arg(0)
                    .arg(-1)
                    .query_async(c)
                    .await
                    .unwrap();
                format!("{items:?}")
            }
            "stream" => {
                let entries: Value = redis::cmd("XRANGE")
                    .arg(&key)
                    .arg("-")
                    .arg("+")
                    .query_async(c)
                    .await
                    .unwrap();
                format!("{entries:?}")
            }
            _ => {
                let value: Value = redis::cmd("GET").arg(&key).query_async(c).await.unwrap();
                format!("{value:?}")
            }
        };
        out.push(format!("{key} {kind} {value}"));
    }
    out
}

/// Asserts `got` (of the `what` that should hold it) is `want`, key by
/// key ([`keyspace`]'s lines), naming the first differences.
pub(crate) fn assert_same_keyspace(want: &[String], got: &[String], what: &str) {
    let differ: Vec<(&String, &String)> = want.iter().zip(got).filter(|(w, g)| w != g).collect();
    assert!(
        want.len() == got.len() && differ.is_empty(),
        "{what} holds another keyspace: {} keys against {}; first differences {:?}",
        got.len(),
        want.len(),
        &differ[..differ.len().min(2)]
    );
}
