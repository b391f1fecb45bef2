//! The job's place in its flows: the DAG around it
//! ([`Jobs::flow_graph`](echomq::Jobs::flow_graph), the walk `emq flow
//! show` draws), as two nested lists: the jobs it runs after (upstream)
//! and the jobs that run after it (downstream). Each job links to its own
//! page and is labelled by its state; each edge says its state (wait, or
//! how the dependency ended) and whether the dependency's queue told it.
//! A job of a queue the request's grant does not see is drawn as its
//! edge alone: no queue, id, ref or state, and nothing past it.
//! Server-rendered HTML and the stylesheet's classes: no script, no inline
//! style.

use crate::layout;
use crate::permit;
use crate::state::App;
use echomq::{
    Direction, FLOW_GRAPH_EDGES_READ, FLOW_GRAPH_NODES_MAX, FlowGraph, GraphEdge, GraphNode,
};
use maud::{Markup, html};

/// Edges followed each way.
pub(crate) const DEPTH: u32 = 2;

/// The section: both trees.
pub(super) fn section(app: &App, graph: &FlowGraph) -> Markup {
    let mut drawn = vec![false; graph.nodes.len()];
    drawn[0] = true;
    let up = tree(app, graph, Direction::Upstream, 0, &mut drawn.clone());
    let down = tree(app, graph, Direction::Downstream, 0, &mut drawn);
    html! {
        section.panel id="flow-graph" {
            h2 { "Flow" }
            h3 { "Runs after" }
            @if up.0.is_empty() {
                p.muted id="upstream" { "No dependencies." }
            } @else {
                ul.dag id="upstream" { (up) }
            }
            h3 { "Runs before" }
            @if down.0.is_empty() {
                p.muted id="downstream" { "No dependents." }
            } @else {
                ul.dag id="downstream" { (down) }
            }
            @if graph.truncated {
                p.muted { "Not every job is drawn: at most " (FLOW_GRAPH_NODES_MAX) " jobs, and " (FLOW_GRAPH_EDGES_READ) " edges of a job each way." }
            }
            p.muted { "Up to " (DEPTH) " edges each way; " code { "emq flow show --depth N" } " draws more." }
        }
    }
}

/// The list items below node `at`, one per edge going `direction`.
fn tree(
    app: &App,
    graph: &FlowGraph,
    direction: Direction,
    at: usize,
    drawn: &mut [bool],
) -> Markup {
    let mut items = Vec::new();
    for (edge, next) in graph.branches(at, direction) {
        let node = &graph.nodes[next];
        if !permit::sees(&node.queue) {
            // Its edge is the job's own; the job beyond, and anything past
            // it, belong to a queue the request's grant does not see.
            items.push(html! {
                li data-edge=(edge.state.as_str()) {
                    (edge_label(edge)) " " span.muted.unseen { "a job of a queue your token does not see" }
                }
            });
            continue;
        }
        let again = drawn[next];
        drawn[next] = true;
        let below = match again {
            true => html! {},
            false => tree(app, graph, direction, next, drawn),
        };
        let past = graph.not_drawn(next, direction).filter(|_| !again);
        items.push(html! {
            li data-job=(format!("{} {}", node.queue, node.id)) data-edge=(edge.state.as_str()) {
                (edge_label(edge)) " " (job(app, node))
                @if again { " " span.muted { "(drawn above)" } }
                @if let Some(past) = past { " " span.muted { "(" (past) " more past the depth)" } }
                @if !below.0.is_empty() { ul { (below) } }
            }
        });
    }
    html! { @for item in items { (item) } }
}

/// `completed · told`, coloured by the edge's state.
fn edge_label(edge: &GraphEdge) -> Markup {
    let (state, told) = (edge.state.as_str(), edge.told_word());
    html! {
        span class=(format!("edge state-{state}")) title="the edge: wait, or how the dependency ended; told: its queue delivered it" {
            (state) " · " (told)
        }
    }
}

/// A job: its queue and id linking to its page (a gone job has none), its
/// ref, its state as a badge.
fn job(app: &App, node: &GraphNode) -> Markup {
    let state = node.state_word();
    html! {
        @if node.state.is_some() {
            a href=(layout::job_href(app, &node.queue, node.id.as_str())) {
                code { (node.queue) } " " code { (node.id.as_str()) }
            }
        } @else {
            code { (node.queue) } " " code { (node.id.as_str()) }
        }
        @if let Some(reference) = &node.reference { " " span.muted { "ref " (reference) } }
        " " span class=(format!("badge state-{state}")) { (state) }
    }
}
