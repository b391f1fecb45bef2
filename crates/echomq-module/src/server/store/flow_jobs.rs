//! Flows (docs/protocol.md, "Flows"): FLOW.ADD and its bulk form once
//! arguments are checked, and the pages of FLOW.DEPS and FLOW.DEPENDENTS,
//! the twins of `scripts/include/flow_jobs.lua`. A job with dependencies
//! is created blocked; one without, as ENQUEUE and SCHEDULE create it
//! (`batch.rs`).

use crate::server::args::{WRONGTYPE, refuse};
use crate::server::clock::now_ms;
use crate::server::key::{Digits, Kind};
use crate::server::reply::{bulk, int};
use crate::server::store::{NewJob, Store, number};
use echomq_protocol::QueueKey;
use echomq_protocol::arg::FLOW_CHECKUP_MS;
use echomq_protocol::keyspace::{DEPENDENTS_INFIX, DEPS_INFIX, RESOLUTION_INFIX};
use valkey_module::{ValkeyError, ValkeyValue};

/// A job of a flow to add: the job as an enqueue would create it (its
/// `extra` fields made by [`flow_job`]), its dependencies (`after`) and
/// dependents (`before`) as the fields of its edge hashes.
pub(crate) struct FlowJob {
    pub job: NewJob,
    pub after: Vec<Vec<u8>>,
    pub before: Vec<Vec<u8>>,
}

/// Makes `job` a job of flow `flow` (`flow_jobs.job`): the fields its hash
/// gets past an enqueue's: flow, ref, on_failure (unless fail), deps and
/// deps_left (with dependencies), dependents (with dependents).
pub(crate) fn flow_job(
    mut job: NewJob,
    (flow, reference, policy): (&[u8], Vec<u8>, &[u8]),
    after: Vec<Vec<u8>>,
    before: Vec<Vec<u8>>,
) -> FlowJob {
    let mut extra = vec![b"flow".to_vec(), flow.to_vec(), b"ref".to_vec(), reference];
    if policy != b"fail" {
        extra.extend([b"on_failure".to_vec(), policy.to_vec()]);
    }
    if !after.is_empty() {
        let deps = after.len().to_string().into_bytes();
        extra.extend([b"deps".to_vec(), deps.clone(), b"deps_left".to_vec(), deps]);
    }
    if !before.is_empty() {
        extra.extend([
            b"dependents".to_vec(),
            before.len().to_string().into_bytes(),
        ]);
    }
    job.extra = extra;
    FlowJob { job, after, before }
}

/// The field that names a job of the queue `base` in an edge list or hash
/// (`flow_jobs.own_field`): `<queue> <id>`.
pub(crate) fn own_field(base: &[u8], id: &[u8]) -> Vec<u8> {
    let queue = base
        .iter()
        .rposition(|b| *b == b'{')
        .map_or(&b""[..], |at| &base[at + 1..base.len() - 1]);
    [queue, b" ", id].concat()
}

