//! The check-up (docs/protocol.md, "The check-up"): the dependent's side
//! of the backstop. `FLOW.CHECKUP` lists the blocked jobs of a queue whose
//! check-up is due (five minutes after they blocked, then every five
//! minutes), with their edges still `wait`; for each, `FLOW.LINK` on the
//! dependency's queue asks what became of it:
//!
//! - `[waiting]`: the dependency is undecided and knows the edge.
//! - `[decided, text]`: its resolution, delivered as the relay delivers
//!   (`FLOW.RESOLVE` on the dependent's queue, then `FLOW.ACK`): a
//!   resolution no relay delivered, or one a failover lost.
//! - `NOJOB`: the dependency was never written (a submit that died), or
//!   went after its resolution was lost: `removed -` is delivered, and the
//!   dependent's policy decides.
//!
//! A submit sends the same `FLOW.LINK` for a dependency outside its flow
//! ([`tell`]).

use super::relay::{Relayed, Resolution, relay_resolutions};
use crate::error::{Error, Result};
use crate::queue::Queue;
use crate::transport::decode;
use crate::transport::dispatch::Call;
use echomq_protocol::{JobId, Refusal, Transition};
use redis::Value;
use std::collections::BTreeMap;

/// Edges one `FLOW.CHECKUP` lists at most (the sweep's pass).
const CHECKUP_COUNT: u64 = 1000;
/// Passes one [`Queue::checkup`] makes at most before it answers.
const MOST_PASSES: usize = 100;
/// The resolution of a dependency that does not exist.
const REMOVED: &[u8] = b"removed -";

/// What check-up passes found and did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckedUp {
    /// Blocked jobs whose check-up was due.
    pub jobs: u64,
    /// Their edges still waiting, asked about on the dependencies' queues.
    pub edges: u64,
    /// Of those, edges whose dependency is undecided: nothing to do.
    pub waiting: u64,
    /// Of those, edges whose dependency does not exist: resolved `removed`,
    /// the dependent's policy deciding.
    pub missing: u64,
    /// Edges the dependency's queue refused to be asked about (an ACL
    /// without it, a lost connection): asked again at the next check-up.
    pub left: u64,
    /// What was delivered: the resolutions of decided dependencies, and
    /// the `removed` of missing ones.
    pub relayed: Relayed,
}

impl CheckedUp {
    fn add(&mut self, other: CheckedUp) {
        self.jobs += other.jobs;
        self.edges += other.edges;
        self.waiting += other.waiting;
        self.missing += other.missing;
        self.left += other.left;
        self.relayed.add(other.relayed);
    }
}

/// What `FLOW.LINK` answered.
enum Linked {
    Waiting,
    Decided(Vec<u8>),
    Missing,
}

/// `FLOW.LINK` of `dependency` in queue `from`, naming `dependents`, then
/// what its answer asks: nothing while the dependency is undecided; its
/// resolution delivered to the dependents (and acknowledged in `from`)
/// once it is decided; `removed -` delivered when it does not exist. An
/// error of the link is returned; one of the delivery is logged, and
/// leaves it to the relay or the next check-up (`left`).
pub(super) async fn tell(
    from: &Queue<Value>,
    dependency: &JobId,
    dependents: Vec<(String, JobId)>,
) -> Result<CheckedUp> {
    let edges = dependents.len() as u64;
    let mut checked = CheckedUp {
        edges,
        ..CheckedUp::default()
    };
    let (text, acknowledged) = match link(from, dependency, &dependents).await? {
        Linked::Waiting => {
            checked.waiting = edges;
            return Ok(checked);
        }
        Linked::Decided(text) => (text, true),
        Linked::Missing => {
            checked.missing = edges;
            (REMOVED.to_vec(), false)
        }
    };
    let resolution = Resolution {
        id: dependency.clone(),
        text,
        dependents,
    };
    match relay_resolutions(from.clone(), vec![resolution], acknowledged).await {
        Ok(relayed) => checked.relayed = relayed,
        Err(err) => {
            tracing::debug!(queue = %from.name(), dependency = %dependency,
                "delivery left for the relay or the next check-up: {err}");
            checked.left = edges;
        }
    }
    Ok(checked)
}

/// `FLOW.LINK base dependency queue dependent …`, its answer.
async fn link(
    from: &Queue<Value>,
    dependency: &JobId,
    dependents: &[(String, JobId)],
) -> Result<Linked> {
    let t = Transition::FlowLink;
    let mut call = Call::new(t, None).arg(dependency.as_str());
    for (queue, dependent) in dependents {
        call = call.arg(queue.as_str()).arg(dependent.as_str());
    }
    let reply = match from.call(call).await {
        Ok(reply) => reply,
        Err(Error::Refused(refused)) if refused.reason == Refusal::NoJob => {
            return Ok(Linked::Missing);
        }
        Err(err) => return Err(err),
    };
    let mut words = decode::array(t, reply)?.into_iter();
    match (words.next(), words.next()) {
        (Some(word), None) if decode::text(t, word.clone())? == "waiting" => Ok(Linked::Waiting),
        (Some(word), Some(text)) if decode::text(t, word.clone())? == "decided" => {
            Ok(Linked::Decided(decode::bytes(t, text)?))
        }
        _ => Err(decode::unexpected(t, &Value::Nil)),
    }
}

