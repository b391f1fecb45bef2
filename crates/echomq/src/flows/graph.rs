//! The DAG around one job ([`Jobs::flow_graph`]): its dependencies and
//! theirs, its dependents and theirs, across queues, up to a depth and a
//! number of jobs; each edge with both its halves (docs/flows.md, "Seeing
//! a flow"). What `emq flow show` draws and the dashboard's job page
//! shows.
//!
//! Only the reads a reader has: `GET`, `FLOW.DEPS` and `FLOW.DEPENDENTS`
//! of each job drawn, in its own queue. A job without edges costs one
//! `GET`.

use super::read::{Dependency, DependencyOutcome, Dependent, dependencies, dependents};
use crate::error::{Error, Result};
use crate::job::JobRecord;
use crate::jobs::Jobs;
use crate::queue::Queue;
use echomq_protocol::{JobId, JobState, Refusal};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};

/// The most jobs a [`FlowGraph`] holds: a walk that reaches it stops there
/// and says so ([`FlowGraph::truncated`]).
pub const FLOW_GRAPH_NODES_MAX: usize = 100;
/// The most edges read of one job either way, about (a page may take a
/// few more; a shared job may have very many dependents): a job with more
/// is drawn with these, and the graph says it is truncated.
pub const FLOW_GRAPH_EDGES_READ: usize = 1000;

/// One job of a [`FlowGraph`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphNode {
    /// Its queue.
    pub queue: String,
    /// Its id.
    pub id: JobId,
    /// Its ref in its flow: from its record, or from the resolution its
    /// dependent holds once the job is gone; none for a job outside any
    /// flow.
    pub reference: Option<String>,
    /// Its state; `None` when the job is gone (removed, trimmed by
    /// retention, obliterated, or never written).
    pub state: Option<JobState>,
    /// Where it sits: 0 the job asked for, −n a dependency n edges
    /// upstream, +n a dependent n edges downstream.
    pub depth: i32,
    /// Its number of dependencies, from its record (none when it has none
    /// or is gone).
    pub deps: Option<u64>,
    /// Its number of dependents, from its record.
    pub dependents: Option<u64>,
}

impl GraphNode {
    /// Its state's word, `gone` when the job is gone.
    pub fn state_word(&self) -> &'static str {
        self.state.map_or("gone", |state| state.as_str())
    }
}

/// The dependent's half of an edge: `wait`, or how its dependency ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EdgeState {
    /// The dependency has not ended, as far as the dependent knows.
    Wait,
    /// Resolved: the dependency completed.
    Completed,
    /// Resolved: the dependency went to dead.
    Dead,
    /// Resolved: the dependency was cancelled.
    Cancelled,
    /// Resolved: the dependency was deleted before it ended, or never
    /// written.
    Removed,
    /// The dependent's half could not be read: the dependent is gone, or
    /// the edge is past [`FLOW_GRAPH_EDGES_READ`] of its dependencies.
    Unknown,
}

impl EdgeState {
    /// The word: `wait`, `completed`, `dead`, `cancelled`, `removed`,
    /// `unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeState::Wait => "wait",
            EdgeState::Completed => "completed",
            EdgeState::Dead => "dead",
            EdgeState::Cancelled => "cancelled",
            EdgeState::Removed => "removed",
            EdgeState::Unknown => "unknown",
        }
    }

    fn of(outcome: &DependencyOutcome) -> EdgeState {
        match outcome {
            DependencyOutcome::Waiting => EdgeState::Wait,
            DependencyOutcome::Completed { .. } => EdgeState::Completed,
            DependencyOutcome::Dead { .. } => EdgeState::Dead,
            DependencyOutcome::Cancelled => EdgeState::Cancelled,
            DependencyOutcome::Removed => EdgeState::Removed,
        }
    }
}

/// One edge of a [`FlowGraph`]: "`dependent` runs after `dependency`",
/// both indexes into [`FlowGraph::nodes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphEdge {
    /// The job that runs first.
    pub dependency: usize,
    /// The job that runs after it.
    pub dependent: usize,
    /// The dependent's half: `wait`, or the outcome it received.
    pub state: EdgeState,
    /// The dependency's half: whether its outcome was delivered to the
    /// dependent (told); `None` when it could not be read (the
    /// dependency is gone and its outcome delivered, or the edge is past
    /// [`FLOW_GRAPH_EDGES_READ`] of its dependents).
    pub told: Option<bool>,
}

impl GraphEdge {
    /// The dependency's half as a word: `told`, `not told`, or `told
    /// unknown` when it could not be read.
    pub fn told_word(&self) -> &'static str {
        match self.told {
            Some(true) => "told",
            Some(false) => "not told",
            None => "told unknown",
        }
    }
}

