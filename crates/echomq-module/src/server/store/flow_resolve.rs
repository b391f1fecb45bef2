//! FLOW.RESOLVE once its arguments are checked (docs/protocol.md,
//! "Flows"; `scripts/flow_resolve.lua` and the helpers of
//! `scripts/include/flow_jobs.lua`): each edge still `wait` takes its
//! resolution, and a blocked dependent is unblocked at its last edge or
//! decided by its failure policy; and what CANCEL shares with a policy:
//! deciding a waiting job at once.

use crate::server::key::Kind;
use crate::server::store::metrics::Tally;
use crate::server::store::outbox::{Due, dead_tail};
use crate::server::store::own_edges::Took;
use crate::server::store::{Settings, Store, number};
use echomq_protocol::QueueKey;
use echomq_protocol::arg::TRIM_PER_TRANSITION;
use echomq_protocol::metrics::Outcome;
use valkey_module::ValkeyError;

/// One group of FLOW.RESOLVE: the field `<queue> <dependency>` of the
/// dependent's deps hash, the resolution text and its outcome word, the
/// dependent's id.
pub(crate) struct Edge {
    pub field: Vec<u8>,
    pub text: Vec<u8>,
    pub outcome: Vec<u8>,
    pub dependent: Vec<u8>,
}

/// A blocked dependent whose last edge resolved in this call (FLOW.RESOLVE,
/// COMPLETE), held until every edge of the call is taken
/// ([`Store::unblock_held`]; `own_edges.unblock`): the call's
/// `dependency_resolved` events then share entries, and so do its
/// `unblocked` ones.
pub(crate) struct Unblocking {
    id: Vec<u8>,
    priority: i64,
    group: Option<Vec<u8>>,
    run_at: Option<Vec<u8>>,
}

impl Unblocking {
    /// Dependent `id`, with its priority, group and run_at.
    pub(crate) fn new(
        id: &[u8],
        priority: i64,
        group: Option<&[u8]>,
        run_at: Option<&[u8]>,
    ) -> Self {
        Self {
            id: id.to_vec(),
            priority,
            group: group.map(<[u8]>::to_vec),
            run_at: run_at.map(<[u8]>::to_vec),
        }
    }
}

/// What deciding a waiting job reads of it: whether someone waits for its
/// outcome, its failures and its dedup key.
#[derive(Default)]
pub(crate) struct WaitingJob<'a> {
    pub waited: Option<&'a [u8]>,
    pub failures: Option<&'a [u8]>,
    pub dedup: Option<&'a [u8]>,
    pub dedup_mode: Option<&'a [u8]>,
}

/// Where a waiting job decided at once goes (`decide_waiting`'s
/// `decision`): `dead` (its `error`) or `cancelled`, with a `reason` when
/// some, and its resolution when due.
pub(crate) struct Decision<'a> {
    pub to: QueueKey,
    pub error: &'a [u8],
    pub reason: Option<&'a [u8]>,
    pub due: Option<&'a Due>,
}

