//! `Jobs::flow_graph` (docs/flows.md, "Seeing a flow"): the DAG around a
//! job, its dependencies and dependents across queues up to a depth,
//! each job with its ref and state and each edge with both its halves.
//! Every case runs on both wires; those marked so also on a 3-master
//! cluster, where the flow's queues sit on different shards.

use crate::common::{self, Harness};
use echomq::{
    Direction, EdgeState, FLOW_GRAPH_EDGES_READ, FLOW_GRAPH_NODES_MAX, Flow, FlowGraph, IfActive,
    JobId, JobState, NewJob, Queue,
};
use serde_json::{Value, json};
use std::time::Duration;

/// Every case marked `cluster`, on one 3-master cluster.
#[tokio::test]
async fn flow_graph_suite_on_cluster() {
    common::on_one_cluster(module_path!()).await;
}

/// fetch → (small, large) → mail across `images` and `mailer`.
async fn diamond(images: &Queue<Value>, mailer: &Queue<Value>) {
    let mut flow = Flow::new("g");
    let fetch = flow.add_as("fetch", images, NewJob::new(json!(1)));
    let small = flow.add_as("small", images, NewJob::new(json!(2)).depends_on([&fetch]));
    let large = flow.add_as("large", images, NewJob::new(json!(3)).depends_on([&fetch]));
    flow.add_as(
        "mail",
        mailer,
        NewJob::new(json!(4)).depends_on([&small, &large]),
    );
    images.connector().submit(&flow).await.unwrap();
}

/// `queue id` of each node, in the graph's order.
fn names(graph: &FlowGraph) -> Vec<String> {
    graph
        .nodes
        .iter()
        .map(|n| format!("{} {} {}", n.queue, n.id, n.depth))
        .collect()
}

/// Each edge as `dependency → dependent state told`.
fn edges(graph: &FlowGraph) -> Vec<String> {
    graph
        .edges
        .iter()
        .map(|e| {
            format!(
                "{} → {} {} {:?}",
                graph.nodes[e.dependency].id,
                graph.nodes[e.dependent].id,
                e.state.as_str(),
                e.told
            )
        })
        .collect()
}

#[echomq_testkit::case(cluster)]
pub(super) async fn flow_graph_walks_both_ways_across_queues_with_each_edge_s_halves(h: &Harness) {
    let images = h.queue::<Value>("graph_images");
    let mailer = h.queue::<Value>("graph_mailer");
    diamond(&images, &mailer).await;
    // fetch completes and its outcome is delivered to small and large.
    let claimed = images.claim_one("w", Duration::from_secs(30)).await;
    let claimed = claimed.unwrap().unwrap();
    images
        .complete(&claimed.id, claimed.token, &json!("done"))
        .await
        .unwrap();
    images.relay().await.unwrap();

    let small = JobId::new("g:small").unwrap();
    let graph = images.jobs().flow_graph(&small, 2).await.unwrap().unwrap();
    assert_eq!(
        names(&graph),
        [
            "graph_images g:small 0",
            "graph_images g:fetch -1",
            "graph_mailer g:mail 1"
        ]
    );
    assert_eq!(graph.job().state, Some(JobState::Pending));
    assert_eq!(graph.job().reference.as_deref(), Some("small"));
    assert_eq!(graph.nodes[1].state, Some(JobState::Completed));
    assert_eq!(graph.nodes[2].state, Some(JobState::Blocked));
    assert_eq!(
        edges(&graph),
        [
            "g:fetch → g:small completed Some(true)",
            "g:small → g:mail wait Some(false)"
        ]
    );
    assert!(!graph.truncated);
    assert_eq!(graph.branches(0, Direction::Upstream).len(), 1);
    assert_eq!(graph.branches(0, Direction::Downstream).len(), 1);
    assert_eq!(
        graph.not_drawn(2, Direction::Downstream),
        None,
        "mail: none"
    );

    // From the top, two edges down reach mail through both paths, once.
    let fetch = JobId::new("g:fetch").unwrap();
    let graph = images.jobs().flow_graph(&fetch, 2).await.unwrap().unwrap();
    assert_eq!(
        names(&graph),
        [
            "graph_images g:fetch 0",
            "graph_images g:small 1",
            "graph_images g:large 1",
            "graph_mailer g:mail 2"
        ]
    );
    assert_eq!(graph.edges.len(), 4);
    assert!(graph.edges.iter().all(|e| e.state != EdgeState::Unknown));
    // One edge down stops before mail.
    let graph = images.jobs().flow_graph(&fetch, 1).await.unwrap().unwrap();
    assert_eq!(graph.nodes.len(), 3);
    assert_eq!(graph.nodes[1].dependents, Some(1), "small has more below");
    assert_eq!(graph.not_drawn(1, Direction::Downstream), Some(1));
    assert_eq!(graph.not_drawn(0, Direction::Downstream), None, "drawn");
    let alone = images.jobs().flow_graph(&fetch, 0).await.unwrap().unwrap();
    assert_eq!((alone.nodes.len(), alone.edges.len()), (1, 0));
}