impl Store<'_> {
    /// `<base><infix><id>`: a job's deps, dependents or resolution key.
    fn flow_key(&self, infix: &str, id: &[u8]) -> Vec<u8> {
        [self.base(), infix.as_bytes(), id].concat()
    }

    /// Who holds the id (`flow_jobs.id_holder`): nothing (`None`), or its
    /// flow id (`Some(None)` for none) read from its job hash, or from its
    /// resolution when only that is left; each key checked a hash.
    fn id_holder(&self, id: &[u8]) -> Result<Option<Option<Vec<u8>>>, ValkeyError> {
        let key = self.job_key(id);
        match self.kind(&key) {
            Kind::Hash => return Ok(Some(self.hget(&key, b"flow")?)),
            Kind::None => {}
            _ => return Err(refuse(WRONGTYPE)),
        }
        let resolution = self.flow_key(RESOLUTION_INFIX, id);
        match self.kind(&resolution) {
            Kind::Hash => Ok(Some(
                self.hget(&resolution, b"flow")?
                    .filter(|flow| !flow.is_empty()),
            )),
            Kind::None => Ok(None),
            _ => Err(refuse(WRONGTYPE)),
        }
    }

    /// FLOW.ADD and FLOW.ADD.BULK once arguments are checked
    /// (`flow_jobs.add`): the settings read, every key's type checked and
    /// every id's holder read before the first write, then the `flows`
    /// mark, the jobs without dependencies created as ENQUEUE and SCHEDULE
    /// create them, the blocked ones, and each new job's dependents hash.
    /// Returns `(id, created)` per job.
    pub(crate) fn add_flow_jobs(
        &self,
        flow: &[u8],
        jobs: Vec<FlowJob>,
    ) -> Result<Vec<(Vec<u8>, i64)>, ValkeyError> {
        let conf = self.enqueue_settings()?;
        self.expect_types(&[
            (QueueKey::Seq, Kind::String),
            (QueueKey::Pending, Kind::Zset),
            (QueueKey::Schedule, Kind::Zset),
            (QueueKey::Events, Kind::Stream),
            (QueueKey::Signal, Kind::Zset),
            (QueueKey::Blocked, Kind::Zset),
        ])?;
        let group = jobs.first().and_then(|job| job.job.group.as_deref());
        self.read_group(conf.groups || group.is_some(), true, group)?;
        if jobs
            .first()
            .is_some_and(|job| job.job.deadlines.start_by.is_some())
        {
            self.expect_types(&[(QueueKey::Deadlines, Kind::Zset)])?;
        }
        // Every id checked before the first write (`flow_jobs.to_create`).
        let mut reply = Vec::with_capacity(jobs.len());
        let mut seen = std::collections::HashSet::new();
        let (mut blocked, mut free) = (Vec::new(), Vec::new());
        for job in jobs {
            let id = job.job.id.clone();
            let mut created = 0;
            if seen.insert(id.clone()) {
                match self.id_holder(&id)? {
                    None => {
                        created = 1;
                        if !job.after.is_empty() {
                            self.expect_type_of(&self.flow_key(DEPS_INFIX, &id), Kind::Hash)?;
                        }
                        if !job.before.is_empty() {
                            let key = self.flow_key(DEPENDENTS_INFIX, &id);
                            self.expect_type_of(&key, Kind::Hash)?;
                        }
                        if job.after.is_empty() {
                            free.push(job);
                        } else {
                            blocked.push(job);
                        }
                    }
                    Some(held) if held.as_deref() == Some(flow) => {}
                    Some(held) => {
                        let holder = held.as_deref().unwrap_or(b"-");
                        return Err(refuse(format!(
                            "CONFLICT {}",
                            crate::server::args::reply_text(holder)
                        )));
                    }
                }
            }
            reply.push((id, created));
        }
        if blocked.is_empty() && free.is_empty() {
            return Ok(reply);
        }
        self.hset(self.key(QueueKey::Meta), &[b"flows", b"1"])?;
        let now = now_ms();
        let mut dependents: Vec<(Vec<u8>, Vec<Vec<u8>>)> = Vec::new();
        if !free.is_empty() {
            let mut jobs = Vec::with_capacity(free.len());
            for job in free {
                dependents.push((job.job.id.clone(), job.before));
                jobs.push(job.job);
            }
            self.enqueue_jobs(&conf, jobs, now)?;
        }
        if !blocked.is_empty() {
            for job in &blocked {
                dependents.push((job.job.id.clone(), job.before.clone()));
            }
            self.enter_blocked(blocked, now)?;
        }
        for (id, before) in dependents {
            if before.is_empty() {
                continue;
            }
            let mut told: Vec<&[u8]> = Vec::with_capacity(before.len() * 2);
            for field in &before {
                told.extend([field.as_slice(), b"0"]);
            }
            self.hset_data(&self.flow_key(DEPENDENTS_INFIX, &id), &told)?;
        }
        Ok(reply)
    }

    /// Creates the `blocked` jobs (`flow_jobs.enter_blocked`): the marks
    /// (from the settings as the call's earlier writes left them), each
    /// hash in state blocked (its run_at resolved at `now`), in `blocked`
    /// scored for its check-up, its deps hash of `wait` fields, the event
    /// `blocked` (deps), and the start-by deadlines.
    fn enter_blocked(&self, blocked: Vec<FlowJob>, now: u64) -> Result<(), ValkeyError> {
        let conf = self.enqueue_settings()?;
        self.mark_created(&conf, blocked.iter().map(|job| &job.job))?;
        let now_s = now.to_string();
        let checkup = now.saturating_add(FLOW_CHECKUP_MS) as i64;
        let mut scored = Vec::with_capacity(blocked.len());
        for FlowJob { job, after, .. } in &blocked {
            let run_at = job.run_at.map(|run_at| run_at.at(now).to_string());
            self.create(
                &self.job_key(&job.id),
                job,
                b"blocked",
                run_at.as_ref(),
                &now_s,
            )?;
            let mut edges: Vec<&[u8]> = Vec::with_capacity(after.len() * 2);
            for field in after {
                edges.extend([field.as_slice(), b"wait"]);
            }
            self.hset_data(&self.flow_key(DEPS_INFIX, &job.id), &edges)?;
            scored.push((checkup, job.id.as_slice()));
        }
        self.zadd(self.key(QueueKey::Blocked), &scored)?;
        for FlowJob { job, after, .. } in &blocked {
            let deps = Digits::of(after.len() as u64);
            self.emit(
                conf.events_max,
                &[
                    b"event",
                    b"blocked",
                    b"id",
                    &job.id,
                    b"deps",
                    deps.as_bytes(),
                ],
            )?;
        }
        let deadlined: Vec<(i64, &[u8])> = blocked
            .iter()
            .filter_map(|FlowJob { job, .. }| {
                Some((job.deadlines.start_by? as i64, job.id.as_slice()))
            })
            .collect();
        self.add_deadlines(&deadlined)
    }

    /// FLOW.DEPS and FLOW.DEPENDENTS (`edge_page`): `HSCAN`'s page of the
    /// edge hash of `id` (`infix`) from `cursor`, `count` its hint, as
    /// `[next_cursor, [queue, id, value, …]]`; `told` gives each value as
    /// the integer it is.
    pub(crate) fn edge_page(
        &self,
        infix: &str,
        id: &[u8],
        (cursor, count): (u64, u64),
        told: bool,
    ) -> Result<ValkeyValue, ValkeyError> {
        let key = self.flow_key(infix, id);
        self.expect_type_of(&key, Kind::Hash)?;
        let (next, items) = self.hscan(&key, cursor.to_string().as_bytes(), count)?;
        let mut out = Vec::with_capacity(items.len() / 2 * 3);
        let mut items = items.into_iter();
        while let (Some(field), Some(value)) = (items.next(), items.next()) {
            let field = field.bytes().unwrap_or_default();
            let gap = field.iter().position(|b| *b == b' ').unwrap_or(field.len());
            out.push(bulk(&field[..gap]));
            out.push(bulk(field.get(gap + 1..).unwrap_or_default()));
            let value = value.bytes().unwrap_or_default();
            match number(Some(&value)) {
                Some(n) if told => out.push(int(n)),
                _ => out.push(bulk(value)),
            }
        }
        Ok(ValkeyValue::Array(vec![
            bulk(next),
            ValkeyValue::Array(out),
        ]))
    }
}
