//! Flows: jobs that wait for other jobs (issue 43; docs/flows.md for the
//! design, docs/protocol.md "Flows" for the contract).
//!
//! A [`Flow`] is a set of jobs, each in any queue, each naming the jobs it
//! runs after ([`NewJob::depends_on`]): a DAG. Submitting it
//! ([`Connector::submit`](crate::Connector::submit)) checks the whole graph
//! before anything is written, then writes it dependents first, so no job
//! is claimed before every job it depends on exists and has ended. A job
//! waiting for its dependencies is `blocked`; when the last one ends it
//! becomes pending (or scheduled, with a run-at in the future).
//!
//! ```
//! use echomq::{Flow, NewJob, Policy, Queue};
//! use serde_json::{Value, json};
//!
//! fn order(images: &Queue<Value>, mailer: &Queue<Value>) -> Flow {
//!     let mut flow = Flow::new("order-42");
//!     let fetch = flow.add_as("fetch", images, NewJob::new(json!({"url": "…"})));
//!     let small = flow.add_as("small", images, NewJob::new(json!({"px": 64})).depends_on([&fetch]));
//!     let large = flow.add_as("large", images, NewJob::new(json!({"px": 1024})).depends_on([&fetch]));
//!     flow.add_as(
//!         "mail",
//!         mailer,
//!         NewJob::new(json!({"to": "a@example.com"}))
//!             .depends_on([&small, &large])
//!             .on_dependency_failure(Policy::Ignore),
//!     );
//!     flow
//! }
//! ```

mod checkup;
mod document;
mod graph;
pub(crate) mod plan;
mod read;
mod relay;
mod spawn;
mod submit;

pub use checkup::CheckedUp;
pub use document::{
    DocumentAfter, DocumentError, DocumentJob, FlowDocument, OutsideJob, PlacedJob,
};
pub use graph::{
    Direction, EdgeState, FLOW_GRAPH_EDGES_READ, FLOW_GRAPH_NODES_MAX, FlowGraph, GraphEdge,
    GraphNode,
};
pub use read::{Dependency, DependencyOutcome, Dependent};
pub use relay::Relayed;
pub use submit::Submitted;

use crate::error::{Error, Result};
use crate::job::NewJob;
use crate::queue::Queue;
use echomq_protocol::JobId;
use plan::Node;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a dependent job does when one of its dependencies ends `dead`,
/// `cancelled` or `removed` (removed, drained, obliterated, or never
/// written).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Policy {
    /// The dependent goes to `dead` at once, its error naming the
    /// dependency and how it ended; its own dependents learn it as any
    /// death. The default: a dependency that can never complete ends its
    /// dependents rather than leaving them blocked.
    #[default]
    Fail,
    /// The edge counts as resolved: the dependent runs when its other
    /// dependencies have ended, and its handler sees which failed.
    Ignore,
    /// The dependent is cancelled, and its dependents learn that.
    Cancel,
}

impl Policy {
    /// The policy's wire word: `fail`, `ignore`, `cancel`.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Fail => "fail",
            Policy::Ignore => "ignore",
            Policy::Cancel => "cancel",
        }
    }

    /// The policy named `word`, as [`Policy::as_str`] writes it.
    pub fn parse(word: &str) -> Option<Policy> {
        [Policy::Fail, Policy::Ignore, Policy::Cancel]
            .into_iter()
            .find(|policy| policy.as_str() == word)
    }
}

/// A job of a [`Flow`], named by its ref: what [`Flow::add`] returns, for
/// [`NewJob::depends_on`] and to find the job's id in what the submit
/// answered; or a job outside the flow that its jobs may run after
/// ([`Flow::existing`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JobRef {
    /// The [`Flow`] value it belongs to (a ref of another flow is refused).
    flow: u64,
    reference: Arc<str>,
    /// For a job outside the flow: its queue's name and its id.
    outside: Option<Arc<(String, JobId)>>,
}

impl JobRef {
    /// The job's ref: its name inside its flow; for a job outside it,
    /// `<queue> <id>`.
    pub fn name(&self) -> &str {
        &self.reference
    }
}

/// A job's place in a flow: the refs it runs after and its policy.
#[derive(Debug, Clone, Default)]
pub(crate) struct Dependencies {
    pub(crate) after: Vec<JobRef>,
    pub(crate) policy: Policy,
}

impl<T> NewJob<T> {
    /// The job runs only after each of `jobs` has ended (jobs of the same
    /// [`Flow`], in any queue). Only a flow's job may have dependencies:
    /// enqueueing it alone is refused.
    pub fn depends_on<'a>(mut self, jobs: impl IntoIterator<Item = &'a JobRef>) -> Self {
        self.dependencies.after.extend(jobs.into_iter().cloned());
        self
    }

    /// What the job does when a dependency ends dead, cancelled or removed
    /// (default [`Policy::Fail`]).
    pub fn on_dependency_failure(mut self, policy: Policy) -> Self {
        self.dependencies.policy = policy;
        self
    }

    /// Refuses a job with dependencies or a policy outside a flow.
    pub(crate) fn check_no_dependencies(&self) -> Result<()> {
        let deps = &self.dependencies;
        if deps.after.is_empty() && deps.policy == Policy::Fail {
            return Ok(());
        }
        Err(Error::BadArgument {
            name: "depends_on",
            reason: "only a flow's job has dependencies or a dependency policy: add it to a Flow and submit that".into(),
        })
    }
}