impl<T> Queue<T> {
    /// Runs this queue's due check-ups: each blocked job blocked (or last
    /// checked) five minutes ago or more has each edge still waiting asked
    /// about on its dependency's queue, and what it finds is delivered — a
    /// resolution no relay delivered, an edge a failover lost, a dependency
    /// a submit never wrote (`removed`: the dependent's policy decides).
    /// Passes until no check-up is due. Workers' sweeps run one pass by
    /// themselves on a queue that uses flows; an operator runs this with
    /// `emq flow relay`.
    pub async fn checkup(&self) -> Result<CheckedUp> {
        let mut total = CheckedUp::default();
        for _ in 0..MOST_PASSES {
            let checked = self.checkup_pass().await?;
            total.add(checked);
            if checked.jobs == 0 {
                break;
            }
        }
        Ok(total)
    }

    /// The sweep's flow passes (docs/protocol.md, "Who relays"): on a
    /// queue whose meta has the `flows` mark (a queue without flows pays
    /// this one read a sweep), one outbox pass and one check-up pass.
    pub(crate) async fn sweep_flows(&self) {
        // HMGET: a worker's ACL grants it (the cap's read), not HGET.
        let mark: Result<Vec<Option<String>>> = self
            .query(redis::cmd("HMGET").arg(self.keys().meta()).arg("flows"))
            .await;
        match mark {
            Ok(mark) if mark.first().is_some_and(|m| m.as_deref() == Some("1")) => {}
            Ok(_) => return,
            Err(err) => {
                tracing::debug!(queue = %self.name(), "flows mark unread, swept anyway: {err}")
            }
        }
        self.relay_quietly().await;
        self.checkup_quietly().await;
    }

    /// One check-up pass of at most [`CHECKUP_COUNT`] edges, its error
    /// logged (the sweep's: what it leaves, the next sweep finds).
    async fn checkup_quietly(&self) {
        if let Err(err) = self.checkup_pass().await {
            tracing::debug!(queue = %self.name(), "check-up left for the next sweep: {err}");
        }
    }

    /// One pass: `FLOW.CHECKUP`, then each dependency asked once for all
    /// its dependents listed. A dependency's queue that refuses leaves its
    /// edges for the next check-up.
    async fn checkup_pass(&self) -> Result<CheckedUp> {
        let listed = read_checkup(self).await?;
        let mut checked = CheckedUp {
            jobs: listed.len() as u64,
            ..CheckedUp::default()
        };
        let name = self.name().as_str();
        let mut by_dependency: BTreeMap<(String, JobId), Vec<(String, JobId)>> = BTreeMap::new();
        for (dependent, edges) in listed {
            for edge in edges {
                by_dependency
                    .entry(edge)
                    .or_default()
                    .push((name.to_string(), dependent.clone()));
            }
        }
        for ((queue, dependency), dependents) in by_dependency {
            let edges = dependents.len() as u64;
            let from = self.connector().queue::<Value>(&queue)?;
            match tell(&from, &dependency, dependents).await {
                Ok(told) => checked.add(told),
                Err(err) => {
                    tracing::debug!(queue = name, dependency = %dependency, to = queue,
                        "check-up refused: {err}");
                    checked.edges += edges;
                    checked.left += edges;
                }
            }
        }
        Ok(checked)
    }
}

/// `FLOW.CHECKUP COUNT n` of `queue`: each due job and its waiting edges.
async fn read_checkup<T>(queue: &Queue<T>) -> Result<Vec<(JobId, Vec<(String, JobId)>)>> {
    let t = Transition::FlowCheckup;
    let call = Call::new(t, None).arg("COUNT").int(CHECKUP_COUNT);
    let mut listed = Vec::new();
    for entry in decode::array(t, queue.call(call).await?)? {
        let mut parts = decode::array(t, entry)?.into_iter();
        let (Some(id), Some(edges)) = (parts.next(), parts.next()) else {
            return Err(decode::unexpected(t, &Value::Nil));
        };
        let mut pairs = Vec::new();
        for pair in decode::array(t, edges)?.chunks(2) {
            let [q, dependency] = pair else {
                return Err(decode::unexpected(t, &Value::Nil));
            };
            pairs.push((
                decode::text(t, q.clone())?,
                JobId::new(decode::text(t, dependency.clone())?)?,
            ));
        }
        listed.push((JobId::new(decode::text(t, id)?)?, pairs));
    }
    Ok(listed)
}