/// A direction of a [`FlowGraph`] from the job asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Towards its dependencies and theirs.
    Upstream,
    /// Towards its dependents and theirs.
    Downstream,
}

/// The DAG around a job, read by [`Jobs::flow_graph`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowGraph {
    /// Every job drawn; the first is the job asked for (depth 0), then in
    /// the order the walk found them (nearest first).
    pub nodes: Vec<GraphNode>,
    /// Every edge between two jobs drawn, in the order found.
    pub edges: Vec<GraphEdge>,
    /// Whether the walk left jobs or edges out: it reached
    /// [`FLOW_GRAPH_NODES_MAX`] jobs, or a job had more than
    /// [`FLOW_GRAPH_EDGES_READ`] edges one way. Jobs past the depth are
    /// not counted here: [`GraphNode::deps`] and [`GraphNode::dependents`]
    /// tell whether a job at the edge of the drawing has more.
    pub truncated: bool,
}

impl FlowGraph {
    /// The job asked for.
    pub fn job(&self) -> &GraphNode {
        &self.nodes[0]
    }

    /// The edges of node `index` going `direction`, each with the node it
    /// leads to: upstream, to its dependencies that lie upstream of the
    /// job asked for (depth < 0); downstream, to its dependents that lie
    /// downstream of it (depth > 0). What a drawing's tree hangs below a
    /// node.
    pub fn branches(&self, index: usize, direction: Direction) -> Vec<(&GraphEdge, usize)> {
        self.edges
            .iter()
            .filter_map(|edge| match direction {
                Direction::Upstream if edge.dependent == index => Some((edge, edge.dependency)),
                Direction::Downstream if edge.dependency == index => Some((edge, edge.dependent)),
                _ => None,
            })
            .filter(|(_, next)| match direction {
                Direction::Upstream => self.nodes[*next].depth < 0,
                Direction::Downstream => self.nodes[*next].depth > 0,
            })
            .collect()
    }

    /// How many edges of node `index` going `direction` the graph does not
    /// draw: its record's count when none is drawn (it lies where the
    /// walk stopped), else none.
    pub fn not_drawn(&self, index: usize, direction: Direction) -> Option<u64> {
        let node = &self.nodes[index];
        let count = match direction {
            Direction::Upstream => node.deps,
            Direction::Downstream => node.dependents,
        };
        count.filter(|_| self.branches(index, direction).is_empty())
    }
}

/// What was read of one job: its record and both its edge lists, and
/// whether either list was cut at [`FLOW_GRAPH_EDGES_READ`].
struct Read {
    record: Option<JobRecord>,
    dependencies: Vec<Dependency>,
    dependents: Vec<Dependent>,
    cut: bool,
}

/// A job's key in the walk: its queue and id.
type Key = (String, String);

impl<T> Jobs<T> {
    /// The DAG around job `id`: its dependencies and theirs up to `depth`
    /// edges upstream, its dependents and theirs up to `depth` edges
    /// downstream, in any queues, at most [`FLOW_GRAPH_NODES_MAX`] jobs;
    /// each job with its ref and state, each edge with both its halves.
    /// `None` when the job does not exist. Depth 0 is the job alone.
    pub async fn flow_graph(&self, id: &JobId, depth: u32) -> Result<Option<FlowGraph>> {
        let queue: Queue<Value> = self.queue.typed();
        let first = read(&queue, id).await?;
        let Some(record) = &first.record else {
            return Ok(None);
        };
        let mut walk = Walk {
            queue,
            nodes: Vec::new(),
            reads: Vec::new(),
            found: HashMap::new(),
            edges: Vec::new(),
            truncated: false,
        };
        let name = walk.queue.name().as_str().to_string();
        walk.push(name, id.clone(), record.flow_ref.clone(), 0, first);
        let mut frontier = VecDeque::from([(0, Direction::Upstream), (0, Direction::Downstream)]);
        let depth = i32::try_from(depth).unwrap_or(i32::MAX);
        while let Some((at, direction)) = frontier.pop_front() {
            if walk.nodes[at].depth.abs() >= depth {
                continue;
            }
            for (queue, id, reference) in walk.neighbours(at, direction) {
                if let Some(next) = walk.visit(queue, id, reference, at, direction).await? {
                    frontier.push_back((next, direction));
                }
            }
        }
        Ok(Some(walk.finish()))
    }
}

/// A walk in progress.
struct Walk {
    /// The queue asked through: its connector opens the others.
    queue: Queue<Value>,
    nodes: Vec<GraphNode>,
    reads: Vec<Read>,
    found: HashMap<Key, usize>,
    /// (dependency, dependent) pairs, in the order found.
    edges: Vec<(usize, usize)>,
    truncated: bool,
}

