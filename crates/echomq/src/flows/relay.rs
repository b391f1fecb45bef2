//! The relay (docs/protocol.md, "The relay"): a queue's outbox delivered
//! to the dependents' queues, each edge exactly once.
//!
//! 1. Read resolutions with `FLOW.OUTBOX` (the ids a command answered
//!    `relay_*` for, with `JOBS`; the oldest, without).
//! 2. A `completed` resolution listing dependents in its own queue (a
//!    completion's past its budget) is sent `FLOW.SETTLE` until it tells
//!    fewer than it may, a thousand a call, and the outbox read again.
//! 3. Group their untold dependents by queue; send each queue
//!    `FLOW.RESOLVE` with one group per edge.
//! 4. `FLOW.ACK` on the dependency's queue every group the call answered
//!    (any word). A call the server refused (`NOPERM`, a lost connection)
//!    is not acknowledged: the resolution stays for the next relay.
//! 5. A dependent that its policy decided and that has dependents of its
//!    own (`relay_dead`, `relay_cancelled`) is relayed the same way.
//!
//! No command touches two queues, so every step is a call of one queue's
//! slot: flows work across a cluster's shards.

use crate::error::Result;
use crate::queue::Queue;
use crate::transport::connector::Connector;
use crate::transport::decode;
use crate::transport::dispatch::Call;
use echomq_protocol::{JobId, Transition};
use redis::Value;
use std::collections::BTreeMap;

/// Dependents `FLOW.OUTBOX` lists per read.
const OUTBOX_COUNT: u64 = 1000;
/// Edges one `FLOW.RESOLVE` or `FLOW.ACK` carries at most.
const EDGES_PER_CALL: usize = 1000;
/// Bytes of resolution text one call carries at most.
const BYTES_PER_CALL: usize = 4 << 20;
/// Outbox reads one `Queue::relay` makes at most before it answers (a
/// busy queue's outbox refills as it is read); also the most
/// `FLOW.SETTLE` calls a relay sends for one id.
const MOST_READS: usize = 100;
/// Dependents one `FLOW.SETTLE` takes at most (its default).
const SETTLE_COUNT: u64 = echomq_protocol::arg::FLOW_INLINE_EDGES;

/// What a relay delivered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Relayed {
    /// Edges resolved in their dependents' queues by this relay.
    pub resolved: u64,
    /// Of those, dependents unblocked (their last dependency ended).
    pub unblocked: u64,
    /// Of those, dependents their failure policy sent to dead or
    /// cancelled.
    pub decided: u64,
    /// Edges another relay had resolved already, or whose dependent is
    /// gone: acknowledged, nothing changed.
    pub already: u64,
    /// Edges left in the outbox: the dependent's queue refused the call
    /// (an ACL without it, a lost connection). The sweep of a process
    /// that may reach it delivers them.
    pub left: u64,
}

impl Relayed {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: Relayed) {
        self.resolved += other.resolved;
        self.unblocked += other.unblocked;
        self.decided += other.decided;
        self.already += other.already;
        self.left += other.left;
    }
}

/// One resolution read from an outbox (or answered by `FLOW.LINK`): the
/// decided job, its text, and its dependents not told yet.
pub(super) struct Resolution {
    pub(super) id: JobId,
    pub(super) text: Vec<u8>,
    pub(super) dependents: Vec<(String, JobId)>,
}

/// An edge to deliver: the dependency (in the queue being relayed), its
/// resolution text, the dependent.
struct Edge<'a> {
    dependency: &'a JobId,
    text: &'a [u8],
    dependent: &'a JobId,
}

impl<T> Queue<T> {
    /// Delivers this queue's outbox: each resolution of a job decided or
    /// deleted with dependents not told yet is applied in its dependents'
    /// queues and acknowledged here, and dependents decided by their
    /// failure policy are relayed in turn. Workers and the sweep run this
    /// by themselves; an operator runs it for a queue no worker serves any
    /// more (`emq flow relay`).
    pub async fn relay(&self) -> Result<Relayed> {
        let mut total = Relayed::default();
        for _ in 0..MOST_READS {
            let (read, relayed) = relay_from(self, None).await?;
            total.add(relayed);
            if read == 0 || relayed.left > 0 && relayed.resolved + relayed.already == 0 {
                break;
            }
        }
        Ok(total)
    }