/// One job of a flow, its payload encoded and its options checked when it
/// was added; a problem is kept for the submit to report.
pub(crate) struct FlowJob {
    pub(crate) node: Node,
    pub(crate) queue: Queue<Value>,
    /// The job, or what was wrong with it (reported by the submit).
    pub(crate) job: std::result::Result<NewJob<Vec<u8>>, String>,
}

/// Flows of this process, each with a number of its own, so that a
/// [`JobRef`] of one cannot be used in another.
static FLOWS: AtomicU64 = AtomicU64::new(0);

/// A set of jobs in any queues joined by dependencies, submitted at once
/// by [`Connector::submit`](crate::Connector::submit).
///
/// The flow's id makes the submit idempotent: each job's id is `<flow
/// id>:<ref>` unless given ([`NewJob::id`]), and an id that exists in the
/// same flow is left as it is, so submitting the same flow again finishes
/// a submit that died midway and otherwise changes nothing.
pub struct Flow {
    id: String,
    serial: u64,
    pub(crate) jobs: Vec<FlowJob>,
}

impl std::fmt::Debug for Flow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Flow")
            .field("id", &self.id)
            .field("jobs", &self.jobs.len())
            .finish()
    }
}

impl Flow {
    /// An empty flow named `id` (the job-id rule, at most 127 bytes:
    /// checked by the submit).
    pub fn new(id: impl Into<String>) -> Flow {
        Flow {
            id: id.into(),
            serial: FLOWS.fetch_add(1, Ordering::Relaxed),
            jobs: Vec::new(),
        }
    }

    /// The flow's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// How many jobs the flow has.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether the flow has no job yet.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// A ref to the job added, or still to be added, under `name`: for
    /// [`NewJob::depends_on`] in a flow built in any order (from a file,
    /// say). A name no job of the flow has is refused by the submit.
    pub fn job_ref(&self, name: &str) -> JobRef {
        JobRef {
            flow: self.serial,
            reference: Arc::from(name),
            outside: None,
        }
    }

    /// A ref to job `id` of `queue`, a job outside the flow (of another
    /// flow, or of none), for [`NewJob::depends_on`]: the flow's jobs that
    /// name it run after it ends, as after a job of the flow. The submit
    /// reads it first and refuses the flow when it does not exist; once the
    /// flow is written, the job is told of its new dependents
    /// (`FLOW.LINK`), and when it has ended already they are told its
    /// outcome at once.
    pub fn existing<T>(&self, queue: &Queue<T>, id: &JobId) -> JobRef {
        let queue = queue.name().as_str().to_string();
        JobRef {
            flow: self.serial,
            reference: Arc::from(format!("{queue} {id}")),
            outside: Some(Arc::new((queue, id.clone()))),
        }
    }

    /// Adds `job` to `queue`, its ref its place in the flow (`"1"` for the
    /// first job added, `"2"` for the second, …).
    pub fn add<T: Serialize>(&mut self, queue: &Queue<T>, job: NewJob<T>) -> JobRef {
        let reference = (self.jobs.len() + 1).to_string();
        self.add_as(&reference, queue, job)
    }

    /// Adds `job` to `queue` under ref `name` (the job-id rule, at most 128
    /// bytes, unique in the flow: checked by the submit, which refuses the
    /// flow naming it).
    pub fn add_as<T: Serialize>(&mut self, name: &str, queue: &Queue<T>, job: NewJob<T>) -> JobRef {
        let reference: Arc<str> = Arc::from(name);
        let mut after = Vec::with_capacity(job.dependencies.after.len());
        let mut outside = Vec::new();
        let mut foreign = None;
        for dependency in &job.dependencies.after {
            if dependency.flow != self.serial {
                foreign = Some(dependency.name().to_string());
            }
            match &dependency.outside {
                Some(job) => outside.push((job.0.clone(), job.1.clone())),
                None => after.push(dependency.name().to_string()),
            }
        }
        let node = Node {
            reference: name.to_string(),
            queue: queue.name().as_str().to_string(),
            id: job.id.as_ref().map(|id| id.as_str().to_string()),
            after,
            outside,
        };
        let job = match foreign {
            Some(other) => Err(format!("runs after {other}, a job of another Flow")),
            None => encoded(job).map_err(|err| err.to_string()),
        };
        self.jobs.push(FlowJob {
            node,
            queue: queue.typed(),
            job,
        });
        JobRef {
            flow: self.serial,
            reference,
            outside: None,
        }
    }
}

/// `job` with its payload as JSON bytes.
fn encoded<T: Serialize>(job: NewJob<T>) -> Result<NewJob<Vec<u8>>> {
    let payload = serde_json::to_vec(&job.payload)?;
    Ok(job.with_payload(payload))
}
