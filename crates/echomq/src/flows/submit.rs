//! Submitting a flow (docs/protocol.md, "Submitting a flow"): the plan's
//! waves, dependents first, each wave's jobs sent queue by queue at once
//! (`FLOW.ADD.BULK` for runs of plain jobs, `FLOW.ADD` for a job with a
//! run-at or an option; a queue's calls pipelined in the plan's order, so
//! a dependent in the same queue is written first), a wave only once the
//! one before has answered.

use super::checkup::tell;
use super::plan::{Plan, Planned, plan};
use super::{Flow, FlowJob, JobRef};
use crate::error::{Error, Result};
use crate::job::{Enqueued, NewJob};
use crate::queue::{Queue, check_attempts, decode_created};
use crate::transport::connector::Connector;
use crate::transport::decode;
use crate::transport::dispatch::{Call, Wire};
use echomq_protocol::{JobId, Transition};
use futures_util::future::try_join_all;
use redis::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// Jobs in one `FLOW.ADD.BULK` call, by wire (as the bulk enqueues cut
/// theirs).
const BULK_CHUNK: usize = 500;
const NATIVE_BULK_CHUNK: usize = 100;

/// What a submit answered: each job's id and whether this submit created
/// it, by ref, each an [`Enqueued`] to wait for its outcome.
#[derive(Clone)]
pub struct Submitted {
    flow: String,
    jobs: HashMap<Arc<str>, Enqueued>,
}

impl std::fmt::Debug for Submitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut jobs: Vec<(&str, &str)> = self
            .jobs
            .iter()
            .map(|(reference, job)| (&**reference, job.id.as_str()))
            .collect();
        jobs.sort();
        f.debug_struct("Submitted")
            .field("flow", &self.flow)
            .field("jobs", &jobs)
            .finish()
    }
}

impl Submitted {
    /// The flow's id.
    pub fn flow(&self) -> &str {
        &self.flow
    }

    /// The job `job` names.
    pub fn get(&self, job: &JobRef) -> Option<&Enqueued> {
        self.jobs.get(&job.reference)
    }

    /// The job whose ref is `name`.
    pub fn by_name(&self, name: &str) -> Option<&Enqueued> {
        self.jobs.get(name)
    }

    /// Every job, by ref, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Enqueued)> {
        self.jobs.iter().map(|(reference, job)| (&**reference, job))
    }

    /// How many jobs were created by this submit (the others existed, from
    /// an earlier submit of the same flow).
    pub fn created(&self) -> usize {
        self.jobs.values().filter(|job| job.created).count()
    }
}

impl std::ops::Index<&JobRef> for Submitted {
    type Output = Enqueued;

    /// The job `job` names; panics for a ref of another flow.
    fn index(&self, job: &JobRef) -> &Enqueued {
        self.get(job)
            .unwrap_or_else(|| panic!("job {} is not a job of flow {}", job.name(), self.flow))
    }
}

impl Connector {
    /// Submits `flow`: checks the whole graph first (a cycle, a ref used
    /// twice or unknown, a ref of another flow, a bad id or option, too
    /// many jobs or edges, a job outside the flow ([`Flow::existing`])
    /// that does not exist: [`Error::BadArgument`] naming it, and nothing
    /// is written), then writes its jobs dependents first, so no job is
    /// claimed before each job it depends on exists and has ended; then
    /// tells each job outside the flow of its new dependents, and delivers
    /// at once the outcome of one that has ended already.
    ///
    /// Idempotent by the flow's id: a job whose id exists in the same flow
    /// is left as it is ([`Enqueued::created`] is `false`), so submitting
    /// the flow again after an error finishes it and otherwise changes
    /// nothing. An id held by a job of another flow, or of none, is
    /// refused (`CONFLICT`). A flow's job does not take a dedup key or a
    /// repeat; a wait on it ([`Enqueued::outcome`]) reads the job once,
    /// [`NewJob::awaited`] or not.
    pub async fn submit(&self, flow: &Flow) -> Result<Submitted> {
        for job in &flow.jobs {
            check_job(job)?;
        }
        let nodes: Vec<_> = flow.jobs.iter().map(|job| job.node.clone()).collect();
        let plan = plan(flow.id(), &nodes)?;
        self.write_plan(flow.id(), flow, &plan).await
    }