    /// Delivers the resolutions of the jobs whose decisions this handle
    /// noted (`relay_*` answers), if any. Errors are the sweep's to
    /// retry: they are logged, not returned.
    pub(crate) async fn relay_noted(&self) {
        let ids = self.take_unrelayed();
        if ids.is_empty() {
            return;
        }
        if let Err(err) = relay_from(self, Some(ids)).await {
            tracing::debug!(queue = %self.name(), "relay left for the sweep: {err}");
        }
    }
}

impl<T> Queue<T> {
    /// [`Queue::relay`], its error logged (a pass after a verb or a sweep:
    /// what it leaves, the next sweep delivers).
    pub(crate) async fn relay_quietly(&self) {
        if let Err(err) = self.relay().await {
            tracing::debug!(queue = %self.name(), "relay left for the next sweep: {err}");
        }
    }

    /// [`Queue::relay_noted`] in a task of its own, when there is any.
    pub(crate) fn spawn_relay_noted(&self) {
        let ids = self.take_unrelayed();
        if ids.is_empty() {
            return;
        }
        let queue = self.typed::<Value>();
        tokio::spawn(async move {
            if let Err(err) = relay_from(&queue, Some(ids)).await {
                tracing::debug!(queue = %queue.name(), "relay left for the sweep: {err}");
            }
        });
    }
}

/// Relays from `queue`'s outbox (the resolutions of `ids`, or the oldest),
/// then from each queue whose dependents their policy decided. A read of
/// named ids lists at most `OUTBOX_COUNT` dependents, so ids whose read
/// reached it are read again until they are delivered (a root with
/// 10,000 dependents is ten reads, not one and a sweep). Answers how many
/// resolutions the first read found, and what was delivered.
async fn relay_from<T>(queue: &Queue<T>, ids: Option<Vec<JobId>>) -> Result<(usize, Relayed)> {
    relay_reading(queue.connector(), vec![(queue.typed(), ids)]).await
}

/// The ids of `resolutions` (read from `from`'s outbox) that
/// `FLOW.SETTLE` takes: `completed` ones listing a dependent in `from`.
fn settling(from: &Queue<Value>, resolutions: &[Resolution]) -> Vec<JobId> {
    resolutions
        .iter()
        .filter(|r| r.text.starts_with(b"completed "))
        .filter(|r| {
            r.dependents
                .iter()
                .any(|(queue, _)| queue == from.name().as_str())
        })
        .map(|r| r.id.clone())
        .collect()
}

/// `FLOW.SETTLE` of each of `ids` in `queue`, each until it tells fewer
/// than [`SETTLE_COUNT`]: the dependents in the queue of a job that
/// completed past its completion's budget. Answers what it delivered. A
/// refusal (a worker whose ACL predates the command, a lost connection)
/// stops it quietly: the outbox's steps deliver the same edges.
async fn settle<T>(queue: &Queue<T>, ids: &[JobId]) -> Relayed {
    let mut settled = Relayed::default();
    for id in ids {
        for _ in 0..MOST_READS {
            let [told, resolved, unblocked] = match settle_once(queue, id).await {
                Ok(counts) => counts,
                Err(err) => {
                    tracing::debug!(queue = %queue.name(), "settle left to the relay: {err}");
                    return settled;
                }
            };
            settled.add(Relayed {
                resolved,
                unblocked,
                already: told.saturating_sub(resolved),
                ..Relayed::default()
            });
            if told < SETTLE_COUNT {
                break;
            }
        }
    }
    settled
}