#[echomq_testkit::case]
pub(super) async fn flow_graph_of_an_unknown_job_is_none(h: &Harness) {
    let q = h.queue::<Value>("graph_unknown");
    let id = JobId::new("ghost").unwrap();
    assert_eq!(q.jobs().flow_graph(&id, 2).await.unwrap(), None);
}

#[echomq_testkit::case]
pub(super) async fn flow_graph_of_a_plain_job_is_the_job_alone(h: &Harness) {
    let q = h.queue::<Value>("graph_plain");
    let job = q.enqueue(json!(1)).await.unwrap();
    let graph = q.jobs().flow_graph(&job.id, 3).await.unwrap().unwrap();
    assert_eq!(names(&graph), [format!("graph_plain {} 0", job.id)]);
    assert!(graph.edges.is_empty());
    assert_eq!(graph.job().reference, None);
}

#[echomq_testkit::case]
pub(super) async fn flow_graph_shows_a_removed_dependency_as_gone_with_its_edge_removed(
    h: &Harness,
) {
    let images = h.queue::<Value>("graph_gone_images");
    let mailer = h.queue::<Value>("graph_gone_mailer");
    diamond(&images, &mailer).await;
    let large = JobId::new("g:large").unwrap();
    images
        .jobs()
        .remove(&large, IfActive::Refuse)
        .await
        .unwrap();
    let mail = JobId::new("g:mail").unwrap();
    let graph = mailer.jobs().flow_graph(&mail, 1).await.unwrap().unwrap();
    let gone = graph
        .nodes
        .iter()
        .find(|n| n.id == large)
        .expect("large is drawn");
    assert_eq!(gone.state, None);
    assert_eq!(gone.state_word(), "gone");
    assert_eq!(
        gone.reference.as_deref(),
        Some("large"),
        "from its resolution"
    );
    assert_eq!(graph.job().state, Some(JobState::Dead), "its policy: fail");
    assert!(
        edges(&graph).contains(&"g:large → g:mail removed None".to_string()),
        "{:?}",
        edges(&graph)
    );
}

#[echomq_testkit::case]
pub(super) async fn flow_graph_stops_at_its_node_bound_and_says_so(h: &Harness) {
    let q = h.queue::<Value>("graph_wide");
    let mut flow = Flow::new("w");
    let root = flow.add_as("root", &q, NewJob::new(json!(0)));
    for n in 0..FLOW_GRAPH_NODES_MAX + 20 {
        flow.add_as(
            &format!("leaf{n}"),
            &q,
            NewJob::new(json!(n)).depends_on([&root]),
        );
    }
    q.connector().submit(&flow).await.unwrap();
    let id = JobId::new("w:root").unwrap();
    let graph = q.jobs().flow_graph(&id, 2).await.unwrap().unwrap();
    assert_eq!(graph.nodes.len(), FLOW_GRAPH_NODES_MAX);
    assert_eq!(graph.edges.len(), FLOW_GRAPH_NODES_MAX - 1);
    assert!(graph.truncated);
    let alone = q.jobs().flow_graph(&id, 0).await.unwrap().unwrap();
    assert!(!alone.truncated, "its 120 dependents were all read");
}

#[echomq_testkit::case]
pub(super) async fn flow_graph_says_so_when_a_job_has_more_edges_than_it_reads(h: &Harness) {
    let q = h.queue::<Value>("graph_shared");
    let mut flow = Flow::new("s");
    let root = flow.add_as("root", &q, NewJob::new(json!(0)));
    // Three times what it reads: HSCAN's count is a hint, a page may hold
    // more than asked.
    for n in 0..3 * FLOW_GRAPH_EDGES_READ {
        flow.add_as(
            &format!("leaf{n}"),
            &q,
            NewJob::new(json!(n)).depends_on([&root]),
        );
    }
    q.connector().submit(&flow).await.unwrap();
    let id = JobId::new("s:root").unwrap();
    let graph = q.jobs().flow_graph(&id, 0).await.unwrap().unwrap();
    assert_eq!(graph.nodes.len(), 1);
    assert!(graph.truncated, "3000 dependents, about 1000 read");
}
