//! A flow checked and put in writing order before anything is sent
//! (docs/protocol.md, "Submitting a flow"): refs unique and known, no
//! cycle, ids by the job-id rule, edges within their bounds; then the
//! jobs in **waves**, dependents first, so that a job is written only once
//! every one of its dependents exists. A dependent in the job's own queue
//! may share its wave: each queue's jobs of a wave are sent in order, on
//! one connection, dependents first, so the dependent is written by the
//! same call or an earlier one (a chain in one queue is one wave, not one
//! call per job).

use crate::error::{Error, Result};
use echomq_protocol::JobId;
use echomq_protocol::arg::{
    FLOW_EDGES_MAX as EDGES_MAX, FLOW_JOBS_MAX as JOBS_MAX, MAX_FLOW_ID, MAX_REF,
};
use std::collections::{BTreeMap, HashMap};

/// The most jobs of a flow, and the most edges of one job either way.
const FLOW_JOBS_MAX: usize = JOBS_MAX as usize;
const FLOW_EDGES_MAX: usize = EDGES_MAX as usize;

/// One job of a flow as the plan sees it: its ref, its queue's name, the
/// id it was given (if any), the refs it runs after, and the jobs outside
/// the flow it runs after (queue, id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    pub(crate) reference: String,
    pub(crate) queue: String,
    pub(crate) id: Option<String>,
    pub(crate) after: Vec<String>,
    pub(crate) outside: Vec<(String, JobId)>,
}

/// A job of the plan: its id, and both halves of its edges as `(queue,
/// id)` pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Planned {
    /// Its index among the flow's jobs as given.
    pub(crate) index: usize,
    pub(crate) id: JobId,
    /// Its dependencies: the jobs it runs after.
    pub(crate) after: Vec<(String, JobId)>,
    /// Its dependents: the jobs that run after it.
    pub(crate) before: Vec<(String, JobId)>,
}

/// A job named by its queue's name and its id.
pub(crate) type QueueJob = (String, JobId);

/// The jobs outside a flow its jobs run after, each with those dependents.
pub(crate) type Outside = BTreeMap<QueueJob, Vec<QueueJob>>;

/// The flow in writing order: `waves[0]` first. No job of a wave has a
/// dependent in a later wave, nor one of another queue in its own; in a
/// wave, each job comes after its dependents. Then each job outside the
/// flow that jobs of it run after, (queue, id), with those dependents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    pub(crate) waves: Vec<Vec<Planned>>,
    pub(crate) outside: Outside,
}

/// A refusal of the flow as a whole, naming what was wrong.
fn refuse(reason: String) -> Error {
    Error::BadArgument {
        name: "flow",
        reason,
    }
}

/// Checks flow `flow` of `nodes` and orders it.
pub(crate) fn plan(flow: &str, nodes: &[Node]) -> Result<Plan> {
    check_flow_id(flow)?;
    if nodes.is_empty() {
        return Err(refuse(format!("flow {flow} has no job")));
    }
    if nodes.len() > FLOW_JOBS_MAX {
        return Err(refuse(format!(
            "flow {flow} has {} jobs, more than {FLOW_JOBS_MAX}",
            nodes.len()
        )));
    }
    let index = ref_index(nodes)?;
    let ids = ids(flow, nodes)?;
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut dependencies: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let outside = outside_dependencies(nodes, &ids)?;
    for (at, node) in nodes.iter().enumerate() {
        if node.after.len() + node.outside.len() > FLOW_EDGES_MAX {
            return Err(refuse(format!(
                "job {} runs after {} jobs, more than {FLOW_EDGES_MAX}",
                node.reference,
                node.after.len() + node.outside.len()
            )));
        }
        for reference in &node.after {
            let Some(&dependency) = index.get(reference.as_str()) else {
                return Err(refuse(format!(
                    "job {} runs after {reference}, which the flow does not have",
                    node.reference
                )));
            };
            if dependency == at {
                return Err(refuse(format!("job {} runs after itself", node.reference)));
            }
            if dependencies[at].contains(&dependency) {
                return Err(refuse(format!(
                    "job {} names {reference} twice in its after",
                    node.reference
                )));
            }
            dependencies[at].push(dependency);
            dependents[dependency].push(at);
        }
    }
    for (at, node) in nodes.iter().enumerate() {
        if dependents[at].len() > FLOW_EDGES_MAX {
            return Err(refuse(format!(
                "{} jobs run after job {}, more than {FLOW_EDGES_MAX}",
                dependents[at].len(),
                node.reference
            )));
        }
    }
    let (wave_of, order) = waves_by_dependents(nodes, &dependencies, &dependents)?;
    let pair = |at: usize| (nodes[at].queue.clone(), ids[at].clone());
    let mut waves: Vec<Vec<Planned>> = Vec::new();
    for at in order {
        let wave = wave_of[at];
        if waves.len() <= wave {
            waves.resize_with(wave + 1, Vec::new);
        }
        waves[wave].push(Planned {
            index: at,
            id: ids[at].clone(),
            after: dependencies[at]
                .iter()
                .map(|&d| pair(d))
                .chain(nodes[at].outside.iter().cloned())
                .collect(),
            before: dependents[at].iter().map(|&d| pair(d)).collect(),
        });
    }
    Ok(Plan { waves, outside })
}