/// One `FLOW.SETTLE id`: `[told, resolved, unblocked]`.
async fn settle_once<T>(queue: &Queue<T>, id: &JobId) -> Result<[u64; 3]> {
    let t = Transition::FlowSettle;
    let reply = queue.call(Call::new(t, Some(id)).arg(id.as_str())).await?;
    let counts = decode::array(t, reply)?;
    let [told, resolved, unblocked] = <[Value; 3]>::try_from(counts)
        .map_err(|counts| decode::unexpected(t, &Value::Array(counts)))?;
    Ok([
        decode::int(t, told)?,
        decode::int(t, resolved)?,
        decode::int(t, unblocked)?,
    ])
}

/// [`relay_from`]'s reads: each queue of `work` relayed from its outbox
/// (the resolutions of its ids, or the oldest), then each queue whose
/// dependents their policy decided. Answers how many resolutions the first
/// read found, and what was delivered.
async fn relay_reading(
    connector: &Connector,
    mut work: Vec<(Queue<Value>, Option<Vec<JobId>>)>,
) -> Result<(usize, Relayed)> {
    let mut total = Relayed::default();
    let mut first = None;
    while let Some((from, ids)) = work.pop() {
        for _ in 0..MOST_READS {
            let resolutions = read_outbox(&from, ids.clone()).await?;
            first.get_or_insert(resolutions.len());
            let listed: usize = resolutions.iter().map(|r| r.dependents.len()).sum();
            if listed == 0 {
                break;
            }
            let settled = settle(&from, &settling(&from, &resolutions)).await;
            if settled.resolved + settled.already > 0 {
                // What is left is other queues' (or edges it could not
                // take): read again.
                total.add(settled);
                continue;
            }
            let (relayed, decided) = deliver(&from, &resolutions, true).await?;
            total.add(relayed);
            for (name, ids) in decided {
                work.push((connector.queue::<Value>(&name)?, Some(ids)));
            }
            let moved = relayed.resolved + relayed.already > 0;
            if ids.is_none() || (listed as u64) < OUTBOX_COUNT || !moved {
                break;
            }
        }
    }
    Ok((first.unwrap_or(0), total))
}

/// Delivers `resolutions` of jobs of queue `from`, acknowledged there when
/// `acknowledged` (a resolution of the outbox or of `FLOW.LINK`; not the
/// `removed -` of a job that does not exist), then relays from each queue
/// whose dependents their policy decided.
pub(super) async fn relay_resolutions(
    from: Queue<Value>,
    resolutions: Vec<Resolution>,
    acknowledged: bool,
) -> Result<Relayed> {
    let (mut total, decided) = deliver(&from, &resolutions, acknowledged).await?;
    let mut work = Vec::with_capacity(decided.len());
    for (name, ids) in decided {
        work.push((from.connector().queue::<Value>(&name)?, Some(ids)));
    }
    if !work.is_empty() {
        let (_, relayed) = relay_reading(from.connector(), work).await?;
        total.add(relayed);
    }
    Ok(total)
}

/// `FLOW.OUTBOX` of `queue`: the resolutions of `ids`, or the oldest.
async fn read_outbox<T>(queue: &Queue<T>, ids: Option<Vec<JobId>>) -> Result<Vec<Resolution>> {
    let t = Transition::FlowOutbox;
    let mut call = Call::new(t, None).arg("COUNT").int(OUTBOX_COUNT);
    if let Some(ids) = ids {
        call = call.arg("JOBS");
        for id in &ids {
            call = call.arg(id.as_str());
        }
    }
    let mut resolutions = Vec::new();
    for entry in decode::array(t, queue.call(call).await?)? {
        let mut parts = decode::array(t, entry)?.into_iter();
        let (Some(id), Some(text), Some(dependents)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(decode::unexpected(t, &Value::Nil));
        };
        let mut pairs = Vec::new();
        for pair in decode::array(t, dependents)?.chunks(2) {
            let [q, dependent] = pair else {
                return Err(decode::unexpected(t, &Value::Nil));
            };
            pairs.push((
                decode::text(t, q.clone())?,
                JobId::new(decode::text(t, dependent.clone())?)?,
            ));
        }
        resolutions.push(Resolution {
            id: JobId::new(decode::text(t, id)?)?,
            text: decode::bytes(t, text)?,
            dependents: pairs,
        });
    }
    Ok(resolutions)
}