    /// Writes the jobs of `flow` in `plan`'s waves as jobs of the flow
    /// `flow_id` (the flow's own id, or a spawning job's flow), dependents
    /// first, each job outside the flow read before and linked after, then
    /// registers their queues.
    pub(crate) async fn write_plan(
        &self,
        flow_id: &str,
        flow: &Flow,
        plan: &Plan,
    ) -> Result<Submitted> {
        let outside = self.read_outside(plan).await?;
        let queues: Vec<Arc<Queue>> = flow
            .jobs
            .iter()
            .map(|job| Arc::new(job.queue.through(self.clone())))
            .collect();
        let mut jobs = HashMap::with_capacity(flow.jobs.len());
        for wave in &plan.waves {
            let written = self.write_wave((flow_id, flow), &queues, wave).await?;
            for (index, enqueued) in written {
                let reference = Arc::from(flow.jobs[index].node.reference.as_str());
                jobs.insert(reference, enqueued);
            }
        }
        for (from, (dependency, dependents)) in outside.iter().zip(&plan.outside) {
            tell(from, &dependency.1, dependents.clone()).await?;
        }
        for queue in unique_queues(&queues) {
            queue.register().await;
        }
        Ok(Submitted {
            flow: flow_id.to_string(),
            jobs,
        })
    }

    /// The queues of the jobs outside the flow that its jobs run after, in
    /// the plan's order, each job read first: one that does not exist
    /// refuses the flow before anything is written.
    async fn read_outside(&self, plan: &Plan) -> Result<Vec<Queue<Value>>> {
        let mut queues = Vec::with_capacity(plan.outside.len());
        for ((queue, id), dependents) in &plan.outside {
            let from = self.queue::<Value>(queue)?;
            if from.jobs().get(id).await?.is_none() {
                let (dependent_queue, dependent) = &dependents[0];
                return Err(Error::BadArgument {
                    name: "flow",
                    reason: format!(
                        "{queue} {id}, a job outside the flow that {dependent_queue} {dependent} runs after, does not exist"
                    ),
                });
            }
            queues.push(from);
        }
        Ok(queues)
    }

    /// One wave: its jobs grouped by queue, each queue's calls pipelined,
    /// the queues at once. Answers each job's index and reply.
    async fn write_wave(
        &self,
        (flow_id, flow): (&str, &Flow),
        queues: &[Arc<Queue>],
        wave: &[Planned],
    ) -> Result<Vec<(usize, Enqueued)>> {
        let mut by_queue: Vec<(&str, Vec<&Planned>)> = Vec::new();
        for planned in wave {
            let name = flow.jobs[planned.index].node.queue.as_str();
            match by_queue.iter_mut().find(|(queue, _)| *queue == name) {
                Some((_, jobs)) => jobs.push(planned),
                None => by_queue.push((name, vec![planned])),
            }
        }
        let writes = by_queue.into_iter().map(|(_, planned)| {
            let queue = queues[planned[0].index].clone();
            self.write_queue((flow_id, flow), queue, planned)
        });
        Ok(try_join_all(writes).await?.into_iter().flatten().collect())
    }

    /// The jobs of one wave in one queue: runs of plain jobs in bulk
    /// calls, a job with a run-at or an option alone, in order.
    async fn write_queue(
        &self,
        (flow_id, flow): (&str, &Flow),
        queue: Arc<Queue>,
        planned: Vec<&Planned>,
    ) -> Result<Vec<(usize, Enqueued)>> {
        let chunk = match self.wire() {
            Wire::Script => BULK_CHUNK,
            Wire::Native => NATIVE_BULK_CHUNK,
        };
        let alone = |p: &&Planned| {
            let job = flow_job(flow, p);
            job.run_at.is_some() || job.has_own_options()
        };
        let mut calls = Vec::new();
        for run in planned.chunk_by(|a, b| !alone(a) && !alone(b)) {
            if alone(&run[0]) {
                for p in run {
                    calls.push(single_call((flow_id, flow), p)?);
                }
            } else {
                for part in run.chunks(chunk) {
                    calls.push(bulk_call((flow_id, flow), part)?);
                }
            }
        }
        // Every reply, single or bulk, is `[id, created]` pairs in the
        // order the jobs were sent.
        let mut order = planned.iter().map(|p| p.index);
        let mut written = Vec::with_capacity(planned.len());
        for reply in queue.call_many(&calls).await? {
            for pair in pairs(reply?)? {
                let index = order.next().expect("a reply per job");
                written.push((index, decode_created(Transition::FlowAdd, pair, &queue)?));
            }
        }
        Ok(written)
    }
}