/// The jobs outside the flow its jobs run after, each with its dependents
/// (queue, id), refusing one named twice by a job, or one that is a job of
/// the flow (named by its ref instead).
fn outside_dependencies(nodes: &[Node], ids: &[JobId]) -> Result<Outside> {
    let own: HashMap<(&str, &JobId), &str> = nodes
        .iter()
        .zip(ids)
        .map(|(node, id)| ((node.queue.as_str(), id), node.reference.as_str()))
        .collect();
    let mut outside = Outside::new();
    for (node, id) in nodes.iter().zip(ids) {
        for (queue, dependency) in &node.outside {
            if let Some(reference) = own.get(&(queue.as_str(), dependency)) {
                return Err(refuse(format!(
                    "job {} runs after {queue} {dependency}, the flow's job {reference}: name it by its ref",
                    node.reference
                )));
            }
            let dependents = outside
                .entry((queue.clone(), dependency.clone()))
                .or_default();
            if dependents
                .last()
                .is_some_and(|(q, last)| *q == node.queue && last == id)
            {
                return Err(refuse(format!(
                    "job {} names {queue} {dependency} twice in its after",
                    node.reference
                )));
            }
            dependents.push((node.queue.clone(), id.clone()));
        }
    }
    Ok(outside)
}

/// A flow id: the job-id rule, at most [`MAX_FLOW_ID`] bytes.
pub(crate) fn check_flow_id(flow: &str) -> Result<()> {
    if flow.len() > MAX_FLOW_ID {
        return Err(refuse(format!(
            "the flow id is {} bytes, more than {MAX_FLOW_ID}",
            flow.len()
        )));
    }
    check_job_id_rule(flow, "the flow id")
}

/// The job-id rule for `text`, and not `*` (a flow's ids are
/// deterministic, never generated).
fn check_job_id_rule(text: &str, what: &str) -> Result<()> {
    if text == JobId::GENERATE {
        return Err(refuse(format!("{what} may not be {}", JobId::GENERATE)));
    }
    JobId::new(text)
        .map(drop)
        .map_err(|err| refuse(format!("{what} {text:?}: {err}")))
}

/// Each ref's index, refusing a bad ref or one used twice.
fn ref_index(nodes: &[Node]) -> Result<HashMap<&str, usize>> {
    let mut index = HashMap::with_capacity(nodes.len());
    for (at, node) in nodes.iter().enumerate() {
        if node.reference.len() > MAX_REF {
            return Err(refuse(format!(
                "ref {:?} is {} bytes, more than {MAX_REF}",
                node.reference,
                node.reference.len()
            )));
        }
        check_job_id_rule(&node.reference, "the ref")?;
        if index.insert(node.reference.as_str(), at).is_some() {
            return Err(refuse(format!("ref {} is used twice", node.reference)));
        }
    }
    Ok(index)
}