/// Delivers `resolutions` of queue `from`: `FLOW.RESOLVE` per dependent
/// queue, `FLOW.ACK` in `from` for every edge answered when
/// `acknowledged`. Answers what was delivered, and by queue the dependents
/// their policy decided that have dependents of their own.
async fn deliver(
    from: &Queue<Value>,
    resolutions: &[Resolution],
    acknowledged: bool,
) -> Result<(Relayed, BTreeMap<String, Vec<JobId>>)> {
    let mut by_queue: BTreeMap<&str, Vec<Edge<'_>>> = BTreeMap::new();
    for resolution in resolutions {
        for (queue, dependent) in &resolution.dependents {
            by_queue.entry(queue.as_str()).or_default().push(Edge {
                dependency: &resolution.id,
                text: &resolution.text,
                dependent,
            });
        }
    }
    let mut relayed = Relayed::default();
    let mut decided: BTreeMap<String, Vec<JobId>> = BTreeMap::new();
    for (name, edges) in by_queue {
        let to = from.connector().queue::<Value>(name)?;
        for chunk in chunks(&edges) {
            let words = match resolve(from, &to, chunk).await {
                Ok(words) => words,
                Err(err) => {
                    tracing::debug!(from = %from.name(), to = name, "relay refused: {err}");
                    relayed.left += chunk.len() as u64;
                    continue;
                }
            };
            for (edge, word) in chunk.iter().zip(&words) {
                match word.as_str() {
                    "already" | "gone" => relayed.already += 1,
                    word => {
                        relayed.resolved += 1;
                        match word {
                            "unblocked" => relayed.unblocked += 1,
                            "dead" | "cancelled" => relayed.decided += 1,
                            "relay_dead" | "relay_cancelled" => {
                                relayed.decided += 1;
                                decided
                                    .entry(name.to_string())
                                    .or_default()
                                    .push(edge.dependent.clone());
                            }
                            _ => {}
                        }
                    }
                }
            }
            if acknowledged {
                acknowledge(from, name, chunk).await?;
            }
        }
    }
    Ok((relayed, decided))
}

/// `edges` cut into calls of at most [`EDGES_PER_CALL`] edges and about
/// [`BYTES_PER_CALL`] bytes of text.
fn chunks<'e, 'a>(edges: &'e [Edge<'a>]) -> Vec<&'e [Edge<'a>]> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (at, edge) in edges.iter().enumerate() {
        let full = at - start == EDGES_PER_CALL || bytes + edge.text.len() > BYTES_PER_CALL;
        if at > start && full {
            out.push(&edges[start..at]);
            (start, bytes) = (at, 0);
        }
        bytes += edge.text.len();
    }
    if start < edges.len() {
        out.push(&edges[start..]);
    }
    out
}

/// `FLOW.RESOLVE` on the dependents' queue `to`: one word per edge.
async fn resolve(
    from: &Queue<Value>,
    to: &Queue<Value>,
    edges: &[Edge<'_>],
) -> Result<Vec<String>> {
    let t = Transition::FlowResolve;
    let mut call = Call::new(t, None);
    for edge in edges {
        call = call
            .arg(from.name().as_str())
            .arg(edge.dependency.as_str())
            .arg(edge.text.to_vec())
            .arg(edge.dependent.as_str());
    }
    let words = decode::array(t, to.call(call).await?)?;
    if words.len() != edges.len() {
        return Err(decode::unexpected(t, &Value::Int(words.len() as i64)));
    }
    words
        .into_iter()
        .map(|word| decode::text(t, word))
        .collect()
}

/// `FLOW.ACK` in `from` of `edges`, whose dependents are in queue `to`.
async fn acknowledge(from: &Queue<Value>, to: &str, edges: &[Edge<'_>]) -> Result<()> {
    let mut call = Call::new(Transition::FlowAck, None);
    for edge in edges {
        call = call
            .arg(edge.dependency.as_str())
            .arg(to)
            .arg(edge.dependent.as_str());
    }
    decode::int(Transition::FlowAck, from.call(call).await?)?;
    Ok(())
}