impl Walk {
    fn push(
        &mut self,
        queue: String,
        id: JobId,
        reference: Option<String>,
        depth: i32,
        read: Read,
    ) {
        let record = read.record.as_ref();
        self.truncated |= read.cut;
        self.found
            .insert((queue.clone(), id.as_str().to_string()), self.nodes.len());
        self.nodes.push(GraphNode {
            reference: record.and_then(|r| r.flow_ref.clone()).or(reference),
            state: record.map(|r| r.state),
            deps: record.and_then(|r| r.deps),
            dependents: record.and_then(|r| r.dependents),
            queue,
            id,
            depth,
        });
        self.reads.push(read);
    }

    /// The jobs one edge `direction` of node `at` (its dependencies, or its
    /// dependents), with the ref a dependency's resolution names.
    fn neighbours(&self, at: usize, direction: Direction) -> Vec<(String, JobId, Option<String>)> {
        let read = &self.reads[at];
        if direction == Direction::Upstream {
            read.dependencies
                .iter()
                .map(|d| (d.queue.clone(), d.id.clone(), d.reference.clone()))
                .collect()
        } else {
            read.dependents
                .iter()
                .map(|d| (d.queue.clone(), d.id.clone(), None))
                .collect()
        }
    }

    /// Records the edge between node `at` and job `id` of `queue`, reading
    /// the job when it is new; its index when it is new and to be walked
    /// on from.
    async fn visit(
        &mut self,
        queue: String,
        id: JobId,
        reference: Option<String>,
        at: usize,
        direction: Direction,
    ) -> Result<Option<usize>> {
        let key = (queue.clone(), id.as_str().to_string());
        let (index, new) = match self.found.get(&key) {
            Some(index) => (*index, false),
            None if self.nodes.len() >= FLOW_GRAPH_NODES_MAX => {
                self.truncated = true;
                return Ok(None);
            }
            None => {
                let other = self.queue.connector().queue::<Value>(&queue)?;
                let read = read(&other, &id).await?;
                let step = match direction {
                    Direction::Upstream => -1,
                    Direction::Downstream => 1,
                };
                let depth = self.nodes[at].depth + step;
                self.push(queue, id, reference, depth, read);
                (self.nodes.len() - 1, true)
            }
        };
        let edge = match direction {
            Direction::Upstream => (index, at),
            Direction::Downstream => (at, index),
        };
        if !self.edges.contains(&edge) {
            self.edges.push(edge);
        }
        Ok(new.then_some(index))
    }

    /// The graph, each edge's halves read from its two jobs' lists.
    fn finish(self) -> FlowGraph {
        let edges = self
            .edges
            .iter()
            .map(|&(dependency, dependent)| {
                let (from, to) = (&self.nodes[dependency], &self.nodes[dependent]);
                let state = self.reads[dependent]
                    .dependencies
                    .iter()
                    .find(|d| d.queue == from.queue && d.id == from.id)
                    .map_or(EdgeState::Unknown, |d| EdgeState::of(&d.outcome));
                let told = self.reads[dependency]
                    .dependents
                    .iter()
                    .find(|d| d.queue == to.queue && d.id == to.id)
                    .map(|d| d.told);
                GraphEdge {
                    dependency,
                    dependent,
                    state,
                    told,
                }
            })
            .collect();
        FlowGraph {
            nodes: self.nodes,
            edges,
            truncated: self.truncated,
        }
    }
}

/// Job `id` of `queue`: its record and, when it may have any, its edges
/// (a job whose record names none has none, so a plain job costs one
/// `GET`; a gone job's dependents may outlive it in its queue's outbox).
async fn read(queue: &Queue<Value>, id: &JobId) -> Result<Read> {
    let record = queue.jobs().get(id).await?;
    let (has_deps, has_dependents) = match &record {
        Some(record) => (record.deps.is_some(), record.dependents.is_some()),
        None => (false, true),
    };
    let (dependencies, dependents) = tokio::join!(
        async {
            match has_deps {
                true => absent_is_none(dependencies(queue, id, FLOW_GRAPH_EDGES_READ).await),
                false => Ok((Vec::new(), false)),
            }
        },
        async {
            match has_dependents {
                true => absent_is_none(dependents(queue, id, FLOW_GRAPH_EDGES_READ).await),
                false => Ok((Vec::new(), false)),
            }
        },
    );
    let ((dependencies, more_deps), (dependents, more_dependents)) = (dependencies?, dependents?);
    Ok(Read {
        record,
        dependencies,
        dependents,
        cut: more_deps || more_dependents,
    })
}

/// An edge list (and whether it was cut), empty when the job went between
/// two reads (`NOJOB`).
fn absent_is_none<E>(read: Result<(Vec<E>, bool)>) -> Result<(Vec<E>, bool)> {
    match read {
        Err(Error::Refused(refused)) if refused.reason == Refusal::NoJob => Ok((Vec::new(), false)),
        other => other,
    }
}