impl Store<'_> {
    /// A waiting job (pending, scheduled or blocked) already out of its
    /// set, decided at once (`decide_waiting`: CANCEL; a failure policy of
    /// FLOW.RESOLVE): → `dead` (failures unchanged) or `cancelled`, the
    /// event, the outcome to a waiter, its dedup key released, its
    /// resolution written, the finished set trimmed. The caller counts the
    /// metrics. Whether it wrote a resolution.
    pub(crate) fn decide_waiting(
        &self,
        conf: &Settings,
        id: &[u8],
        job: &WaitingJob<'_>,
        decision: Decision<'_>,
        now: u64,
    ) -> Result<bool, ValkeyError> {
        let now_s = now.to_string();
        let dead = decision.to == QueueKey::Dead;
        let word: &[u8] = if dead { b"dead" } else { b"cancelled" };
        let mut fields: Vec<&[u8]> = vec![b"state", word, b"finished_at", now_s.as_bytes()];
        if let Some(reason) = decision.reason {
            fields.extend([&b"reason"[..], reason]);
        }
        self.zadd(self.key(decision.to), &[(now as i64, id)])?;
        let failures = number(job.failures).unwrap_or(0).to_string();
        let tail = dead.then(|| dead_tail(number(job.failures).unwrap_or(0), decision.error));
        if dead {
            fields.extend([&b"error"[..], decision.error]);
            self.hset(&self.job_key(id), &fields)?;
            self.emit(
                conf.events_max,
                &[b"event", b"dead", b"id", id, b"error", decision.error],
            )?;
            self.publish_outcome(
                job.waited,
                id,
                &[b"dead", failures.as_bytes(), decision.error],
            )?;
        } else {
            self.hset(&self.job_key(id), &fields)?;
            self.emit(conf.events_max, &[b"event", b"cancelled", b"id", id])?;
            self.publish_outcome(job.waited, id, &[b"cancelled"])?;
        }
        self.release_dedup(id, job.dedup, job.dedup_mode)?;
        let relay = self.write_resolution(id, decision.due, word, tail.as_deref(), now)?;
        self.trim_finished(conf, decision.to, TRIM_PER_TRANSITION as i64, now)?;
        Ok(relay)
    }

    /// Each dependent of `held`, in order ([`Store::unblock`]), out of
    /// `blocked` first, in one call.
    pub(crate) fn unblock_held(
        &self,
        conf: &Settings,
        held: Vec<Unblocking>,
        now: u64,
    ) -> Result<(), ValkeyError> {
        if held.is_empty() {
            return Ok(());
        }
        let ids: Vec<&[u8]> = held.iter().map(|job| job.id.as_slice()).collect();
        self.zrem(self.key(QueueKey::Blocked), &ids)?;
        for job in held {
            let fields = (job.priority, job.group.as_deref(), job.run_at.as_deref());
            self.unblock(conf, &job.id, fields, now)?;
        }
        Ok(())
    }

    /// A blocked job whose last edge resolved, already out of `blocked`
    /// (`own_edges.unblock_one`): to the schedule at its run_at when later than
    /// `now`, else into pending as every path there (`back_to_pending`),
    /// run_at = now; deps_left 0 (an own-queue edge leaves it to this
    /// write), its deadline kept, a worker signalled, the event `unblocked`
    /// (to).
    fn unblock(
        &self,
        conf: &Settings,
        id: &[u8],
        (priority, group, run_at): (i64, Option<&[u8]>, Option<&[u8]>),
        now: u64,
    ) -> Result<(), ValkeyError> {
        let key = self.job_key(id);
        let later = number(run_at).filter(|at| *at > now as i64);
        let to: &[u8] = if let Some(at) = later {
            self.zadd(self.key(QueueKey::Schedule), &[(at, id)])?;
            self.hset(&key, &[b"state", b"scheduled", b"deps_left", b"0"])?;
            self.signal(at as u64)?;
            self.keep_deadline(conf.timed, id)?;
            b"scheduled"
        } else {
            self.back_to_pending(conf, id, priority, group, now)?;
            let now_s = now.to_string();
            let fields: [&[u8]; 6] = [
                b"state",
                b"pending",
                b"run_at",
                now_s.as_bytes(),
                b"deps_left",
                b"0",
            ];
            self.hset(&key, &fields)?;
            self.signal(0)?;
            b"pending"
        };
        self.emit(
            conf.events_max,
            &[b"event", b"unblocked", b"id", id, b"to", to],
        )
    }

    /// Every key a group of FLOW.RESOLVE may touch, its type checked before
    /// the first write: the dependent's hash and deps hash, its dependents
    /// hash and resolution when its policy may decide it (a resolution not
    /// `completed`), its group's lane, the dedup owner hash for a job with
    /// a dedup key.
    pub(crate) fn expect_edge_types(
        &self,
        conf: &Settings,
        edge: &Edge,
    ) -> Result<(), ValkeyError> {
        let key = self.job_key(&edge.dependent);
        self.expect_type_of(&key, Kind::Hash)?;
        self.expect_type_of(&self.deps_key(&edge.dependent), Kind::Hash)?;
        // Written only when its policy decides the dependent.
        if conf.flows && edge.outcome != b"completed" {
            self.expect_type_of(&self.dependents_key(&edge.dependent), Kind::Hash)?;
            self.expect_type_of(&self.resolution_key(&edge.dependent), Kind::Hash)?;
        }
        let [group, dedup] = self.hmget_n(&key, [b"group", b"dedup"])?;
        if let Some(group) = group.filter(|_| conf.groups) {
            self.read_lane(&group)?;
        }
        if dedup.is_some() {
            self.expect_owner_type()?;
        }
        Ok(())
    }

    /// One group of FLOW.RESOLVE once every type is checked (`resolve`):
    /// its answer; a dependent its policy decided is counted in `tally`,
    /// one at its last edge held in `held` (see [`Unblocking`]).
    pub(crate) fn resolve_edge(
        &self,
        conf: &Settings,
        edge: &Edge,
        now: u64,
        (tally, held): (&mut Tally, &mut Vec<Unblocking>),
    ) -> Result<&'static str, ValkeyError> {
        let id = &edge.dependent;
        let Took {
            fields:
                [
                    state,
                    _,
                    policy,
                    priority,
                    group,
                    run_at,
                    failures,
                    dedup,
                    mode,
                ],
            waited,
            dependents,
            left,
        } = match self.take_edge(conf, edge)? {
            Ok(took) => took,
            Err(word) => return Ok(word),
        };
        if state.as_deref() != Some(b"blocked") {
            return Ok("resolved");
        }
        let decided = match policy.as_deref() {
            _ if edge.outcome == b"completed" => None,
            None | Some(b"fail") => Some(QueueKey::Dead),
            Some(b"cancel") => Some(QueueKey::Cancelled),
            _ => None,
        };
        if let Some(to) = decided {
            let due = self.resolution_due(conf.flows, id, dependents.as_deref(), true)?;
            self.zrem(self.key(QueueKey::Blocked), &[id])?;
            let error = [&b"dependency "[..], &edge.field, b" is ", &edge.outcome].concat();
            let job = WaitingJob {
                waited: waited.as_deref(),
                failures: failures.as_deref(),
                dedup: dedup.as_deref(),
                dedup_mode: mode.as_deref(),
            };
            let decision = Decision {
                to,
                error: &error,
                reason: Some(b"dependency"),
                due: due.as_ref(),
            };
            let relay = self.decide_waiting(conf, id, &job, decision, now)?;
            let dead = to == QueueKey::Dead;
            tally.outcome(if dead {
                Outcome::Dead
            } else {
                Outcome::Cancelled
            });
            return Ok(match (dead, relay) {
                (true, true) => "relay_dead",
                (true, false) => "dead",
                (false, true) => "relay_cancelled",
                (false, false) => "cancelled",
            });
        }
        if left > 0 {
            return Ok("resolved");
        }
        let group = group.filter(|_| conf.groups);
        let priority = number(priority.as_deref()).unwrap_or(0);
        held.push(Unblocking::new(
            id,
            priority,
            group.as_deref(),
            run_at.as_deref(),
        ));
        Ok("unblocked")
    }
}