/// A reply cut into `[id, created]` pairs.
fn pairs(reply: Value) -> Result<Vec<Value>> {
    let items = decode::array(Transition::FlowAdd, reply)?;
    Ok(items
        .chunks(2)
        .map(|pair| Value::Array(pair.to_vec()))
        .collect())
}

/// The flow job `planned` is.
fn flow_job<'a>(flow: &'a Flow, planned: &Planned) -> &'a NewJob<Vec<u8>> {
    flow.jobs[planned.index]
        .job
        .as_ref()
        .expect("checked by submit")
}

/// A flow job's problem found when it was added, or an option a flow job
/// does not take: refused naming its ref.
pub(crate) fn check_job(job: &FlowJob) -> Result<()> {
    let refuse = |reason: &str| {
        Err(Error::BadArgument {
            name: "flow",
            reason: format!("job {}: {reason}", job.node.reference),
        })
    };
    let new = match &job.job {
        Ok(new) => new,
        Err(problem) => return refuse(problem),
    };
    if new.dedup.is_some() || new.dedup_hold.is_some() {
        return refuse("a flow's job takes no dedup key (dedup, dedup_for, debounce)");
    }
    if new.repeat.is_some() {
        return refuse("a flow's job is not repeated");
    }
    check_attempts(new.attempts)?;
    new.group_args()?;
    new.trace_args()?;
    new.deadline_args()?;
    Ok(())
}

/// `<queue> <id>` pairs joined by single spaces, empty for none.
fn edges(pairs: &[(String, JobId)]) -> String {
    let mut text = String::new();
    for (queue, id) in pairs {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(queue);
        text.push(' ');
        text.push_str(id.as_str());
    }
    text
}

/// The arguments every form of FLOW.ADD starts a job with: `id ref
/// payload after before`.
fn job_head(call: Call, flow: &Flow, planned: &Planned) -> Call {
    let job = flow_job(flow, planned);
    call.arg(planned.id.as_str())
        .arg(flow.jobs[planned.index].node.reference.as_str())
        .arg(job.payload.clone())
        .arg(edges(&planned.after))
        .arg(edges(&planned.before))
}

/// `FLOW.ADD` of one job, with its options.
fn single_call((flow_id, flow): (&str, &Flow), planned: &Planned) -> Result<Call> {
    let job = flow_job(flow, planned);
    let call = Call::new(Transition::FlowAdd, Some(&planned.id)).arg(flow_id);
    let mut call = job_head(call, flow, planned)
        .arg("PRIORITY")
        .int(u64::from(job.priority))
        .arg("ATTEMPTS")
        .int(check_attempts(job.attempts)?)
        .arg("ON_FAILURE")
        .arg(job.dependencies.policy.as_str());
    if let Some(run_at) = job.run_at {
        call = call.arg("RUN_AT").arg(run_at.arg());
    }
    let options = job.group_args()?.into_iter().chain(job.trace_args()?);
    for arg in options.chain(job.deadline_args()?).chain(job.lifo_args()) {
        call = call.arg(arg);
    }
    Ok(call)
}

/// `FLOW.ADD.BULK` of plain jobs.
fn bulk_call((flow_id, flow): (&str, &Flow), planned: &[&Planned]) -> Result<Call> {
    let mut call = Call::new(Transition::FlowAdd, None).bulk().arg(flow_id);
    for p in planned {
        let job = flow_job(flow, p);
        call = job_head(call, flow, p)
            .int(u64::from(job.priority))
            .int(check_attempts(job.attempts)?)
            .arg(job.dependencies.policy.as_str());
    }
    Ok(call)
}

/// Each queue once, by name.
fn unique_queues(queues: &[Arc<Queue>]) -> Vec<&Arc<Queue>> {
    let mut seen: Vec<&Arc<Queue>> = Vec::new();
    for queue in queues {
        if !seen.iter().any(|q| q.name() == queue.name()) {
            seen.push(queue);
        }
    }
    seen
}