/// Each job's id: the one given, or `<flow>:<ref>`; no id twice in a queue.
fn ids(flow: &str, nodes: &[Node]) -> Result<Vec<JobId>> {
    let mut seen: HashMap<(&str, String), &str> = HashMap::new();
    let mut ids = Vec::with_capacity(nodes.len());
    for node in nodes {
        let id = match &node.id {
            Some(id) => id.clone(),
            None => format!("{flow}:{}", node.reference),
        };
        check_job_id_rule(&id, &format!("job {}'s id", node.reference))?;
        if let Some(other) = seen.insert((node.queue.as_str(), id.clone()), &node.reference) {
            return Err(refuse(format!(
                "jobs {other} and {} have the same id {id} in queue {}",
                node.reference, node.queue
            )));
        }
        ids.push(JobId::new(id).expect("checked above"));
    }
    Ok(ids)
}

/// Each job's wave: 0 for a job no other job runs after, else its latest
/// dependent's, one more when that dependent is of another queue, so
/// every dependent of another queue is written in an earlier wave; and
/// the jobs in an order that puts each after its dependents. Kahn's
/// algorithm from the sinks; a job left unvisited is on a cycle, which is
/// refused naming its refs.
fn waves_by_dependents(
    nodes: &[Node],
    dependencies: &[Vec<usize>],
    dependents: &[Vec<usize>],
) -> Result<(Vec<usize>, Vec<usize>)> {
    let mut unwritten: Vec<usize> = dependents.iter().map(Vec::len).collect();
    let mut wave = vec![0; nodes.len()];
    let mut ready: Vec<usize> = (0..nodes.len()).filter(|&at| unwritten[at] == 0).collect();
    let mut order = Vec::with_capacity(nodes.len());
    while let Some(at) = ready.pop() {
        order.push(at);
        for &dependency in &dependencies[at] {
            let other_queue = nodes[dependency].queue != nodes[at].queue;
            wave[dependency] = wave[dependency].max(wave[at] + usize::from(other_queue));
            unwritten[dependency] -= 1;
            if unwritten[dependency] == 0 {
                ready.push(dependency);
            }
        }
    }
    if order.len() < nodes.len() {
        let on_cycle = on_cycles(&unwritten, dependencies, dependents);
        let cycle: Vec<&str> = (0..nodes.len())
            .filter(|&at| on_cycle[at])
            .map(|at| nodes[at].reference.as_str())
            .collect();
        return Err(refuse(format!(
            "the flow has a cycle through {}",
            cycle.join(", ")
        )));
    }
    Ok((wave, order))
}

