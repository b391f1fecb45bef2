//! `emq flow show <queue> <id> [--depth N]`: the DAG around a job, read by
//! [`Jobs::flow_graph`](echomq::Jobs::flow_graph) (docs/flows.md, "Seeing
//! a flow"), drawn as two trees: upstream (its dependencies and theirs)
//! and downstream (its dependents and theirs). A job met twice (a
//! diamond) is drawn again and not followed again. `--json`: `{"job",
//! "depth", "nodes", "edges", "truncated"}`.

use super::{job_id, no_job, open, out, out_json};
use crate::cli::{FlowShowArgs, Global};
use crate::error::CliError;
use echomq::{
    Direction, FLOW_GRAPH_EDGES_READ, FLOW_GRAPH_NODES_MAX, FlowGraph, GraphEdge, GraphNode,
};
use serde_json::{Value, json};

/// `emq flow show`.
pub(crate) async fn show(args: &FlowShowArgs, global: &Global) -> Result<(), CliError> {
    let id = job_id(&args.id)?;
    let queue = open(&args.queue, global).await?;
    let depth = u32::try_from(args.depth).unwrap_or(u32::MAX);
    let Some(graph) = queue.jobs().flow_graph(&id, depth).await? else {
        return Err(CliError::not_found(no_job(&queue, &id)));
    };
    if global.json {
        return out_json(&to_json(&graph, args.depth));
    }
    out(&draw(&graph))
}

/// `queue id (ref r): state`.
fn node_text(node: &GraphNode) -> String {
    let reference = node
        .reference
        .as_deref()
        .map(|r| format!(" (ref {r})"))
        .unwrap_or_default();
    format!(
        "{} {}{reference}: {}",
        node.queue,
        node.id,
        node.state_word()
    )
}

/// `edge completed, told`.
fn edge_text(edge: &GraphEdge) -> String {
    format!("edge {}, {}", edge.state.as_str(), edge.told_word())
}

/// The text drawing: the job, then each direction's tree.
fn draw(graph: &FlowGraph) -> String {
    let mut text = format!("{}\n", node_text(graph.job()));
    for direction in [Direction::Upstream, Direction::Downstream] {
        let mut lines = Vec::new();
        let mut drawn = vec![false; graph.nodes.len()];
        drawn[0] = true;
        branch(graph, direction, 0, "  ", &mut drawn, &mut lines);
        let (title, none) = match direction {
            Direction::Upstream => ("upstream, the jobs it runs after:", "no dependencies"),
            Direction::Downstream => ("downstream, the jobs that run after it:", "no dependents"),
        };
        text.push_str(title);
        if lines.is_empty() {
            text.push_str(&format!(" {none}\n"));
        } else {
            text.push('\n');
            text.extend(lines.into_iter().map(|line| line + "\n"));
        }
    }
    if graph.truncated {
        text.push_str(&format!(
            "(not every job is drawn: at most {FLOW_GRAPH_NODES_MAX} jobs, and {FLOW_GRAPH_EDGES_READ} edges of a job each way)\n"
        ));
    }
    text
}

/// The lines below node `at`, each prefixed by `indent` and a branch.
fn branch(
    graph: &FlowGraph,
    direction: Direction,
    at: usize,
    indent: &str,
    drawn: &mut [bool],
    lines: &mut Vec<String>,
) {
    let branches = graph.branches(at, direction);
    for (n, (edge, next)) in branches.iter().enumerate() {
        let last = n + 1 == branches.len();
        let mut line = format!(
            "{indent}{}{}  [{}]",
            if last { "└─ " } else { "├─ " },
            node_text(&graph.nodes[*next]),
            edge_text(edge)
        );
        if drawn[*next] {
            line.push_str("  (drawn above)");
            lines.push(line);
            continue;
        }
        drawn[*next] = true;
        if let Some(more) = graph.not_drawn(*next, direction) {
            line.push_str(&format!("  ({} past --depth)", past(direction, more)));
        }
        lines.push(line);
        let deeper = format!("{indent}{}", if last { "   " } else { "│  " });
        branch(graph, direction, *next, &deeper, drawn, lines);
    }
}

/// `1 dependency`, `3 dependents`: the edges of a job not drawn.
fn past(direction: Direction, more: u64) -> String {
    let what = match (direction, more) {
        (Direction::Upstream, 1) => "dependency",
        (Direction::Upstream, _) => "dependencies",
        (Direction::Downstream, 1) => "dependent",
        (Direction::Downstream, _) => "dependents",
    };
    format!("{more} {what}")
}

/// A node as JSON.
fn node_json(node: &GraphNode) -> Value {
    json!({
        "queue": node.queue,
        "id": node.id.as_str(),
        "ref": node.reference,
        "state": node.state_word(),
        "depth": node.depth,
        "deps": node.deps,
        "dependents": node.dependents,
    })
}

/// `--json`: the job, every node (the job first), every edge by its two
/// jobs' queue and id.
fn to_json(graph: &FlowGraph, depth: u64) -> Value {
    let place = |index: usize| {
        let node = &graph.nodes[index];
        json!({"queue": node.queue, "id": node.id.as_str()})
    };
    let edges: Vec<Value> = graph
        .edges
        .iter()
        .map(|edge| {
            json!({
                "dependency": place(edge.dependency),
                "dependent": place(edge.dependent),
                "state": edge.state.as_str(),
                "told": edge.told,
            })
        })
        .collect();
    json!({
        "job": node_json(graph.job()),
        "depth": depth,
        "nodes": graph.nodes.iter().map(node_json).collect::<Vec<_>>(),
        "edges": edges,
        "truncated": graph.truncated,
    })
}