/// Of the jobs Kahn's walk from the sinks left (`unwritten` above 0: on a
/// cycle, or a dependency of one), those on a cycle: the walk again from
/// the sources among them strips the dependencies hanging off a cycle.
fn on_cycles(
    unwritten: &[usize],
    dependencies: &[Vec<usize>],
    dependents: &[Vec<usize>],
) -> Vec<bool> {
    let mut left: Vec<bool> = unwritten.iter().map(|&n| n > 0).collect();
    let mut waiting: Vec<usize> = (0..left.len())
        .map(|at| dependencies[at].iter().filter(|&&d| left[d]).count())
        .collect();
    let mut free: Vec<usize> = (0..left.len())
        .filter(|&at| left[at] && waiting[at] == 0)
        .collect();
    while let Some(at) = free.pop() {
        left[at] = false;
        for &dependent in &dependents[at] {
            if left[dependent] {
                waiting[dependent] -= 1;
                if waiting[dependent] == 0 {
                    free.push(dependent);
                }
            }
        }
    }
    left
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(reference: &str, queue: &str, after: &[&str]) -> Node {
        Node {
            reference: reference.into(),
            queue: queue.into(),
            id: None,
            after: after.iter().map(|r| r.to_string()).collect(),
            outside: Vec::new(),
        }
    }

    #[test]
    fn a_job_outside_the_flow_joins_its_dependents_edges_once() {
        let ext = (String::from("other"), JobId::new("x").unwrap());
        let mut nodes = vec![node("a", "q", &[]), node("b", "q", &["a"])];
        nodes[1].outside.push(ext.clone());
        let planned = plan("f", &nodes).unwrap();
        let b = &planned.waves[0][0];
        assert_eq!(b.after.last(), Some(&ext));
        assert_eq!(
            planned.outside[&ext],
            [(String::from("q"), JobId::new("f:b").unwrap())]
        );
        nodes[1].outside.push(ext);
        let err = reason(plan("f", &nodes).unwrap_err());
        assert_eq!(err, "job b names other x twice in its after");
    }

    #[test]
    fn a_job_of_the_flow_named_as_outside_it_is_refused() {
        let mut nodes = vec![node("a", "q", &[]), node("b", "q", &[])];
        nodes[1]
            .outside
            .push((String::from("q"), JobId::new("f:a").unwrap()));
        let err = reason(plan("f", &nodes).unwrap_err());
        assert_eq!(
            err,
            "job b runs after q f:a, the flow's job a: name it by its ref"
        );
    }

    fn reason(err: Error) -> String {
        match err {
            Error::BadArgument {
                name: "flow",
                reason,
            } => reason,
            other => panic!("{other:?}"),
        }
    }

    /// The refs of each wave, sorted.
    fn waves(plan: &Plan, nodes: &[Node]) -> Vec<Vec<String>> {
        plan.waves
            .iter()
            .map(|wave| {
                let mut refs: Vec<String> = wave
                    .iter()
                    .map(|p| nodes[p.index].reference.clone())
                    .collect();
                refs.sort();
                refs
            })
            .collect()
    }

    #[test]
    fn a_diamond_is_written_dependents_first() {
        let nodes = [
            node("fetch", "images", &[]),
            node("small", "images", &["fetch"]),
            node("large", "images", &["fetch"]),
            node("mail", "mailer", &["small", "large"]),
        ];
        let plan = plan("order-42", &nodes).unwrap();
        // fetch shares its dependents' queue, and so their wave, after
        // them; mail, of another queue, is written a wave before.
        assert_eq!(
            waves(&plan, &nodes),
            [vec!["mail"], vec!["fetch", "large", "small"]]
        );
        assert_eq!(in_order(&plan.waves[1], &nodes)[2], "fetch");
        let mail = &plan.waves[0][0];
        assert_eq!(mail.id.as_str(), "order-42:mail");
        assert_eq!(
            mail.after,
            [
                ("images".into(), JobId::new("order-42:small").unwrap()),
                ("images".into(), JobId::new("order-42:large").unwrap())
            ]
        );
        assert!(mail.before.is_empty());
        let fetch = &plan.waves[1][2];
        assert_eq!(fetch.before.len(), 2);
        assert!(fetch.after.is_empty());
    }

    /// The refs of a wave in writing order.
    fn in_order(wave: &[Planned], nodes: &[Node]) -> Vec<String> {
        wave.iter()
            .map(|p| nodes[p.index].reference.clone())
            .collect()
    }

    #[test]
    fn a_chain_in_one_queue_is_one_wave_dependents_first() {
        // a → b → c, and a → c: one wave, a written after c and b.
        let nodes = [
            node("a", "q", &[]),
            node("b", "q", &["a"]),
            node("c", "q", &["b", "a"]),
        ];
        let plan = plan("f", &nodes).unwrap();
        assert_eq!(plan.waves.len(), 1);
        assert_eq!(in_order(&plan.waves[0], &nodes), ["c", "b", "a"]);
    }

    #[test]
    fn a_job_waits_for_its_latest_dependent_of_another_queue() {
        // a (q) → b (r) → c (q), and a → c: b a wave after c, a after b.
        let nodes = [
            node("a", "q", &[]),
            node("b", "r", &["a"]),
            node("c", "q", &["b", "a"]),
        ];
        let plan = plan("f", &nodes).unwrap();
        assert_eq!(waves(&plan, &nodes), [vec!["c"], vec!["b"], vec!["a"]]);
    }

    #[test]
    fn a_given_id_replaces_the_default() {
        let mut nodes = [node("a", "q", &[]), node("b", "q", &["a"])];
        nodes[0].id = Some("custom".into());
        let plan = plan("f", &nodes).unwrap();
        assert_eq!(plan.waves[0][0].after[0].1.as_str(), "custom");
    }

    #[test]
    fn a_cycle_is_refused_naming_its_refs() {
        let nodes = [
            node("root", "q", &[]),
            node("a", "q", &["c", "root"]),
            node("b", "q", &["a"]),
            node("c", "q", &["b"]),
        ];
        let err = reason(plan("f", &nodes).unwrap_err());
        assert_eq!(err, "the flow has a cycle through a, b, c");
    }

    #[test]
    fn a_job_after_itself_is_refused() {
        let err = reason(plan("f", &[node("a", "q", &["a"])]).unwrap_err());
        assert_eq!(err, "job a runs after itself");
    }

    #[test]
    fn an_unknown_ref_is_refused() {
        let err = reason(plan("f", &[node("a", "q", &["ghost"])]).unwrap_err());
        assert_eq!(err, "job a runs after ghost, which the flow does not have");
    }

    #[test]
    fn a_ref_used_twice_is_refused() {
        let nodes = [node("a", "q", &[]), node("a", "r", &[])];
        assert_eq!(
            reason(plan("f", &nodes).unwrap_err()),
            "ref a is used twice"
        );
    }

    #[test]
    fn a_dependency_named_twice_is_refused() {
        let nodes = [node("a", "q", &[]), node("b", "q", &["a", "a"])];
        assert_eq!(
            reason(plan("f", &nodes).unwrap_err()),
            "job b names a twice in its after"
        );
    }

    #[test]
    fn two_jobs_with_one_id_in_a_queue_are_refused() {
        let mut nodes = [node("a", "q", &[]), node("b", "q", &[])];
        nodes[1].id = Some("f:a".into());
        assert_eq!(
            reason(plan("f", &nodes).unwrap_err()),
            "jobs a and b have the same id f:a in queue q"
        );
    }

    #[test]
    fn bad_flow_ids_and_refs_are_refused() {
        let one = [node("a", "q", &[])];
        assert!(reason(plan("has space", &one).unwrap_err()).starts_with("the flow id"));
        assert!(reason(plan("*", &one).unwrap_err()).contains("may not be *"));
        let long = "f".repeat(MAX_FLOW_ID + 1);
        assert!(reason(plan(&long, &one).unwrap_err()).contains("more than 127"));
        assert!(reason(plan("f", &[node("{a}", "q", &[])]).unwrap_err()).starts_with("the ref"));
        let long_ref = "r".repeat(MAX_REF + 1);
        assert!(
            reason(plan("f", &[node(&long_ref, "q", &[])]).unwrap_err()).contains("more than 128")
        );
        assert_eq!(reason(plan("f", &[]).unwrap_err()), "flow f has no job");
    }

    #[test]
    fn a_default_id_over_the_rule_is_refused() {
        // 127 + 1 + 128 = 256 bytes: the longest default id fits.
        let flow = "f".repeat(MAX_FLOW_ID);
        assert!(plan(&flow, &[node(&"r".repeat(MAX_REF), "q", &[])]).is_ok());
        let mut nodes = [node("a", "q", &[])];
        nodes[0].id = Some("x".repeat(257));
        assert!(reason(plan("f", &nodes).unwrap_err()).starts_with("job a's id"));
    }

    #[test]
    fn too_many_edges_of_one_job_either_way_are_refused() {
        let mut nodes: Vec<Node> = (0..=FLOW_EDGES_MAX)
            .map(|i| node(&format!("d{i}"), "q", &["root"]))
            .collect();
        nodes.push(node("root", "q", &[]));
        let err = reason(plan("f", &nodes).unwrap_err());
        assert_eq!(err, "10001 jobs run after job root, more than 10000");
        let all: Vec<String> = (0..=FLOW_EDGES_MAX).map(|i| format!("d{i}")).collect();
        let mut nodes: Vec<Node> = all.iter().map(|r| node(r, "q", &[])).collect();
        nodes.push(Node {
            after: all.clone(),
            ..node("sink", "q", &[])
        });
        let err = reason(plan("f", &nodes).unwrap_err());
        assert_eq!(err, "job sink runs after 10001 jobs, more than 10000");
    }
}
